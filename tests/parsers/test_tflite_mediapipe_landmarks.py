"""MediaPipe's `Landmarks2TransformMatrix` and `TransformLandmarks` (version 2), in files made here: TFLite's
converter writes a RESHAPE to (1, 4, 4) and an ADD of the landmarks' shape, and the flatbuffer object API
rewrites them into MediaPipe's operators (the first reading the landmarks, with a flexbuffer map of options;
the second reading scaled landmarks and the matrix). TFLite's interpreter has no kernel for them (only
MediaPipe's resolver and its GPU delegate do), so every target is compared with `_kernels` below, a
line-by-line float32 transcription of landmarks_to_transform_matrix.cc and transform_landmarks.cc."""

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

COUNT = 12  # landmarks
OPTIONS = {"subset_idxs": [0, 3, 5, 7, 9], "left_rotation_idx": 2, "right_rotation_idx": 6,
           "target_rotation_radians": 0.25, "output_height": 24, "output_width": 32, "scale_x": 1.5,
           "scale_y": 1.25}
_SCALE = np.float32(1.5)
RTOL = 1e-6  # cos, sin and atan2 are each runtime's own: float32 rounding apart


def _file(path: Path, options: dict = OPTIONS, rank: int = 3) -> Path:
    import flatbuffers
    import tensorflow as tf
    from flatbuffers import flexbuffers
    from tensorflow.lite.python import schema_py_generated as schema

    shape = (1, COUNT, 3) if rank == 3 else (1, 1, 1, COUNT * 3)

    @tf.function(input_signature=[tf.TensorSpec(shape, tf.float32)])
    def fn(x):
        matrix = tf.reshape(tf.slice(tf.reshape(x, (1, 3 * COUNT)), [0, 0], [1, 16]), (1, 4, 4))
        stand_in = tf.add(x * _SCALE, tf.reduce_mean(matrix))
        return matrix, stand_in

    raw = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn).convert()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(raw, 0))
    graph = model.subgraphs[0]
    ops = schema.BuiltinOperator
    code_of = {id(o): model.operatorCodes[o.opcodeIndex].builtinCode for o in graph.operators}
    x = graph.inputs[0]
    matrix_op = next(o for o in graph.operators if code_of[id(o)] == ops.RESHAPE
                     and list(graph.tensors[o.outputs[0]].shape) == [1, 4, 4])
    add_op = next(o for o in graph.operators if code_of[id(o)] == ops.ADD)
    scaled = next(i for i in add_op.inputs if list(graph.tensors[i].shape) == list(shape))
    for op, name, inputs, options_bytes in (
            (matrix_op, "Landmarks2TransformMatrix", [x], bytes(flexbuffers.Dumps(options))),
            (add_op, "TransformLandmarks", [scaled, matrix_op.outputs[0]], b"")):
        code = schema.OperatorCodeT()
        code.builtinCode = code.deprecatedBuiltinCode = ops.CUSTOM
        code.customCode, code.version = name, 2
        model.operatorCodes.append(code)
        op.opcodeIndex = len(model.operatorCodes) - 1
        op.inputs = list(inputs)
        op.builtinOptionsType, op.builtinOptions, op.customOptions = 0, None, list(options_bytes)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path.write_bytes(bytes(builder.Output()))
    return path


def _kernels(x: np.ndarray, options: dict = OPTIONS) -> tuple[np.ndarray, np.ndarray]:
    """LandmarksToTransformMatrixV2 (EstimateRotationRadians, EstimateCenterAndSize, the Mat4 products) and
    TransformLandmarksV2 (fed the landmarks times _SCALE), in float32, in the kernels' order."""
    f = np.float32
    lm = x.reshape(-1, 3)
    left, right = lm[options["left_rotation_idx"]], lm[options["right_rotation_idx"]]
    rotation = f(options["target_rotation_radians"]) - np.arctan2(right[1] - left[1], right[0] - left[0])
    idx = list(options["subset_idxs"]) + ([options["subset_idxs"][-1]] if len(options["subset_idxs"]) % 2 else [])
    c, s = np.cos(rotation), np.sin(rotation)
    pts = [(c * lm[i][0] + (-s) * lm[i][1], s * lm[i][0] + c * lm[i][1]) for i in idx]
    xs, ys = np.array([p[0] for p in pts], f), np.array([p[1] for p in pts], f)
    width, height = xs.max() - xs.min(), ys.max() - ys.min()
    mx, my = (xs.min() + xs.max()) / f(2), (ys.min() + ys.max()) / f(2)
    cb, sb = np.cos(-rotation), np.sin(-rotation)
    crop_x, crop_y = cb * mx + (-sb) * my, sb * mx + cb * my
    ct, st = np.cos(-rotation), np.sin(-rotation)
    sx = f(options["scale_x"]) * width / f(options["output_width"])
    sy = f(options["scale_y"]) * height / f(options["output_height"])
    a, b, cc, d = ct * sx, (-st) * sy, st * sx, ct * sy
    hx, hy = f(-(options["output_width"] / 2.0)), f(-(options["output_height"] / 2.0))
    matrix = np.array([[a, b, 0, (a * hx + b * hy) + crop_x], [cc, d, 0, (cc * hx + d * hy) + crop_y],
                       [0, 0, 1, 0], [0, 0, 0, 1]], f).reshape(1, 4, 4)
    m = matrix.reshape(-1)
    scaled = x.reshape(-1, 3) * _SCALE
    out = scaled.copy()
    out[:, 0] = m[0] * scaled[:, 0] + m[1] * scaled[:, 1] + m[2] * f(0) + m[3]
    out[:, 1] = m[4] * scaled[:, 0] + m[5] * scaled[:, 1] + m[6] * f(0) + m[7]
    return matrix, out.reshape(x.shape)


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict[str, object]:
    work = tmp_path_factory.mktemp("mediapipe_landmarks")
    path = _file(work / "landmarks.tflite")
    graph = run_default_passes(parsers.parse(path, ParseOptions()))
    x = np.random.default_rng(5).uniform(0, 192, (1, COUNT, 3)).astype(np.float32)
    expected = _kernels(x)
    found: dict[str, object] = {}
    for target in emitters.TARGETS:
        refused = emitters.get(target).unsupported(graph, None)
        if refused:
            found[target] = "; ".join(f"{u.op}: {u.hint}" for u in refused)
            continue
        out = work / target
        out.mkdir()
        emitters.get(target).emit(graph, out, EmitOptions())
        got = run_many([(out, [x])])[0] if target == "mxnet" else emitters.get(target).run(out, [x])
        found[target] = max(_rel(g, e) for g, e in zip(got, expected))
    return found


def _rel(got, want) -> float:
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.max(np.abs(got.astype(np.float64) - want)) / np.max(np.abs(want)))


@pytest.mark.parametrize("target", ["torch", "onnx", "mxnet"])
def test_landmark_operators_match_mediapipes_kernels(measured, target):
    print(target, measured[target])
    assert isinstance(measured[target], float) and measured[target] < RTOL, measured[target]


def test_caffe_refuses_them(measured):
    assert "trigonometric" in str(measured["caffe"]), measured["caffe"]


@pytest.mark.parametrize("change, said", [({"rank": 4}, "version 1"),
                                          ({"options": {"subset_idxs": [0, 1]}}, "flexbuffer map"),
                                          ({"options": dict(OPTIONS, right_rotation_idx=COUNT)}, "indices")])
def test_what_is_not_converted_is_refused_by_name(change, said, tmp_path):
    path = _file(tmp_path / "m.tflite", change.get("options", OPTIONS), change.get("rank", 3))
    result = CliRunner().invoke(cli.main, ["tf2onnx", str(path), "-o", str(tmp_path / "out")])
    assert result.exit_code == 3, result.output
    assert "Landmarks2TransformMatrix" in result.output and said in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_verify_is_refused_without_an_interpreter_kernel(tmp_path):
    result = CliRunner().invoke(cli.main, ["tf2onnx", str(_file(tmp_path / "m.tflite")), "-o",
                                           str(tmp_path / "out"), "--verify"])
    assert result.exit_code == 2 and "Landmarks2TransformMatrix" in result.output, result.output
