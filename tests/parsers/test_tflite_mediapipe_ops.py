"""MediaPipe's custom operator `Convolution2DTransposeBias`, in files made here: TFLite's converter writes a
TRANSPOSE_CONV with a bias, and the flatbuffer object API rewrites it into the custom operator as MediaPipe's
models hold it (inputs x, filter, bias; a TfLiteTransposeConvParams struct as its options; the output size
MediaPipe's kernel gives). Every target is compared with TF computing the same thing: the full transposed
convolution, cropped where MediaPipe's kernel crops it, plus the bias."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest

from tf_convert import emitters, parsers
from tf_convert.convert.passes import run_default_passes
from tf_convert.emitters.base import EmitOptions
from tf_convert.emitters.mxnet.runtime import run_many
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tflite.layout import TO_NCHW
from tf_convert.parsers.tflite.mediapipe import transpose_conv_bias_size

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# (input H, W, kernel, stride, padding): odd and even sizes, where MediaPipe's SAME differs from TF's and not
CASES = {"same_odd": (7, 5, 3, 2, "SAME"), "same_even_k4": (6, 8, 4, 2, "SAME"), "valid": (5, 6, 3, 2, "VALID"),
         "same_stride3": (5, 7, 4, 3, "SAME")}
TARGETS = emitters.TARGETS
_SCHEMA_PADDING = {"SAME": 1, "VALID": 2}


def _weights(kernel: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((kernel, kernel, 4, 3)).astype(np.float32) * 0.3,  # TF's (H, W, out, in)
            rng.standard_normal(4).astype(np.float32))


def _file(path: Path, h: int, w: int, kernel: int, stride: int, padding: str) -> Path:
    """A TRANSPOSE_CONV + bias written by TFLite's converter, rewritten into MediaPipe's custom operator."""
    import flatbuffers
    import tensorflow as tf
    from tensorflow.lite.python import schema_py_generated as schema

    filt, bias = _weights(kernel, seed=h * 31 + w)
    full = ((h - 1) * stride + kernel, (w - 1) * stride + kernel)

    @tf.function(input_signature=[tf.TensorSpec((1, h, w, 3), tf.float32)])
    def fn(x):
        y = tf.nn.conv2d_transpose(x, filt, (1, *full, 4), stride, "VALID")
        return tf.nn.bias_add(y, bias)

    raw = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn).convert()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(raw, 0))
    graph = model.subgraphs[0]
    (op,) = [o for o in graph.operators if model.operatorCodes[o.opcodeIndex].builtinCode
             == schema.BuiltinOperator.TRANSPOSE_CONV]
    assert len(op.inputs) == 4 and op.inputs[3] >= 0, "the converter fused the bias into TRANSPOSE_CONV"
    code = schema.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = schema.BuiltinOperator.CUSTOM
    code.customCode, code.version = "Convolution2DTransposeBias", 1
    model.operatorCodes.append(code)
    op.opcodeIndex = len(model.operatorCodes) - 1
    op.inputs = [op.inputs[2], op.inputs[1], op.inputs[3]]
    op.builtinOptionsType, op.builtinOptions = 0, None
    op.customOptions = list(struct.pack("<3i", _SCHEMA_PADDING[padding], stride, stride))
    (oh, _), (ow, _) = (transpose_conv_bias_size(n, kernel, stride, padding) for n in (h, w))
    out = graph.tensors[op.outputs[0]]
    out.shape = out.shapeSignature = [1, oh, ow, 4]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path.write_bytes(bytes(builder.Output()))
    return path


def _expected(x_nhwc: np.ndarray, h: int, w: int, kernel: int, stride: int, padding: str) -> np.ndarray:
    """TF: the full transposed conv, cropped as MediaPipe's kernel crops it, plus the bias; NCHW."""
    import tensorflow as tf

    filt, bias = _weights(kernel, seed=h * 31 + w)
    full = ((h - 1) * stride + kernel, (w - 1) * stride + kernel)
    y = tf.nn.conv2d_transpose(x_nhwc, filt, (x_nhwc.shape[0], *full, 4), stride, "VALID").numpy()
    (oh, top), (ow, left) = (transpose_conv_bias_size(n, kernel, stride, padding) for n in (h, w))
    return (y[:, top:top + oh, left:left + ow, :] + bias).transpose(TO_NCHW)


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict[str, dict[str, float]]:
    work = tmp_path_factory.mktemp("mediapipe_ops")
    found: dict[str, dict[str, float]] = {}
    jobs = []
    for name, case in CASES.items():
        path = _file(work / f"{name}.tflite", *case)
        graph = run_default_passes(parsers.parse(path, ParseOptions()))
        x = np.random.default_rng(1).standard_normal((1, case[0], case[1], 3)).astype(np.float32)
        want = _expected(x, *case)
        found[name] = {}
        for target in TARGETS:
            out = work / name / target
            out.mkdir(parents=True)
            emitters.get(target).emit(graph, out, EmitOptions())
            if target == "mxnet":
                jobs.append((name, out, x.transpose(0, 3, 1, 2), want))
                continue
            (got,) = emitters.get(target).run(out, [np.ascontiguousarray(x.transpose(0, 3, 1, 2))])
            found[name][target] = _error(got, want)
    for (name, _, _, want), (got,) in zip(jobs, run_many([(o, [np.ascontiguousarray(x)]) for _, o, x, _ in jobs])):
        found[name]["mxnet"] = _error(got, want)
    return found


def _error(got: np.ndarray, want: np.ndarray) -> float:
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.max(np.abs(got.astype(np.float64) - want))) / float(np.max(np.abs(want)))


@pytest.mark.parametrize("name", list(CASES))
def test_convolution_2d_transpose_bias_matches_tf(measured, name):
    print(name, {t: f"{e:.2e}" for t, e in measured[name].items()})
    assert set(measured[name]) == set(TARGETS) and all(e < 1e-6 for e in measured[name].values()), measured[name]


def test_cli_verify_runs_it_in_tflites_interpreter(tmp_path):
    """TF's TFLite interpreter resolves this custom operator itself: --verify compares with it."""
    from click.testing import CliRunner

    from tf_convert import cli

    path = _file(tmp_path / "same_odd.tflite", *CASES["same_odd"])
    result = CliRunner().invoke(cli.main, ["tf2onnx", str(path), "-o", str(tmp_path / "out"), "--verify"])
    assert result.exit_code == 0, result.output
