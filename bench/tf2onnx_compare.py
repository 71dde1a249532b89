"""Our ONNX emitter side by side with tf2onnx on one TF source (a bench tool, not part of `make test`).

    python -m bench.tf2onnx_compare SRC [SRC ...] [--opset 17] [--input-shape 1,224,224,3]
                                    [--inputs NAME] [--outputs NAME[,NAME]] [--work DIR] [--json]

For each SRC (SavedModel directory, frozen GraphDef .pb or TF1 checkpoint prefix) both converters
run in this process, after TensorFlow has been imported once, so neither pays for the import:
ours = parse + passes + emit (convert.pipeline.load_graph, emitters.onnx.emit); tf2onnx = its
loader for the source kind + its conversion (the same calls its command line makes). Both models
run in onnxruntime (CPU) on the same random input and are compared with TensorFlow itself.

Reported per converter: ONNX node count, file size (model.onnx plus external data), conversion
seconds, max relative error vs TF (app.verify.metric.judge: max|a-b| / max|ref|, worst output).
tf2onnx is a dev/bench dependency only: `pip install tf2onnx==1.17.0` (installs cleanly with the
pinned numpy 2.4 / protobuf 7).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def rel_error(actual: np.ndarray, expected: np.ndarray) -> float:
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if actual.shape != expected.shape:
        return float("inf")
    if not expected.size:
        return 0.0
    from tf_convert.app.verify.metric import judge

    return judge(actual, expected)["max_rel"]


def model_stats(path: Path) -> dict[str, Any]:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    size = sum(p.stat().st_size for p in path.parent.iterdir() if p.is_file() and p.name.startswith(path.name))
    ops: dict[str, int] = {}
    for node in model.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    return {"nodes": len(model.graph.node), "bytes": size, "ops": dict(sorted(ops.items()))}


def run_onnx(path: Path, feeds: list[np.ndarray]) -> tuple[list[str], list[np.ndarray]]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    outs = session.run(None, dict(zip(names, feeds)))
    return [o.name for o in session.get_outputs()], outs


# ---- ours --------------------------------------------------------------------------------------


def convert_ours(src: Path, out_dir: Path, opset: int, request_kwargs: dict[str, Any]):
    import tf_convert.emitters.onnx as onnx_emitter
    from tf_convert.app.pipeline import Request, load_graph
    from tf_convert.emitters.base import EmitOptions

    t0 = time.perf_counter()
    graph, kind = load_graph(Request(source=src, target="onnx", **request_kwargs))[:2]
    onnx_emitter.emit(graph, out_dir, EmitOptions(opset=opset))
    return graph, kind, time.perf_counter() - t0


# ---- tf2onnx -----------------------------------------------------------------------------------


def convert_tf2onnx(src: Path, kind: str, graph, opset: int, out_path: Path) -> float:
    """Convert with tf2onnx the way its command line does for `kind`; returns seconds."""
    import tensorflow as tf
    from tf2onnx import convert as t2o_convert
    from tf2onnx import tf_loader

    in_names = [graph.source_names.get(t, t) for t in graph.inputs]
    out_names = [graph.source_names.get(t, t) for t in graph.outputs]
    tables, rename = None, {}
    t0 = time.perf_counter()
    if kind == "frozen_pb":
        graph_def, inputs, outputs = tf_loader.from_graphdef(str(src), in_names, out_names)
    elif kind == "tf_checkpoint":
        meta = src if src.suffix == ".meta" else Path(str(src) + ".meta")
        if src.is_dir():  # a directory holding a 'checkpoint' file
            meta = Path(tf.train.latest_checkpoint(str(src)) + ".meta")
        graph_def, inputs, outputs = tf_loader.from_checkpoint(str(meta), in_names, out_names)
    elif kind == "saved_model":
        graph_def, inputs, outputs, tables, rename = tf_loader.from_saved_model(
            str(src), None, None, return_initialized_tables=True, return_tensors_to_rename=True
        )
    else:
        raise RuntimeError(f"source kind {kind!r}: not compared (tf2onnx takes TF graphs here)")
    with tf.device("/cpu:0"):
        t2o_convert._convert_common(  # what `python -m tf2onnx.convert` calls
            graph_def, name=str(src), opset=opset, input_names=inputs, output_names=outputs,
            tensors_to_rename=rename, initialized_tables=tables, output_path=str(out_path),
        )
    return time.perf_counter() - t0


def _to_source_layout(x: np.ndarray, layout: str) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if layout == "NHWC" and x.ndim == 4 else x


def _to_ir_layout(y: np.ndarray, layout: str) -> np.ndarray:
    return y.transpose(0, 3, 1, 2) if layout == "NHWC" and y.ndim == 4 else y


# ---- one source --------------------------------------------------------------------------------


def compare(src: str | Path, opset: int = 17, work: Path | None = None, seed: int = 0, **request_kwargs: Any) -> dict:
    import onnx  # noqa: F401 - imported before timing, like TensorFlow
    import tensorflow  # noqa: F401

    import tf_convert.emitters.onnx as onnx_emitter
    from tf_convert import parsers
    from tf_convert.app.verify import make_inputs

    src = Path(src)
    work = Path(work or tempfile.mkdtemp(prefix="tf2onnx-compare-"))
    ours_dir, theirs_dir = work / "ours", work / "tf2onnx"
    for d in (ours_dir, theirs_dir):
        d.mkdir(parents=True, exist_ok=True)
    row: dict[str, Any] = {"source": str(src), "opset": opset}

    try:
        graph, kind, seconds = convert_ours(src, ours_dir, opset, request_kwargs)
    except Exception as err:  # noqa: BLE001 - reported; without our graph there is no reference to compare
        row["ours"] = {"error": f"{type(err).__name__}: {err}".splitlines()[0][:300]}
        row["tf2onnx"] = {"error": "not run (needs our parse for input/output names and the TF reference)"}
        return row
    row["kind"] = kind
    inputs = make_inputs(graph, seed)
    expected = parsers.run_reference(src, graph, inputs)
    actual = onnx_emitter.run(ours_dir, inputs)
    row["ours"] = {
        **model_stats(ours_dir / "model.onnx"),
        "seconds": round(seconds, 3),
        "max_rel": max(rel_error(a, e) for a, e in zip(actual, expected)),
    }

    try:
        out_path = theirs_dir / "model.onnx"
        seconds = convert_tf2onnx(src, kind, graph, opset, out_path)
        feeds = [_to_source_layout(x, graph.source_layouts.get(t, "")) for x, t in zip(inputs, graph.inputs)]
        names, outs = run_onnx(out_path, feeds)
        theirs = [_to_ir_layout(y, graph.source_layouts.get(t, "")) for y, t in zip(outs, graph.outputs)]
        row["tf2onnx"] = {
            **model_stats(out_path),
            "seconds": round(seconds, 3),
            "max_rel": max(rel_error(a, e) for a, e in zip(theirs, expected)),
        }
    except Exception as err:  # noqa: BLE001 - a tf2onnx failure is a result, not a crash
        row["tf2onnx"] = {"error": f"{type(err).__name__}: {err}".splitlines()[0][:300]}
        row["tf2onnx_traceback"] = traceback.format_exc(limit=3)
    return row


def markdown(rows: list[dict]) -> str:
    lines = [
        "| source | converter | nodes | size (KB) | seconds | max rel error |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        for who in ("ours", "tf2onnx"):
            r = row.get(who, {})
            if "error" in r:
                lines.append(f"| {row['source']} | {who} | - | - | - | failed: {r['error']} |")
                continue
            lines.append(
                f"| {row['source']} | {who} | {r['nodes']} | {r['bytes'] / 1024:.0f} | {r['seconds']:.2f} | "
                f"{r['max_rel']:.2e} |"
            )
    return "\n".join(lines)


def _isolated(args: argparse.Namespace, argv: list[str]) -> int:
    """Compare each source in a fresh process (TF keeps every graph it loaded until exit)."""
    import subprocess

    passed = [a for a in argv if a != "--isolate" and a not in map(str, args.sources) and a != "--json"]
    rows = []
    for src in args.sources:
        proc = subprocess.run([sys.executable, "-m", "bench.tf2onnx_compare", str(src), "--json", *passed],
                              capture_output=True, text=True)
        try:
            rows.extend(json.loads(proc.stdout))
        except json.JSONDecodeError:
            last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            rows.append({"source": str(src), "ours": {"error": last[:300]}, "tf2onnx": {"error": last[:300]}})
        print(f"done: {src}", file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=1, default=str) if args.json else markdown(rows))
    return 0


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(","))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="+", type=Path)
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--input-shape", type=_shape, help="source-layout shape of the only input")
    parser.add_argument("--inputs", help="source input tensor name(s), comma separated")
    parser.add_argument("--outputs", help="source output tensor name(s), comma separated")
    parser.add_argument("--work", type=Path, help="keep both models here (default: a temp dir)")
    parser.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    parser.add_argument("--isolate", action="store_true",
                        help="one child process per source: bounded memory over a whole zoo")
    args = parser.parse_args(argv)
    if args.isolate:
        return _isolated(args, argv if argv is not None else sys.argv[1:])

    request_kwargs: dict[str, Any] = {}
    if args.input_shape:
        request_kwargs["input_shapes"] = {"": args.input_shape}
    if args.inputs:
        request_kwargs["inputs"] = args.inputs.split(",")
    if args.outputs:
        request_kwargs["outputs"] = args.outputs.split(",")
    rows = []
    for i, src in enumerate(args.sources):
        work = args.work / f"{i}-{src.name}" if args.work else None
        rows.append(compare(src, args.opset, work, **request_kwargs))
        print(f"done: {src}", file=sys.stderr)
    print(json.dumps(rows, indent=1, default=str) if args.json else markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
