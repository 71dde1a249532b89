"""One small TF sample per (TF op, dtype/attribute variant): the op-breadth tests run each through every
target against TF, and scripts/op_table.py derives docs/ops.md's op x target table from them.

All samples live in one TF graph fed by the named inputs of FEEDS (values drawn in each op's domain);
sample `case` is the graph output `out_<case>`. Random attributes (axes, exclusive/reverse, k) are drawn
from a fixed seed, so the graph is the same on every run.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

SHAPE = (2, 3, 4, 5)


def _halves(rng: np.random.Generator, shape) -> np.ndarray:
    """Values in (-3, 3), a third of them exact halves (rounding ties) and a few exact zeros."""
    x = rng.uniform(-3, 3, shape)
    ties = rng.random(shape) < 0.33
    x[ties] = rng.integers(-6, 7, int(ties.sum())) + 0.5
    x[rng.random(shape) < 0.05] = 0.0
    return x.astype(np.float32)


def _away_from_zero(rng: np.random.Generator, shape) -> np.ndarray:
    return (rng.uniform(0.5, 3, shape) * rng.choice([-1, 1], shape)).astype(np.float32)


def _specials(rng: np.random.Generator, shape) -> np.ndarray:
    x = rng.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[::7], flat[1::11], flat[2::13] = np.nan, np.inf, -np.inf
    return x


def _nonzero_ints(rng: np.random.Generator, shape) -> np.ndarray:
    return (rng.integers(1, 7, shape) * rng.choice([-1, 1], shape)).astype(np.int32)


def _near(rng: np.random.Generator, shape) -> np.ndarray:
    """Like `x` (same seed) where a coin says so: comparisons see equal values."""
    x = _halves(np.random.default_rng(1), shape)
    return np.where(rng.random(shape) < 0.5, x, _halves(rng, shape)).astype(np.float32)


# input name -> (TF dtype, shape, values(rng, shape)); every draw has its own fixed seed
FEEDS: dict[str, tuple[str, tuple[int, ...], Callable[[np.random.Generator, tuple], np.ndarray]]] = {
    "x": ("float32", SHAPE, _halves),
    "xr": ("float32", SHAPE, _near),
    "y": ("float32", SHAPE[1:], _away_from_zero),
    "d": ("float32", SHAPE, _away_from_zero),
    "z": ("float32", SHAPE[1:], lambda r, s: np.where(r.random(s) < 0.3, 0, _away_from_zero(r, s)).astype(np.float32)),
    "p": ("float32", SHAPE, lambda r, s: r.uniform(0.2, 4, s).astype(np.float32)),
    "u": ("float32", SHAPE, lambda r, s: r.uniform(-0.9, 0.9, s).astype(np.float32)),
    "g": ("float32", SHAPE, lambda r, s: r.uniform(1.1, 4, s).astype(np.float32)),
    "w": ("float32", SHAPE, _specials),
    "img": ("float32", (1, 6, 6, 3), lambda r, s: r.standard_normal(s).astype(np.float32)),
    "vol": ("float32", (1, 5, 7, 6, 2), lambda r, s: r.standard_normal(s).astype(np.float32)),  # NDHWC, odd sizes
    "i": ("int32", SHAPE, lambda r, s: r.integers(-20, 21, s).astype(np.int32)),
    "j": ("int32", SHAPE[2:], _nonzero_ints),
    "k": ("int64", SHAPE, lambda r, s: r.integers(0, 10, s).astype(np.int64)),
    "m": ("bool", SHAPE, lambda r, s: r.random(s) < 0.5),
    "n": ("bool", SHAPE[2:], lambda r, s: r.random(s) < 0.5),
    "v": ("bool", SHAPE[:1], lambda r, s: np.array([True, False])),
}


def feed_values() -> dict[str, np.ndarray]:
    return {name: fn(np.random.default_rng(seed + 1), shape)
            for seed, (name, (_, shape, fn)) in enumerate(FEEDS.items())}


@dataclass(frozen=True)
class Sample:
    op: str  # the TF op type the sample is about
    case: str  # unique id; the graph output is out_<case>
    build: Callable[[Any, dict[str, Any]], Any]  # (tf, placeholders) -> the sample's tensor
    legacy: bool = False  # an op TF removed from current GraphDefs: built and run in a graph of its era


def raw(tf: Any, op: str, *tensors: Any, **attrs: Any) -> Any:
    """tf.raw_ops.<op> with its tensor arguments given in order."""
    fn = getattr(tf.raw_ops, op)
    names = [p for p in inspect.signature(fn).parameters if p != "name"]
    return fn(**dict(zip(names, tensors)), **attrs)


def _rng(case: str) -> np.random.Generator:
    return np.random.default_rng(sum(map(ord, case)))


SAMPLES: list[Sample] = []


def sample(op: str, case: str, build: Callable[[Any, dict[str, Any]], Any]) -> None:
    SAMPLES.append(Sample(op, case, build))


def _unary(op: str, feed: str = "x", case: str = "") -> None:
    sample(op, case or op, lambda tf, t: raw(tf, op, t[feed]))


def _binary(op: str, a: str = "x", b: str = "y", case: str = "") -> None:
    sample(op, case or op, lambda tf, t: raw(tf, op, t[a], t[b]))


# ---- elementwise -------------------------------------------------------------------------------------
DOMAIN = {"Log": "p", "Log1p": "p", "Sqrt": "p", "Rsqrt": "p", "Reciprocal": "p", "Inv": "p", "Asin": "u",
          "Acos": "u", "Atanh": "u", "Tan": "u", "Acosh": "g", "IsNan": "w", "IsInf": "w", "IsFinite": "w",
          "LogicalNot": "m"}
for _op in ("Softplus", "Softsign", "Selu", "Erf", "Erfc", "Floor", "Ceil", "Round", "Rint", "Sign", "Log",
            "Log1p", "Expm1", "Reciprocal", "Inv", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh",
            "Asinh", "Acosh", "Atanh", "IsNan", "IsInf", "IsFinite", "LogicalNot", "Relu", "Relu6", "Elu",
            "Sigmoid", "Tanh", "Exp", "Sqrt", "Rsqrt", "Square", "Neg"):
    _unary(_op, DOMAIN.get(_op, "x"))
_unary("Abs", "x")
_unary("Abs", "i", "Abs_int32")
sample("LeakyRelu", "LeakyRelu", lambda tf, t: raw(tf, "LeakyRelu", t["x"], alpha=0.3))
for _op in ("Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "Maximum", "Minimum", "SquaredDifference",
            "FloorDiv", "FloorMod", "TruncateMod", "Mod", "Atan2"):
    _binary(_op)
for _op in ("Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "Maximum", "Minimum", "SquaredDifference", "FloorDiv",
            "FloorMod", "TruncateMod", "Mod", "Atan2"):
    _binary(_op, "x", "d", f"{_op}_same_shape")
_binary("Pow", "p", "xr", "Pow_same_shape")
_binary("Pow", "p", "y")
_binary("DivNoNan", "x", "z")
for _op, _b in (("Xlogy", "p"), ("Xlog1py", "p"), ("Xdivy", "d"), ("MulNoNan", "xr")):
    _binary(_op, "x", _b)
_binary("Xlogy", "x", "g", "Xlogy_broadcast")
for _op in ("Add", "AddV2", "Sub", "Mul", "Maximum", "Minimum", "FloorDiv", "FloorMod", "TruncateDiv",
            "TruncateMod", "Mod", "Div"):
    _binary(_op, "i", "j", f"{_op}_int32")
for _op in ("Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"):
    _binary(_op, "x", "xr")
    _binary(_op, "i", "j", f"{_op}_int32")
_binary("LogicalAnd", "m", "n")
_binary("LogicalOr", "m", "n")
sample("AddN", "AddN", lambda tf, t: raw(tf, "AddN", [t["x"], t["xr"], t["p"]]))
sample("SelectV2", "SelectV2", lambda tf, t: raw(tf, "SelectV2", t["n"], t["x"], t["y"]))
sample("SelectV2", "SelectV2_int32", lambda tf, t: raw(tf, "SelectV2", t["m"], t["i"], t["j"]))
sample("Select", "Select", lambda tf, t: raw(tf, "Select", t["m"], t["x"], t["xr"]))
sample("Select", "Select_rows", lambda tf, t: raw(tf, "Select", t["v"], t["x"], t["xr"]))
for _src, _dst in (("x", "int32"), ("x", "bool"), ("x", "int64"), ("i", "float32"), ("m", "float32"),
                   ("i", "int64"), ("m", "int32"), ("k", "int32"), ("i", "bool")):
    sample("Cast", f"Cast_{_src}_{_dst}", lambda tf, t, s=_src, d=_dst: tf.cast(t[s] * 3 if s == "x" else t[s], d))
sample("ClipByValue", "ClipByValue", lambda tf, t: raw(tf, "ClipByValue", t["x"], -1.5, 2.0))
sample("ClipByValue", "ClipByValue_tensor", lambda tf, t: raw(tf, "ClipByValue", t["x"], -t["p"], t["p"]))
sample("ZerosLike", "ZerosLike", lambda tf, t: raw(tf, "ZerosLike", t["x"]))
sample("OnesLike", "OnesLike_int32", lambda tf, t: raw(tf, "OnesLike", t["i"]))
sample("AccumulateNV2", "AccumulateNV2", lambda tf, t: raw(tf, "AccumulateNV2", [t["x"], t["xr"], t["p"]],
                                                         shape=list(SHAPE)))
sample("ApproximateEqual", "ApproximateEqual",
       lambda tf, t: raw(tf, "ApproximateEqual", t["x"], t["xr"], tolerance=0.5))
sample("Bucketize", "Bucketize", lambda tf, t: raw(tf, "Bucketize", t["x"], boundaries=[-2.0, -0.5, 0.0, 0.5, 2.5]))
sample("Bucketize", "Bucketize_int32", lambda tf, t: raw(tf, "Bucketize", t["i"], boundaries=[-10.5, 0.0, 3.0]))
# token ops: gathers of constant ids, one-hot of ids with negative and out-of-range ones
sample("GatherV2", "GatherV2", lambda tf, t: tf.gather(t["x"], np.array([2, 0, 2], np.int32), axis=1))
sample("Gather", "Gather", lambda tf, t: raw(tf, "Gather", t["x"], np.array([1, 0], np.int64)))
sample("OneHot", "OneHot", lambda tf, t: tf.one_hot(t["j"], 4))

# ---- reductions --------------------------------------------------------------------------------------


def _axes(case: str) -> list[int]:
    rng = _rng(case)
    return sorted(rng.choice(4, int(rng.integers(1, 4)), replace=False).tolist())


for _op, _feed in (("Sum", "x"), ("Prod", "u"), ("Min", "x"), ("Max", "x"), ("Mean", "x"), ("EuclideanNorm", "x"),
                   ("All", "m"), ("Any", "m"), ("Sum", "i"), ("Max", "i"), ("Min", "k")):
    for _keep in (False, True):
        _case = f"{_op}_{_feed}_{'keep' if _keep else 'drop'}"
        sample(_op, _case, lambda tf, t, o=_op, f=_feed, c=_case, kd=_keep:
               raw(tf, o, t[f], np.array(_axes(c), np.int32), keep_dims=kd))
for _op in ("ArgMin", "ArgMax"):
    for _axis, _dtype in ((1, "int64"), (3, "int32")):
        sample(_op, f"{_op}_{_axis}_{_dtype}", lambda tf, t, o=_op, a=_axis, d=_dtype:
               raw(tf, o, t["x"], a, output_type=d))
for _op, _feed in (("Cumsum", "x"), ("Cumprod", "u"), ("Cumsum", "i")):
    for _case in (f"{_op}_{_feed}_{n}" for n in range(3)):
        _r = _rng(_case)
        _axis, _exclusive, _reverse = int(_r.integers(0, 4)), bool(_r.integers(2)), bool(_r.integers(2))
        sample(_op, _case, lambda tf, t, o=_op, f=_feed, a=_axis, e=_exclusive, rv=_reverse:
               raw(tf, o, t[f], a, exclusive=e, reverse=rv))
sample("TopKV2", "TopKV2_values", lambda tf, t: raw(tf, "TopKV2", t["x"], 3)[0])
sample("TopKV2", "TopKV2_indices", lambda tf, t: raw(tf, "TopKV2", t["x"], 3)[1])
sample("Softmax", "Softmax", lambda tf, t: raw(tf, "Softmax", t["x"]))
sample("LogSoftmax", "LogSoftmax", lambda tf, t: raw(tf, "LogSoftmax", t["x"]))
# scaled by x: an MXNet 1.x model gives a 0-d result as shape (1,)
sample("L2Loss", "L2Loss", lambda tf, t: t["d"] * raw(tf, "L2Loss", t["x"]))
sample("LogSoftmax", "LogSoftmax_2d", lambda tf, t: raw(tf, "LogSoftmax", tf.reshape(t["x"], [6, 20])))


# ---- through an NHWC activation (the IR holds it NCHW: axes and broadcasts follow the layout) ------------

def _conv(tf: Any, t: dict[str, Any]) -> Any:
    w = np.random.default_rng(5).standard_normal((3, 3, 3, 4)).astype(np.float32)
    return tf.nn.conv2d(t["img"], w, 1, "SAME")


sample("Cumsum", "Cumsum_nhwc", lambda tf, t: raw(tf, "Cumsum", _conv(tf, t), 3, exclusive=True))
sample("ArgMin", "ArgMin_nhwc", lambda tf, t: raw(tf, "ArgMin", _conv(tf, t), 3))
sample("Sum", "Sum_nhwc", lambda tf, t: raw(tf, "Sum", _conv(tf, t), [1, 2]))
sample("SelectV2", "SelectV2_nhwc", lambda tf, t: raw(tf, "SelectV2", _conv(tf, t) > 0, _conv(tf, t), -1.0))
sample("FloorMod", "FloorMod_nhwc", lambda tf, t: raw(tf, "FloorMod", _conv(tf, t), np.float32([0.7, -1.1, 2.0, 1.3])))
sample("TopKV2", "TopKV2_nhwc", lambda tf, t: raw(tf, "TopKV2", _conv(tf, t), 2)[0])


# ---- the first ops converted (for the op x target table) --------------------------------------------------

def _w(seed: int, *shape: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


_IMG_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "Conv2D": lambda tf, x: raw(tf, "Conv2D", x, _w(1, 3, 3, 3, 4), strides=[1, 2, 2, 1], padding="SAME"),
    "DepthwiseConv2dNative": lambda tf, x: raw(tf, "DepthwiseConv2dNative", x, _w(2, 3, 3, 3, 2),
                                               strides=[1, 1, 1, 1], padding="SAME"),
    "Conv2DBackpropInput": lambda tf, x: raw(tf, "Conv2DBackpropInput", [1, 12, 12, 2], _w(3, 3, 3, 2, 3), x,
                                             strides=[1, 2, 2, 1], padding="SAME"),
    "MaxPool": lambda tf, x: raw(tf, "MaxPool", x, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME"),
    "AvgPool": lambda tf, x: raw(tf, "AvgPool", x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME"),
    "BiasAdd": lambda tf, x: raw(tf, "BiasAdd", x, _w(4, 3)),
    "BiasAddV1": lambda tf, x: raw(tf, "BiasAddV1", x, _w(4, 3)),
    "FusedBatchNorm": lambda tf, x: raw(tf, "FusedBatchNorm", x, _w(5, 3), _w(6, 3), _w(7, 3), np.abs(_w(8, 3)) + 0.5,
                                        is_training=False)[0],
    "FusedBatchNormV2": lambda tf, x: raw(tf, "FusedBatchNormV2", x, _w(5, 3), _w(6, 3), _w(7, 3),
                                          np.abs(_w(8, 3)) + 0.5, is_training=False)[0],
    "FusedBatchNormV3": lambda tf, x: raw(tf, "FusedBatchNormV3", x, _w(5, 3), _w(6, 3), _w(7, 3),
                                          np.abs(_w(8, 3)) + 0.5, is_training=False)[0],
    "Pad": lambda tf, x: raw(tf, "Pad", x, [[0, 0], [1, 2], [0, 1], [0, 0]]),
    "PadV2": lambda tf, x: raw(tf, "PadV2", x, [[0, 0], [1, 2], [0, 1], [0, 0]], 0.5),
    "MirrorPad": lambda tf, x: raw(tf, "MirrorPad", x, [[0, 0], [1, 2], [0, 1], [0, 0]], mode="REFLECT"),
    "ResizeBilinear": lambda tf, x: raw(tf, "ResizeBilinear", x, [9, 11], half_pixel_centers=True),
    "ResizeNearestNeighbor": lambda tf, x: raw(tf, "ResizeNearestNeighbor", x, [12, 12]),
    "ResizeBicubic": lambda tf, x: raw(tf, "ResizeBicubic", x, [9, 9]),
    "ResizeArea": lambda tf, x: raw(tf, "ResizeArea", x, [4, 4]),
    "DepthToSpace": lambda tf, x: raw(tf, "DepthToSpace", tf.concat([x] * 4, 3), block_size=2),
    "SpaceToDepth": lambda tf, x: raw(tf, "SpaceToDepth", x, block_size=2),
    "SpaceToBatchND": lambda tf, x: tf.nn.atrous_conv2d(x, _w(10, 3, 3, 3, 2), 2, "SAME"),
    "BatchToSpaceND": lambda tf, x: tf.nn.atrous_conv2d(x, _w(11, 3, 3, 3, 2), 2, "VALID"),
    "ScaleAndTranslate": lambda tf, x: tf.image.resize(x, [9, 9], method="lanczos3"),
    "ConcatV2": lambda tf, x: raw(tf, "ConcatV2", [x, x * 2.0], 3),
    "Split": lambda tf, x: raw(tf, "Split", 1, x, num_split=2)[1],
    "SplitV": lambda tf, x: raw(tf, "SplitV", x, [1, 2], 3, num_split=2)[1],
    "Unpack": lambda tf, x: raw(tf, "Unpack", x, num=3, axis=3)[2],
    "Slice": lambda tf, x: raw(tf, "Slice", x, [0, 1, 2, 0], [1, 3, -1, 2]),
    "StridedSlice": lambda tf, x: x[:, 1:-1, ..., 1],
    "Transpose": lambda tf, x: raw(tf, "Transpose", x, [0, 2, 1, 3]),
    "Reshape": lambda tf, x: raw(tf, "Reshape", x, [1, 36, 3]),
    "Squeeze": lambda tf, x: raw(tf, "Squeeze", x[:, :1], axis=[1]),
    "ExpandDims": lambda tf, x: raw(tf, "ExpandDims", x, 1),
    "MatMul": lambda tf, x: raw(tf, "MatMul", tf.reshape(x, [36, 3]), _w(9, 3, 5)),
    "BatchMatMulV2": lambda tf, x: raw(tf, "BatchMatMulV2", tf.reshape(x, [1, 36, 3]), tf.reshape(x, [1, 36, 3]),
                                      adj_x=True),
    "BatchMatMul": lambda tf, x: raw(tf, "BatchMatMul", tf.reshape(x, [1, 36, 3]), tf.reshape(x, [1, 36, 3]),
                                     adj_x=True),
    "BatchMatMulV3": lambda tf, x: raw(tf, "BatchMatMulV3", tf.reshape(x, [1, 36, 3]), tf.reshape(x, [1, 36, 3]),
                                       adj_x=True, Tout=tf.float32),
}
for _op, _fn in _IMG_OPS.items():
    sample(_op, _op, lambda tf, t, f=_fn: f(tf, t["img"]))
for _op in ("Identity", "StopGradient", "PreventGradient"):
    sample(_op, _op, lambda tf, t, o=_op: raw(tf, o, t["img"]) * 2.0)
sample("CheckNumerics", "CheckNumerics", lambda tf, t: raw(tf, "CheckNumerics", t["img"], message="x") * 2.0)
sample("EnsureShape", "EnsureShape", lambda tf, t: raw(tf, "EnsureShape", t["img"], shape=[1, 6, 6, 3]) * 2.0)
sample("IdentityN", "IdentityN", lambda tf, t: raw(tf, "IdentityN", [t["img"], t["x"]])[0] * 2.0)
for _op in ("Shape", "Size", "Rank"):  # static: folded into constants
    sample(_op, _op, lambda tf, t, o=_op: t["x"] * tf.cast(tf.reduce_prod(raw(tf, o, t["x"])), tf.float32))
sample("ShapeN", "ShapeN", lambda tf, t: t["x"] * tf.cast(raw(tf, "ShapeN", [t["x"]])[0][1], tf.float32))


# ---- the ops with converters but no sample before (the table): TF spellings as in
# tests/parsers/test_tf_shape_ops.py and test_tf_volume.py -------------------------------------------------

_STRIDE2_3D = [1, 2, 2, 2, 1]  # SAME at stride 2 on D, H, W = 5, 7, 6: TF pads (0, 1), (1, 1), (0, 1)
_VOL_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "Conv3D": lambda tf, v: raw(tf, "Conv3D", v, _w(12, 3, 3, 3, 2, 4), strides=_STRIDE2_3D, padding="SAME"),
    "MaxPool3D": lambda tf, v: raw(tf, "MaxPool3D", v, ksize=[1, 3, 3, 3, 1], strides=_STRIDE2_3D, padding="SAME"),
    # a 2-wide window at stride 2: the odd sizes put the padded (uncounted) element at the end only
    "AvgPool3D": lambda tf, v: raw(tf, "AvgPool3D", v, ksize=[1, 2, 2, 2, 1], strides=_STRIDE2_3D, padding="SAME"),
    # back up from (5, 7, 6) to odd sizes: 9, 13, 11 crop otherwise than 10, 14, 12 would
    "Conv3DBackpropInputV2": lambda tf, v: raw(tf, "Conv3DBackpropInputV2", np.int32([1, 9, 13, 11, 3]),
                                               _w(13, 3, 3, 3, 3, 2), v, strides=_STRIDE2_3D, padding="SAME"),
}
for _op, _fn in _VOL_OPS.items():
    sample(_op, _op, lambda tf, t, f=_fn: f(tf, t["vol"]))

sample("Pack", "Pack", lambda tf, t: raw(tf, "Pack", [t["x"], t["xr"], t["d"]], axis=2))
sample("Pack", "Pack_rank3", lambda tf, t: raw(tf, "Pack", [t["y"], t["z"]], axis=1))  # no layout moves: Caffe too
sample("Pack", "Pack_nhwc", lambda tf, t: raw(tf, "Pack", [_conv(tf, t), tf.nn.relu(_conv(tf, t))], axis=-1))
sample("Tile", "Tile", lambda tf, t: raw(tf, "Tile", t["x"], np.int32([1, 2, 1, 3])))
sample("Tile", "Tile_nhwc", lambda tf, t: raw(tf, "Tile", _conv(tf, t), np.int32([2, 1, 3, 2])))
sample("BroadcastTo", "BroadcastTo", lambda tf, t: raw(tf, "BroadcastTo", t["y"], np.int32([2, 3, 4, 5])))
sample("BroadcastTo", "BroadcastTo_nhwc",
       lambda tf, t: raw(tf, "BroadcastTo", tf.nn.relu(t["img"][:, :1]), np.int32([2, 6, 6, 3])))
sample("ReverseV2", "ReverseV2", lambda tf, t: raw(tf, "ReverseV2", t["x"], np.int32([1, -1])))
sample("ReverseV2", "ReverseV2_nhwc", lambda tf, t: raw(tf, "ReverseV2", _conv(tf, t), np.int32([2, 3])))
sample("GatherNd", "GatherNd", lambda tf, t: raw(tf, "GatherNd", t["x"], np.int32([[1, 2], [0, 0], [1, 2]])))
sample("GatherNd", "GatherNd_rank3", lambda tf, t: raw(tf, "GatherNd", t["y"], np.int32([[1, 2], [0, 0], [1, 2]])))
sample("GatherNd", "GatherNd_scalars", lambda tf, t: raw(
    tf, "GatherNd", t["x"], np.int32([[[1, 2, 3, 4], [0, 0, 0, 0]], [[1, 1, 1, 1], [0, 2, 3, 1]]])))
sample("GatherNd", "GatherNd_nhwc", lambda tf, t: raw(tf, "GatherNd", _conv(tf, t), np.int32([[0, 1, 2], [0, 5, 0]])))
# a repeated index: TF sums the updates there
sample("ScatterNd", "ScatterNd", lambda tf, t: raw(tf, "ScatterNd", np.int32([[2], [0], [2]]), t["y"],
                                                   np.int32([4, 4, 5])))
sample("ScatterNd", "ScatterNd_scalars", lambda tf, t: raw(tf, "ScatterNd", np.int32([[2, 3], [0, 0], [1, 1], [2, 3]]),
                                                           t["y"][1, 0, :4], np.int32([3, 4])))
sample("ExtractImagePatches", "ExtractImagePatches",
       lambda tf, t: raw(tf, "ExtractImagePatches", t["img"], ksizes=[1, 3, 2, 1], strides=[1, 2, 3, 1],
                         rates=[1, 1, 2, 1], padding="SAME"))
sample("ExtractImagePatches", "ExtractImagePatches_valid",
       lambda tf, t: raw(tf, "ExtractImagePatches", t["img"], ksizes=[1, 2, 3, 1], strides=[1, 3, 1, 1],
                         rates=[1, 2, 1, 1], padding="VALID"))
sample("LRN", "LRN", lambda tf, t: raw(tf, "LRN", t["img"] * 3.0, depth_radius=2, bias=1.5, alpha=0.3, beta=0.75))
sample("LRN", "LRN_conv", lambda tf, t: raw(tf, "LRN", _conv(tf, t), depth_radius=1, bias=1.0, alpha=1e-3, beta=0.6))
sample("Einsum", "Einsum", lambda tf, t: raw(tf, "Einsum", [t["x"], t["d"]], equation="abcd,abed->abce"))
sample("Einsum", "Einsum_weight", lambda tf, t: raw(tf, "Einsum", [t["x"], _w(14, 5, 3)], equation="abcd,dk->abck"))
sample("Einsum", "Einsum_transpose", lambda tf, t: raw(tf, "Einsum", [t["x"]], equation="abcd->cadb"))
# TopK (k an attribute) has no sample: TF removed it at GraphDef version 7 and refuses to build or import it in
# a graph of today's version, so only a pre-2016 graph could carry it
# fake quantization with a step of exactly 1 on x's grid: its halves sit on rounding midpoints (TF rounds
# them up), and its values beyond the range clamp
sample("FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxArgs",
       lambda tf, t: raw(tf, "FakeQuantWithMinMaxArgs", t["x"], min=-3.0, max=4.0, num_bits=3))
sample("FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxArgs_narrow",
       lambda tf, t: raw(tf, "FakeQuantWithMinMaxArgs", t["x"], min=-3.0, max=3.0, num_bits=3, narrow_range=True))
sample("FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVars",
       lambda tf, t: raw(tf, "FakeQuantWithMinMaxVars", t["x"], np.float32(-2.0), np.float32(1.0), num_bits=2))
sample("FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVars_nhwc",
       lambda tf, t: raw(tf, "FakeQuantWithMinMaxVars", t["img"] * 2.0, np.float32(-0.5), np.float32(0.5), num_bits=8))
sample("FakeQuantWithMinMaxVarsPerChannel", "FakeQuantWithMinMaxVarsPerChannel",
       lambda tf, t: raw(tf, "FakeQuantWithMinMaxVarsPerChannel", t["x"], np.float32([-3, -2, -4, -1, -3]),
                         np.float32([4, 5, 3, 6, 4]), num_bits=3))
sample("FakeQuantWithMinMaxVarsPerChannel", "FakeQuantWithMinMaxVarsPerChannel_nhwc",
       lambda tf, t: raw(tf, "FakeQuantWithMinMaxVarsPerChannel", t["img"] * 2.0, np.float32([-1, -3, 0]),
                         np.float32([1, 0.5, 4]), num_bits=6))


def build_graph(
    directory: Path, samples: list[Sample] | None = None,
) -> tuple[Path, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Write every sample into one frozen GraphDef; returns (pb, feeds by input name, TF's value of each
    output by case). The legacy samples run in a graph of their own (importing an old op lowers a graph's
    producer version, which would hold for every sample); their nodes are merged in after."""
    import tensorflow as tf

    samples = SAMPLES if samples is None else samples
    feeds = feed_values()
    graph_def, values = _run(tf, [s for s in samples if not s.legacy], feeds)
    legacy = [s for s in samples if s.legacy]
    if legacy:
        legacy_def, legacy_values = _run(tf, legacy, feeds)
        _merge(graph_def, legacy_def)
        values.update(legacy_values)
    directory.mkdir(parents=True, exist_ok=True)
    pb = directory / "op_samples.pb"
    pb.write_bytes(graph_def.SerializeToString())
    return pb, feeds, values


def _run(tf: Any, samples: list[Sample], feeds: dict[str, np.ndarray]) -> tuple[Any, dict[str, np.ndarray]]:
    """(GraphDef, TF's value of each sample's output) of `samples` built on the FEEDS placeholders."""
    graph = tf.Graph()
    with graph.as_default():
        ph = {name: tf.compat.v1.placeholder(dtype, shape, name=name) for name, (dtype, shape, _) in FEEDS.items()}
        outs = {s.case: tf.identity(s.build(tf, ph), name=f"out_{s.case}") for s in samples}
        with tf.compat.v1.Session(graph=graph) as session:
            values = session.run(outs, {ph[n]: v for n, v in feeds.items()}) if outs else {}
    return graph.as_graph_def(), values


def _merge(into: Any, extra: Any) -> None:
    """`extra`'s nodes into `into`, reading `into`'s placeholders; its inner nodes under 'legacy/'."""

    def rename(ref: str) -> str:
        control, name = ("^", ref[1:]) if ref.startswith("^") else ("", ref)
        node, _, port = name.partition(":")
        if node not in FEEDS and not node.startswith("out_"):
            node = f"legacy/{node}"
        return control + node + (f":{port}" if port else "")

    for node in extra.node:
        if node.op == "Placeholder" and node.name in FEEDS:
            continue
        copy = into.node.add()
        copy.CopyFrom(node)
        copy.name = rename(node.name)
        del copy.input[:]
        copy.input.extend(rename(i) for i in node.input)


def legacy_op(tf: Any, op: str, inputs: list[Any], producer: int = 8, **attrs: Any) -> Any:
    """Output 0 of TF op `op` (removed from current GraphDefs) on `inputs`, imported as a GraphDef of
    `producer` version (TF still runs it there). attrs: name -> AttrValue."""
    from tensorflow.core.framework import graph_pb2

    graph_def = graph_pb2.GraphDef()
    graph_def.versions.producer = producer
    for i, t in enumerate(inputs):
        node = graph_def.node.add(name=f"in{i}", op="Placeholder")
        node.attr["dtype"].type = t.dtype.as_datatype_enum
        if t.shape.rank:  # TF's shape inference sees through the import (an old graph's [] means unknown)
            node.attr["shape"].shape.CopyFrom(t.shape.as_proto())
    node = graph_def.node.add(name="op", op=op, input=[f"in{i}" for i in range(len(inputs))])
    for key, value in attrs.items():
        node.attr[key].CopyFrom(value)
    (out,) = tf.compat.v1.import_graph_def(graph_def, input_map={f"in{i}:0": t for i, t in enumerate(inputs)},
                                           return_elements=["op:0"], name=op)
    return out


# ---- identity-likes, the matrix diagonal / band family, nn extras, bitwise -------

for _op in ("CheckNumericsV2", "DeepCopy", "Copy", "CopyHost"):
    sample(_op, _op, lambda tf, t, o=_op: raw(tf, o, t["img"], **({"message": "x"} if o == "CheckNumericsV2" else {}))
           * 2.0)


def _band_args(case: str) -> tuple[int, int]:
    rng = _rng(case)
    return int(rng.integers(-1, 3)), int(rng.integers(-1, 4))


# random bands (negative: unbounded) on (2, 3, 4, 5) floats, int32 and on an NHWC activation
for _case, _feed in (("MatrixBandPart", "x"), ("MatrixBandPart_int32", "i"), ("MatrixBandPart_2", "xr")):
    sample("MatrixBandPart", _case, lambda tf, t, c=_case, f=_feed:
           raw(tf, "MatrixBandPart", t[f], *(np.int64(v) for v in _band_args(c))))
sample("MatrixBandPart", "MatrixBandPart_nhwc", lambda tf, t: raw(tf, "MatrixBandPart", _conv(tf, t), 1, 0))
# V1: the main diagonal; V2 aligns every diagonal left; V3 each way, with a padding value
sample("MatrixDiagPart", "MatrixDiagPart", lambda tf, t: raw(tf, "MatrixDiagPart", t["x"]))
sample("MatrixDiagPart", "MatrixDiagPart_wide",
       lambda tf, t: raw(tf, "MatrixDiagPart", tf.transpose(t["i"], [0, 1, 3, 2])))
sample("MatrixDiagPartV2", "MatrixDiagPartV2", lambda tf, t: raw(tf, "MatrixDiagPartV2", t["x"], np.int32([-2, 1]),
                                                                 np.float32(9.0)))
sample("MatrixDiagPartV2", "MatrixDiagPartV2_one", lambda tf, t: raw(tf, "MatrixDiagPartV2", t["x"], np.int32(2),
                                                                     np.float32(0.0)))
for _align in ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"):
    sample("MatrixDiagPartV3", f"MatrixDiagPartV3_{_align}", lambda tf, t, a=_align: raw(
        tf, "MatrixDiagPartV3", t["x"], np.int32([-3, 2]), np.float32(-7.5), align=a))
sample("MatrixDiagPartV3", "MatrixDiagPartV3_int32", lambda tf, t: raw(
    tf, "MatrixDiagPartV3", t["i"], np.int32([-1, 3]), np.int32(99), align="RIGHT_LEFT"))
sample("MatrixDiag", "MatrixDiag", lambda tf, t: raw(tf, "MatrixDiag", t["y"]))
sample("MatrixDiagV2", "MatrixDiagV2", lambda tf, t: raw(tf, "MatrixDiagV2", t["x"][:, :, :3], np.int32([-1, 1]),
                                                         np.int32(-1), np.int32(-1), np.float32(2.5)))
sample("MatrixDiagV2", "MatrixDiagV2_rect", lambda tf, t: raw(tf, "MatrixDiagV2", t["y"], np.int32(1),
                                                              np.int32(5), np.int32(6), np.float32(0.0)))
for _align in ("RIGHT_LEFT", "LEFT_RIGHT"):
    sample("MatrixDiagV3", f"MatrixDiagV3_{_align}", lambda tf, t, a=_align: raw(
        tf, "MatrixDiagV3", t["x"][:, :, :3], np.int32([-1, 1]), np.int32(5), np.int32(6), np.float32(-1.0),
        align=a))
sample("MatrixDiagV3", "MatrixDiagV3_int32", lambda tf, t: raw(
    tf, "MatrixDiagV3", t["j"], np.int32(-1), np.int32(-1), np.int32(-1), np.int32(7), align="RIGHT_LEFT"))
sample("MatrixSetDiag", "MatrixSetDiag", lambda tf, t: raw(tf, "MatrixSetDiag", t["x"], t["d"][..., 0]))
sample("MatrixSetDiagV2", "MatrixSetDiagV2", lambda tf, t: raw(tf, "MatrixSetDiagV2", t["x"], t["d"][:, :, :3, :4],
                                                               np.int32([-1, 1])))
for _align in ("RIGHT_LEFT", "LEFT_RIGHT", "RIGHT_RIGHT"):
    sample("MatrixSetDiagV3", f"MatrixSetDiagV3_{_align}", lambda tf, t, a=_align: raw(
        tf, "MatrixSetDiagV3", t["x"], t["d"][:, :, :3, :4], np.int32([-1, 1]), align=a))
sample("MatrixSetDiagV3", "MatrixSetDiagV3_int32", lambda tf, t: raw(
    tf, "MatrixSetDiagV3", t["i"], t["i"][:, :, 1:3, :4], np.int32([0, 1]), align="LEFT_RIGHT"))
sample("Diag", "Diag", lambda tf, t: raw(tf, "Diag", t["y"][0, :3]))
sample("Diag", "Diag_int32", lambda tf, t: raw(tf, "Diag", t["j"]))
sample("DiagPart", "DiagPart", lambda tf, t: raw(tf, "DiagPart", raw(tf, "Diag", t["y"][1, :2]) + 1.0))
sample("DiagPart", "DiagPart_flat", lambda tf, t: raw(tf, "DiagPart", tf.reshape(t["x"][:, :3, :3, :2], [6, 6])))

# nn extras: odd sizes (6x6 -> SAME pads 0/1 at stride 2 with a 2-wide window; 3x3 windows pad both sides)
sample("MaxPoolV2", "MaxPoolV2", lambda tf, t: raw(tf, "MaxPoolV2", t["img"], np.int32([1, 3, 2, 1]),
                                                   np.int32([1, 2, 2, 1]), padding="SAME"))
sample("MaxPoolV2", "MaxPoolV2_valid", lambda tf, t: raw(tf, "MaxPoolV2", _conv(tf, t), np.int32([1, 2, 3, 1]),
                                                         np.int32([1, 1, 2, 1]), padding="VALID"))
sample("MaxPoolWithArgmax", "MaxPoolWithArgmax", lambda tf, t: raw(
    tf, "MaxPoolWithArgmax", t["img"], ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")[0])
sample("DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropInput", lambda tf, t: raw(
    tf, "DepthwiseConv2dNativeBackpropInput", np.int32([1, 11, 12, 3]), _w(15, 3, 2, 3, 2),
    tf.concat([t["img"], t["img"]], 3), strides=[1, 2, 2, 1], padding="SAME"))
sample("DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropInput_valid", lambda tf, t: raw(
    tf, "DepthwiseConv2dNativeBackpropInput", np.int32([1, 8, 7, 1]), _w(16, 3, 2, 1, 3), t["img"],
    strides=[1, 1, 1, 1], padding="VALID"))
sample("FusedPadConv2D", "FusedPadConv2D", lambda tf, t: raw(
    tf, "FusedPadConv2D", t["img"], np.int32([[0, 0], [1, 2], [2, 1], [0, 0]]), _w(17, 3, 3, 3, 4),
    mode="REFLECT", strides=[1, 2, 2, 1], padding="SAME"))
sample("FusedPadConv2D", "FusedPadConv2D_symmetric", lambda tf, t: raw(
    tf, "FusedPadConv2D", t["img"], np.int32([[0, 0], [2, 0], [1, 3], [0, 0]]), _w(18, 2, 3, 3, 2),
    mode="SYMMETRIC", strides=[1, 1, 2, 1], padding="VALID"))
sample("FusedResizeAndPadConv2D", "FusedResizeAndPadConv2D", lambda tf, t: raw(
    tf, "FusedResizeAndPadConv2D", t["img"], np.int32([9, 11]), np.int32([[0, 0], [1, 1], [0, 2], [0, 0]]),
    _w(19, 3, 3, 3, 4), mode="REFLECT", strides=[1, 2, 1, 1], padding="SAME"))
sample("FusedResizeAndPadConv2D", "FusedResizeAndPadConv2D_corners", lambda tf, t: raw(
    tf, "FusedResizeAndPadConv2D", t["img"], np.int32([11, 7]), np.int32([[0, 0], [2, 1], [1, 1], [0, 0]]),
    _w(20, 2, 2, 3, 3), resize_align_corners=True, mode="SYMMETRIC", strides=[1, 1, 1, 1], padding="VALID"))


def _xent_logits(tf: Any, t: dict[str, Any]) -> Any:
    return tf.reshape(t["x"], [6, 20]) * 2.0


sample("SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits_loss", lambda tf, t: raw(
    tf, "SoftmaxCrossEntropyWithLogits", _xent_logits(tf, t), tf.nn.softmax(tf.reshape(t["d"], [6, 20])))[0])
sample("SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits_backprop", lambda tf, t: raw(
    tf, "SoftmaxCrossEntropyWithLogits", _xent_logits(tf, t), tf.nn.softmax(tf.reshape(t["d"], [6, 20])))[1])
sample("SparseSoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits_loss", lambda tf, t: raw(
    tf, "SparseSoftmaxCrossEntropyWithLogits", tf.reshape(t["x"], [8, 15]), tf.reshape(t["k"][0, 0, :2, :4], [8]))[0])
sample("SparseSoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits_backprop", lambda tf, t: raw(
    tf, "SparseSoftmaxCrossEntropyWithLogits", tf.reshape(t["x"], [8, 15]), tf.reshape(t["k"][1, 2, 2:4, 1:5], [8]))[1])
# quantize-dequantize: ranges that move one side onto the grid, x's halves on rounding ties, both round modes
for _case, _op, _lo, _hi, _kw in (
    ("QuantizeAndDequantizeV2", "QuantizeAndDequantizeV2", -2.0, 1.0, {"num_bits": 3}),
    ("QuantizeAndDequantizeV2_half_up", "QuantizeAndDequantizeV2", -2.5, 2.5, {"num_bits": 4, "round_mode": "HALF_UP"}),
    ("QuantizeAndDequantizeV2_unsigned", "QuantizeAndDequantizeV2", 0.0, 2.0,
     {"num_bits": 3, "signed_input": False}),
    ("QuantizeAndDequantizeV4", "QuantizeAndDequantizeV4", -1.0, 3.0, {"num_bits": 5, "narrow_range": True}),
    ("QuantizeAndDequantizeV4_half_up", "QuantizeAndDequantizeV4", -3.0, 1.5,
     {"num_bits": 2, "round_mode": "HALF_UP"}),
):
    sample(_op, _case, lambda tf, t, o=_op, lo=_lo, hi=_hi, kw=_kw: raw(
        tf, o, t["x"], np.float32(lo), np.float32(hi), range_given=True, **kw))
sample("QuantizeAndDequantizeV3", "QuantizeAndDequantizeV3", lambda tf, t: raw(
    tf, "QuantizeAndDequantizeV3", t["x"], np.float32(-1.5), np.float32(2.0), np.int32(4)))
sample("QuantizeAndDequantizeV3", "QuantizeAndDequantizeV3_nhwc", lambda tf, t: raw(
    tf, "QuantizeAndDequantizeV3", _conv(tf, t), np.float32(-4.0), np.float32(4.0), np.int32(6), narrow_range=True))
# grayscale dilation: SAME on odd sizes (asymmetric pads, -inf outside), strides and rates
for _case, _shape, _strides, _rates, _padding in (("Dilation2D", (3, 3), 2, 1, "SAME"),
                                                   ("Dilation2D_rates", (2, 3), 1, 2, "SAME"),
                                                   ("Dilation2D_valid", (2, 2), 2, 1, "VALID")):
    sample("Dilation2D", _case, lambda tf, t, c=_case, s=_shape, st=_strides, r=_rates, p=_padding: raw(
        tf, "Dilation2D", t["img"], _w(sum(map(ord, c)), *s, 3), strides=[1, st, st, 1], rates=[1, r, r, 1],
        padding=p))
sample("Dilation2D", "Dilation2D_nhwc", lambda tf, t: raw(tf, "Dilation2D", _conv(tf, t), _w(21, 2, 2, 4),
                                                          strides=[1, 1, 2, 1], rates=[1, 1, 1, 1], padding="SAME"))
# bitwise ops on int32 (broadcast (4, 5) against (2, 3, 4, 5)); shift amounts past the width and negative ones
_SHIFTS = np.int32([-3, 0, 31, 33, 64])
for _op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "LeftShift", "RightShift"):
    _binary(_op, "i", "j")
for _op in ("LeftShift", "RightShift"):
    sample(_op, f"{_op}_past_width", lambda tf, t, o=_op: raw(tf, o, t["i"], _SHIFTS))
_unary("Invert", "i")
sample("Invert", "Invert_int64", lambda tf, t: raw(tf, "Invert", t["k"]))
# colour: images in [0, 1] with ties between channels (saturated and grey pixels), HSV in range


def _rgb(tf: Any, t: dict[str, Any]) -> Any:
    x = tf.clip_by_value(t["img"] * 0.4 + 0.5, 0.0, 1.0)  # exact in every target: the colour op's error alone
    x = tf.concat([x[:, :2], tf.round(x[:, 2:4] * 4.0) / 4.0, tf.tile(x[:, 4:, :, :1], [1, 1, 1, 3])], 1)
    return x


sample("RGBToHSV", "RGBToHSV", lambda tf, t: raw(tf, "RGBToHSV", _rgb(tf, t)))
sample("RGBToHSV", "RGBToHSV_rank3", lambda tf, t: raw(tf, "RGBToHSV", tf.sigmoid(t["y"][:, :, :3])))
sample("HSVToRGB", "HSVToRGB", lambda tf, t: raw(tf, "HSVToRGB", _rgb(tf, t)))
sample("HSVToRGB", "HSVToRGB_roundtrip", lambda tf, t: raw(tf, "HSVToRGB", raw(tf, "RGBToHSV", _rgb(tf, t))))
sample("AdjustContrastv2", "AdjustContrastv2", lambda tf, t: raw(tf, "AdjustContrastv2", t["img"], np.float32(1.7)))
sample("AdjustContrastv2", "AdjustContrastv2_rank3", lambda tf, t: raw(tf, "AdjustContrastv2", t["y"][:, :, :3],
                                                                       np.float32(-0.4)))
for _scale in (1.6, 0.35):
    sample("AdjustSaturation", f"AdjustSaturation_{_scale}", lambda tf, t, sc=_scale: raw(
        tf, "AdjustSaturation", _rgb(tf, t), np.float32(sc)))
for _delta in (0.3, -0.45, 0.9):
    sample("AdjustHue", f"AdjustHue_{_delta}", lambda tf, t, d=_delta: raw(tf, "AdjustHue", _rgb(tf, t), np.float32(d)))
# negative products: every 4-bit group of the int32 is set somewhere (the uint8 count is cast: no uint8 at the boundary)
sample("PopulationCount", "PopulationCount",
       lambda tf, t: tf.cast(raw(tf, "PopulationCount", t["i"] * t["j"]), "int32"))


# ---- ops TF removed from current GraphDefs, in graphs of their era ---------------

def _attr(**value: Any) -> Any:
    from tensorflow.core.framework import attr_value_pb2

    if "ints" in value:
        return attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(i=value["ints"]))
    return attr_value_pb2.AttrValue(**value)


def legacy_sample(op: str, case: str, build: Callable[[Any, dict[str, Any]], Any]) -> None:
    SAMPLES.append(Sample(op, case, build, legacy=True))


legacy_sample("BatchMatrixBandPart", "BatchMatrixBandPart", lambda tf, t: legacy_op(
    tf, "BatchMatrixBandPart", [t["x"], tf.constant(np.int64(2)), tf.constant(np.int64(0))], T=_attr(type=1)))
legacy_sample("BatchMatrixDiag", "BatchMatrixDiag", lambda tf, t: legacy_op(tf, "BatchMatrixDiag", [t["y"]],
                                                                             T=_attr(type=1)))
legacy_sample("BatchMatrixDiagPart", "BatchMatrixDiagPart", lambda tf, t: legacy_op(
    tf, "BatchMatrixDiagPart", [t["x"]], T=_attr(type=1)))
legacy_sample("BatchMatrixSetDiag", "BatchMatrixSetDiag", lambda tf, t: legacy_op(
    tf, "BatchMatrixSetDiag", [t["x"], t["d"][..., 1]], T=_attr(type=1)))
legacy_sample("BatchNormWithGlobalNormalization", "BatchNormWithGlobalNormalization", lambda tf, t: legacy_op(
    tf, "BatchNormWithGlobalNormalization", [t["img"], tf.constant(_w(30, 3)), tf.constant(np.abs(_w(31, 3)) + 0.5),
                                             tf.constant(_w(32, 3)), tf.constant(_w(33, 3))],
    T=_attr(type=1), variance_epsilon=_attr(f=0.01), scale_after_normalization=_attr(b=True)) * 1.0)
legacy_sample("BatchNormWithGlobalNormalization", "BatchNormWithGlobalNormalization_unscaled", lambda tf, t: legacy_op(
    tf, "BatchNormWithGlobalNormalization", [_conv(tf, t), tf.constant(_w(34, 4)), tf.constant(np.abs(_w(35, 4)) + 0.5),
                                             tf.constant(_w(36, 4)), tf.constant(_w(37, 4))],
    T=_attr(type=1), variance_epsilon=_attr(f=0.001), scale_after_normalization=_attr(b=False)))
legacy_sample("Conv3DBackpropInput", "Conv3DBackpropInput", lambda tf, t: legacy_op(
    tf, "Conv3DBackpropInput", [tf.zeros([1, 9, 13, 11, 3]), tf.constant(_w(38, 3, 3, 3, 3, 2)), t["vol"]],
    T=_attr(type=1), strides=_attr(ints=[1, 2, 2, 2, 1]), padding=_attr(s=b"SAME")))
legacy_sample("QuantizeAndDequantize", "QuantizeAndDequantize", lambda tf, t: legacy_op(
    tf, "QuantizeAndDequantize", [t["x"]], T=_attr(type=1), signed_input=_attr(b=True), num_bits=_attr(i=3),
    range_given=_attr(b=True), input_min=_attr(f=-2.0), input_max=_attr(f=1.0)))
legacy_sample("AdjustContrast", "AdjustContrast", lambda tf, t: legacy_op(
    tf, "AdjustContrast", [t["img"], tf.constant(np.float32(1.8)), tf.constant(np.float32(-1.0)),
                           tf.constant(np.float32(1.5))], producer=1, T=_attr(type=1)))


# ---- row ops, order statistics, the last identity-likes ------------------------
sample("GuaranteeConst", "GuaranteeConst", lambda tf, t: raw(tf, "GuaranteeConst", t["img"]) * 2.0)
sample("ParallelConcat", "ParallelConcat",
       lambda tf, t: raw(tf, "ParallelConcat", [t["y"][:1], t["z"][2:], t["y"][1:2]], shape=[3, 4, 5]))
sample("NthElement", "NthElement", lambda tf, t: raw(tf, "NthElement", t["x"], 3))  # ties among x's halves
sample("NthElement", "NthElement_reverse", lambda tf, t: raw(tf, "NthElement", _conv(tf, t), 1, reverse=True))
sample("NthElement", "NthElement_int32", lambda tf, t: raw(tf, "NthElement", t["i"], 0))
sample("ToBool", "ToBool", lambda tf, t: tf.logical_and(t["m"], raw(tf, "ToBool", t["x"][0, 0, 0, 1])))
sample("ToBool", "ToBool_tensor", lambda tf, t: tf.logical_or(t["m"], raw(tf, "ToBool", t["x"])))
# TF's Inplace* kernels write into their input's buffer: each gets a tensor of its own (a feed, or a node that
# TF's common-subexpression pass could share with another sample, would be overwritten for every reader)
for _k, _op in enumerate(("InplaceUpdate", "InplaceAdd", "InplaceSub")):
    sample(_op, _op, lambda tf, t, o=_op, k=_k: raw(tf, o, t["y"] * np.float32(1.25 + k / 4), np.int32([2, 0]),
                                                     t["z"][1:] * 3.0))
    sample(_op, f"{_op}_int32", lambda tf, t, o=_op, k=_k: raw(tf, o, tf.bitwise.bitwise_xor(t["i"], np.int32(5 + k)),
                                                                np.int32([1]), t["i"][:1]))
# volume patches: SAME at strides 2 on odd sizes (pads at the end only, or both sides), VALID
sample("ExtractVolumePatches", "ExtractVolumePatches", lambda tf, t: raw(
    tf, "ExtractVolumePatches", t["vol"], ksizes=[1, 2, 3, 2, 1], strides=[1, 2, 2, 3, 1], padding="SAME"))
sample("ExtractVolumePatches", "ExtractVolumePatches_valid", lambda tf, t: raw(
    tf, "ExtractVolumePatches", t["vol"], ksizes=[1, 3, 2, 2, 1], strides=[1, 1, 3, 2, 1], padding="VALID"))


# ---- scatter/segment ops with constant indices, index and layout ops -------------

def _ids(case: str, size: int, low: int, high: int, sort: bool = False) -> np.ndarray:
    ids = _rng(case).integers(low, high, size)
    return np.sort(ids).astype(np.int32) if sort else ids.astype(np.int32)


sample("Concat", "Concat", lambda tf, t: raw(tf, "Concat", 2, [t["x"], t["d"], t["p"]]))
sample("Concat", "Concat_nhwc", lambda tf, t: raw(tf, "Concat", 3, [_conv(tf, t), tf.nn.relu(_conv(tf, t))]))
sample("Reverse", "Reverse", lambda tf, t: raw(tf, "Reverse", t["x"], [True, False, True, True]))
sample("Reverse", "Reverse_nhwc", lambda tf, t: raw(tf, "Reverse", _conv(tf, t), [False, True, False, True]))
sample("ConjugateTranspose", "ConjugateTranspose", lambda tf, t: raw(tf, "ConjugateTranspose", t["x"], [2, 0, 3, 1]))
for _case, _feed in (("Roll", "x"), ("Roll_int32", "i"), ("Roll_repeated_axis", "x")):
    _r = _rng(_case)
    _roll_axes = [1, 1] if _case == "Roll_repeated_axis" else sorted(_r.choice(4, 2, replace=False).tolist())
    _roll_shifts = _r.integers(-7, 8, 2).tolist()
    sample("Roll", _case, lambda tf, t, f=_feed, s=_roll_shifts, a=_roll_axes:
           raw(tf, "Roll", t[f], np.int32(s), np.int32(a)))
sample("Roll", "Roll_nhwc", lambda tf, t: raw(tf, "Roll", _conv(tf, t), np.int32([2, -1]), np.int32([1, 3])))
sample("Fill", "Fill", lambda tf, t: raw(tf, "Fill", np.int32([3, 1, 4]), tf.reduce_max(t["x"])))
sample("Fill", "Fill_int32", lambda tf, t: raw(tf, "Fill", np.int32([2, 5]), tf.reduce_sum(t["i"])))
sample("LinSpace", "LinSpace", lambda tf, t: raw(tf, "LinSpace", tf.reduce_min(t["x"]), tf.reduce_max(t["p"]) * 3.0,
                                                 np.int32(7)))
sample("LinSpace", "LinSpace_backward", lambda tf, t: raw(tf, "LinSpace", tf.reduce_sum(t["p"]), tf.reduce_min(t["x"]),
                                                          np.int64(11)))


def _shape_vectors(tf: Any, t: dict[str, Any]) -> tuple[Any, Any]:
    """Two runtime shape vectors that broadcast (where they differ, one of them is 1)."""
    s0 = tf.abs(t["j"][0, :4])
    s1 = tf.where(t["j"][1, 1:4] > 0, 1, tf.abs(t["j"][0, 1:4]))
    return s0, s1


sample("BroadcastArgs", "BroadcastArgs", lambda tf, t: raw(tf, "BroadcastArgs", *_shape_vectors(tf, t)))
sample("BroadcastArgs", "BroadcastArgs_swapped", lambda tf, t: raw(tf, "BroadcastArgs", *_shape_vectors(tf, t)[::-1]))
sample("ConcatOffset", "ConcatOffset", lambda tf, t: raw(tf, "ConcatOffset", np.int32(1), [
    tf.concat([tf.abs(t["j"][0, :1]), tf.abs(t["j"][k, 1:2]), tf.abs(t["j"][0, 2:3])], 0) for k in range(3)])[2])
sample("InvertPermutation", "InvertPermutation", lambda tf, t: raw(
    tf, "InvertPermutation", raw(tf, "TopKV2", tf.reshape(t["d"], [-1])[:7], 7)[1]))
sample("UnravelIndex", "UnravelIndex", lambda tf, t: raw(tf, "UnravelIndex", tf.abs(t["i"][0, 1, 2, :]),
                                                         np.int32([3, 7])))
sample("UnravelIndex", "UnravelIndex_3d", lambda tf, t: raw(tf, "UnravelIndex", tf.reshape(tf.abs(t["i"]), [-1]),
                                                            np.int32([3, 1, 7])))
sample("DataFormatDimMap", "DataFormatDimMap",
       lambda tf, t: raw(tf, "DataFormatDimMap", tf.math.floormod(t["j"], 8) - 4))
sample("DataFormatDimMap", "DataFormatDimMap_3d", lambda tf, t: raw(
    tf, "DataFormatDimMap", tf.math.floormod(t["j"], 10) - 5, src_format="NDHWC", dst_format="NCDHW"))
sample("DataFormatVecPermute", "DataFormatVecPermute", lambda tf, t: raw(tf, "DataFormatVecPermute", t["j"][0, :4]))
sample("DataFormatVecPermute", "DataFormatVecPermute_pairs", lambda tf, t: raw(
    tf, "DataFormatVecPermute", t["j"][:, :2], src_format="NCHW", dst_format="NHWC"))


def _sorted_rows_and_values(tf: Any, t: dict[str, Any]) -> tuple[Any, Any]:
    """Rising rows (running sums of positives) and values around them, some equal to a row's entries."""
    rows = tf.cumsum(tf.reshape(t["p"], [6, 20]), axis=1)
    return rows, tf.concat([tf.reshape(t["x"], [6, 20]) * 8.0 + 10.0, rows[:, ::3]], axis=1)


for _op in ("LowerBound", "UpperBound"):
    sample(_op, _op, lambda tf, t, o=_op: raw(tf, o, *_sorted_rows_and_values(tf, t)))
    sample(_op, f"{_op}_int64", lambda tf, t, o=_op: raw(tf, o, *_sorted_rows_and_values(tf, t), out_type=tf.int64))
sample("Cross", "Cross", lambda tf, t: raw(tf, "Cross", t["x"][..., :3], t["d"][..., 1:4]))
sample("Cross", "Cross_rank3", lambda tf, t: raw(tf, "Cross", t["y"][..., 2:], t["z"][..., :3]))
sample("ReverseSequence", "ReverseSequence", lambda tf, t: raw(tf, "ReverseSequence", t["x"], np.int64([3, 1, 4]),
                                                               seq_dim=2, batch_dim=1))
sample("ReverseSequence", "ReverseSequence_runtime", lambda tf, t: raw(
    tf, "ReverseSequence", t["x"], tf.math.floormod(tf.abs(t["j"][1, :2]), 6), seq_dim=3, batch_dim=0))
sample("ReverseSequence", "ReverseSequence_int32", lambda tf, t: raw(
    tf, "ReverseSequence", t["i"], tf.math.floormod(t["j"][2, :3], 5), seq_dim=2, batch_dim=1))


def _targets(tf: Any, t: dict[str, Any]) -> Any:
    return tf.math.floormod(tf.reshape(t["j"], [-1])[:6] * 7, 20)


sample("InTopK", "InTopK", lambda tf, t: raw(tf, "InTopK", tf.reshape(t["x"], [6, 20]), _targets(tf, t), k=3))
sample("InTopK", "InTopK_nonfinite", lambda tf, t: raw(tf, "InTopK", tf.reshape(t["w"], [6, 20]), _targets(tf, t), k=9))
sample("InTopKV2", "InTopKV2", lambda tf, t: raw(tf, "InTopKV2", tf.reshape(t["x"], [6, 20]),
                                                 tf.cast(_targets(tf, t), tf.int64), np.int64(5)))
# repeated indices: TF applies the updates in index order
for _op, _feed in (("TensorScatterAdd", "y"), ("TensorScatterSub", "y"), ("TensorScatterMax", "y"),
                   ("TensorScatterMin", "y"), ("ScatterNdNonAliasingAdd", "y"), ("TensorScatterMax", "i")):
    _case = f"{_op}_{_feed}"
    _idx = _ids(_case, 4, 0, 3).reshape(4, 1)
    sample(_op, _case, lambda tf, t, o=_op, f=_feed, ix=_idx: raw(
        tf, o, t[f][0] if f == "i" else t[f], ix, tf.concat([t[f][0], t[f][1, :1]], 0) if f == "i"
        else tf.concat([t["z"], t["z"][1:2]], 0)))  # rank-3 feeds: no layout moves, so Caffe too
sample("TensorScatterUpdate", "TensorScatterUpdate", lambda tf, t: raw(
    tf, "TensorScatterUpdate", t["x"], np.int32([[1, 2], [0, 0], [1, 0]]), t["d"][0]))
sample("TensorScatterUpdate", "TensorScatterUpdate_rank3", lambda tf, t: raw(
    tf, "TensorScatterUpdate", t["y"], np.int32([[2, 1], [0, 3]]), t["z"][1, :2]))
sample("TensorScatterAdd", "TensorScatterAdd_scalars", lambda tf, t: raw(
    tf, "TensorScatterAdd", t["y"], np.int32([[2, 3, 4], [0, 0, 0], [2, 3, 4]]), t["x"][0, 0, 0, :3]))
sample("SparseToDense", "SparseToDense", lambda tf, t: raw(
    tf, "SparseToDense", np.int32([[0, 1], [1, 0], [2, 3]]), np.int32([3, 5]), t["x"][0, 0, 0, :3],
    tf.reduce_min(t["x"])))
sample("SparseToDense", "SparseToDense_scalar_value", lambda tf, t: raw(
    tf, "SparseToDense", np.int64([4, 0, 6]), np.int64([7]), tf.reduce_max(t["i"]), np.int32(-3),
    validate_indices=False))
_SEGMENT_IDS = _ids("Segment", 8, 0, 7, sort=True)  # 8 rows, gaps: empty segments
for _kind, _feed in (("Sum", "x"), ("Mean", "x"), ("Max", "x"), ("Min", "x"), ("Prod", "u"), ("Sum", "i")):
    sample(f"Segment{_kind}", f"Segment{_kind}_{_feed}", lambda tf, t, k=_kind, f=_feed: raw(
        tf, f"Segment{k}", tf.reshape(t[f], [8, 3, 5]), _SEGMENT_IDS))
_UNSORTED_IDS = _ids("UnsortedSegment", 6, -1, 6).reshape(2, 3)  # a -1 drops its row; count 7: empty ones
for _kind, _feed in (("Sum", "x"), ("Max", "x"), ("Min", "x"), ("Prod", "u"), ("Max", "i"), ("Min", "i")):
    sample(f"UnsortedSegment{_kind}", f"UnsortedSegment{_kind}_{_feed}", lambda tf, t, k=_kind, f=_feed: raw(
        tf, f"UnsortedSegment{k}", t[f], _UNSORTED_IDS, np.int32(7)))
# well-conditioned matrices (diagonally dominant): float32 LU agrees with TF's to a few units in the last place
sample("MatrixDeterminant", "MatrixDeterminant", lambda tf, t: raw(
    tf, "MatrixDeterminant", t["x"][..., :4] + 8 * np.eye(4, dtype=np.float32)))
sample("MatrixInverse", "MatrixInverse", lambda tf, t: raw(
    tf, "MatrixInverse", t["x"][..., :4] + 8 * np.eye(4, dtype=np.float32)))
sample("MatrixInverse", "MatrixInverse_adjoint", lambda tf, t: raw(
    tf, "MatrixInverse", t["x"][..., 1:] + 8 * np.eye(4, dtype=np.float32), adjoint=True))
sample("Bincount", "Bincount", lambda tf, t: raw(tf, "Bincount", tf.abs(t["i"]), np.int32(15), np.float32([])))
sample("Bincount", "Bincount_weights", lambda tf, t: raw(tf, "Bincount", tf.abs(t["i"]), np.int32(17), t["x"]))
sample("DenseBincount", "DenseBincount", lambda tf, t: raw(
    tf, "DenseBincount", tf.reshape(tf.abs(t["i"]), [6, 20]), np.int32(13), np.float32([])))
sample("DenseBincount", "DenseBincount_binary", lambda tf, t: raw(
    tf, "DenseBincount", tf.reshape(tf.abs(t["i"]), [6, 20]), np.int32(13), np.float32([]), binary_output=True))
sample("DenseBincount", "DenseBincount_weights", lambda tf, t: raw(
    tf, "DenseBincount", tf.abs(t["i"][0, 0]), np.int32(9), t["x"][1, 2]))
# the output size depends on runtime values: Where converts with a data-dependent length, Range is refused
sample("Where", "Where", lambda tf, t: tf.cast(raw(tf, "Where", t["m"]), tf.float32))
sample("GatherNd", "GatherNd_where", lambda tf, t: raw(tf, "GatherNd", t["x"], raw(tf, "Where", t["m"])))
sample("TopKV2", "TopKV2_runtime_k", lambda tf, t: raw(tf, "TopKV2", tf.reshape(t["p"], [-1]), tf.reduce_sum(
    tf.cast(tf.reshape(t["p"], [-1]) > 2.0, tf.int32)))[0])
sample("Range", "Range", lambda tf, t: tf.cast(raw(tf, "Range", 0, tf.reduce_max(t["i"]), 1), tf.float32))
# lengths the data decides: how many distinct values, how many bins (the largest value + 1)
sample("Unique", "Unique", lambda tf, t: raw(tf, "Unique", tf.reshape(t["i"], [-1]))[0])
sample("UniqueWithCounts", "UniqueWithCounts", lambda tf, t: raw(
    tf, "UniqueWithCounts", tf.reshape(t["x"], [-1]), out_idx=tf.int64)[2])
sample("UniqueV2", "UniqueV2", lambda tf, t: raw(tf, "UniqueV2", tf.abs(t["i"][0, 0]) // 8, np.int64([1]))[1])
sample("UniqueWithCountsV2", "UniqueWithCountsV2", lambda tf, t: raw(
    tf, "UniqueWithCountsV2", tf.cast(t["m"][1, 2], tf.int32), np.int32([0]))[0])
sample("RaggedRange", "RaggedRange", lambda tf, t: raw(tf, "RaggedRange", t["i"][0, 0, 0], 9, 4)[1])
sample("CTCGreedyDecoder", "CTCGreedyDecoder", lambda tf, t: raw(
    tf, "CTCGreedyDecoder", tf.round(t["x"][0]), np.int32([3, 2, 0, 1]), merge_repeated=True)[1])
sample("CTCGreedyDecoder", "CTCGreedyDecoder_log_probability", lambda tf, t: raw(
    tf, "CTCGreedyDecoder", t["x"][1], np.int32([1, 3, 3, 0]))[3])
sample("Bincount", "Bincount_run_time_size", lambda tf, t: raw(
    tf, "Bincount", tf.abs(t["i"]), tf.reduce_max(tf.abs(t["i"])) + 1, np.float32([])))
sample("DenseBincount", "DenseBincount_run_time_size", lambda tf, t: raw(
    tf, "DenseBincount", tf.reshape(tf.abs(t["i"]), [6, 20]), tf.reduce_max(tf.abs(t["i"])) - 3,
    tf.reshape(t["x"], [6, 20])))
_SPARSE_AT = np.int64([[0, 1, 2], [1, 0, 4], [1, 0, 4], [2, 3, 0]])  # a repeated element: its values add up
sample("SparseTensorDenseAdd", "SparseTensorDenseAdd", lambda tf, t: raw(
    tf, "SparseTensorDenseAdd", _SPARSE_AT, t["x"][0, 0, 0, :4], np.int64([3, 4, 5]), t["y"] * 7.0))
sample("SparseReduceSum", "SparseReduceSum", lambda tf, t: raw(
    tf, "SparseReduceSum", _SPARSE_AT, t["x"][1, 0, 0, :4], np.int64([3, 4, 5]), np.int32([1]), keep_dims=False))
sample("SparseReduceSum", "SparseReduceSum_keep", lambda tf, t: raw(
    tf, "SparseReduceSum", _SPARSE_AT, t["x"][1, 0, 0, :4], np.int64([3, 4, 5]), np.int32([0, 2]), keep_dims=True))
for _op in ("SparseDenseCwiseAdd", "SparseDenseCwiseMul", "SparseDenseCwiseDiv"):
    sample(_op, _op, lambda tf, t, o=_op: raw(tf, o, _SPARSE_AT, t["x"][0, 1, 1, :4], np.int64([3, 4, 5]), t["d"][1]))
    sample(_op, f"{_op}_broadcast", lambda tf, t, o=_op: raw(
        tf, o, _SPARSE_AT, t["x"][0, 1, 2, :4], np.int64([3, 4, 5]), t["d"][0, 0, :1]))
sample("DynamicStitch", "DynamicStitch", lambda tf, t: raw(
    tf, "DynamicStitch", [np.int32([[3, 0], [1, 5]]), np.int32([2, 4, 1])], [t["y"][:2, :2], t["z"][0, :3]]))
sample("ParallelDynamicStitch", "ParallelDynamicStitch", lambda tf, t: raw(
    tf, "ParallelDynamicStitch", [np.int32([4, 1]), np.int32([[0], [3], [2]])], [t["i"][0, 0, :2], t["j"][:3, None]]))
sample("DynamicPartition", "DynamicPartition", lambda tf, t: raw(
    tf, "DynamicPartition", t["x"], np.int32([[1, 0, 2], [2, 2, 0]]), num_partitions=3)[2])
sample("DynamicPartition", "DynamicPartition_first", lambda tf, t: raw(
    tf, "DynamicPartition", t["i"][0], np.int32([1, 0, 1]), num_partitions=2)[1])
_SPARSE_ROWS, _SPARSE_IDS = np.int32([5, 0, 5, 2, 7, 1]), np.int32([0, 0, 2, 3, 3, 3])  # segment 1 empty
for _op in ("SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN"):
    sample(_op, _op, lambda tf, t, o=_op: raw(tf, o, tf.reshape(t["x"], [8, 3, 5]), _SPARSE_ROWS, _SPARSE_IDS))
    sample(f"{_op}WithNumSegments", f"{_op}WithNumSegments", lambda tf, t, o=_op: raw(
        tf, f"{o}WithNumSegments", tf.reshape(t["d"], [8, 15]), _SPARSE_ROWS, _SPARSE_IDS, np.int32(6)))
sample("SparseSegmentSum", "SparseSegmentSum_int32", lambda tf, t: raw(
    tf, "SparseSegmentSum", tf.reshape(t["i"], [8, 15]), _SPARSE_ROWS, _SPARSE_IDS))

for _case in (f"CumulativeLogsumexp_{n}" for n in range(3)):
    _r = _rng(_case)
    _axis, _exclusive, _reverse = int(_r.integers(0, 4)), bool(_r.integers(2)), bool(_r.integers(2))
    sample("CumulativeLogsumexp", _case, lambda tf, t, a=_axis, e=_exclusive, rv=_reverse: raw(
        tf, "CumulativeLogsumexp", t["x"] * 4.0, a, exclusive=e, reverse=rv))
sample("CumulativeLogsumexp", "CumulativeLogsumexp_nhwc", lambda tf, t: raw(
    tf, "CumulativeLogsumexp", _conv(tf, t), 3, exclusive=True))
# values on and next to the bin edges, and beyond the range on both sides
sample("HistogramFixedWidth", "HistogramFixedWidth", lambda tf, t: raw(
    tf, "HistogramFixedWidth", tf.concat([tf.reshape(t["x"], [-1]), np.float32([-1.2, 0.6, 0.59999996, 2.4])], 0),
    np.float32([-1.2, 2.4]), np.int32(6)))
sample("HistogramFixedWidth", "HistogramFixedWidth_int64", lambda tf, t: raw(
    tf, "HistogramFixedWidth", t["p"], np.float32([0.3, 3.3]), np.int32(7), dtype=tf.int64))
_SPARSE_AB = np.int64([[0, 2], [0, 4], [2, 1], [3, 0], [3, 4]])  # (4, 5): row 1 empty
sample("SparseTensorDenseMatMul", "SparseTensorDenseMatMul", lambda tf, t: raw(
    tf, "SparseTensorDenseMatMul", _SPARSE_AB, t["x"][0, 0, 0], np.int64([4, 5]), t["d"][0, 0], adjoint_b=True))
sample("SparseTensorDenseMatMul", "SparseTensorDenseMatMul_adjoint_a", lambda tf, t: raw(
    tf, "SparseTensorDenseMatMul", _SPARSE_AB, t["x"][0, 0, 1], np.int64([4, 5]), t["d"][1, 0], adjoint_a=True))
sample("SparseSoftmax", "SparseSoftmax", lambda tf, t: raw(
    tf, "SparseSoftmax", np.int64([[0, 0, 1], [0, 0, 3], [0, 2, 0], [1, 1, 1], [1, 1, 2], [1, 1, 4]]),
    tf.reshape(t["x"], [-1])[7:13] * 3.0, np.int64([2, 3, 5])))
# SparseTensor ops of constant indices: the values are runtime, every index and shape output a constant
_SP_UNORDERED = np.int64([[2, 1], [0, 3], [1, 0], [0, 1], [2, 4], [1, 2]])  # a (3, 5) tensor, rows shuffled
_SP_ORDERED = _SP_UNORDERED[np.lexsort(_SP_UNORDERED.T[::-1])]
_SP_SHAPE = np.int64([3, 5])


sample("SparseReorder", "SparseReorder", lambda tf, t: raw(
    tf, "SparseReorder", _SP_UNORDERED, tf.concat([t["y"][0, 0], t["y"][0, 1, :1]], 0), _SP_SHAPE)[1])
sample("SparseSlice", "SparseSlice", lambda tf, t: raw(
    tf, "SparseSlice", _SP_ORDERED, tf.concat([t["y"][1, 0], t["y"][1, 1, :1]], 0), _SP_SHAPE, np.int64([0, 1]),
    np.int64([2, 3]))[1])
sample("SparseConcat", "SparseConcat", lambda tf, t: raw(
    tf, "SparseConcat", [_SP_ORDERED, _SP_ORDERED[:4]], [tf.concat([t["y"][2, 0], t["y"][2, 1, :1]], 0),
                                                         t["z"][0, 0, :4]], [_SP_SHAPE, _SP_SHAPE], concat_dim=1)[1])
sample("SparseConcat", "SparseConcat_rows", lambda tf, t: raw(
    tf, "SparseConcat", [_SP_ORDERED[:3], _SP_ORDERED],
    [t["z"][1, 0, :3], tf.concat([t["y"][2, 0], t["y"][2, 1, :1]], 0)], [_SP_SHAPE, _SP_SHAPE], concat_dim=0)[1])
sample("SparseSplit", "SparseSplit", lambda tf, t: raw(
    tf, "SparseSplit", np.int64(1), _SP_ORDERED, tf.concat([t["y"][0, 2], t["y"][0, 3, :1]], 0), _SP_SHAPE,
    num_split=2)[1][1])
sample("SparseFillEmptyRows", "SparseFillEmptyRows", lambda tf, t: raw(
    tf, "SparseFillEmptyRows", np.int64([[0, 1], [0, 4], [3, 2]]), t["z"][2, 1, :3], np.int64([5, 6]),
    tf.reduce_max(t["z"]))[1])
sample("SparseReduceMax", "SparseReduceMax", lambda tf, t: raw(
    tf, "SparseReduceMax", _SP_ORDERED, tf.concat([t["y"][1, 2], t["y"][1, 3, :1]], 0) - 5.0, _SP_SHAPE,
    np.int32([1]), keep_dims=False))
for _op in ("SparseReduceMaxSparse", "SparseReduceSumSparse"):
    sample(_op, _op, lambda tf, t, o=_op: raw(
        tf, o, _SP_ORDERED, tf.concat([t["y"][2, 2], t["y"][2, 3, :1]], 0), _SP_SHAPE, np.int32([0]),
        keep_dims=True)[1])
for _op in ("SparseSparseMaximum", "SparseSparseMinimum"):
    sample(_op, _op, lambda tf, t, o=_op: raw(
        tf, o, _SP_ORDERED, tf.concat([t["y"][0, 1], t["y"][0, 2, :1]], 0), _SP_SHAPE,
        np.int64([[0, 1], [1, 1], [2, 4]]), t["z"][1, 1, :3], _SP_SHAPE)[1])
sample("SparseBincount", "SparseBincount", lambda tf, t: raw(
    tf, "SparseBincount", _SP_ORDERED, tf.abs(tf.reshape(t["j"], [-1])[:6]),
    _SP_SHAPE, np.int32(5), np.float32([]), binary_output=False))
sample("SparseBincount", "SparseBincount_binary", lambda tf, t: raw(
    tf, "SparseBincount", _SP_ORDERED[:, 1:], tf.abs(tf.reshape(t["j"], [-1])[3:9]), np.int64([5]), np.int32(6),
    np.float32([]), binary_output=True))
sample("SparseBincount", "SparseBincount_weights", lambda tf, t: raw(
    tf, "SparseBincount", _SP_ORDERED, tf.abs(tf.reshape(t["j"], [-1])[6:12]), _SP_SHAPE, np.int32(7),
    tf.concat([t["y"][1, 1], t["y"][1, 2, :1]], 0), binary_output=False))
sample("SparseMatMul", "SparseMatMul", lambda tf, t: raw(tf, "SparseMatMul", tf.reshape(t["x"], [24, 5]), _w(15, 4, 5),
                                                         transpose_b=True, b_is_sparse=True))
sample("SparseMatMul", "SparseMatMul_activations", lambda tf, t: raw(
    tf, "SparseMatMul", tf.reshape(t["x"], [6, 20]), tf.reshape(t["d"], [6, 20]), transpose_a=True, a_is_sparse=True))
# the fused recurrent cells of tf.contrib.rnn: one step (batch 3, input 5, units 4), then sequences of 4 steps
_LSTM_W, _LSTM_B, _PEEPS = _w(16, 9, 16) * 0.5, _w(17, 16) * 0.5, [_w(18 + k, 4) * 0.5 for k in range(3)]
for _peep, _clip in ((False, 3.0), (True, 0.5)):
    for _k, _name in enumerate(("i", "cs", "f", "o", "ci", "co", "h")):
        if _name in ("i", "cs", "h") or _peep:
            sample("LSTMBlockCell", f"LSTMBlockCell_{_name}{'_peephole' if _peep else ''}",
                   lambda tf, t, k=_k, p=_peep, c=_clip: raw(
                       tf, "LSTMBlockCell", t["y"][:, 0], t["d"][0, :, 0, :4] * 2.0, t["x"][1, :, 1, :4], _LSTM_W,
                       *_PEEPS, _LSTM_B, forget_bias=0.7, cell_clip=c, use_peephole=p)[k])
# steps from seq_len_max on: TF zeroes cs and h there and leaves the other outputs uninitialized
for _op in ("BlockLSTM", "BlockLSTMV2"):
    for _k, _name in enumerate(("i", "cs", "f", "o", "ci", "co", "h")):
        sample(_op, f"{_op}_{_name}", lambda tf, t, o=_op, k=_k, n=3 if _name in ("cs", "h") else 4: raw(
            tf, o, np.int64(n), tf.transpose(t["y"], [1, 0, 2])[:, :3],
            t["d"][0, :, 0, :4], t["x"][1, :, 1, :4], _LSTM_W, *_PEEPS, _LSTM_B, cell_clip=1.5,
            use_peephole=o == "BlockLSTMV2", **({} if o == "BlockLSTMV2" else {"forget_bias": 0.3}))[k])
for _k, _name in enumerate(("r", "u", "c", "h")):
    sample("GRUBlockCell", f"GRUBlockCell_{_name}", lambda tf, t, k=_k: raw(
        tf, "GRUBlockCell", t["y"][:, 0], t["x"][1, :, 1, :4], _w(21, 9, 8) * 0.5, _w(22, 9, 4) * 0.5,
        _w(23, 8) * 0.5, _w(24, 4) * 0.5)[k])
sample("TensorStridedSliceUpdate", "TensorStridedSliceUpdate", lambda tf, t: raw(
    tf, "TensorStridedSliceUpdate", t["x"], np.int32([1, 0, 3]), np.int32([0, 3, -5]), np.int32([1, 2, -2]),
    t["d"][0, :2, :2] * 2.0, begin_mask=0, end_mask=1, shrink_axis_mask=1))
sample("TensorStridedSliceUpdate", "TensorStridedSliceUpdate_rank3", lambda tf, t: raw(
    tf, "TensorStridedSliceUpdate", t["y"], np.int32([0, 1]), np.int32([3, 4]), np.int32([2, 2]), t["z"][:2, :2],
    end_mask=0))
# SpaceToBatch / BatchToSpace (v1) on their own: odd padded sizes, a crop on every side
sample("SpaceToBatch", "SpaceToBatch", lambda tf, t: raw(tf, "SpaceToBatch", t["img"], np.int32([[1, 2], [0, 3]]),
                                                         block_size=3))
sample("BatchToSpace", "BatchToSpace", lambda tf, t: raw(tf, "BatchToSpace", tf.concat([t["img"]] * 4, 0) * 0.5
                                                         + tf.reshape(tf.range(4.0), [4, 1, 1, 1]),
                                                         np.int32([[1, 0], [2, 1]]), block_size=2))
sample("Conv", "Conv", lambda tf, t: raw(tf, "Conv", t["img"], _w(30, 3, 2, 3, 4), strides=[1, 2, 1, 1],
                                         padding="SAME", data_format="CHANNELS_LAST"))
sample("Conv", "Conv_dilated", lambda tf, t: raw(tf, "Conv", t["img"], _w(31, 2, 3, 3, 2), strides=[1, 1, 1, 1],
                                                 padding="VALID", dilations=[1, 2, 1, 1], data_format="CHANNELS_LAST"))
sample("TridiagonalMatMul", "TridiagonalMatMul", lambda tf, t: raw(
    tf, "TridiagonalMatMul", t["y"][:, :1, :4], t["z"][:, :1, :4],
    t["d"][0, :, :1, :4], t["x"][1, :, :4, :]))
sample("TridiagonalMatMul", "TridiagonalMatMul_rank3", lambda tf, t: raw(
    tf, "TridiagonalMatMul", t["z"][:, 2:3, 1:], t["y"][:, 1:2, :4], t["z"][:, :1, :4], t["y"]))


# ---- detection heads: non-max suppression of 30 boxes read off x (overlapping, flipped corners, tied scores) ----
def _nms_in(tf: Any, t: dict[str, Any]) -> tuple[Any, Any]:
    return tf.reshape(t["x"], [-1, 4])[:30], tf.round(tf.reshape(t["p"], [-1])[:30] * 2) / 2


for _op in ("NonMaxSuppression", "NonMaxSuppressionV2", "NonMaxSuppressionV3"):
    sample(_op, _op, lambda tf, t, o=_op: raw(tf, o, *_nms_in(tf, t), 12, *(
        () if o == "NonMaxSuppression" else (0.4,) if o == "NonMaxSuppressionV2" else (0.4, 1.0)),
        **({"iou_threshold": 0.4} if o == "NonMaxSuppression" else {})))
sample("NonMaxSuppressionV4", "NonMaxSuppressionV4", lambda tf, t: raw(
    tf, "NonMaxSuppressionV4", *_nms_in(tf, t), 12, 0.3, 1.0, pad_to_max_output_size=True)[0])
sample("NonMaxSuppressionV4", "NonMaxSuppressionV4_valid", lambda tf, t: tf.reshape(raw(
    tf, "NonMaxSuppressionV4", *_nms_in(tf, t), 12, 0.3, 1.0, pad_to_max_output_size=True)[1], [1]))
sample("NonMaxSuppressionV5", "NonMaxSuppressionV5", lambda tf, t: raw(
    tf, "NonMaxSuppressionV5", *_nms_in(tf, t), 40, 0.5, 0.5, 0.0, pad_to_max_output_size=True)[1])

# CombinedNonMaxSuppression: 2 images of 15 boxes read off x, 4 classes of distinct scores read off p
for _k, _part in enumerate(("boxes", "scores", "classes", "valid")):
    sample("CombinedNonMaxSuppression", f"CombinedNonMaxSuppression_{_part}", lambda tf, t, k=_k: raw(
        tf, "CombinedNonMaxSuppression", tf.reshape(t["x"], [2, 15, 1, 4]) * 0.3, tf.reshape(t["p"], [2, 15, 4]),
        3, 7, 0.4, 1.0, pad_per_class=False, clip_boxes=True)[k])

# ---- CropAndResize: ROI pooling of img, 6 boxes read off u (some partly off the image: extrapolated) ---------
def _crop_boxes(tf: Any, t: dict[str, Any]) -> Any:
    return tf.reshape(t["u"], [-1, 4])[:6] * 0.8 + 0.4


sample("CropAndResize", "CropAndResize", lambda tf, t: raw(
    tf, "CropAndResize", t["img"], _crop_boxes(tf, t), np.zeros(6, np.int32), np.int32([4, 3]),
    extrapolation_value=-1.0))
sample("CropAndResize", "CropAndResize_nearest", lambda tf, t: raw(
    tf, "CropAndResize", t["img"], _crop_boxes(tf, t), np.zeros(6, np.int32), np.int32([5, 2]), method="nearest"))

# ---- spectral ops: a complex tensor between them, read back by ComplexAbs / Real / Imag / Angle ---------------
sample("RFFT", "RFFT", lambda tf, t: tf.abs(raw(tf, "RFFT", t["x"], np.int32([4]))))
sample("IRFFT", "IRFFT", lambda tf, t: raw(tf, "IRFFT", raw(tf, "RFFT", t["x"], np.int32([5])), np.int32([5])))
sample("RFFT2D", "RFFT2D", lambda tf, t: tf.abs(raw(tf, "RFFT2D", t["x"], np.int32([3, 4]))))
sample("IRFFT2D", "IRFFT2D", lambda tf, t: raw(tf, "IRFFT2D", raw(tf, "RFFT2D", t["x"], np.int32([4, 5])),
                                               np.int32([4, 5])))
sample("FFT", "FFT", lambda tf, t: tf.abs(raw(tf, "FFT", tf.complex(t["x"], t["d"]))))
sample("IFFT", "IFFT", lambda tf, t: tf.math.real(raw(tf, "IFFT", tf.complex(t["x"], t["d"]))))
sample("ComplexAbs", "ComplexAbs", lambda tf, t: tf.abs(tf.complex(t["x"], t["d"])))
sample("Complex", "Complex", lambda tf, t: tf.math.imag(tf.complex(t["x"], t["d"]) * tf.complex(t["d"], t["x"])))
sample("Real", "Real", lambda tf, t: tf.math.real(raw(tf, "RFFT", t["x"], np.int32([5]))))
sample("Imag", "Imag", lambda tf, t: tf.math.imag(raw(tf, "RFFT", t["x"], np.int32([5]))))
sample("Angle", "Angle", lambda tf, t: tf.math.angle(raw(tf, "FFT", tf.complex(t["d"], t["u"]))))
for _op in ("FFT2D", "IFFT2D", "FFT3D", "IFFT3D"):
    sample(_op, _op, lambda tf, t, o=_op: tf.math.imag(raw(tf, o, tf.complex(t["x"], t["d"]))))
sample("RFFT3D", "RFFT3D", lambda tf, t: tf.abs(raw(tf, "RFFT3D", t["x"], np.int32([3, 4, 4]))))
sample("IRFFT3D", "IRFFT3D", lambda tf, t: raw(tf, "IRFFT3D", raw(tf, "RFFT3D", t["x"], np.int32([3, 4, 5])),
                                               np.int32([2, 4, 5])))
