"""convert.ir.reference: the numpy evaluator matches TensorFlow, op by op.

Spatial ops run the padding matrix (tests/support/ir_cases.py: the same sample of kernels, strides,
dilations, sizes and SAME / VALID / EXPLICIT / pad+VALID paddings the default run converts), both as
hand-built IR and as parsed TF graphs (tests/support/tf_cases.py). Every other op has one row in OTHER_OPS;
a test fails when a catalog op has no TF check."""

from __future__ import annotations

import os
from collections import defaultdict

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tests.support import ir_cases, sequence_cases
from tests.support.ir_cases import rel_error
from tests.support.tflite_integer import ROWS as TFLITE_INTEGER_ROWS
from tf_convert.convert import ir
from tf_convert.convert.ir.reference import REFERENCE, EvaluationError
from tf_convert.convert.ir.subgraph import Subgraph

RTOL = 1e-5
MATRIX = ir_cases.matrix(full=bool(os.environ.get("CONVERT_FULL_MATRIX")))
GROUPS: dict[str, list[ir_cases.Case]] = defaultdict(list)
for _case in MATRIX:
    GROUPS[f"{_case.op}-{_case.padding}"].append(_case)


def test_every_catalog_op_has_one_reference_function():
    assert set(REFERENCE) == set(ir.OPS)


# ---- spatial ops: the padding matrix ---------------------------------------------------------------


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_padding_matrix_hand_built_ir(group):
    pytest.importorskip("tensorflow")
    worst = (0.0, "")
    for case in GROUPS[group]:
        built = ir_cases.build(case)
        got = ir.evaluate(built.graph, [built.x_nchw])[built.graph.outputs[0]]
        worst = max(worst, (rel_error(got, built.expected_nchw), case.id))
    assert worst[0] <= RTOL, worst


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_padding_matrix_parsed_tf_graphs(group, tmp_path):
    """The .pb files the end-to-end matrix converts: parsed, and again after the default passes."""
    pytest.importorskip("tensorflow")
    from tests.support.tf_cases import build_pb
    from tf_convert import parsers
    from tf_convert.convert import passes

    worst = (0.0, "")
    for case in GROUPS[group]:
        tc = build_pb(case, tmp_path)
        graph = parsers.parse(tc.pb)
        expected = tc.y_nhwc.transpose(0, 3, 1, 2)
        x = tc.x_nhwc.transpose(0, 3, 1, 2)
        for g in (graph, passes.run_default_passes(graph)):
            got = ir.evaluate(g, [x])[g.outputs[0]]
            worst = max(worst, (rel_error(got, expected), case.id))
    assert worst[0] <= RTOL, worst


def test_avg_pool_count_include_pad_is_tf_avg_pool_of_zero_padded_input():
    tf = pytest.importorskip("tensorflow")
    x = np.random.default_rng(0).standard_normal((1, 2, 7, 6)).astype(np.float32)
    pads = (1, 2, 0, 1)
    node = ir.Node("p", "avg_pool2d", ["x"], ["p"],
                   {"kernel": (3, 3), "stride": (2, 2), "pads": pads, "count_include_pad": True})
    padded = np.pad(x.transpose(0, 2, 3, 1), ((0, 0), pads[:2], pads[2:], (0, 0)))
    expected = tf.nn.avg_pool2d(padded, 3, 2, "VALID").numpy().transpose(0, 3, 1, 2)
    assert rel_error(ir.evaluate_node(node, [x]), expected) <= RTOL


# ---- every other op against TensorFlow ---------------------------------------------------------------


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _f32(*shape, lo=None, hi=None, seed=0):
    r = _rng(seed)
    x = r.uniform(lo, hi, shape) if lo is not None else r.standard_normal(shape) * 2
    return x.astype(np.float32)


X4 = _f32(2, 3, 4, 5)
Y4 = _f32(1, 3, 1, 5, seed=1)
POS = _f32(2, 3, 4, 5, lo=0.1, hi=4.0, seed=2)
IDS = np.array([[0, 6, 2], [3, 3, 5]], np.int32)  # token ids; IDS - 1 holds -1, an all-off one-hot row
GAMMA, BETA = _f32(1, 3, 1, 1, seed=3), _f32(1, 3, 1, 1, seed=4)
W, B = _f32(6, 5, seed=5), _f32(6, seed=6)


def _tf_layer_norm(tf, x, axes, eps, gamma, beta):
    mean, var = tf.nn.moments(x, axes, keepdims=True)
    return (x - mean) * tf.math.rsqrt(var + eps) * gamma + beta


def _nhwc(fn, x, *args):
    """An NHWC TF op applied to an NCHW tensor, result NCHW."""
    import tensorflow as tf

    return tf.transpose(fn(tf.transpose(x, [0, 2, 3, 1]), *args), [0, 3, 1, 2])


def _tf_resize(tf, x, mode, flags, size):
    fn = tf.raw_ops.ResizeBilinear if mode == "bilinear" else tf.raw_ops.ResizeNearestNeighbor
    return _nhwc(lambda t: fn(images=t, size=list(size), align_corners=flags[0], half_pixel_centers=flags[1]), x)


# op -> [(attrs, params, inputs, tf function of (tf, *inputs))]
OTHER_OPS = {
    "channel_affine": [({"axis": 1}, {"scale": GAMMA.ravel(), "shift": BETA.ravel()}, [X4],
                        lambda tf, x: x * GAMMA + BETA)],
    "layer_norm": [
        ({"axes": (1,), "epsilon": 1e-3}, {"gamma": GAMMA, "beta": BETA}, [X4],
         lambda tf, x: _tf_layer_norm(tf, x, [1], 1e-3, GAMMA, BETA)),
        ({"axes": (2, 3), "epsilon": 1e-5}, {}, [X4], lambda tf, x: _tf_layer_norm(tf, x, [2, 3], 1e-5, 1.0, 0.0)),
    ],
    "linear": [({}, {"weight": W, "bias": B}, [_f32(4, 5)], lambda tf, x: tf.matmul(x, W.T) + B),
               ({}, {"weight": W}, [_f32(4, 5)], lambda tf, x: tf.matmul(x, W.T))],
    "pad": [
        ({"pads": ((0, 0), (0, 0), (1, 2), (0, 3)), "mode": "constant", "value": 0.5}, {}, [X4],
         lambda tf, x: tf.pad(x, [[0, 0], [0, 0], [1, 2], [0, 3]], constant_values=0.5)),
        ({"pads": ((0, 0), (1, 0), (2, 1), (3, 3)), "mode": "reflect", "value": 0.0}, {}, [X4],
         lambda tf, x: tf.pad(x, [[0, 0], [1, 0], [2, 1], [3, 3]], mode="REFLECT")),
        ({"pads": ((0, 0), (0, 0), (2, 1), (0, 4)), "mode": "symmetric", "value": 0.0}, {}, [X4],
         lambda tf, x: tf.pad(x, [[0, 0], [0, 0], [2, 1], [0, 4]], mode="SYMMETRIC")),
    ],
    "reshape": [({"shape": (2, 60)}, {}, [X4], lambda tf, x: tf.reshape(x, [2, 60]))],
    "transpose": [({"perm": (0, 2, 3, 1)}, {}, [X4], lambda tf, x: tf.transpose(x, [0, 2, 3, 1]))],
    "concat": [({"axis": 1}, {}, [X4, _f32(2, 2, 4, 5, seed=7)], lambda tf, a, b: tf.concat([a, b], 1))],
    "slice": [({"begin": (0, 1, 1, 0), "end": (1, 3, 4, 4)}, {}, [X4],
               lambda tf, x: tf.slice(x, [0, 1, 1, 0], [1, 2, 3, 4]))],
    "reduce_mean": [({"axes": (2, 3), "keepdims": True}, {}, [X4],
                     lambda tf, x: tf.reduce_mean(x, [2, 3], keepdims=True)),
                    ({"axes": (1,), "keepdims": False}, {}, [X4], lambda tf, x: tf.reduce_mean(x, [1]))],
    "reduce_max": [({"axes": (2, 3), "keepdims": False}, {}, [X4], lambda tf, x: tf.reduce_max(x, [2, 3]))],
    "softmax": [({"axis": 1}, {}, [X4 * 10], lambda tf, x: tf.nn.softmax(x, axis=1)),
                ({"axis": 3}, {}, [X4], lambda tf, x: tf.nn.softmax(x, axis=3))],
    "add": [({}, {}, [X4, Y4], lambda tf, a, b: a + b)],
    "sub": [({}, {}, [X4, Y4], lambda tf, a, b: a - b)],
    "mul": [({}, {}, [X4, Y4], lambda tf, a, b: a * b)],
    "div": [({}, {}, [X4, POS[:1, :, :1]], lambda tf, a, b: a / b)],
    "maximum": [({}, {}, [X4, Y4], lambda tf, a, b: tf.maximum(a, b))],
    "minimum": [({}, {}, [X4, Y4], lambda tf, a, b: tf.minimum(a, b))],
    "relu": [({}, {}, [X4], lambda tf, x: tf.nn.relu(x))],
    "clip": [({"min": 0.0, "max": 6.0}, {}, [X4 * 4], lambda tf, x: tf.nn.relu6(x)),
             ({"min": -1.0, "max": 0.5}, {}, [X4], lambda tf, x: tf.clip_by_value(x, -1.0, 0.5))],
    "leaky_relu": [({"alpha": 0.2}, {}, [X4], lambda tf, x: tf.nn.leaky_relu(x, 0.2))],
    "elu": [({"alpha": 1.0}, {}, [X4], lambda tf, x: tf.nn.elu(x))],
    "sigmoid": [({}, {}, [X4 * 30], lambda tf, x: tf.sigmoid(x))],
    "hard_sigmoid": [({"alpha": 1 / 6, "beta": 0.5}, {}, [X4 * 3],
                      lambda tf, x: tf.nn.relu6(x + 3) / 6)],
    "tanh": [({}, {}, [X4], lambda tf, x: tf.tanh(x))],
    "swish": [({}, {}, [X4], lambda tf, x: tf.nn.silu(x))],
    "hard_swish": [({}, {}, [X4 * 3], lambda tf, x: x * tf.nn.relu6(x + 3) / 6)],
    "gelu": [({"approximate": "none"}, {}, [X4], lambda tf, x: tf.nn.gelu(x, approximate=False)),
             ({"approximate": "tanh"}, {}, [X4], lambda tf, x: tf.nn.gelu(x, approximate=True))],
    "exp": [({}, {}, [X4], lambda tf, x: tf.exp(x))],
    "sqrt": [({}, {}, [POS], lambda tf, x: tf.sqrt(x))],
    "rsqrt": [({}, {}, [POS], lambda tf, x: tf.math.rsqrt(x))],
    "square": [({}, {}, [X4], lambda tf, x: tf.square(x))],
    "neg": [({}, {}, [X4], lambda tf, x: -x)],
    "abs": [({}, {}, [X4], lambda tf, x: tf.abs(x))],
    "identity": [({}, {}, [X4], lambda tf, x: tf.identity(x))],
    "const": [({}, {"value": Y4}, [], lambda tf: tf.constant(Y4))],
    # the full resize table is in tests/emitters/test_resize_matrix.py and tests/core/test_sampling_rules.py
    "resize": [
        ({"mode": mode, "coordinate": coordinate, "size": size}, {}, [X4],
         lambda tf, x, mode=mode, flags=flags, size=size: _tf_resize(tf, x, mode, flags, size))
        for mode in ("bilinear", "nearest")
        for coordinate, flags in {"asymmetric": (False, False), "half_pixel": (False, True),
                                  "align_corners": (True, False)}.items()
        for size in ((9, 7), (3, 2), (8, 10))
    ],
    "argmax": [({"axis": 1, "keepdims": False}, {}, [X4], lambda tf, x: tf.math.argmax(x, 1)),
               ({"axis": 3, "keepdims": True}, {}, [X4], lambda tf, x: tf.expand_dims(tf.math.argmax(x, 3), 3))],
    "depth_to_space": [({"block_size": 2}, {}, [_f32(1, 8, 3, 5)], lambda tf, x: _nhwc(tf.nn.depth_to_space, x, 2))],
    "space_to_depth": [({"block_size": 2}, {}, [_f32(1, 3, 4, 6)], lambda tf, x: _nhwc(tf.nn.space_to_depth, x, 2))],
    "matrix_determinant": [({}, {}, [_f32(2, 3, 4, 4) + 4 * np.eye(4, dtype=np.float32)],
                            lambda tf, x: tf.linalg.det(x))],
    "matrix_inverse": [({}, {}, [_f32(3, 5, 5) + 4 * np.eye(5, dtype=np.float32)], lambda tf, x: tf.linalg.inv(x))],
    "matmul": [({}, {}, [_f32(2, 3, 4, 5), _f32(2, 3, 5, 6, seed=8)], lambda tf, a, b: tf.linalg.matmul(a, b)),
               ({}, {}, [_f32(4, 5), _f32(5, 3, seed=8)], lambda tf, a, b: tf.linalg.matmul(a, b))],
    # ---- embeddings, token inputs ----
    "gather": [({"axis": 0}, {}, [_f32(7, 5), IDS], lambda tf, t, i: tf.gather(t, i)),
               ({"axis": 1}, {}, [X4, IDS % 3], lambda tf, t, i: tf.gather(t, i, axis=1)),
               ({"axis": 2}, {}, [X4, IDS.astype(np.int64) % 4], lambda tf, t, i: tf.gather(t, i, axis=2))],
    "one_hot": [({"depth": 5, "axis": 2, "on": 1.0, "off": 0.0}, {}, [IDS - 1],
                 lambda tf, i: tf.one_hot(i, 5)),
                ({"depth": 4, "axis": 0, "on": 2.0, "off": -1.0}, {}, [IDS.astype(np.int64)],
                 lambda tf, i: tf.one_hot(i, 4, on_value=2.0, off_value=-1.0, axis=0))],
}

# ---- one row per op, TF's raw op on inputs in the op's domain --------------------------------
HALVES = (np.round(X4 * 2) / 2).astype(np.float32)  # rounding ties
UNIT = _f32(2, 3, 4, 5, lo=-0.9, hi=0.9, seed=9)
ABOVE1 = _f32(2, 3, 4, 5, lo=1.1, hi=4.0, seed=10)
NONZERO = np.where(np.abs(Y4) < 0.3, 1.0, Y4).astype(np.float32)
INTS, INT_DIVISORS = _rng(11).integers(-20, 21, (2, 3, 4, 5)).astype(np.int32), np.int32([[3], [-2], [5], [-7]])
MASK_A, MASK_B = _rng(12).random((2, 3, 4, 5)) < 0.5, _rng(13).random((1, 3, 1, 5)) < 0.5
SPECIALS = np.float32([0.5, np.nan, np.inf, -np.inf, -2.0, 0.0])
UNARY_22 = {  # IR op -> (TF raw op, input)
    "softplus": ("Softplus", X4 * 8), "softsign": ("Softsign", X4), "selu": ("Selu", X4), "erf": ("Erf", X4),
    "erfc": ("Erfc", X4), "floor": ("Floor", X4), "ceil": ("Ceil", X4), "round": ("Round", HALVES),
    "sign": ("Sign", HALVES), "log": ("Log", POS), "log1p": ("Log1p", POS), "expm1": ("Expm1", X4),
    "reciprocal": ("Reciprocal", POS), "sin": ("Sin", X4), "cos": ("Cos", X4), "tan": ("Tan", UNIT),
    "asin": ("Asin", UNIT), "acos": ("Acos", UNIT), "atan": ("Atan", X4), "sinh": ("Sinh", X4),
    "cosh": ("Cosh", X4), "asinh": ("Asinh", X4), "acosh": ("Acosh", ABOVE1), "atanh": ("Atanh", UNIT),
    "is_nan": ("IsNan", SPECIALS), "is_inf": ("IsInf", SPECIALS), "is_finite": ("IsFinite", SPECIALS),
    "logical_not": ("LogicalNot", MASK_A),
}
BINARY_22 = {  # IR op -> (TF raw op, a, b)
    "pow": ("Pow", POS, Y4), "floor_div": ("FloorDiv", X4, NONZERO), "floor_mod": ("FloorMod", X4, NONZERO),
    "truncate_div": ("TruncateDiv", INTS, INT_DIVISORS), "truncate_mod": ("TruncateMod", X4, NONZERO),
    "div_no_nan": ("DivNoNan", X4, np.where(Y4 > 0, 0.0, Y4).astype(np.float32)), "atan2": ("Atan2", X4, Y4),
    "equal": ("Equal", HALVES, np.round(Y4)), "not_equal": ("NotEqual", HALVES, np.round(Y4)),
    "less": ("Less", X4, Y4), "less_equal": ("LessEqual", HALVES, np.round(Y4)), "greater": ("Greater", X4, Y4),
    "greater_equal": ("GreaterEqual", HALVES, np.round(Y4)), "logical_and": ("LogicalAnd", MASK_A, MASK_B),
    "logical_or": ("LogicalOr", MASK_A, MASK_B),
}
for _op, (_tf_op, _x) in UNARY_22.items():
    OTHER_OPS[_op] = [({}, {}, [_x], lambda tf, x, o=_tf_op: getattr(tf.raw_ops, o)(**{
        "features" if o in ("Softplus", "Softsign", "Selu") else "x": x}))]
for _op, (_tf_op, _a, _b) in BINARY_22.items():
    OTHER_OPS[_op] = [({}, {}, [_a, _b], lambda tf, a, b, o=_tf_op: getattr(tf.raw_ops, o)(
        **({"y": a, "x": b} if o == "Atan2" else {"x": a, "y": b})))]
OTHER_OPS.update({
    "floor_div": OTHER_OPS["floor_div"] + [({}, {}, [INTS, INT_DIVISORS], lambda tf, a, b: tf.math.floordiv(a, b))],
    "floor_mod": OTHER_OPS["floor_mod"] + [({}, {}, [INTS, INT_DIVISORS], lambda tf, a, b: tf.math.floormod(a, b))],
    "select": [({}, {}, [MASK_B, X4, Y4], lambda tf, c, a, b: tf.where(c, a, b))],
    "cast": [({"dtype": "int32"}, {}, [X4 * 3], lambda tf, x: tf.cast(x, tf.int32)),
             ({"dtype": "bool"}, {}, [HALVES], lambda tf, x: tf.cast(x, tf.bool)),
             ({"dtype": "float32"}, {}, [MASK_A], lambda tf, x: tf.cast(x, tf.float32)),
             ({"dtype": "float32"}, {}, [IDS], lambda tf, i: tf.cast(i, tf.float32)),
             ({"dtype": "int64"}, {}, [IDS], lambda tf, i: tf.cast(i, tf.int64))],
    "reduce_sum": [({"axes": (1, 3), "keepdims": False}, {}, [X4], lambda tf, x: tf.reduce_sum(x, [1, 3]))],
    "reduce_prod": [({"axes": (2,), "keepdims": True}, {}, [X4], lambda tf, x: tf.reduce_prod(x, [2], keepdims=True))],
    "reduce_min": [({"axes": (0, 2, 3), "keepdims": False}, {}, [X4], lambda tf, x: tf.reduce_min(x, [0, 2, 3]))],
    "reduce_all": [({"axes": (1,), "keepdims": False}, {}, [MASK_A], lambda tf, x: tf.reduce_all(x, [1]))],
    "reduce_any": [({"axes": (3,), "keepdims": True}, {}, [MASK_A],
                    lambda tf, x: tf.reduce_any(x, [3], keepdims=True))],
    "argmin": [({"axis": 2, "keepdims": False}, {}, [X4], lambda tf, x: tf.math.argmin(x, 2))],
    "cumsum": [({"axis": a, "exclusive": e, "reverse": r}, {}, [X4],
                lambda tf, x, a=a, e=e, r=r: tf.math.cumsum(x, a, exclusive=e, reverse=r))
               for a, e, r in ((1, False, False), (3, True, False), (2, True, True), (0, False, True))],
    "cumprod": [({"axis": a, "exclusive": e, "reverse": r}, {}, [X4],
                 lambda tf, x, a=a, e=e, r=r: tf.math.cumprod(x, a, exclusive=e, reverse=r))
                for a, e, r in ((1, False, False), (3, True, True))],
    "log_softmax": [({"axis": 3}, {}, [X4 * 5], lambda tf, x: tf.nn.log_softmax(x))],
    "top_k_values": [({"k": 3}, {}, [X4], lambda tf, x: tf.math.top_k(x, 3).values)],
    "top_k_indices": [({"k": 2}, {}, [X4], lambda tf, x: tf.math.top_k(x, 2).indices)],
})

# ---- detection heads: overlapping boxes (some with flipped corners, one empty), tied scores -------
_BOXES = np.concatenate([_f32(12, 2, lo=0, hi=0.6, seed=21), _f32(12, 2, lo=0, hi=0.6, seed=22) + 0.3], 1)
_BOXES[::3] = _BOXES[::3][:, [2, 3, 0, 1]]
_BOXES[5] = [0.2, 0.2, 0.2, 0.5]
_SCORES = np.round(_f32(12, lo=0, hi=1, seed=23) * 4) / 4  # quarters: ties, and scores on the threshold


def _nms_row(output: str, limit: int = 9, iou: float = 0.3, score: float = 0.25):
    def reference(tf, b, s):
        picked = tf.raw_ops.NonMaxSuppressionV5(boxes=b, scores=s, max_output_size=limit, iou_threshold=iou,
                                                score_threshold=score, soft_nms_sigma=0.0,
                                                pad_to_max_output_size=True)
        return picked[{"indices": 0, "scores": 1, "count": 2}[output]]

    attrs = {"max_output_size": limit, "iou_threshold": iou, "score_threshold": score, "output": output}
    return attrs, {}, [_BOXES, _SCORES], reference


def _combined_row(output: str, per_class: int, total: int, pad: bool, clip: bool, score: float):
    boxes = np.stack([_BOXES, _BOXES[::-1] * 1.3 - 0.1])[:, :, None]  # (2, 12, 1, 4), some off [0, 1]
    scores = (np.random.default_rng(26).permutation(72).reshape(2, 12, 3) / 72).astype(np.float32)  # no ties

    def reference(tf, b, s):
        out = tf.raw_ops.CombinedNonMaxSuppression(boxes=b, scores=s, max_output_size_per_class=per_class,
                                                   max_total_size=total, iou_threshold=0.3, score_threshold=score,
                                                   pad_per_class=pad, clip_boxes=clip)
        return out[("boxes", "scores", "classes", "count").index(output)]

    attrs = {"max_per_class": min(per_class, 12), "per_batch": min(total, per_class * 3) if pad else total,
             "iou_threshold": 0.3, "score_threshold": score, "clip_boxes": clip, "output": output}
    return attrs, {}, [boxes, scores], reference


OTHER_OPS.update({
    "non_max_suppression": [_nms_row("indices"), _nms_row("scores"), _nms_row("count"),
                            _nms_row("indices", limit=20, iou=0.0, score=-1.0)],
    "combined_non_max_suppression": [_combined_row(out, *case) for out in ("boxes", "scores", "classes", "count")
                                     for case in ((3, 10, True, True, 0.25), (2, 4, False, False, -2.0))],
    "nonzero": [({"output": "indices"}, {}, [X4 > 0.3], lambda tf, x: tf.pad(
                    tf.where(x), [[0, X4.size - int(np.count_nonzero(X4 > 0.3))], [0, 0]])),
                ({"output": "count"}, {}, [X4 - 0.5], lambda tf, x: tf.size(tf.where(x)[:, 0]))],
    "prefix": [({}, {}, [X4, np.int32(2)], lambda tf, x, c: x[:c])],
    # ROI crops of an NHWC image: boxes partly off it (extrapolated), flipped, one row or column
    "crop_and_resize": [
        ({"size": size, "method": method, "extrapolation_value": fill}, {},
         [_f32(2, 6, 7, 3, seed=24), _f32(5, 4, lo=-0.3, hi=1.3, seed=25), np.int32([0, 1, 1, 0, 1])],
         lambda tf, x, b, i, size=size, method=method, fill=fill: tf.image.crop_and_resize(
             x, b, i, size, method=method, extrapolation_value=fill))
        for size, method, fill in (((4, 5), "bilinear", 0.0), ((3, 1), "nearest", -2.0), ((1, 2), "bilinear", 1.0))],
})

# ---- sequence: each row against the Keras layer holding the same weights --------
def _recurrent_row(op: str, seed: int = 0, zero_recurrent_bias: bool = False, **attrs):
    node_attrs, params = sequence_cases.recurrent_node_spec(op, 3, 4, seed=seed, **attrs)
    if zero_recurrent_bias:
        params["bias_hh"] = np.zeros_like(params["bias_hh"])

    def reference(tf, x):
        y = sequence_cases.keras_layer(op, node_attrs, params)(x)
        if node_attrs["output"] == "last_c":
            return y[2]
        if node_attrs["go_backwards"] and node_attrs["sequence_order"] == "input":
            return tf.reverse(y, [1])
        return y

    return node_attrs, params, [_f32(2, 5, 3, seed=seed)], reference


OTHER_OPS.update({
    "lstm": [_recurrent_row("lstm"),
             _recurrent_row("lstm", 1, go_backwards=True, output="last_c"),
             _recurrent_row("lstm", 2, go_backwards=True, recurrent_activation="hard_sigmoid")],
    "gru": [_recurrent_row("gru", go_backwards=True, sequence_order="input"),
            _recurrent_row("gru", 1, zero_recurrent_bias=True, reset_after=False, output="last_h")],
    "rnn": [_recurrent_row("rnn", activation="relu", output="last_h"),
            _recurrent_row("rnn", 1)],
})
# ---- sizes that follow run-time values: the parameter is an input (convert.ir.runtime_dims) ----
_I = np.int32


def _nhwc(tf, x):
    return tf.transpose(x, [0, 2, 3, 1])


def _nchw(tf, x):
    return tf.transpose(x, [0, 3, 1, 2])


OTHER_OPS.update({
    "reshape_to": [({}, {}, [X4, _I([6, -1])], lambda tf, x, s: tf.reshape(x, s)),
                   ({}, {}, [X4[:0], _I([0, 7])], lambda tf, x, s: tf.reshape(x, s))],
    "broadcast_to": [({}, {}, [np.float32(1.5), _I([2, 3])], lambda tf, x, s: tf.fill(s, x)),
                     ({}, {}, [_f32(3, 1), np.int64([2, 3, 4])], lambda tf, x, s: tf.broadcast_to(x, s))],
    "tile_by": [({}, {}, [_f32(2, 3), _I([2, 0])], lambda tf, x, m: tf.tile(x, m)),
                ({}, {}, [IDS, np.int64([3, 1])], lambda tf, x, m: tf.tile(x, m))],
    "pad_by": [({"value": 0.0}, {}, [X4, _I([[0, 1], [2, 0], [0, 0], [1, 1]])], lambda tf, x, p: tf.pad(x, p)),
               ({"value": -2.0}, {}, [IDS, np.int64([[1, 0], [0, 2]])],
                lambda tf, x, p: tf.pad(x, p, constant_values=-2)),
               ({"value": 0.0, "mode": "symmetric"}, {}, [X4, _I([[0, 1], [2, 0], [0, 0], [1, 1]])],
                lambda tf, x, p: tf.pad(x, p, "SYMMETRIC"))],
    "slice_to": [({}, {}, [X4, _I([1, -2, 0, 2]), _I([2, 2**31 - 1, -1, 2])],
                  lambda tf, x, b, e: tf.strided_slice(x, b, e)),
                 ({"steps": (1, -1, 2, -2)}, {}, [X4, _I([0, 2, 0, -1]), _I([1, -9, 9, 0])],
                  lambda tf, x, b, e: tf.strided_slice(x, b, e, [1, -1, 2, -2]))],
    "one_hot_by": [({"axis": 1, "on": 2.0, "off": -1.0}, {}, [IDS - 1, _I(4)],
                    lambda tf, i, d: tf.one_hot(i, d, on_value=2.0, off_value=-1.0, axis=1))],
    "range": [({}, {}, [_I(2), _I(11), _I(3)], lambda tf, a, b, c: tf.range(a, b, c)),
              ({}, {}, [np.int64(5), np.int64(-3), np.int64(-2)], lambda tf, a, b, c: tf.range(a, b, c)),
              ({}, {}, [np.float32(-3.7), np.float32(50.3), np.float32(0.37)], lambda tf, a, b, c: tf.range(a, b, c))],
    "resize_to": [({"mode": "bilinear", "coordinate": "half_pixel"}, {}, [X4, _I([7, 3])],
                   lambda tf, x, s: _nchw(tf, tf.raw_ops.ResizeBilinear(images=_nhwc(tf, x), size=s,
                                                                        half_pixel_centers=True))),
                  ({"mode": "nearest", "coordinate": "align_corners"}, {}, [X4, _I([5, 9])],
                   lambda tf, x, s: _nchw(tf, tf.raw_ops.ResizeNearestNeighbor(images=_nhwc(tf, x), size=s,
                                                                               align_corners=True)))],
    "expand_dims_by": [({}, {}, [X4, _I(-2)], lambda tf, x, a: tf.expand_dims(x, a)),
                       ({}, {}, [np.float32(3.0), _I(0)], lambda tf, x, a: tf.expand_dims(x, a))],
})
# lengths the data decides: TF's first-occurrence order, its counts; bins up to a run-time size
_REPEATS = _I([4, -2, 4, 0, -2, 7, 4])
_COLUMNS = np.float32([[1, 2, 1, 2, 0], [3, -0.0, 3, 0, 3]])
_CTC_LOGITS = np.random.default_rng(43).integers(-2, 2, (5, 3, 4)).astype(np.float32) * 0.75  # ties
OTHER_OPS.update({
    "unique": [({"axis": 0, "output": "values"}, {}, [_REPEATS], lambda tf, x: tf.unique(x).y),
               ({"axis": 0, "output": "indices", "index_dtype": "int64"}, {}, [_REPEATS],
                lambda tf, x: tf.unique(x, tf.int64).idx),
               ({"axis": 0, "output": "counts"}, {}, [_REPEATS], lambda tf, x: tf.unique_with_counts(x).count),
               ({"axis": 1, "output": "values"}, {}, [_COLUMNS],
                lambda tf, x: tf.raw_ops.UniqueV2(x=x, axis=np.int64([-1])).y),
               ({"axis": 1, "output": "counts"}, {}, [_COLUMNS],
                lambda tf, x: tf.raw_ops.UniqueWithCountsV2(x=x, axis=[1]).count),
               ({"axis": 0, "output": "values"}, {}, [_REPEATS[:0]], lambda tf, x: tf.unique(x).y)],
    "ragged_range": [({"output": "values"}, {}, [_I([0, 5, 3, 2]), _I([4, 1, 3, -5]), _I([2, -2, 1, 7])],
                      lambda tf, s, lim, d: tf.raw_ops.RaggedRange(starts=s, limits=lim, deltas=d).rt_dense_values),
                     ({"output": "row_splits", "splits_dtype": "int32"}, {},
                      [np.int64([0, 5, -9]), np.int64([4, 1, 9]), np.int64([2, -2, 5])],
                      lambda tf, s, lim, d: tf.raw_ops.RaggedRange(starts=s, limits=lim, deltas=d,
                                                                   Tsplits=tf.int32).rt_nested_splits)],
    "ctc_greedy_decoder": [({"blank": -1, "merge_repeated": merge, "output": out}, {},
                            [_CTC_LOGITS, _I([5, 0, 3])], lambda tf, x, n, merge=merge, out=out: getattr(
                                tf.raw_ops.CTCGreedyDecoder(inputs=x, sequence_length=n, merge_repeated=merge),
                                {"indices": "decoded_indices", "values": "decoded_values", "shape": "decoded_shape",
                                 "log_probability": "log_probability"}[out]))
                           for merge in (True, False) for out in ("indices", "values", "shape", "log_probability")],
    "bincount_by": [({"dtype": "int32"}, {}, [np.abs(_REPEATS), _I(6)], lambda tf, x, n: tf.math.bincount(
                        x, minlength=n, maxlength=n)),
                    ({"dtype": "float32"}, {}, [IDS, _I(5), _f32(2, 3)], lambda tf, x, n, w: tf.raw_ops.DenseBincount(
                        input=x, size=n, weights=w)),
                    ({"dtype": "int64", "binary_output": True}, {}, [IDS, np.int64(4), np.int64([])],
                     lambda tf, x, n, w: tf.raw_ops.DenseBincount(input=tf.cast(x, tf.int64), size=n,
                                                                 weights=tf.zeros([0], tf.int64), binary_output=True))],
})
SPATIAL = {"conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d"}  # the padding matrix covers these

# ---- the 3-D ops against TF's own SAME padding (asymmetric at these sizes) -----------------
X5 = _f32(1, 2, 5, 6, 7)  # NCDHW
W5 = _f32(3, 2, 3, 2, 3, seed=9)  # conv3d OIDHW; conv_transpose3d reads it as IODHW (in 3, out 2)


def _ndhwc(fn, x, *args):
    import tensorflow as tf

    return tf.transpose(fn(tf.transpose(x, [0, 2, 3, 4, 1]), *args), [0, 4, 1, 2, 3])


def _same(size, kernel, stride, dilation=(1, 1, 1)):
    from tf_convert.convert.padding.nd import tf_pads_nd

    return tf_pads_nd(size, kernel, stride, dilation, "SAME")


OTHER_OPS.update({
    "conv3d": [({"kernel": (3, 2, 3), "stride": (2, 1, 2), "dilation": (1, 1, 1), "groups": 1,
                 "pads": _same((5, 6, 7), (3, 2, 3), (2, 1, 2))}, {"weight": W5, "bias": B[:3]}, [X5],
                lambda tf, x: _ndhwc(lambda t: tf.nn.convolution(t, W5.transpose(2, 3, 4, 1, 0), [2, 1, 2], "SAME",
                                                                 ) + B[:3], x))],
    "max_pool3d": [({"kernel": (2, 3, 2), "stride": (2, 2, 2), "pads": _same((5, 6, 7), (2, 3, 2), (2, 2, 2))}, {},
                    [X5], lambda tf, x: _ndhwc(lambda t: tf.nn.max_pool3d(t, [2, 3, 2], [2, 2, 2], "SAME"), x))],
    "avg_pool3d": [({"kernel": (2, 3, 2), "stride": (2, 2, 2), "pads": _same((5, 6, 7), (2, 3, 2), (2, 2, 2)),
                     "count_include_pad": False}, {}, [X5],
                    lambda tf, x: _ndhwc(lambda t: tf.nn.avg_pool3d(t, [2, 3, 2], [2, 2, 2], "SAME"), x))],
    "conv_transpose3d": [({"kernel": (3, 2, 3), "stride": (2, 2, 2), "dilation": (1, 1, 1), "groups": 1,
                           "crop": _same((6, 8, 5), (3, 2, 3), (2, 2, 2))[0::2], "output_size": (6, 8, 5)},
                          {"weight": W5, "bias": B[:2]}, [_f32(1, 3, 3, 4, 3)],
                          lambda tf, x: _ndhwc(lambda t: tf.nn.conv3d_transpose(
                              t, W5.transpose(2, 3, 4, 1, 0), [1, 6, 8, 5, 2], [1, 2, 2, 2, 1], "SAME") + B[:2], x))],
})

# UpSampling3D's repeat, as TF repeats (and Keras UpSampling3D does)
OTHER_OPS["repeat"] = [({"repeats": (1, 2, 1, 3, 1)}, {}, [_f32(2, 3, 4, 2, 3)],
                        lambda tf, x: tf.repeat(tf.repeat(x, 2, axis=1), 3, axis=3)),
                       ({"repeats": (1, 1, 1, 1, 1)}, {}, [_f32(1, 2, 2, 2, 1)], lambda tf, x: x)]
# Cropping3D's crop, as TF slices (Keras Cropping3D)
OTHER_OPS["crop"] = [({"crops": ((0, 0), (1, 0), (0, 2), (1, 1), (0, 0))}, {}, [_f32(2, 4, 5, 6, 3)],
                      lambda tf, x: x[:, 1:, :-2, 1:-1]),
                     ({"crops": ((0, 0),) * 3}, {}, [_f32(1, 2, 3)], lambda tf, x: x)]


# ---- shape and indexing ops -------------------------------------------------------------------------------
_FAKE_QUANT_FN = {"FakeQuantWithMinMaxArgs": "fake_quant_with_min_max_args",
                  "FakeQuantWithMinMaxVars": "fake_quant_with_min_max_vars"}


def _fake_quant_attrs(tf_op, lo, hi, bits, narrow):
    from tf_convert.parsers.tensorflow.tfgraph.fold import fake_quant_attrs

    return fake_quant_attrs(tf_op, lo, hi, bits, narrow)


def _on_the_grid(lo, hi, bits):
    """Random values plus every quantization step and every midpoint between steps (where the
    rounding decides), a little past both ends."""
    step = np.float32((hi - lo) / (2 ** bits - 1))
    k = np.arange(-3, min(2 ** bits, 300) + 3, dtype=np.float32)
    points = np.concatenate([lo + k * step, lo + (k + 0.5) * step, _f32(1, 1, 10, 10).ravel() * 3])
    return points.astype(np.float32)


OTHER_OPS.update({
    "lrn": [({"radius": r, "bias": k, "alpha": a, "beta": b}, {}, [_f32(1, 7, 3, 4) * 3],
             lambda tf, x, r=r, k=k, a=a, b=b: _nhwc(tf.nn.local_response_normalization, x, r, k, a, b))
            for r, k, a, b in [(2, 1.0, 1e-3, 0.75), (1, 1.7, 0.4, 0.6), (4, 0.6, 0.9, 1.0)]],
    "fake_quant": [(_fake_quant_attrs(tf_op, lo, hi, bits, narrow), {}, [_on_the_grid(lo, hi, bits)],
                    lambda tf, x, tf_op=tf_op, lo=lo, hi=hi, bits=bits, narrow=narrow: getattr(
                        tf.quantization, _FAKE_QUANT_FN[tf_op])(x, np.float32(lo), np.float32(hi), bits, narrow))
                   for tf_op, lo, hi, bits, narrow in [("FakeQuantWithMinMaxArgs", -1.3, 2.1, 8, False),
                                                       ("FakeQuantWithMinMaxArgs", -0.7, 4.9, 5, True),
                                                       ("FakeQuantWithMinMaxVars", -2.5, 1.9, 8, True),
                                                       ("FakeQuantWithMinMaxVars", -0.4, 3.3, 13, False)]],
})


# ---- bitwise ops, int32 and int64 over their whole range, shifts past the width --------
def _full_range(dtype, shape, seed):
    info = np.iinfo(dtype)
    return _rng(seed).integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


_SHIFT_BY = np.int32([[-3], [0], [31], [45]])
OTHER_OPS.update({
    **{op: [({}, {}, [_full_range(d, (2, 3, 4, 5), 20), _full_range(d, (4, 5), 21)],
             lambda tf, a, b, o=tf_op: getattr(tf.raw_ops, o)(x=a, y=b)) for d in ("int32", "int64")]
       for op, tf_op in (("bitwise_and", "BitwiseAnd"), ("bitwise_or", "BitwiseOr"), ("bitwise_xor", "BitwiseXor"))},
    "bitwise_not": [({}, {}, [_full_range(d, (2, 3, 4, 5), 22)], lambda tf, x: tf.raw_ops.Invert(x=x))
                    for d in ("int32", "int64")],
    **{op: [({}, {}, [_full_range("int32", (2, 3, 4, 5), 23), _SHIFT_BY], lambda tf, a, b, o=tf_op: getattr(
        tf.raw_ops, o)(x=a, y=b)), ({}, {}, [_full_range("int64", (2, 5), 24), np.int64([[-1], [63]])],
                                    lambda tf, a, b, o=tf_op: getattr(tf.raw_ops, o)(x=a, y=b))]
       for op, tf_op in (("left_shift", "LeftShift"), ("right_shift", "RightShift"))},
})

OTHER_OPS.update(TFLITE_INTEGER_ROWS)  # TFLite's integer kernels, against a second transcription of TFLite's C


# ---- control flow: nested graphs run a run-time number of times ----------------------------------------
def _loop_graphs() -> tuple[Subgraph, Subgraph]:
    """cond: i < n; body: (i + 1, x * 1.5); inputs (i, x, n)."""
    graphs = []
    for name in ("cond", "body"):
        g = Subgraph(name)
        g.inputs = [g.add_tensor("i", (), "int32"), g.add_tensor("x", (2, 3)), g.add_tensor("n", (), "int32")]
        if name == "cond":
            g.outputs = [g.add_node("less", "go", ["i", "n"], (), out_dtype="bool")]
        else:
            one = g.add_node("const", "one", [], (), params={"value": np.int32(1)}, out_dtype="int32")
            half = g.add_node("const", "k", [], (), params={"value": np.float32(1.5)})
            g.outputs = [g.add_node("add", "next_i", ["i", one], ()), g.add_node("mul", "next_x", ["x", half], (2, 3))]
        graphs.append(g)
    return graphs[0], graphs[1]


def _branches() -> tuple[Subgraph, Subgraph]:
    """then: x + 1; else: x * 3; input x."""
    graphs = []
    for name, op, k in (("then", "add", 1.0), ("else", "mul", 3.0)):
        g = Subgraph(name)
        g.inputs = [g.add_tensor("x", (2, 3))]
        c = g.add_node("const", "k", [], (), params={"value": np.float32(k)})
        g.outputs = [g.add_node(op, "y", ["x", c], (2, 3))]
        graphs.append(g)
    return graphs[0], graphs[1]


_COND, _BODY = _loop_graphs()
_THEN, _ELSE = _branches()
_X23 = _f32(2, 3)
OTHER_OPS.update({
    "while_loop": [({"cond": _COND, "body": _BODY, "carried": 2, "output": 1}, {}, [np.int32(0), _X23, np.int32(n)],
                    lambda tf, i, x, n: tf.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * 1.5), (i, x))[1])
                   for n in (0, 3)],
    "cond": [({"then_branch": _THEN, "else_branch": _ELSE, "output": 0}, {}, [np.bool_(p), _X23],
              lambda tf, p, x: tf.cond(p, lambda: x + 1.0, lambda: x * 3.0)) for p in (True, False)],
})


SPATIAL_3D = {"conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d"}


def test_every_op_is_checked_against_tensorflow():
    assert set(OTHER_OPS) | SPATIAL | {"pad"} == set(ir.OPS)
    assert {ir_cases.build(c).graph.nodes[-1].op for c in (GROUPS["conv-SAME"][0], GROUPS["conv_transpose-SAME"][0],
            GROUPS["max_pool-SAME"][0], GROUPS["avg_pool-SAME"][0])} == SPATIAL


@pytest.mark.parametrize("op", sorted(OTHER_OPS))
def test_op_matches_tensorflow(op):
    tf = pytest.importorskip("tensorflow")
    for attrs, params, inputs, reference in OTHER_OPS[op]:
        names = [f"in{i}" for i in range(len(inputs))]
        node = ir.Node("n", op, names, ["n"], dict(attrs), dict(params))
        got = ir.evaluate_node(node, inputs)
        expected = np.asarray(reference(tf, *[tf.constant(x) for x in inputs]))
        assert got.dtype == (np.float32 if expected.dtype.kind == "f" else expected.dtype), (op, got.dtype)
        assert rel_error(got, expected) <= RTOL, (op, attrs, rel_error(got, expected))


# ---- the API ----------------------------------------------------------------------------------------------


def _chain() -> ir.Graph:
    g = ir.Graph("chain")
    g.inputs = [g.add_tensor("x", (1, 3, 4, 4))]
    a = g.add_node("relu", "a", ["x"], (1, 3, 4, 4))
    b = g.add_node("avg_pool2d", "b", [a], (1, 3, 2, 2),
                   {"kernel": (2, 2), "stride": (2, 2), "pads": (0, 0, 0, 0), "count_include_pad": False})
    g.add_node("neg", "dead", ["x"], (1, 3, 4, 4))
    g.outputs = [g.add_node("mul", "c", [b, b], (1, 3, 2, 2))]
    return g


def test_evaluate_outputs_feeds_and_keep_all():
    g = _chain()
    x = _f32(1, 3, 4, 4)
    pooled = np.maximum(x, 0).reshape(1, 3, 2, 2, 2, 2).mean(axis=(3, 5))
    out = ir.evaluate(g, {"x": x})
    assert list(out) == ["c"] and np.allclose(out["c"], pooled**2)
    assert list(ir.evaluate(g, [x], outputs=["b"])) == ["b"]
    every = ir.evaluate(g, [x], keep_all=True)
    assert {"x", "a", "b", "c"} <= set(every) and "dead" not in every  # only what the outputs need
    # a fed intermediate tensor cuts the graph there
    assert np.allclose(ir.evaluate(g, {"b": np.ones((1, 3, 2, 2), np.float32)})["c"], 1.0)


def test_evaluate_precision_follows_the_feeds():
    g = _chain()
    x = _f32(1, 3, 4, 4)
    assert ir.evaluate(g, [x])["c"].dtype == np.float32
    assert ir.evaluate(g, [x.astype(np.float64)])["c"].dtype == np.float64


def test_evaluate_errors_name_the_node():
    g = _chain()
    with pytest.raises(EvaluationError, match="'x'"):
        ir.evaluate(g, {})
    g.tensors["b"].shape = (1, 3, 3, 3)
    with pytest.raises(EvaluationError, match=r"node b \(avg_pool2d\).*\(1, 3, 2, 2\)"):
        ir.evaluate(g, [_f32(1, 3, 4, 4)])

