"""How far float32 itself is from exact arithmetic: the measurement behind app/verify/metric.py's ROUNDING.

For each zoo Keras model (`make zoo` builds them), TensorFlow's own float32 output and the converted ONNX
model's (onnxruntime, rewrites off, as --verify runs it) are compared with the same Keras model rebuilt in
float64 from the same weights, on --verify's inputs. Errors are given in units of eps32 x peak x sqrt(depth),
the floor's units: a floor of ROUNDING units must cover the distance between two correct float32 results,
which is up to the sum of each one's distance from the exact value.

    python -m bench.float32_noise [--cache .cache/zoo] [--models efficientnet_v2_b0,resnet50] [--seeds 3]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tf_convert.app import pipeline, verify
from tf_convert.app.pipeline import Request
from tf_convert.app.verify.metric import EPS32, ROUNDING

# a float64 twin this far from TF's float32 result computes something else (e.g. EfficientNet's Normalization
# layer keeps its statistics in the config): such a model is left out, not measured
UNFAITHFUL = 1000.0


def _float64_twin(model):
    """The same Keras model computing in float64, with the float32 weights widened exactly."""
    import keras

    keras.config.set_floatx("float64")
    try:
        twin = keras.models.model_from_json(model.to_json().replace('"float32"', '"float64"'))
    finally:
        keras.config.set_floatx("float32")
    twin.set_weights([w.astype(np.float64) for w in model.get_weights()])
    return twin


def measure(fixture: Path, seeds: int) -> dict[str, float]:
    import keras
    import onnxruntime as ort

    source = fixture / "model.keras"
    graph, *_ = pipeline.load_graph(Request(source=source, target="onnx"))
    depth = verify.depth_of(graph)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "onnx"
        subprocess.run([str(Path(sys.executable).parent / "convert"), "tf2onnx", str(source), "-o", str(out)],
                       check=True, capture_output=True)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(str(out / "model.onnx"), options, providers=["CPUExecutionProvider"])
        model = keras.models.load_model(source)
        twin = _float64_twin(model)
        worst = {"tf32_vs_float64": 0.0, "onnx_vs_float64": 0.0, "onnx_vs_tf32": 0.0}
        for seed in range(seeds):
            x = verify.make_inputs(graph, seed)[0]  # IR layout: NCHW
            nhwc = x.transpose(0, 2, 3, 1)
            tf32 = np.asarray(model(nhwc), np.float64)
            exact = np.asarray(twin(nhwc.astype(np.float64)))
            onnx = session.run(None, {session.get_inputs()[0].name: x})[0].astype(np.float64)
            unit = EPS32 * float(np.max(np.abs(exact))) * math.sqrt(depth)
            for key, (a, b) in {"tf32_vs_float64": (tf32, exact), "onnx_vs_float64": (onnx, exact),
                                "onnx_vs_tf32": (onnx, tf32)}.items():
                worst[key] = max(worst[key], float(np.max(np.abs(a - b))) / unit)
    return {"depth": depth, **worst}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path(".cache/zoo"))
    parser.add_argument("--models", default="efficientnet_v2_b0,efficientnet_b0,resnet50,mobilenet_v2")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"Errors in units of eps32 x peak x sqrt(depth) (the floor is {ROUNDING:g} units); worst of "
          f"{args.seeds} --verify inputs.\n")
    print("| model | depth | TF float32 vs float64 | ONNX vs float64 | ONNX vs TF float32 |")
    print("|---|---|---|---|---|")
    for name in args.models.split(","):
        fixture = args.cache / f"{name}-{args.size}"
        if not (fixture / "model.keras").exists():
            print(f"| {name} | - | not built (run `make zoo-{name}`) | | |")
            continue
        r = measure(fixture, args.seeds)
        if r["tf32_vs_float64"] > UNFAITHFUL:
            print(f"| {name} | {r['depth']} | the float64 twin is not the same model (a layer keeps float32 "
                  f"state); not measured | | |")
            continue
        print(f"| {name} | {r['depth']} | {r['tf32_vs_float64']:.1f} | {r['onnx_vs_float64']:.1f} | "
              f"{r['onnx_vs_tf32']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
