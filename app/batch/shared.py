"""What the cluster (cluster.py) and its workers (worker.py) both know: names they meet under, and the
environment a worker process runs in."""

from __future__ import annotations

import os

PLUGIN = "convert-batch"  # the worker plugin's name (worker.WorkerSetup)
EVENTS = "convert-batch"  # topic of the "a conversion started on this worker" events
MEMORY = "memory"  # the worker resource a conversion asks for (bytes)


def quiet_environment(threads: int) -> dict[str, str]:
    """Environment for a worker process: no framework chatter, `threads` threads per framework."""
    env = {"TF_CPP_MIN_LOG_LEVEL": "3", "ABSL_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow",
           "TF_ENABLE_ONEDNN_OPTS": "0", "CUDA_VISIBLE_DEVICES": ""}
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TF_NUM_INTRAOP_THREADS"):
        env[var] = str(threads)
    env["TF_NUM_INTEROP_THREADS"] = "1" if threads == 1 else "2"
    return {k: os.environ.get(k, v) for k, v in env.items()}
