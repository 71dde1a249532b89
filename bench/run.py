"""`make bench`: conversion time and peak memory, pad-layer latency per runtime, tf2onnx side by side.

    python -m bench.run [--cache .cache/bench] [--model mobilenet_v2] [--size 224] [--repeat 30] [--rounds 3]

Writes bench-report.md and bench-report.json into the cache directory and prints the tables.
Figures are wall-clock on this machine: run it on an idle machine and read medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from bench import launch
from examples.naive import naive_symmetric

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

TARGETS = ("torch", "caffe", "mxnet", "onnx")
CONVERT = str(Path(sys.executable).with_name("convert"))


def measure_cli(args: list[str]) -> dict[str, Any]:
    """Wall time and peak RSS of one `convert` process (the whole command, imports included)."""
    start = time.perf_counter()
    with tempfile.NamedTemporaryFile(suffix=".json") as result:
        # through the launcher: convert's own ru_maxrss, not this bench's inherited high-water mark
        done = subprocess.run(launch.wrap([CONVERT, *args], result.name), capture_output=True, text=True)
        seconds = time.perf_counter() - start
        own = launch.usage(result.name) or {"exit": done.returncode, "maxrss_kb": 0.0}
    out, err, code = done.stdout, done.stderr, own["exit"]
    doc = json.loads(out) if code == 0 and out.startswith("{") else {}
    return {
        "exit": code,
        "seconds": round(seconds, 2),
        "peak_mb": round(own["maxrss_kb"] / 1024, 1),
        "pipeline_seconds": doc.get("seconds", {}),
        "max_rel": (doc.get("verify") or {}).get("max_rel"),
        "pad_layers": len(doc.get("pad_layers", [])),
        "error": err.strip().splitlines()[-1] if code else "",
    }


def timed_ms(fn: Callable[[], Any], repeat: int, clock: Callable[[], float] = time.perf_counter) -> tuple[float, float]:
    """(median, fastest) ms of `repeat` runs after a warm-up. A model's work is fixed, so other load on
    a shared machine only adds time: the fastest run is the steadier figure of what the model costs."""
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append((clock() - t0) * 1000)
    return round(statistics.median(times), 2), round(min(times), 2)


def latency_clock() -> Callable[[], float]:
    """Wall time; with one thread (--threads 1) the calling thread's CPU time, which a shared
    machine's other processes barely disturb (torch, OpenCV and onnxruntime then compute in it)."""
    return time.thread_time if os.environ.get("OMP_NUM_THREADS") == "1" else time.perf_counter


PAD_LAYERS = {"extra": {"conv_lowering": "pad"}}  # every asymmetric conv behind a pad layer (the old lowering)

# (runtime, variant, target, naive graph?, emit options); the naive symmetric model is the baseline
LATENCY_VARIANTS = (
    ("caffe (OpenCV DNN)", "exact, measured lowerings (default)", "caffe", False, {}),
    ("caffe (OpenCV DNN)", "exact, pad layer groups", "caffe", False, {"caffe_pad": "layer"}),
    ("caffe (OpenCV DNN)", "exact, kernel extension", "caffe", False, {"caffe_pad": "kernel"}),
    ("caffe (OpenCV DNN)", "exact, four-sided pads (--caffe-pad opencv; not BVLC)", "caffe", False,
     {"caffe_pad": "opencv"}),
    ("caffe (OpenCV DNN)", "naive symmetric (inexact)", "caffe", True, {}),
    ("mxnet", "exact, measured lowerings (default)", "mxnet", False, {}),
    ("mxnet", "exact, pad operators", "mxnet", False, PAD_LAYERS),
    ("mxnet", "naive symmetric (inexact)", "mxnet", True, {}),
    # size-free models compute TF's SAME pads at run time (tf_same_pad); --static-shapes bakes them
    ("torch", "exact, runtime pads, measured lowerings (default)", "torch", False, {}),
    ("torch", "exact, runtime pads, pad layers", "torch", False, PAD_LAYERS),
    ("torch", "exact, baked pads, measured lowerings (--static-shapes)", "torch", False, {"static_shapes": True}),
    ("torch", "naive symmetric (inexact)", "torch", True, {}),
    ("onnxruntime", "exact, auto_pad SAME_UPPER (default)", "onnx", False, {}),
    ("onnxruntime", "exact, native pads (--static-shapes)", "onnx", False, {"static_shapes": True}),
    ("onnxruntime", "naive symmetric (inexact)", "onnx", True, {}),
)


def _runner(target: str, out: Path, x: list[np.ndarray]) -> Callable[[], Any]:
    """A no-argument callable running the model written in `out` once (MXNet runs elsewhere)."""
    from tf_convert import emitters

    threads = int(os.environ.get("OMP_NUM_THREADS", "0"))
    if target == "caffe":
        import cv2

        if threads:
            cv2.setNumThreads(threads)
        caffe = emitters.get("caffe")
        net, io = caffe.load(out), caffe._io(out)

        def forward():
            for name, value in zip(io["inputs"], x):
                net.setInput(value, name)
            return net.forward(io["outputs"])

        return forward
    if target == "torch":
        import torch

        from tf_convert.emitters.torch import runner

        if threads:
            torch.set_num_threads(threads)
        model = runner.import_model(out).load(str(out / "model.pt"))
        tensors = [torch.from_numpy(v) for v in x]

        def run_torch():
            with torch.no_grad():
                return model(*tensors)

        return run_torch
    import onnxruntime as ort

    settings = ort.SessionOptions()
    settings.intra_op_num_threads = threads  # 0: onnxruntime's default
    session = ort.InferenceSession(str(out / "model.onnx"), settings, providers=["CPUExecutionProvider"])
    feeds = {i.name: v for i, v in zip(session.get_inputs(), x)}
    return lambda: session.run(None, feeds)


def latencies(graph, repeat: int, work: Path, rounds: int = 3) -> list[dict[str, Any]]:
    """Every LATENCY_VARIANTS model timed in `rounds` interleaved rounds of `repeat` runs each (a busy
    moment of a shared machine then hits every variant alike); `ms` is the median of the rounds' medians,
    `best_ms` the fastest run of all."""
    from tf_convert import emitters
    from tf_convert.emitters.base import EmitOptions
    from tf_convert.emitters.mxnet import runtime as mx_runtime

    x = [np.random.default_rng(0).standard_normal(graph.shape(n)).astype(np.float32) for n in graph.inputs]
    naive = naive_symmetric(graph)  # the timing baseline: no pad layers, wrong border numbers
    emitted = []
    for i, (runtime, label, target, is_naive, options) in enumerate(LATENCY_VARIANTS):
        out = work / f"latency-{i}-{target}"
        out.mkdir(parents=True, exist_ok=True)
        result = emitters.get(target).emit(naive if is_naive else graph, out, EmitOptions(**options))
        emitted.append((runtime, label, target, out, len(result.pad_layers)))
    local = {out: _runner(target, out, x) for _, _, target, out, _ in emitted if target != "mxnet"}
    mxnet_jobs = [(out, x) for _, _, target, out, _ in emitted if target == "mxnet"]
    samples: dict[tuple[str, str], list[tuple[float, float]]] = {}  # (median, fastest) per round
    for r in range(rounds):
        for runtime, label, target, out, _ in (emitted if r % 2 == 0 else emitted[::-1]):
            if target != "mxnet":
                samples.setdefault((runtime, label), []).append(timed_ms(local[out], repeat, latency_clock()))
        timed = mx_runtime.evaluate(mxnet_jobs, modes=("module", "gluon", "gluon-fused"), bench=repeat)
        for (_, label, _, _, _), res in zip([e for e in emitted if e[2] == "mxnet"], timed):
            for mode, ms in res.get("ms", {}).items():
                samples.setdefault((f"mxnet ({mode})", label), []).append((ms, res["best_ms"][mode]))
    pads = {(runtime, label): n for runtime, label, _, _, n in emitted}
    rows = []
    for (runtime, label), values in samples.items():
        n = pads.get((runtime, label), pads.get(("mxnet", label)))
        rows.append({"runtime": runtime, "variant": label, "pad_layers": n,
                     "ms": round(statistics.median(m for m, _ in values), 2),
                     "best_ms": round(min(b for _, b in values), 2)})
    return _with_ratios(sorted(rows, key=lambda row: row["runtime"]))


def _with_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`x naive`: each variant's fastest-run latency over the naive symmetric one's in the same runtime
    (goal <= 1.05); `x naive (median)` the same from the medians."""
    naive = {r["runtime"]: r for r in rows if r["variant"].startswith("naive")}
    for r in rows:
        base = naive.get(r["runtime"])
        if base and base["best_ms"] and base["ms"]:
            r["x_naive"] = round(r["best_ms"] / base["best_ms"], 3)
            r["x_naive_median"] = round(r["ms"] / base["ms"], 3)
    return rows


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path(".cache/bench"))
    parser.add_argument("--model", default="mobilenet_v2")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved latency rounds (median of them)")
    parser.add_argument("--skip-tf2onnx", action="store_true")
    parser.add_argument("--latency-only", action="store_true",
                        help="only the cost-of-exactness latency table (no conversions, no tf2onnx)")
    parser.add_argument("--threads", type=int, default=0,
                        help="latency: threads per runtime (OMP_NUM_THREADS; 0: each runtime's default). With 1, "
                        "torch/OpenCV/onnxruntime are timed in CPU time of the calling thread "
                        "(steady on a busy machine)")
    args = parser.parse_args()
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # torch, OpenCV and the MXNet subprocess read it
    args.cache.mkdir(parents=True, exist_ok=True)

    from zoo import fixtures

    # Fixtures are built in child processes: a child forked from a parent that has TensorFlow
    # loaded inherits its peak RSS (Linux keeps ru_maxrss across exec), which would spoil the figures.
    demo = args.cache / "demo" / "model.ckpt"
    if not args.latency_only and not Path(str(demo) + ".index").exists():
        subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; from examples import demo_model; "
                        "demo_model.build(Path(sys.argv[1]))", str(args.cache / "demo")], check=True)
    subprocess.run([sys.executable, "-m", "zoo.fixtures", args.model, str(args.size), str(args.cache / "zoo")],
                   check=True, stdout=subprocess.DEVNULL)
    zoo = fixtures.paths(args.model, args.size, args.cache / "zoo")
    sources = {"demo (TF1 ckpt)": str(demo), f"{args.model} {args.size} (.keras)": str(zoo["keras"]),
               f"{args.model} {args.size} (TF1 ckpt)": str(zoo["ckpt"])}

    report: dict[str, Any] = {"conversion": [], "latency": [], "tf2onnx": None}
    with tempfile.TemporaryDirectory(prefix="convert-bench-") as tmp:
        for label, src in ({} if args.latency_only else sources).items():
            for target in TARGETS:
                out = Path(tmp) / f"{len(report['conversion'])}"
                row = measure_cli([f"tf2{target}", src, "-o", str(out), "--json", "--verify"])
                row.update(source=label, target=target)
                report["conversion"].append(row)
                print(f"convert {label} -> {target}: {row['seconds']} s, {row['peak_mb']} MB, "
                      f"max_rel {row['max_rel']}", flush=True)

        from tf_convert.app import pipeline

        graph, _, _, _ = pipeline.load_graph(pipeline.Request(source=Path(zoo["keras"]), target="ir"))
        report["latency"] = latencies(graph, args.repeat, Path(tmp), args.rounds)

    if not (args.skip_tf2onnx or args.latency_only):
        proc = subprocess.run([sys.executable, "-m", "bench.tf2onnx_compare", str(zoo["saved_model"]), "--json"],
                              capture_output=True, text=True)
        try:
            report["tf2onnx"] = json.loads(proc.stdout)
        except json.JSONDecodeError:
            report["tf2onnx"] = {"error": (proc.stderr.strip().splitlines() or ["tf2onnx not available"])[-1]}

    conv_cols = ["source", "target", "exit", "seconds", "peak_mb", "max_rel", "pad_layers"]
    clock = ("one thread per runtime, CPU time (torch, OpenCV, onnxruntime: of the calling thread; MXNet: of its "
             "process)" if args.threads == 1 else f"threads: {args.threads or 'each runtime default'}, wall time")
    md = [f"# Benchmarks ({time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores)", ""]
    if not args.latency_only:
        md += ["## Conversion (`convert tf2X SRC --verify`, whole process incl. imports)", "",
               table(report["conversion"], conv_cols), ""]
    md += [f"## Inference latency of {args.model} {args.size}, batch 1, median of {args.rounds} interleaved rounds of "
           f"{args.repeat} runs (ms; {clock}); `x naive` from the fastest runs (best_ms: the fastest of all rounds; "
           "other load only adds time), `x naive (median)` from the medians", "",
           table(report["latency"], ["runtime", "variant", "pad_layers", "ms", "best_ms", "x_naive", "x_naive_median"]),
           ""]
    if not args.latency_only:
        md += ["## tf2onnx side by side", "", "```", json.dumps(report["tf2onnx"], indent=1), "```", ""]
    (args.cache / "bench-report.md").write_text("\n".join(md))
    (args.cache / "bench-report.json").write_text(json.dumps(report, indent=1))
    print("\n".join(md))
    print(f"written: {args.cache / 'bench-report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
