"""A `convert batch` worker process: imports the frameworks once, then runs task after task.

The parent (convert.batch_pool) talks to it over a pipe: it sends `(task_id, "module:function",
kwargs)` and gets back `("done", task_id, result)`; `None` asks the worker to exit. Each task's result
carries its wall time and the worker's peak resident memory during that task.
"""

from __future__ import annotations

import importlib
import os
import resource
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

STATUS_BY_EXIT = {0: "ok", 2: "failed", 3: "unsupported", 4: "verify_failed", 1: "error"}


# ---- memory ------------------------------------------------------------------------------------


def _reset_peak() -> None:
    """Reset the kernel's peak-RSS mark (Linux >= 4.0) so the next reading covers one task only."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass  # elsewhere the reading is the process' lifetime peak (ru_maxrss)


def _peak_rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20, 1)


# ---- the process -------------------------------------------------------------------------------


def _quiet(threads: int) -> None:
    """Framework settings that must be in place before the first import."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("ABSL_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    # N workers on C cores: give each C/N threads instead of letting every one of them use all C
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TF_NUM_INTRAOP_THREADS"):
        os.environ.setdefault(var, str(threads))
    os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1" if threads == 1 else "2")


def main(conn: Any, log_path: str, warm: list[str], threads: int) -> None:
    """Worker entry point (spawned). Output goes to `log_path`; results go back over `conn`."""
    try:
        os.setpgrp()  # its own process group: a timeout kills the worker and anything it started
    except OSError:
        pass
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    _quiet(threads)
    t0 = time.perf_counter()
    for module in warm:  # pay for `import tensorflow` once per worker, not per conversion
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - a missing optional runtime shows up in its task
            print(f"warm-up: cannot import {module}: {exc}", flush=True)
    conn.send(("ready", os.getpid(), round(time.perf_counter() - t0, 2)))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        task_id, function, kwargs = message
        print(f"--- task {task_id}: {function}", flush=True)
        conn.send(("done", task_id, call(function, kwargs)))


def call(function: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Run `module:function(**kwargs)` (which returns a dict) and add seconds + peak memory."""
    _reset_peak()
    t0 = time.perf_counter()
    try:
        module, _, name = function.partition(":")
        result = dict(getattr(importlib.import_module(module), name)(**kwargs))
    except Exception as exc:  # noqa: BLE001 - becomes the task's result, never kills the worker
        result = {"status": "error", "exit_code": 1, "error": internal_error_line(exc),
                  "traceback": traceback.format_exc()}
    result.setdefault("seconds", round(time.perf_counter() - t0, 3))
    result["peak_rss_mb"] = _peak_rss_mb()
    result["worker_pid"] = os.getpid()
    return result


def internal_error_line(exc: BaseException) -> str:
    """The CLI's one line for a bug: where, what, how to report it."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno} ({frames[-1].name})" if frames else "?"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return (f"internal error in {where}: {type(exc).__name__}: {text} -- this is a bug; please report it "
            f"with the manifest entry and `convert --version`")


# ---- the conversion task -----------------------------------------------------------------------


def convert_task(spec: dict[str, Any]) -> dict[str, Any]:
    """One (entry, target) conversion through convert.pipeline.run; every outcome becomes a result."""
    from emitters.base import EmitOptions

    from convert import batch_cache, pipeline
    from convert.errors import ConvertError

    if spec.get("memo", True):
        batch_cache.install()
    hits_before = (batch_cache.stats["parse_hits"], batch_cache.stats["reference_hits"])

    req = pipeline.Request(
        source=Path(spec["source"]), target=spec["target"], out=Path(spec["out"]),
        inputs=spec["inputs"], outputs=spec["outputs"],
        input_shapes={k: tuple(v) for k, v in spec["input_shapes"].items()},
        verify=spec["verify"], rtol=spec["rtol"], seed=spec["seed"], keep_ir=spec["keep_ir"],
        force=True, options=EmitOptions(**spec["emit"]),
    )
    trace = None
    t0 = time.perf_counter()
    try:
        doc = pipeline.run(req)
        status, code, error = "ok", 0, None
    except ConvertError as exc:
        doc = getattr(exc, "doc", None)  # a failed verification still carries its metrics
        status, code, error = STATUS_BY_EXIT.get(exc.exit_code, "error"), exc.exit_code, str(exc)
    except Exception as exc:  # noqa: BLE001 - a bug in the converter: reported, the batch goes on
        doc = None
        status, code, error = "error", 1, internal_error_line(exc)
        trace = traceback.format_exc()
    if spec.get("discard"):
        shutil.rmtree(spec["out"], ignore_errors=True)
    result: dict[str, Any] = {
        "status": status, "exit_code": code,
        "error": error.replace("\n", " ") if error else None,
        "seconds": round(time.perf_counter() - t0, 3), "traceback": trace,
        # this conversion reused the parse / TF's outputs of an earlier target of the same source
        "reused": {"parse": batch_cache.stats["parse_hits"] > hits_before[0],
                   "reference": batch_cache.stats["reference_hits"] > hits_before[1]},
    }
    if doc is not None:
        result.update(
            verify=_short_verify(doc.get("verify")),
            pad_layers=len(doc.get("pad_layers", [])),
            warnings=doc.get("warnings", []), notes=doc.get("notes", []),
            source_format=doc["source"]["format"], source_sha256=doc["source"]["sha256"],
            stages=doc.get("seconds", {}),
        )
    return result


def _short_verify(v: dict[str, Any] | None) -> dict[str, Any] | None:
    if not v:
        return None
    return {k: v.get(k) for k in ("max_abs", "max_rel", "snr_db", "psnr_db", "passed", "rtol", "worst_output")}
