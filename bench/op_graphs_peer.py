"""tf2onnx on the op graphs (bench/op_graphs.py), run by bench/op_graphs_run.py in tf2onnx's own virtualenv.

    /path/to/tf2onnx-venv/bin/python bench/op_graphs_peer.py GRAPHS_DIR RESULTS_DIR [--opset 17]

Imports only TensorFlow, tf2onnx, onnx, onnxruntime and numpy (nothing of this package: that venv does not
have it). For each case: tf2onnx's own conversion of the frozen GraphDef (`tf2onnx.convert.from_graph_def`,
what `python -m tf2onnx.convert --graphdef` calls: TF's grappler pass, then the handlers), then onnxruntime
on both feed sets. Writes RESULTS_DIR/<case>.json ({"status": "converted"|"refused"|"run-failed", "error":
one line, "seconds"}) and RESULTS_DIR/<case>.npz (a_out/<k>, b_out/<k>); the runner judges them.
One process for all cases: TensorFlow is imported once (a process per graph would cost ~5 s each).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
PER_CASE_SECONDS = 120


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout(f"took over {PER_CASE_SECONDS} s")


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:400]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("graphs", type=Path)
    parser.add_argument("results", type=Path)
    parser.add_argument("--opset", type=int, default=18)  # tf2onnx 1.17's newest
    parser.add_argument("--only", default=None)
    args = parser.parse_args()
    import logging

    import numpy as np
    import onnxruntime as ort
    import tensorflow as tf
    import tf2onnx

    logging.getLogger("tf2onnx").setLevel(logging.CRITICAL)
    tf2onnx.logging.set_level(logging.CRITICAL)
    args.results.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGALRM, _alarm)
    for case_dir in sorted(p for p in args.graphs.iterdir() if (p / "case.json").exists()):
        if args.only and args.only not in case_dir.name:
            continue
        meta = json.loads((case_dir / "case.json").read_text())
        feeds = np.load(case_dir / "feeds.npz")
        graph_def = tf.compat.v1.GraphDef()
        graph_def.ParseFromString((case_dir / "graph.pb").read_bytes())
        result: dict = {}
        start = time.perf_counter()
        signal.alarm(PER_CASE_SECONDS)
        try:
            model, _ = tf2onnx.convert.from_graph_def(
                graph_def,
                input_names=[f"{n}:0" for n in meta["inputs"]],
                output_names=[f"{n}:0" for n in meta["outputs"]],
                opset=args.opset,
            )
        except BaseException as exc:  # noqa: BLE001 -- every failure of the peer is a refusal to record
            signal.alarm(0)
            result = {"status": "refused", "error": _one_line(exc)}
        else:
            signal.alarm(0)
            result = {"status": "converted"}
            try:
                session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
                taken = {i.name for i in session.get_inputs()}
                outputs = {}
                for which in "ab":
                    fed = {f"{n}:0": feeds[f"{which}/{n}"] for n in meta["inputs"] if f"{n}:0" in taken}
                    for k, value in enumerate(session.run(None, fed)):
                        outputs[f"{which}_out/{k}"] = np.asarray(value)
                np.savez(args.results / f"{case_dir.name}.npz", **outputs)
            except BaseException as exc:  # noqa: BLE001 -- a model onnxruntime cannot load or run
                result = {"status": "run-failed", "error": _one_line(exc)}
        result["seconds"] = round(time.perf_counter() - start, 3)
        (args.results / f"{case_dir.name}.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
