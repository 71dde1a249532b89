"""MediaPipe's `TransformTensorBilinear`, in files made here: TFLite's converter writes an ADD of a resized image
and a matrix's mean, and the flatbuffer object API rewrites it into MediaPipe's operator reading the image and
the matrix (both graph inputs), with a flexbuffer map of options (version 2's or version 1's keys). TFLite's
interpreter has no kernel for it, so every target is compared with `_kernel` below, a line-by-line
transcription of transform_tensor_bilinear.cc (its double arithmetic in float64), on matrices that read
inside, across the edges and outside the image: torch and ONNX to the bit; MXNet, whose symbols hold float64
as float32, within a float32 rounding."""

from __future__ import annotations

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

H, W, C, OUT_H, OUT_W = 9, 11, 3, 6, 7
V2 = {"output_height": OUT_H, "output_width": OUT_W}
V1 = {"output_size": [OUT_H, OUT_W], "mode": "bilinear"}


def _matrices() -> dict[str, np.ndarray]:
    angle = 0.3
    rotate = np.array([[np.cos(angle) * 1.3, -np.sin(angle) * 1.3, 0, 1.7],
                       [np.sin(angle) * 1.1, np.cos(angle) * 1.1, 0, -0.6], [0, 0, 1, 0], [0, 0, 0, 1]])
    exact = np.array([[1.5, 0, 0, 1.0], [0, 1.6, 0, -1.6], [0, 0, 1, 0], [0, 0, 0, 1]])  # v1: x on the last column
    return {"rotated": rotate.astype(np.float32)[None], "on_the_edge": exact.astype(np.float32)[None]}


def _file(path: Path, options: dict) -> Path:
    import flatbuffers
    import tensorflow as tf
    from flatbuffers import flexbuffers
    from tensorflow.lite.python import schema_py_generated as schema

    @tf.function(input_signature=[tf.TensorSpec((1, H, W, C), tf.float32), tf.TensorSpec((1, 4, 4), tf.float32)])
    def fn(image, matrix):
        return tf.image.resize(image, (OUT_H, OUT_W)) + tf.reduce_mean(matrix)

    raw = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn).convert()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(raw, 0))
    graph = model.subgraphs[0]
    ops = schema.BuiltinOperator
    add = next(o for o in graph.operators if model.operatorCodes[o.opcodeIndex].builtinCode == ops.ADD)
    image, matrix = sorted(graph.inputs, key=lambda i: len(graph.tensors[i].shape) != 4)
    code = schema.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = ops.CUSTOM
    code.customCode, code.version = "TransformTensorBilinear", 2 if "output_height" in options else 1
    model.operatorCodes.append(code)
    add.opcodeIndex = len(model.operatorCodes) - 1
    add.inputs = [image, matrix]
    add.builtinOptionsType, add.builtinOptions = 0, None
    add.customOptions = list(bytes(flexbuffers.Dumps(options)))
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path.write_bytes(bytes(builder.Output()))
    return path


def _kernel(image: np.ndarray, matrix: np.ndarray, align_corners: bool) -> np.ndarray:
    """TransformTensorBilinearV2 (align_corners) / TransformTensor (v1), NHWC."""
    f = np.float32
    m = matrix.reshape(-1).astype(f).copy()
    if align_corners:
        for k in (3, 7):
            m[k] = f(np.float64(m[k]) + (np.float64(m[k - 3]) * 0.5 + np.float64(m[k - 2]) * 0.5 - 0.5))
    out = np.zeros((1, OUT_H, OUT_W, C), f)

    def read(h, w, z):
        return f(0) if h < 0 or w < 0 or h >= H or w >= W else image[0, h, w, z]

    for oy in range(OUT_H):
        for ox in range(OUT_W):
            tx = m[0] * f(ox) + m[1] * f(oy) + m[2] * f(0) + m[3]
            ty = m[4] * f(ox) + m[5] * f(oy) + m[6] * f(0) + m[7]
            if tx < 0 or tx > W - 1 or ty < 0 or ty > H - 1:
                continue
            fx, fy = int(np.floor(tx)), int(np.floor(ty))
            right, lower = np.float64(tx - f(fx)), np.float64(ty - f(fy))
            for z in range(C):
                q11, q21, q12, q22 = (np.float64(read(fy + dy, fx + dx, z)) for dy, dx in ((0, 0), (0, 1), (1, 0),
                                                                                            (1, 1)))
                upper = f((1.0 - right) * q11 + right * q21)
                bottom = f((1.0 - right) * q12 + right * q22)
                out[0, oy, ox, z] = f(lower * np.float64(bottom) + (1.0 - lower) * np.float64(upper))
    return out


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict[tuple[str, str], dict[str, object]]:
    work = tmp_path_factory.mktemp("mediapipe_transform")
    image = np.random.default_rng(2).standard_normal((1, H, W, C)).astype(np.float32)
    found: dict[tuple[str, str], dict[str, object]] = {}
    jobs = []  # MXNet's runs, in one process
    for version, options in (("v2", V2), ("v1", V1)):
        path = _file(work / f"{version}.tflite", options)
        graph = run_default_passes(parsers.parse(path, ParseOptions()))
        order = [graph.source_names.get(t, t) for t in graph.inputs]
        for name, matrix in _matrices().items():
            want = _kernel(image, matrix, version == "v2").transpose(TO_NCHW)
            feeds = [np.ascontiguousarray(image.transpose(TO_NCHW)) if len(v) == 4 else matrix
                     for v in (graph.shape(t) for t in graph.inputs)]
            cell = found[version, name] = {"inputs": order}
            for target in emitters.TARGETS:
                refused = emitters.get(target).unsupported(graph, None)
                if refused:
                    cell[target] = "; ".join(f"{u.op}: {u.hint}" for u in refused)
                    continue
                out = work / version / name / target
                out.mkdir(parents=True)
                emitters.get(target).emit(graph, out, EmitOptions())
                if target == "mxnet":
                    jobs.append((cell, out, feeds, want))
                    continue
                cell[target] = _error(emitters.get(target).run(out, feeds)[0], want)
            cell["read_inside"] = int(np.count_nonzero(want))
    for (cell, _, _, want), got in zip(jobs, run_many([(out, feeds) for _, out, feeds, _ in jobs])):
        cell["mxnet"] = _error(got[0], want)
    return found


def _error(got, want: np.ndarray) -> float:
    got = np.asarray(got, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.max(np.abs(got - want)))


@pytest.mark.parametrize("case", [(v, m) for v in ("v2", "v1") for m in _matrices()])
def test_transform_tensor_bilinear_matches_mediapipes_kernel(measured, case):
    cell = measured[case]
    print(case, {k: v for k, v in cell.items() if k != "caffe"})
    assert 0 < cell["read_inside"] < OUT_H * OUT_W * C  # some pixels inside, some outside
    for target in ("torch", "onnx"):
        assert cell[target] == 0.0, (target, cell)
    # MXNet's symbols would hold the kernel's float64 mix as float32 (a second rounding): refused, naming the dtype
    assert "float64" in cell["mxnet"], cell["mxnet"]
    assert "gather" in cell["caffe"], cell["caffe"]


def test_other_options_are_refused_by_name(tmp_path):
    path = _file(tmp_path / "m.tflite", {"output_size": [OUT_H, OUT_W], "mode": "nearest"})
    result = CliRunner().invoke(cli.main, ["tf2onnx", str(path), "-o", str(tmp_path / "out")])
    assert result.exit_code == 3, result.output
    assert "TransformTensorBilinear" in result.output and "flexbuffer map" in result.output, result.output
