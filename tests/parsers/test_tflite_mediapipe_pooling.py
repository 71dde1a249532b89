"""MediaPipe's `MaxPoolingWithArgmax2D` and `MaxUnpooling2D`, in files made here: TFLite's converter writes a
MAX_POOL_2D, an AVERAGE_POOL_2D of the same size (a stand-in for the index) and a nearest resize back up, and the
flatbuffer object API rewrites them into MediaPipe's pair as its models hold it (TfLitePoolParams as the
options, the index a second output of the pool, the unpooling reading it). Every target is compared with
MediaPipe's kernels: TFLite's interpreter runs them (its XNNPACK delegate, as MediaPipe does) for the max and
the unpooled output, and `_kernels` below, a line-by-line transcription of max_pool_argmax.cc and
max_unpooling.cc, for all three (the delegate encodes the index its own way). Caffe refuses by name."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tf_convert import cli, emitters, parsers
from tf_convert.convert.passes import run_default_passes
from tf_convert.emitters.base import EmitOptions
from tf_convert.emitters.mxnet.runtime import run_many
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tflite.layout import TO_NCHW
from tf_convert.parsers.tflite.reference import _interpreter_class

# name -> (H, W, C, window, TfLiteFusedActivation, TfLitePadding, input values)
CASES = {"2x2_valid": (6, 8, 3, 2, 0, 2, "normal"), "3x3_same_relu6": (9, 6, 2, 3, 3, 1, "normal"),
         "2x2_ties": (4, 6, 4, 2, 1, 1, "ties"), "2x2_infinities": (4, 4, 2, 2, 0, 2, "infinities")}
_SCALE = np.float32(1.5)  # between the pool and the unpooling: a MUL


def _file(path: Path, h: int, w: int, c: int, block: int, activation: int, padding: int,
          stride: int | None = None) -> Path:
    import flatbuffers
    import tensorflow as tf
    from tensorflow.lite.python import schema_py_generated as schema

    @tf.function(input_signature=[tf.TensorSpec((1, h, w, c), tf.float32)])
    def fn(x):
        p = tf.nn.max_pool2d(x, block, block, "VALID")
        stand_in = tf.nn.avg_pool2d(x, block, block, "VALID")
        return p, stand_in, tf.image.resize(p * _SCALE, (h // block * block, w // block * block), "nearest")

    raw = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn).convert()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(raw, 0))
    graph = model.subgraphs[0]
    ops = schema.BuiltinOperator
    (pool,), (stand_in,), (resize,) = ([o for o in graph.operators if model.operatorCodes[o.opcodeIndex].builtinCode
                                        == code] for code in (ops.MAX_POOL_2D, ops.AVERAGE_POOL_2D,
                                                              ops.RESIZE_NEAREST_NEIGHBOR))
    options = list(struct.pack("<10i", padding, stride or block, stride or block, block, block, activation,
                               0, 0, 0, 0))
    for op, name, inputs, outputs in ((pool, "MaxPoolingWithArgmax2D", pool.inputs, [pool.outputs[0],
                                                                                     stand_in.outputs[0]]),
                                      (resize, "MaxUnpooling2D", [resize.inputs[0], stand_in.outputs[0]],
                                       resize.outputs)):
        code = schema.OperatorCodeT()
        code.builtinCode = code.deprecatedBuiltinCode = ops.CUSTOM
        code.customCode, code.version = name, 1
        model.operatorCodes.append(code)
        op.opcodeIndex = len(model.operatorCodes) - 1
        op.inputs, op.outputs = list(inputs), list(outputs)
        op.builtinOptionsType, op.builtinOptions, op.customOptions = 0, None, options
    graph.operators.remove(stand_in)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path.write_bytes(bytes(builder.Output()))
    return path


def _input(h: int, w: int, c: int, kind: str) -> np.ndarray:
    rng = np.random.default_rng(h * 7 + w)
    x = rng.standard_normal((1, h, w, c)).astype(np.float32)
    if kind == "ties":  # equal values inside a window: the first in row-major order wins
        x = np.round(x).astype(np.float32)
    if kind == "infinities":  # clamped to the finite floats (the activation range of none)
        x[0, 0, 0, 0], x[0, 2, 3, 1] = np.inf, -np.inf
    return x


def _kernels(x: np.ndarray, block: int, activation: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """max_pool_argmax.cc's MaxPoolArgmax and max_unpooling.cc's MaxUnpooling, NHWC, for tiling windows
    (no padding), the unpooling fed the max times _SCALE; the max clamped to the activation's range as
    XNNPACK does (infinities kept, where the reference kernel clamps them to +-FLT_MAX)."""
    n, h, w, c = x.shape
    low, high = {1: (0, np.inf), 2: (-1, 1), 3: (0, 6)}.get(activation, (-np.inf, np.inf))  # none: XNNPACK's
    pooled = np.zeros((n, h // block, w // block, c), np.float32)
    index = np.zeros_like(pooled)
    for b, oy, ox, ch in np.ndindex(pooled.shape):
        best, best_y, best_x = np.finfo(np.float32).min, 0, 0
        for fy in range(block):
            for fx in range(block):
                value = x[b, oy * block + fy, ox * block + fx, ch]
                if value > best:
                    best, best_y, best_x = value, fy, fx
        pooled[b, oy, ox, ch] = min(max(best, low), high)
        index[b, oy, ox, ch] = np.float32(best_y * block + best_x) + np.float32(0.1)
    unpooled = np.zeros((n, pooled.shape[1] * block, pooled.shape[2] * block, c), np.float32)
    for b, y, xx, ch in np.ndindex(pooled.shape):
        place = int(index[b, y, xx, ch])
        with np.errstate(over="ignore"):  # FLT_MAX * 1.5: inf, as the MUL gives it
            unpooled[b, y * block + place // block, xx * block + place % block, ch] = pooled[b, y, xx, ch] * _SCALE
    return pooled, index, unpooled


def _interpreter(path: Path, x: np.ndarray) -> list[np.ndarray]:
    it = _interpreter_class()(model_path=str(path), num_threads=1)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict[str, dict[str, object]]:
    work = tmp_path_factory.mktemp("mediapipe_pooling")
    found: dict[str, dict[str, object]] = {}
    jobs = []
    for name, (h, w, c, block, activation, padding, kind) in CASES.items():
        path = _file(work / f"{name}.tflite", h, w, c, block, activation, padding)
        x = _input(h, w, c, kind)
        want = _kernels(x, block, activation)
        try:
            interpreter = _interpreter(path, x)
        except RuntimeError:  # XNNPACK takes no fused activation; the interpreter has no kernel of its own
            interpreter = None
        graph = run_default_passes(parsers.parse(path, ParseOptions()))
        order = [graph.source_names.get(t, t) for t in graph.outputs]  # the outputs' names in the file
        expected = [_by_name(want, source) for source in order]
        found[name] = {"interpreter": None if interpreter is None else _interpreter_agrees(want, interpreter)}
        for target in emitters.TARGETS:
            out = work / name / target
            out.mkdir(parents=True)
            refused = emitters.get(target).unsupported(graph, None)
            if refused:
                found[name][target] = "; ".join(f"{u.op}: {u.hint}" for u in refused)
                continue
            emitters.get(target).emit(graph, out, EmitOptions())
            x_nchw = np.ascontiguousarray(x.transpose(TO_NCHW))
            if target == "mxnet":
                jobs.append((name, out, x_nchw, expected))
                continue
            found[name][target] = _errors(emitters.get(target).run(out, [x_nchw]), expected)
    for (name, _, _, expected), got in zip(jobs, run_many([(o, [x]) for _, o, x, _ in jobs])):
        found[name]["mxnet"] = _errors(got, expected)
    return found


def _by_name(want, source: str) -> np.ndarray:
    """The expected NCHW value of the file's output `source` (Identity: max, Identity_1: index, _2: unpooled)."""
    k = {"Identity": 0, "Identity_1": 1, "Identity_2": 2}[source.split(":")[0]]
    return want[k].transpose(TO_NCHW)


def _interpreter_agrees(want, interpreter) -> bool:
    """The interpreter's max and unpooled output are MediaPipe's kernels' (its index is XNNPACK's own)."""
    return bool(np.array_equal(interpreter[0], want[0]) and np.array_equal(interpreter[2], want[2]))


def _errors(got, expected) -> float:
    worst = 0.0
    for g, e in zip(got, expected):
        g = np.asarray(g)
        assert g.shape == e.shape, (g.shape, e.shape)
        with np.errstate(invalid="ignore"):  # inf - inf where both are inf: equal, error 0
            diff = np.where(g == e, 0.0, np.abs(g.astype(np.float64) - e))
        worst = max(worst, float(np.nan_to_num(diff, nan=np.inf).max()))
    return worst


@pytest.mark.parametrize("name", list(CASES))
def test_pooling_pair_matches_mediapipes_kernels(measured, name):
    found = measured[name]
    print(name, found)
    # TFLite's interpreter runs MediaPipe's pair only through XNNPACK, which takes no fused activation
    assert found["interpreter"] is (None if CASES[name][4] else True), found["interpreter"]
    for target in ("torch", "onnx", "mxnet"):
        assert found[target] == 0.0, (target, found)
    assert "argmax: Caffe blobs are float32" in found["caffe"], found["caffe"]


@pytest.mark.parametrize("case, said", [((6, 6, 2, 3, 0, 1, 2), "filter == stride"),
                                        ((7, 6, 2, 2, 0, 1, None), "multiple of the window")])
def test_windows_that_do_not_tile_are_refused_by_name(case, said, tmp_path):
    *shape, stride = case
    path = _file(tmp_path / "m.tflite", *shape, stride=stride)
    result = CliRunner().invoke(cli.main, ["tf2onnx", str(path), "-o", str(tmp_path / "out")])
    assert result.exit_code == 3, result.output
    assert "MaxPoolingWithArgmax2D" in result.output and said in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_cli_verify_against_tflites_interpreter(tmp_path):
    """--verify: the interpreter (XNNPACK's MediaPipe kernels) gives the max and the unpooled output, and so
    does every tensor `verify --layers` compares; the index, which XNNPACK encodes its own way, is refused as
    an output to check (exit 2, naming it and --outputs) and left out of the per-layer diff."""
    h, w, c, block, activation, padding, _ = CASES["2x2_valid"]
    path = _file(tmp_path / "m.tflite", h, w, c, block, activation, padding)
    refused = CliRunner().invoke(cli.main, ["tf2torch", str(path), "-o", str(tmp_path / "all"), "--verify"])
    assert refused.exit_code == 2 and "'Identity_1'" in refused.output and "--outputs" in refused.output, \
        refused.output
    assert not (tmp_path / "all").exists()
    out = str(tmp_path / "out")
    result = CliRunner().invoke(cli.main, ["tf2torch", str(path), "-o", out, "--verify", "--outputs",
                                           "Identity,Identity_2"])
    assert result.exit_code == 0, result.output
    layers = CliRunner().invoke(cli.main, ["verify", out, "--layers"])
    assert layers.exit_code == 0 and "no divergence" in layers.output, layers.output
