"""convert.sampling: TF's resize grid (rules.py) read back from TF itself on a sweep of sizes, the
runtimes' nearest grids the plans rely on read back from torch and onnxruntime, and the plans'
choices per target."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

from tf_convert import emitters
from tf_convert.convert.sampling import (
    COORDINATES,
    SamplingError,
    integer_factor,
    linear_taps,
    nearest_indices,
    onnxruntime_nearest_indices,
    plan_resize,
    tf_coordinate,
    torch_nearest_indices,
)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

SIZES = list(itertools.product(range(1, 13), [1, 2, 3, 5, 7, 8, 11, 16, 23, 24, 41]))
FLAGS = {"asymmetric": (False, False), "half_pixel": (False, True), "align_corners": (True, False)}


def _tf_resize_1d(tf, mode: str, coordinate: str, values: np.ndarray, out: int) -> np.ndarray:
    """TF's resize of a 1-D signal laid along H."""
    align, half = FLAGS[coordinate]
    fn = tf.raw_ops.ResizeBilinear if mode == "bilinear" else tf.raw_ops.ResizeNearestNeighbor
    y = fn(images=values.reshape(1, -1, 1, 1), size=[out, 1], align_corners=align, half_pixel_centers=half)
    return y.numpy().reshape(-1)


@pytest.mark.parametrize("coordinate", COORDINATES)
def test_nearest_indices_are_tf_indices(coordinate):
    tf = pytest.importorskip("tensorflow")
    for n, out in SIZES:
        got = _tf_resize_1d(tf, "nearest", coordinate, np.arange(n, dtype=np.float32), out)
        assert np.array_equal(got.astype(np.int64), nearest_indices(n, out, coordinate)), (n, out)


@pytest.mark.parametrize("coordinate", COORDINATES)
def test_linear_taps_are_tf_weights(coordinate):
    """On a signal whose values are their indices TF returns lo + (hi - lo) * w: the same float32."""
    tf = pytest.importorskip("tensorflow")
    for n, out in SIZES:
        lo, hi, w = linear_taps(n, out, coordinate)
        expected = lo.astype(np.float32) + (hi - lo).astype(np.float32) * w
        got = _tf_resize_1d(tf, "bilinear", coordinate, np.arange(n, dtype=np.float32), out)
        assert np.array_equal(got, expected), (n, out)
        assert (w >= 0).all() and (w <= 1).all() and (lo >= 0).all() and (hi < n).all()  # w == 1 only where lo == hi


@pytest.mark.parametrize("coordinate", ["asymmetric", "half_pixel"])
def test_torch_nearest_grid(coordinate):
    torch = pytest.importorskip("torch")
    mode = {"asymmetric": "nearest", "half_pixel": "nearest-exact"}[coordinate]
    for n, out in SIZES:
        x = torch.arange(n, dtype=torch.float32).reshape(1, 1, n, 1)
        got = torch.nn.functional.interpolate(x, size=(out, 1), mode=mode).reshape(-1).long().numpy()
        assert np.array_equal(got, torch_nearest_indices(n, out, coordinate)), (n, out)


@pytest.mark.parametrize("coordinate", COORDINATES)
def test_onnxruntime_nearest_grid(coordinate):
    """The grid plan_resize predicts for onnxruntime is what it computes (where it differs from TF's,
    the ONNX emitter gathers instead)."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    ctm, rounding = {"asymmetric": ("asymmetric", "floor"), "half_pixel": ("half_pixel", "round_prefer_ceil"),
                     "align_corners": ("align_corners", "round_prefer_ceil")}[coordinate]
    differs = 0
    for n, out in SIZES + [(2, 41), (2, 82), (2, 83)]:  # the first sizes where TF and onnxruntime part
        sizes = numpy_helper.from_array(np.array([1, 1, out, 1], np.int64), "sizes")
        node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest",
                                coordinate_transformation_mode=ctm, nearest_mode=rounding)
        graph = helper.make_graph([node], "r", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, n, 1])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [sizes])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        got = session.run(None, {"x": np.arange(n, dtype=np.float32).reshape(1, 1, n, 1)})[0].reshape(-1)
        assert np.array_equal(got.astype(np.int64), onnxruntime_nearest_indices(n, out, coordinate)), (n, out)
        differs += not np.array_equal(got.astype(np.int64), nearest_indices(n, out, coordinate))
    assert differs  # the reason the ONNX plan checks at all


def test_integer_factor_is_repetition():
    assert integer_factor(4, 8, "nearest", "half_pixel") == 2
    assert integer_factor(4, 12, "nearest", "asymmetric") == 3
    assert integer_factor(4, 12, "nearest", "align_corners") is None  # (4 -> 8 happens to repeat)
    assert integer_factor(4, 8, "bilinear", "half_pixel") is None
    assert integer_factor(5, 5, "bilinear", "align_corners") == 1
    assert integer_factor(4, 6, "nearest", "asymmetric") is None


def test_tf_flags():
    assert tf_coordinate(False, False) == "asymmetric"
    assert tf_coordinate(False, True) == "half_pixel"
    assert tf_coordinate(True, False) == "align_corners"
    with pytest.raises(SamplingError):
        tf_coordinate(True, True)


# target -> (mode, coordinate) -> the plan kind at 5x7 -> 13x9 (non-integer) and 4x4 -> 8x8
PLAN_KINDS = {
    "torch": {("bilinear", "asymmetric"): "gather", ("bilinear", "half_pixel"): "gather",
              ("bilinear", "align_corners"): "native", ("nearest", "asymmetric"): "native",
              ("nearest", "half_pixel"): "native", ("nearest", "align_corners"): "gather"},
    "onnx": {**{("bilinear", c): "gather" for c in COORDINATES}, **{("nearest", c): "native" for c in COORDINATES}},
    "mxnet": {(m, c): "gather" for m in ("bilinear", "nearest") for c in COORDINATES},
    "caffe": {(m, c): "unsupported" for m in ("bilinear", "nearest") for c in COORDINATES},
}


@pytest.mark.parametrize("target", emitters.TARGETS)
def test_plan_kinds(target):
    for (mode, coordinate), kind in PLAN_KINDS[target].items():
        assert plan_resize(target, mode, coordinate, (5, 7), (13, 9)).kind == kind, (mode, coordinate)
    assert plan_resize(target, "nearest", "half_pixel", (4, 4), (8, 8)).kind in ("native", "repeat")
    doubled = plan_resize(target, "bilinear", "half_pixel", (4, 4), (8, 8))
    assert doubled.kind != "unsupported" and (doubled.kind == "deconv") == (target == "caffe")
    refused = plan_resize(target, "bilinear", "half_pixel", (5, 7), (13, 9))
    assert (refused.kind == "unsupported") == (target == "caffe") and (refused.reason or target != "caffe")


def test_integer_upscales_follow_the_runtime_size_in_torch_and_onnx():
    for target in ("torch", "onnx"):
        for mode in ("bilinear", "nearest"):
            plan = plan_resize(target, mode, "half_pixel", (5, 7), (10, 28))
            assert plan.factors == (2, 4) and not plan.size_bound
            assert plan_resize(target, mode, "align_corners", (5, 7), (10, 28)).size_bound
            assert plan_resize(target, mode, "half_pixel", (5, 7), (9, 28)).size_bound
            assert plan_resize(target, mode, "half_pixel", (5, 7), (15, 28)).size_bound  # x3: 1/3 is inexact
    assert plan_resize("mxnet", "nearest", "half_pixel", (5, 7), (10, 28)).size_bound  # static formats
