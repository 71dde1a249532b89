"""Op-level TF graphs written the way TF's own kernel tests write them (a bench tool, not part of `make test`).

    python -m bench.op_graphs --out DIR [--only SUBSTRING]

One small graph per op x style, over TF's array, math, linalg, image and nn ops (the op list is TF's, not
ours): parameters as constants, as placeholders fed at run time, and computed by the graph from the input's
shape; rank 0, empty tensors, and every dtype TF has a CPU kernel for (a graph TF itself cannot run is
dropped and counted). Each graph is a tf.function traced to a concrete function and frozen to a GraphDef,
as the CLI reads it: `DIR/<case>/graph.pb`, with `case.json` (inputs, outputs) and `feeds.npz`: two feed
sets (`a/<input>`, `b/<input>`: other data, and other parameter values where the op allows) and TF's outputs
on each (`a_out/<k>`, `b_out/<k>`). The runner is bench/op_graphs_run.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

FLOATS = ("float32", "float64", "float16")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
INTS = SIGNED + UNSIGNED
NUMBERS = FLOATS + INTS
ALL = NUMBERS + ("bool",)


@dataclass
class Case:
    """One graph: `fn` maps the placeholders (name -> tensor) to the output tensor(s); `feeds` name ->
    (feed a, feed b)."""

    name: str
    op: str
    style: str
    feeds: dict[str, tuple[np.ndarray, np.ndarray]]
    fn: Callable[[dict[str, Any]], Any]
    dtype: str = "float32"
    extra: dict[str, Any] = field(default_factory=dict)


_RNG = np.random.default_rng(43)


def values(shape: tuple[int, ...], dtype: str = "float32", domain: str = "any") -> np.ndarray:
    """Random values of a dtype in a domain: any (normal * 3), pos (0.1..4), unit (-0.9..0.9), ge1 (1.1..4),
    small (integers -3..3 as floats)."""
    if dtype == "bool":
        return _RNG.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        low = 0 if np.dtype(dtype).kind == "u" or domain in ("pos", "ge1") else -6
        low = 1 if domain in ("pos", "ge1") else low
        return _RNG.integers(low, 7, shape).astype(dtype)
    draw = {
        "any": lambda: _RNG.standard_normal(shape) * 3,
        "pos": lambda: _RNG.uniform(0.1, 4, shape),
        "unit": lambda: _RNG.uniform(-0.9, 0.9, shape),
        "ge1": lambda: _RNG.uniform(1.1, 4, shape),
        "small": lambda: _RNG.integers(-3, 4, shape).astype(float),
    }[domain]()
    return np.asarray(draw, dtype=dtype)


def pair(shape: tuple[int, ...], dtype: str = "float32", domain: str = "any") -> tuple[np.ndarray, np.ndarray]:
    return values(shape, dtype, domain), values(shape, dtype, domain)


def same(value: Any, dtype: str = "int32") -> tuple[np.ndarray, np.ndarray]:
    array = np.asarray(value, dtype)
    return array, array.copy()


def two(a: Any, b: Any, dtype: str = "int32") -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(a, dtype), np.asarray(b, dtype)


# ---- families -----------------------------------------------------------------------------------------------


def _unary(op: str, fn: Callable, dtypes: tuple[str, ...], domain: str = "any") -> list[Case]:
    cases = [
        Case(f"{op}/{dt}", op, "dtype", {"x": pair((2, 3), dt, domain)}, lambda p: fn(p["x"]), dt) for dt in dtypes
    ]
    first = dtypes[0]
    cases.append(Case(f"{op}/rank0", op, "rank0", {"x": pair((), first, domain)}, lambda p: fn(p["x"]), first))
    cases.append(Case(f"{op}/empty", op, "empty", {"x": pair((0, 3), first, domain)}, lambda p: fn(p["x"]), first))
    return cases


def _binary(op: str, fn: Callable, dtypes: tuple[str, ...], domain: str = "any", rhs: str | None = None) -> list[Case]:
    rhs = rhs or domain
    cases = [
        Case(
            f"{op}/{dt}",
            op,
            "dtype",
            {"x": pair((2, 3), dt, domain), "y": pair((2, 3), dt, rhs)},
            lambda p: fn(p["x"], p["y"]),
            dt,
        )
        for dt in dtypes
    ]
    dt = dtypes[0]
    cases += [
        Case(
            f"{op}/rank0",
            op,
            "rank0",
            {"x": pair((), dt, domain), "y": pair((), dt, rhs)},
            lambda p: fn(p["x"], p["y"]),
            dt,
        ),
        Case(
            f"{op}/broadcast",
            op,
            "broadcast",
            {"x": pair((2, 1, 3), dt, domain), "y": pair((4, 1), dt, rhs)},
            lambda p: fn(p["x"], p["y"]),
            dt,
        ),
        Case(
            f"{op}/empty",
            op,
            "empty",
            {"x": pair((0, 3), dt, domain), "y": pair((1, 3), dt, rhs)},
            lambda p: fn(p["x"], p["y"]),
            dt,
        ),
    ]
    const = values((3,), dt, rhs)
    cases.append(
        Case(
            f"{op}/const", op, "const", {"x": pair((2, 3), dt, domain)}, lambda p: fn(p["x"], _tf().constant(const)), dt
        )
    )
    return cases


def _params(
    op: str,
    fn: Callable,
    data: dict[str, tuple[np.ndarray, np.ndarray]],
    params: dict[str, tuple[np.ndarray, np.ndarray]],
    computed: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    dtype: str = "float32",
) -> list[Case]:
    """An op with parameters: as constants (feed a's value), as placeholders (fed a, then b), and computed by
    the graph from the data's shapes (`computed` returns the parameter tensors)."""

    def baked(p):
        return fn({**p, **{k: _tf().constant(v[0]) for k, v in params.items()}})

    cases = [
        Case(f"{op}/const", op, "const", dict(data), baked, dtype),
        Case(f"{op}/feed", op, "feed", {**data, **params}, fn, dtype),
    ]
    if computed is not None:
        cases.append(Case(f"{op}/computed", op, "computed", dict(data), lambda p: fn({**p, **computed(p)}), dtype))
    return cases


def _tf():
    import tensorflow as tf

    return tf


# ---- the op list ------------------------------------------------------------------------------------------------


def _math() -> list[Case]:
    tf = _tf()
    m = tf.math
    fl = FLOATS
    cases: list[Case] = []
    unary = [
        ("Abs", m.abs, fl + SIGNED, "any"),
        ("Neg", m.negative, fl + SIGNED, "any"),
        ("Sign", m.sign, fl + SIGNED, "any"),
        ("Square", m.square, fl + SIGNED, "any"),
        ("Sqrt", m.sqrt, fl, "pos"),
        ("Rsqrt", m.rsqrt, fl, "pos"),
        ("Exp", m.exp, fl, "any"),
        ("Expm1", m.expm1, fl, "any"),
        ("Log", m.log, fl, "pos"),
        ("Log1p", m.log1p, fl, "pos"),
        ("Sin", m.sin, fl, "any"),
        ("Cos", m.cos, fl, "any"),
        ("Tan", m.tan, fl, "unit"),
        ("Asin", m.asin, fl, "unit"),
        ("Acos", m.acos, fl, "unit"),
        ("Atan", m.atan, fl, "any"),
        ("Sinh", m.sinh, fl, "unit"),
        ("Cosh", m.cosh, fl, "unit"),
        ("Tanh", m.tanh, fl, "any"),
        ("Asinh", m.asinh, fl, "any"),
        ("Acosh", m.acosh, fl, "ge1"),
        ("Atanh", m.atanh, fl, "unit"),
        ("Sigmoid", m.sigmoid, fl, "any"),
        ("Relu", tf.nn.relu, fl + SIGNED, "any"),
        ("Relu6", tf.nn.relu6, fl, "any"),
        ("Elu", tf.nn.elu, fl, "any"),
        ("Selu", tf.nn.selu, fl, "any"),
        ("Softplus", m.softplus, fl, "any"),
        ("Softsign", tf.nn.softsign, fl, "any"),
        ("Erf", m.erf, fl, "any"),
        ("Erfc", m.erfc, fl, "any"),
        ("Floor", m.floor, fl, "any"),
        ("Ceil", m.ceil, fl, "any"),
        ("Round", m.round, fl, "small"),
        ("Rint", m.rint, fl, "small"),
        ("Reciprocal", m.reciprocal, fl, "pos"),
        ("IsNan", m.is_nan, fl, "any"),
        ("IsFinite", m.is_finite, fl, "any"),
        ("IsInf", m.is_inf, fl, "any"),
        ("LeakyRelu", lambda x: tf.nn.leaky_relu(x, 0.3), fl, "any"),
        ("Lgamma", m.lgamma, fl, "pos"),
        ("Digamma", m.digamma, fl, "pos"),
        ("Softmax", tf.nn.softmax, fl, "any"),
        ("LogSoftmax", tf.nn.log_softmax, fl, "any"),
        ("Gelu", tf.nn.gelu, fl, "any"),
        ("Invert", tf.bitwise.invert, INTS, "any"),
        ("LogicalNot", m.logical_not, ("bool",), "any"),
        ("ZerosLike", tf.zeros_like, fl + INTS + ("bool",), "any"),
        ("OnesLike", tf.ones_like, fl + SIGNED, "any"),
        ("Identity", tf.identity, ALL, "any"),
    ]
    for op, fn, dtypes, domain in unary:
        cases += _unary(op, fn, dtypes, domain)
    binary = [
        ("AddV2", m.add, NUMBERS, "any", None),
        ("Sub", m.subtract, fl + SIGNED + ("uint8",), "any", None),
        ("Mul", m.multiply, NUMBERS, "any", None),
        ("RealDiv", m.divide, fl, "any", "pos"),
        ("FloorDiv", m.floordiv, fl + SIGNED + ("uint8",), "any", "pos"),
        ("FloorMod", m.floormod, fl + SIGNED + ("uint8",), "any", "pos"),
        ("TruncateDiv", tf.truncatediv, SIGNED + ("uint8",), "any", "pos"),
        ("TruncateMod", tf.truncatemod, fl + ("int32", "int64"), "any", "pos"),
        ("Maximum", m.maximum, fl + SIGNED + ("uint8",), "any", None),
        ("Minimum", m.minimum, fl + SIGNED + ("uint8",), "any", None),
        ("Pow", m.pow, fl, "pos", "small"),
        ("SquaredDifference", m.squared_difference, fl + ("int32",), "any", None),
        ("Atan2", m.atan2, fl, "any", None),
        ("DivNoNan", m.divide_no_nan, fl, "any", "small"),
        ("MulNoNan", m.multiply_no_nan, fl, "any", "small"),
        ("Xdivy", m.xdivy, fl, "small", "pos"),
        ("Xlogy", m.xlogy, fl, "small", "pos"),
        ("Equal", m.equal, fl + INTS + ("bool",), "small", None),
        ("NotEqual", m.not_equal, fl + SIGNED, "small", None),
        ("Less", m.less, fl + SIGNED + ("uint8",), "any", None),
        ("LessEqual", m.less_equal, fl + SIGNED, "small", None),
        ("Greater", m.greater, fl + SIGNED, "any", None),
        ("GreaterEqual", m.greater_equal, fl + SIGNED, "small", None),
        ("LogicalAnd", m.logical_and, ("bool",), "any", None),
        ("LogicalOr", m.logical_or, ("bool",), "any", None),
        ("BitwiseAnd", tf.bitwise.bitwise_and, INTS, "any", None),
        ("BitwiseOr", tf.bitwise.bitwise_or, INTS, "any", None),
        ("BitwiseXor", tf.bitwise.bitwise_xor, INTS, "any", None),
        ("LeftShift", tf.bitwise.left_shift, ("int32", "int8", "uint8"), "pos", "pos"),
        ("RightShift", tf.bitwise.right_shift, ("int32", "int8", "uint8", "int64"), "any", "pos"),
    ]
    for op, fn, dtypes, domain, rhs in binary:
        cases += _binary(op, fn, dtypes, domain, rhs)
    x = pair((2, 3, 4))
    cases += [
        Case(
            "ClipByValue/feed",
            "ClipByValue",
            "feed",
            {"x": x, "lo": two(-1, -2, "float32"), "hi": two(1, 0.5, "float32")},
            lambda p: tf.clip_by_value(p["x"], p["lo"], p["hi"]),
        ),
        Case("ClipByValue/const", "ClipByValue", "const", {"x": x}, lambda p: tf.clip_by_value(p["x"], -1.0, 1.0)),
        Case(
            "ClipByValue/int32",
            "ClipByValue",
            "dtype",
            {"x": pair((2, 3), "int32")},
            lambda p: tf.clip_by_value(p["x"], -2, 3),
            "int32",
        ),
        Case(
            "SelectV2/float32",
            "SelectV2",
            "dtype",
            {"c": pair((2, 3), "bool"), "x": pair((2, 3)), "y": pair((2, 3))},
            lambda p: tf.where(p["c"], p["x"], p["y"]),
        ),
        Case(
            "SelectV2/broadcast",
            "SelectV2",
            "broadcast",
            {"c": pair((3,), "bool"), "x": pair((2, 3)), "y": pair(())},
            lambda p: tf.where(p["c"], p["x"], p["y"]),
        ),
        Case(
            "SelectV2/int64",
            "SelectV2",
            "dtype",
            {"c": pair((2, 3), "bool"), "x": pair((2, 3), "int64"), "y": pair((2, 3), "int64")},
            lambda p: tf.where(p["c"], p["x"], p["y"]),
            "int64",
        ),
        Case(
            "SelectV2/empty",
            "SelectV2",
            "empty",
            {"c": pair((0, 3), "bool"), "x": pair((0, 3)), "y": pair((0, 3))},
            lambda p: tf.where(p["c"], p["x"], p["y"]),
        ),
        Case(
            "AddN/float32",
            "AddN",
            "dtype",
            {"x": pair((2, 3)), "y": pair((2, 3)), "z": pair((2, 3))},
            lambda p: tf.math.add_n([p["x"], p["y"], p["z"]]),
        ),
        Case(
            "AddN/int32",
            "AddN",
            "dtype",
            {"x": pair((2, 3), "int32"), "y": pair((2, 3), "int32")},
            lambda p: tf.math.add_n([p["x"], p["y"]]),
            "int32",
        ),
        Case(
            "BiasAdd/float32",
            "BiasAdd",
            "dtype",
            {"x": pair((2, 3, 4)), "b": pair((4,))},
            lambda p: tf.nn.bias_add(p["x"], p["b"]),
        ),
        Case(
            "BiasAdd/const",
            "BiasAdd",
            "const",
            {"x": pair((2, 3, 4))},
            lambda p: tf.nn.bias_add(p["x"], np.arange(4, dtype=np.float32)),
        ),
    ]
    # casts: from float32 to every dtype, and every dtype to float32 and int32
    for dt in ALL:
        if dt != "float32":
            cases.append(
                Case(
                    f"Cast/float32->{dt}",
                    "Cast",
                    "dtype",
                    {"x": pair((2, 5), "float32", "small")},
                    lambda p, dt=dt: tf.cast(p["x"], dt),
                    dt,
                )
            )
            cases.append(
                Case(
                    f"Cast/{dt}->float32",
                    "Cast",
                    "dtype",
                    {"x": pair((2, 5), dt, "any")},
                    lambda p: tf.cast(p["x"], "float32"),
                    dt,
                )
            )
        if dt not in ("int32", "float32"):
            cases.append(
                Case(
                    f"Cast/{dt}->int32",
                    "Cast",
                    "dtype",
                    {"x": pair((2, 5), dt, "small")},
                    lambda p: tf.cast(p["x"], "int32"),
                    dt,
                )
            )
    cases.append(
        Case("Cast/rank0", "Cast", "rank0", {"x": pair((), "float32", "small")}, lambda p: tf.cast(p["x"], "int32"))
    )
    cases.append(
        Case("Cast/empty", "Cast", "empty", {"x": pair((0, 2), "float32")}, lambda p: tf.cast(p["x"], "int64"))
    )
    return cases


def _reductions() -> list[Case]:
    tf = _tf()
    cases: list[Case] = []
    reductions = [
        ("Sum", tf.reduce_sum, ("float32", "float64", "int32", "int64")),
        ("Prod", tf.reduce_prod, ("float32", "int32")),
        ("Max", tf.reduce_max, ("float32", "int32", "int64")),
        ("Min", tf.reduce_min, ("float32", "int32")),
        ("Mean", tf.reduce_mean, ("float32", "float64", "int32")),
        ("All", tf.reduce_all, ("bool",)),
        ("Any", tf.reduce_any, ("bool",)),
        ("EuclideanNorm", tf.math.reduce_euclidean_norm, ("float32",)),
    ]
    for op, fn, dtypes in reductions:
        dt = dtypes[0]
        x = pair((2, 3, 4), dt, "small" if op == "Prod" else "any")
        cases += _params(
            op,
            lambda p, fn=fn: fn(p["x"], p["axis"]),
            {"x": x},
            {"axis": two([1], [2])},
            lambda p: {"axis": tf.reshape(tf.rank(p["x"]) - 1, [1])},
            dt,
        )
        cases.append(
            Case(f"{op}/keepdims", op, "const", {"x": x}, lambda p, fn=fn: fn(p["x"], [0, 2], keepdims=True), dt)
        )
        cases.append(Case(f"{op}/all_axes", op, "const", {"x": x}, lambda p, fn=fn: fn(p["x"]), dt))
        cases.append(Case(f"{op}/no_axes", op, "const", {"x": x}, lambda p, fn=fn: fn(p["x"], []), dt))
        cases.append(Case(f"{op}/empty_all", op, "empty", {"x": pair((2, 0), dt)}, lambda p, fn=fn: fn(p["x"]), dt))
        cases.append(Case(f"{op}/rank0", op, "rank0", {"x": pair((), dt)}, lambda p, fn=fn: fn(p["x"]), dt))
        cases.append(Case(f"{op}/empty", op, "empty", {"x": pair((0, 3), dt)}, lambda p, fn=fn: fn(p["x"], 0), dt))
        for other in dtypes[1:]:
            cases.append(
                Case(
                    f"{op}/{other}",
                    op,
                    "dtype",
                    {"x": pair((2, 3, 4), other, "small" if op == "Prod" else "any")},
                    lambda p, fn=fn: fn(p["x"], 1),
                    other,
                )
            )
    for op, fn in (("ArgMax", tf.math.argmax), ("ArgMin", tf.math.argmin)):
        x = pair((2, 3, 4))
        cases += _params(
            op,
            lambda p, fn=fn: fn(p["x"], p["axis"]),
            {"x": x},
            {"axis": two(1, 2)},
            lambda p: {"axis": tf.rank(p["x"]) - 1},
        )
        cases.append(
            Case(
                f"{op}/int32",
                op,
                "dtype",
                {"x": pair((2, 5), "int32")},
                lambda p, fn=fn: fn(p["x"], 1, output_type=tf.int32),
                "int32",
            )
        )
        cases.append(Case(f"{op}/empty", op, "empty", {"x": pair((0, 3))}, lambda p, fn=fn: fn(p["x"], 1)))
    for op, fn in (("Cumsum", tf.math.cumsum), ("Cumprod", tf.math.cumprod)):
        x = pair((2, 5), "float32", "small")
        cases += _params(
            op,
            lambda p, fn=fn: fn(p["x"], p["axis"]),
            {"x": x},
            {"axis": two(1, 0)},
            lambda p: {"axis": tf.rank(p["x"]) - 1},
        )
        cases.append(
            Case(
                f"{op}/exclusive_reverse",
                op,
                "const",
                {"x": x},
                lambda p, fn=fn: fn(p["x"], 1, exclusive=True, reverse=True),
            )
        )
        cases.append(
            Case(f"{op}/int32", op, "dtype", {"x": pair((2, 5), "int32")}, lambda p, fn=fn: fn(p["x"], 1), "int32")
        )
    cases.append(
        Case(
            "ReduceLogSumExp/const",
            "ReduceLogSumExp",
            "const",
            {"x": pair((2, 5))},
            lambda p: tf.reduce_logsumexp(p["x"], 1),
        )
    )
    cases.append(Case("L2Loss/float32", "L2Loss", "dtype", {"x": pair((2, 5))}, lambda p: tf.nn.l2_loss(p["x"])))
    return cases


def _arrays() -> list[Case]:
    tf = _tf()
    cases: list[Case] = []
    x = pair((2, 3, 4))
    P = _params
    cases += P(
        "Reshape",
        lambda p: tf.reshape(p["x"], p["shape"]),
        {"x": x},
        {"shape": two([4, 6], [6, 4])},
        lambda p: {"shape": tf.stack([tf.shape(p["x"])[0] * 2, -1])},
    )
    cases.append(Case("Reshape/rank0", "Reshape", "rank0", {"x": pair((1, 1))}, lambda p: tf.reshape(p["x"], [])))
    cases.append(Case("Reshape/empty", "Reshape", "empty", {"x": pair((0, 3))}, lambda p: tf.reshape(p["x"], [3, 0])))
    cases.append(
        Case(
            "Reshape/int64",
            "Reshape",
            "dtype",
            {"x": pair((2, 3), "int64")},
            lambda p: tf.reshape(p["x"], [-1]),
            "int64",
        )
    )
    cases += P(
        "Transpose",
        lambda p: tf.transpose(p["x"], p["perm"]),
        {"x": x},
        {"perm": two([2, 0, 1], [1, 2, 0])},
        lambda p: {"perm": tf.range(tf.rank(p["x"]) - 1, -1, -1)},
    )
    cases.append(
        Case(
            "Transpose/bool", "Transpose", "dtype", {"x": pair((2, 3), "bool")}, lambda p: tf.transpose(p["x"]), "bool"
        )
    )
    cases += P(
        "ExpandDims",
        lambda p: tf.expand_dims(p["x"], p["axis"]),
        {"x": x},
        {"axis": two(1, -1)},
        lambda p: {"axis": tf.rank(p["x"])},
    )
    cases.append(Case("ExpandDims/rank0", "ExpandDims", "rank0", {"x": pair(())}, lambda p: tf.expand_dims(p["x"], 0)))
    cases.append(
        Case("Squeeze/const", "Squeeze", "const", {"x": pair((2, 1, 3, 1))}, lambda p: tf.squeeze(p["x"], [1]))
    )
    cases.append(Case("Squeeze/all", "Squeeze", "const", {"x": pair((1, 3, 1))}, lambda p: tf.squeeze(p["x"])))
    y = pair((2, 2, 4))
    cases += P(
        "ConcatV2",
        lambda p: tf.concat([p["x"], p["y"]], p["axis"]),
        {"x": x, "y": y},
        {"axis": two(1, -2)},
        lambda p: {"axis": tf.rank(p["x"]) - 2},
    )
    cases.append(
        Case(
            "ConcatV2/empty",
            "ConcatV2",
            "empty",
            {"x": pair((0, 3)), "y": pair((2, 3))},
            lambda p: tf.concat([p["x"], p["y"]], 0),
        )
    )
    cases.append(
        Case(
            "ConcatV2/int8",
            "ConcatV2",
            "dtype",
            {"x": pair((2, 3), "int8"), "y": pair((1, 3), "int8")},
            lambda p: tf.concat([p["x"], p["y"]], 0),
            "int8",
        )
    )
    cases.append(
        Case(
            "Pack/const",
            "Pack",
            "const",
            {"x": pair((2, 3)), "y": pair((2, 3))},
            lambda p: tf.stack([p["x"], p["y"]], 1),
        )
    )
    cases.append(
        Case("Pack/rank0", "Pack", "rank0", {"x": pair(()), "y": pair(())}, lambda p: tf.stack([p["x"], p["y"]]))
    )
    cases.append(
        Case("Unpack/const", "Unpack", "const", {"x": pair((2, 3))}, lambda p: tuple(tf.unstack(p["x"], axis=1)))
    )
    cases += P(
        "Split",
        lambda p: tuple(tf.split(p["x"], 2, p["axis"])),
        {"x": pair((4, 6))},
        {"axis": two(1, 0)},
        lambda p: {"axis": tf.rank(p["x"]) - 1},
    )
    cases += P(
        "SplitV",
        lambda p: tuple(tf.split(p["x"], p["sizes"], 1)),
        {"x": pair((2, 6))},
        {"sizes": two([1, 5], [4, 2])},
        lambda p: {"sizes": tf.stack([tf.shape(p["x"])[1] - 2, 2])},
    )
    cases += P(
        "Slice",
        lambda p: tf.slice(p["x"], p["begin"], p["size"]),
        {"x": x},
        {"begin": two([0, 1, 1], [1, 0, 2]), "size": two([1, 2, 2], [1, 2, 2])},
        lambda p: {"begin": tf.shape(p["x"]) // 2 - 1, "size": tf.shape(p["x"]) // 2},
    )
    cases.append(
        Case("Slice/minus_one", "Slice", "const", {"x": x}, lambda p: tf.slice(p["x"], [0, 1, 0], [-1, -1, 2]))
    )
    cases += P(
        "StridedSlice",
        lambda p: tf.strided_slice(p["x"], p["begin"], p["end"], p["strides"]),
        {"x": x},
        {"begin": two([0, 1, 3], [1, 0, 0]), "end": two([2, 3, 0], [2, 2, 4]), "strides": two([1, 1, -1], [1, 1, 2])},
        lambda p: {"begin": tf.zeros([3], tf.int32), "end": tf.shape(p["x"]) - 1, "strides": tf.ones([3], tf.int32)},
    )
    cases.append(
        Case("StridedSlice/masks", "StridedSlice", "const", {"x": x}, lambda p: p["x"][..., tf.newaxis, 1, ::-2])
    )
    cases += P(
        "Tile",
        lambda p: tf.tile(p["x"], p["m"]),
        {"x": pair((2, 3))},
        {"m": two([2, 1], [1, 3])},
        lambda p: {"m": tf.shape(p["x"]) - 1},
    )
    cases.append(
        Case("Tile/int64", "Tile", "dtype", {"x": pair((2, 3), "int64")}, lambda p: tf.tile(p["x"], [1, 2]), "int64")
    )
    cases += P(
        "Pad",
        lambda p: tf.pad(p["x"], p["pads"]),
        {"x": pair((2, 3))},
        {"pads": two([[1, 0], [0, 2]], [[0, 1], [2, 1]])},
        lambda p: {"pads": tf.stack([tf.shape(p["x"]) - 1, tf.shape(p["x"]) // 2], 1)},
    )
    cases.append(
        Case(
            "PadV2/const",
            "PadV2",
            "const",
            {"x": pair((2, 3))},
            lambda p: tf.pad(p["x"], [[1, 1], [0, 2]], constant_values=-2.5),
        )
    )
    cases.append(
        Case(
            "PadV2/feed",
            "PadV2",
            "feed",
            {"x": pair((2, 3)), "v": two(3.0, -1.0, "float32")},
            lambda p: tf.pad(p["x"], [[1, 1], [0, 2]], constant_values=p["v"]),
        )
    )
    cases.append(
        Case(
            "Pad/int32",
            "Pad",
            "dtype",
            {"x": pair((2, 3), "int32")},
            lambda p: tf.pad(p["x"], [[1, 0], [0, 1]]),
            "int32",
        )
    )
    for mode in ("REFLECT", "SYMMETRIC"):
        cases += P(
            f"MirrorPad{mode.title()}",
            lambda p, mode=mode: tf.pad(p["x"], p["pads"], mode),
            {"x": pair((3, 4))},
            {"pads": two([[1, 2], [0, 1]], [[2, 0], [1, 1]])},
        )
    cases += P(
        "Fill",
        lambda p: tf.fill(p["dims"], p["v"]),
        {"v": pair(())},
        {"dims": two([2, 3], [3, 2])},
        lambda p: {"dims": tf.constant([2, 3]) + tf.cast(tf.rank(p["v"]), tf.int32)},
    )
    cases += P(
        "BroadcastTo",
        lambda p: tf.broadcast_to(p["x"], p["shape"]),
        {"x": pair((3, 1))},
        {"shape": two([2, 3, 4], [1, 3, 2])},
        lambda p: {"shape": tf.concat([[2], tf.shape(p["x"]) * [1, 4]], 0)},
    )
    cases.append(
        Case("BroadcastTo/rank0", "BroadcastTo", "rank0", {"x": pair(())}, lambda p: tf.broadcast_to(p["x"], [2, 2]))
    )
    cases += P(
        "GatherV2",
        lambda p: tf.gather(p["x"], p["i"], axis=1),
        {"x": x},
        {"i": two([2, 0, 2], [1, 1, 0])},
        lambda p: {"i": tf.range(tf.shape(p["x"])[1] - 1, -1, -1)},
    )
    cases.append(
        Case(
            "GatherV2/batch_dims",
            "GatherV2",
            "const",
            {"x": x, "i": two([[0, 2], [1, 1]], [[2, 2], [0, 1]])},
            lambda p: tf.gather(p["x"], p["i"], axis=1, batch_dims=1),
        )
    )
    cases.append(
        Case(
            "GatherV2/axis_feed",
            "GatherV2",
            "feed",
            {"x": x, "axis": two(2, 2)},
            lambda p: tf.gather(p["x"], [1, 0], axis=p["axis"]),
        )
    )
    cases.append(
        Case("GatherV2/rank0_index", "GatherV2", "rank0", {"x": x, "i": two(1, 0)}, lambda p: tf.gather(p["x"], p["i"]))
    )
    cases.append(
        Case(
            "GatherV2/int64",
            "GatherV2",
            "dtype",
            {"x": pair((4, 3), "int64"), "i": two([3, 0], [1, 1], "int64")},
            lambda p: tf.gather(p["x"], p["i"]),
            "int64",
        )
    )
    cases.append(
        Case(
            "GatherV2/empty",
            "GatherV2",
            "empty",
            {"x": pair((4, 3)), "i": two(np.zeros((0,)), np.zeros((0,)))},
            lambda p: tf.gather(p["x"], p["i"]),
        )
    )
    cases += P(
        "GatherNd", lambda p: tf.gather_nd(p["x"], p["i"]), {"x": x}, {"i": two([[0, 1], [1, 2]], [[1, 0], [0, 0]])}
    )
    cases.append(
        Case(
            "GatherNd/batch_dims",
            "GatherNd",
            "const",
            {"x": x, "i": two([[1], [2]], [[0], [0]])},
            lambda p: tf.gather_nd(p["x"], p["i"], batch_dims=1),
        )
    )
    cases += P(
        "ScatterNd",
        lambda p: tf.scatter_nd(p["i"], p["u"], p["shape"]),
        {"u": pair((2, 4))},
        {"i": two([[0], [2]], [[1], [1]]), "shape": two([3, 4], [3, 4])},
    )
    cases += P(
        "TensorScatterUpdate",
        lambda p: tf.tensor_scatter_nd_update(p["x"], p["i"], p["u"]),
        {"x": pair((4, 3)), "u": pair((2, 3))},
        {"i": two([[0], [2]], [[3], [1]])},
    )
    cases += P(
        "TensorScatterAdd",
        lambda p: tf.tensor_scatter_nd_add(p["x"], p["i"], p["u"]),
        {"x": pair((4, 3)), "u": pair((2, 3))},
        {"i": two([[0], [0]], [[3], [1]])},
    )
    cases += P(
        "ReverseV2",
        lambda p: tf.reverse(p["x"], p["axis"]),
        {"x": x},
        {"axis": two([1], [0, 2])},
        lambda p: {"axis": tf.reshape(tf.rank(p["x"]) - 1, [1])},
    )
    cases += P(
        "ReverseSequence",
        lambda p: tf.reverse_sequence(p["x"], p["len"], 1, 0),
        {"x": pair((3, 5))},
        {"len": two([1, 5, 3], [0, 2, 4], "int64")},
    )
    cases += P(
        "Roll",
        lambda p: tf.roll(p["x"], p["shift"], p["axis"]),
        {"x": x},
        {"shift": two([1, -2], [3, 1]), "axis": two([1, 2], [2, 0])},
    )
    cases += P(
        "OneHot",
        lambda p: tf.one_hot(p["i"], p["depth"]),
        {"i": two([0, 2, 5, -1], [1, 1, 3, 0])},
        {"depth": two(4, 4)},
        lambda p: {"depth": tf.shape(p["i"])[0]},
    )
    for dt in ("int32", "int64", "float64", "bool", "uint8"):
        cases.append(
            Case(
                f"OneHot/{dt}",
                "OneHot",
                "dtype",
                {"i": two([0, 2, 1], [1, 0, 3])},
                lambda p, dt=dt: tf.one_hot(p["i"], 3, dtype=dt, on_value=tf.cast(1, dt), off_value=tf.cast(0, dt)),
                dt,
            )
        )
    cases.append(Case("Shape/dynamic", "Shape", "const", {"x": x}, lambda p: tf.shape(p["x"]) * 2))
    cases.append(Case("Size/const", "Size", "const", {"x": x}, lambda p: tf.size(p["x"]) + 1))
    cases.append(Case("Rank/const", "Rank", "const", {"x": x}, lambda p: tf.rank(p["x"]) + 1))
    cases.append(Case("Where/one_arg", "Where", "const", {"x": pair((2, 3))}, lambda p: tf.where(p["x"] > 0)))
    cases.append(Case("Range/feed", "Range", "feed", {"lim": two(5, 7)}, lambda p: tf.range(0, p["lim"], 2)))
    cases.append(
        Case("Range/float", "Range", "const", {"x": pair((3,))}, lambda p: p["x"][0] + tf.range(0.0, 2.0, 0.5))
    )
    cases.append(
        Case(
            "InvertPermutation/feed",
            "InvertPermutation",
            "feed",
            {"p": two([2, 0, 1, 3], [3, 1, 0, 2])},
            lambda p: tf.math.invert_permutation(p["p"]),
        )
    )
    for op, fn in (("MatrixBandPart", lambda p: tf.linalg.band_part(p["x"], p["lo"], p["hi"])),):
        cases += P(op, fn, {"x": pair((2, 4, 4))}, {"lo": two(1, 0, "int64"), "hi": two(0, -1, "int64")})
    cases += P(
        "MatrixDiagPartV3", lambda p: tf.linalg.diag_part(p["x"], k=p["k"]), {"x": pair((2, 4, 4))}, {"k": two(1, -1)}
    )
    cases += P("MatrixDiagV3", lambda p: tf.linalg.diag(p["x"], k=p["k"]), {"x": pair((2, 3))}, {"k": two(0, 0)})
    cases += P(
        "MatrixSetDiagV3",
        lambda p: tf.linalg.set_diag(p["x"], p["d"], k=p["k"]),
        {"x": pair((2, 3, 3)), "d": pair((2, 3))},
        {"k": two(0, 0)},
    )
    cases.append(Case("Diag/const", "Diag", "const", {"x": pair((3,))}, lambda p: tf.raw_ops.Diag(diagonal=p["x"])))
    cases.append(
        Case("DiagPart/const", "DiagPart", "const", {"x": pair((3, 3))}, lambda p: tf.raw_ops.DiagPart(input=p["x"]))
    )
    cases += P(
        "TopKV2",
        lambda p: tuple(tf.math.top_k(p["x"], p["k"])),
        {"x": pair((2, 6))},
        {"k": two(3, 3)},
        lambda p: {"k": tf.shape(p["x"])[1] // 2},
    )
    cases.append(
        Case(
            "TopKV2/int32",
            "TopKV2",
            "dtype",
            {"x": pair((2, 6), "int32")},
            lambda p: tuple(tf.math.top_k(p["x"], 2)),
            "int32",
        )
    )
    cases.append(
        Case("Sort/const", "Sort", "const", {"x": pair((2, 6))}, lambda p: tf.sort(p["x"], direction="DESCENDING"))
    )
    cases.append(
        Case("Argsort/const", "Argsort", "const", {"x": pair((2, 6))}, lambda p: tf.argsort(p["x"], stable=True))
    )
    cases += P(
        "SpaceToBatchND",
        lambda p: tf.space_to_batch_nd(p["x"], p["b"], p["pads"]),
        {"x": pair((1, 4, 4, 2))},
        {"b": two([2, 2], [2, 2]), "pads": two([[0, 0], [0, 0]], [[0, 0], [0, 0]])},
    )
    cases += P(
        "BatchToSpaceND",
        lambda p: tf.batch_to_space(p["x"], p["b"], p["crops"]),
        {"x": pair((4, 2, 2, 2))},
        {"b": two([2, 2], [2, 2]), "crops": two([[0, 0], [0, 1]], [[0, 0], [0, 1]])},
    )
    cases.append(
        Case(
            "SpaceToDepth/const",
            "SpaceToDepth",
            "const",
            {"x": pair((1, 4, 4, 2))},
            lambda p: tf.nn.space_to_depth(p["x"], 2),
        )
    )
    cases.append(
        Case(
            "DepthToSpace/const",
            "DepthToSpace",
            "const",
            {"x": pair((1, 2, 2, 8))},
            lambda p: tf.nn.depth_to_space(p["x"], 2),
        )
    )
    cases += P(
        "UnsortedSegmentSum",
        lambda p: tf.math.unsorted_segment_sum(p["x"], p["s"], p["n"]),
        {"x": pair((5, 2))},
        {"s": two([0, 2, 2, 1, 0], [1, 1, 0, 3, 2]), "n": two(4, 4)},
    )
    for op, fn in (
        ("UnsortedSegmentMax", tf.math.unsorted_segment_max),
        ("UnsortedSegmentMin", tf.math.unsorted_segment_min),
        ("UnsortedSegmentProd", tf.math.unsorted_segment_prod),
    ):
        cases.append(
            Case(
                f"{op}/const",
                op,
                "const",
                {"x": pair((5, 2), "float32", "small")},
                lambda p, fn=fn: fn(p["x"], [0, 2, 2, 1, 0], 3),
            )
        )
    cases.append(
        Case(
            "SegmentSum/const",
            "SegmentSum",
            "const",
            {"x": pair((5, 2))},
            lambda p: tf.math.segment_sum(p["x"], [0, 0, 1, 2, 2]),
        )
    )
    cases.append(
        Case(
            "SegmentMax/const",
            "SegmentMax",
            "const",
            {"x": pair((5, 2))},
            lambda p: tf.math.segment_max(p["x"], [0, 0, 1, 2, 2]),
        )
    )
    for op, fn in (
        ("SparseSegmentSum", tf.sparse.segment_sum),
        ("SparseSegmentMean", tf.sparse.segment_mean),
        ("SparseSegmentSqrtN", tf.sparse.segment_sqrt_n),
    ):
        cases += P(
            op, lambda p, fn=fn: fn(p["x"], p["i"], [0, 0, 1]), {"x": pair((4, 3))}, {"i": two([0, 3, 1], [2, 2, 0])}
        )
    cases.append(
        Case(
            "Einsum/const",
            "Einsum",
            "const",
            {"x": pair((2, 3, 4)), "y": pair((2, 4, 5))},
            lambda p: tf.einsum("bij,bjk->bik", p["x"], p["y"]),
        )
    )
    cases.append(
        Case("Einsum/transpose_sum", "Einsum", "const", {"x": pair((2, 3, 4))}, lambda p: tf.einsum("bij->jb", p["x"]))
    )
    cases.append(
        Case(
            "Cross/float32",
            "Cross",
            "dtype",
            {"x": pair((2, 3)), "y": pair((2, 3))},
            lambda p: tf.linalg.cross(p["x"], p["y"]),
        )
    )
    cases.append(
        Case("Bitcast/float32->int32", "Bitcast", "dtype", {"x": pair((2, 3))}, lambda p: tf.bitcast(p["x"], tf.int32))
    )
    cases.append(
        Case(
            "CheckNumerics/float32",
            "CheckNumerics",
            "dtype",
            {"x": pair((2, 3))},
            lambda p: tf.debugging.check_numerics(p["x"], "x"),
        )
    )
    cases.append(
        Case(
            "EnsureShape/float32",
            "EnsureShape",
            "dtype",
            {"x": pair((2, 3))},
            lambda p: tf.ensure_shape(p["x"], [2, 3]),
        )
    )
    cases.append(
        Case(
            "StopGradient/float32", "StopGradient", "dtype", {"x": pair((2, 3))}, lambda p: tf.stop_gradient(p["x"]) * 2
        )
    )
    return cases


def _linalg() -> list[Case]:
    tf = _tf()
    cases: list[Case] = []
    a, b = pair((2, 3, 4)), pair((2, 4, 5))
    cases += [
        Case(
            "MatMul/float32",
            "MatMul",
            "dtype",
            {"x": pair((3, 4)), "y": pair((4, 5))},
            lambda p: tf.matmul(p["x"], p["y"]),
        ),
        Case(
            "MatMul/transpose",
            "MatMul",
            "const",
            {"x": pair((4, 3)), "y": pair((5, 4))},
            lambda p: tf.matmul(p["x"], p["y"], transpose_a=True, transpose_b=True),
        ),
        Case(
            "MatMul/float64",
            "MatMul",
            "dtype",
            {"x": pair((3, 4), "float64"), "y": pair((4, 5), "float64")},
            lambda p: tf.matmul(p["x"], p["y"]),
            "float64",
        ),
        Case(
            "MatMul/int32",
            "MatMul",
            "dtype",
            {"x": pair((3, 4), "int32"), "y": pair((4, 5), "int32")},
            lambda p: tf.matmul(p["x"], p["y"]),
            "int32",
        ),
        Case(
            "MatMul/const",
            "MatMul",
            "const",
            {"x": pair((3, 4))},
            lambda p: tf.matmul(p["x"], np.ones((4, 2), np.float32)),
        ),
        Case(
            "MatMul/empty",
            "MatMul",
            "empty",
            {"x": pair((0, 4)), "y": pair((4, 5))},
            lambda p: tf.matmul(p["x"], p["y"]),
        ),
        Case("BatchMatMulV2/float32", "BatchMatMulV2", "dtype", {"x": a, "y": b}, lambda p: tf.matmul(p["x"], p["y"])),
        Case(
            "BatchMatMulV2/broadcast",
            "BatchMatMulV2",
            "broadcast",
            {"x": a, "y": pair((4, 5))},
            lambda p: tf.matmul(p["x"], p["y"]),
        ),
        Case(
            "BatchMatMulV2/adjoint",
            "BatchMatMulV2",
            "const",
            {"x": pair((2, 4, 3)), "y": pair((2, 5, 4))},
            lambda p: tf.matmul(p["x"], p["y"], adjoint_a=True, adjoint_b=True),
        ),
    ]
    def sq(dt="float32"):
        return (
            values((2, 3, 3), dt) + 6 * np.eye(3, dtype=dt),
            values((2, 3, 3), dt) + 6 * np.eye(3, dtype=dt),
        )
    spd = lambda m: m @ np.swapaxes(m, -1, -2) + np.eye(3, dtype=m.dtype)  # noqa: E731
    square = sq()
    cases += [
        Case("MatrixDeterminant/float32", "MatrixDeterminant", "dtype", {"x": square}, lambda p: tf.linalg.det(p["x"])),
        Case(
            "MatrixDeterminant/float64",
            "MatrixDeterminant",
            "dtype",
            {"x": sq("float64")},
            lambda p: tf.linalg.det(p["x"]),
            "float64",
        ),
        Case("MatrixInverse/float32", "MatrixInverse", "dtype", {"x": square}, lambda p: tf.linalg.inv(p["x"])),
        Case(
            "LogMatrixDeterminant/float32",
            "LogMatrixDeterminant",
            "dtype",
            {"x": square},
            lambda p: tuple(tf.linalg.slogdet(p["x"])),
        ),
        Case(
            "Cholesky/float32",
            "Cholesky",
            "dtype",
            {"x": (spd(square[0]), spd(square[1]))},
            lambda p: tf.linalg.cholesky(p["x"]),
        ),
        Case(
            "MatrixSolve/float32",
            "MatrixSolve",
            "dtype",
            {"x": square, "y": pair((2, 3, 2))},
            lambda p: tf.linalg.solve(p["x"], p["y"]),
        ),
        Case(
            "MatrixTriangularSolve/float32",
            "MatrixTriangularSolve",
            "dtype",
            {"x": square, "y": pair((2, 3, 2))},
            lambda p: tf.linalg.triangular_solve(p["x"], p["y"], lower=True),
        ),
        Case("Qr/float32", "Qr", "dtype", {"x": square}, lambda p: tuple(tf.linalg.qr(p["x"]))),
        Case("Svd/float32", "Svd", "dtype", {"x": square}, lambda p: tf.linalg.svd(p["x"], compute_uv=False)),
        Case(
            "SelfAdjointEigV2/float32",
            "SelfAdjointEigV2",
            "dtype",
            {"x": (spd(square[0]), spd(square[1]))},
            lambda p: tf.linalg.eigvalsh(p["x"]),
        ),
        Case("Trace/float32", "Trace", "dtype", {"x": square}, lambda p: tf.linalg.trace(p["x"])),
        Case("Norm/euclidean", "Norm", "const", {"x": pair((2, 5))}, lambda p: tf.norm(p["x"], axis=1)),
        Case("Norm/l1", "Norm", "const", {"x": pair((2, 5))}, lambda p: tf.norm(p["x"], ord=1, axis=1)),
        Case(
            "L2Normalize/float32",
            "L2Normalize",
            "dtype",
            {"x": pair((2, 5))},
            lambda p: tf.math.l2_normalize(p["x"], 1),
        ),
        Case(
            "Tensordot/const",
            "Tensordot",
            "const",
            {"x": a, "y": pair((4, 3))},
            lambda p: tf.tensordot(p["x"], p["y"], [[2], [0]]),
        ),
        Case(
            "MatrixExponential/float32",
            "MatrixExponential",
            "dtype",
            {"x": pair((2, 3, 3), "float32", "unit")},
            lambda p: tf.linalg.expm(p["x"]),
        ),
    ]
    return cases


def _images() -> list[Case]:
    tf = _tf()
    cases: list[Case] = []
    img = pair((1, 5, 6, 3), "float32", "pos")
    unit_img = (
        _RNG.uniform(0, 1, (2, 4, 5, 3)).astype(np.float32),
        _RNG.uniform(0, 1, (2, 4, 5, 3)).astype(np.float32),
    )
    P = _params
    for op, method in (
        ("ResizeBilinear", "bilinear"),
        ("ResizeNearestNeighbor", "nearest"),
        ("ResizeBicubic", "bicubic"),
        ("ResizeArea", "area"),
    ):
        cases += P(
            op,
            lambda p, m=method: tf.image.resize(p["x"], p["size"], m),
            {"x": img},
            {"size": two([9, 4], [3, 12])},
            lambda p: {"size": tf.shape(p["x"])[1:3] * 2},
        )
    cases.append(
        Case(
            "ResizeBilinear/align_corners",
            "ResizeBilinear",
            "const",
            {"x": img},
            lambda p: tf.compat.v1.image.resize_bilinear(p["x"], [9, 11], align_corners=True),
        )
    )
    cases.append(
        Case(
            "ResizeNearestNeighbor/half_pixel",
            "ResizeNearestNeighbor",
            "const",
            {"x": img},
            lambda p: tf.raw_ops.ResizeNearestNeighbor(images=p["x"], size=[7, 13], half_pixel_centers=True),
        )
    )
    cases += P(
        "CropAndResize",
        lambda p: tf.image.crop_and_resize(p["x"], p["boxes"], [0, 0], p["size"]),
        {"x": img},
        {
            "boxes": two([[0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1]], [[0.3, 0.1, 0.5, 0.7], [0.2, 0.2, 0.6, 0.6]], "float32"),
            "size": two([3, 4], [3, 4]),
        },
    )
    cases += P(
        "AdjustContrastv2",
        lambda p: tf.image.adjust_contrast(p["x"], p["f"]),
        {"x": unit_img},
        {"f": two(1.5, 0.4, "float32")},
    )
    cases += P(
        "AdjustHue", lambda p: tf.image.adjust_hue(p["x"], p["d"]), {"x": unit_img}, {"d": two(0.2, -0.4, "float32")}
    )
    cases += P(
        "AdjustSaturation",
        lambda p: tf.image.adjust_saturation(p["x"], p["s"]),
        {"x": unit_img},
        {"s": two(1.5, 0.3, "float32")},
    )
    cases += P(
        "AdjustBrightness",
        lambda p: tf.image.adjust_brightness(p["x"], p["d"]),
        {"x": unit_img},
        {"d": two(0.2, -0.1, "float32")},
    )
    cases += P(
        "AdjustGamma", lambda p: tf.image.adjust_gamma(p["x"], p["g"]), {"x": unit_img}, {"g": two(2.0, 0.5, "float32")}
    )
    cases += [
        Case("RGBToHSV/float32", "RGBToHSV", "dtype", {"x": unit_img}, lambda p: tf.image.rgb_to_hsv(p["x"])),
        Case("HSVToRGB/float32", "HSVToRGB", "dtype", {"x": unit_img}, lambda p: tf.image.hsv_to_rgb(p["x"])),
        Case(
            "RGBToGrayscale/float32",
            "RGBToGrayscale",
            "dtype",
            {"x": unit_img},
            lambda p: tf.image.rgb_to_grayscale(p["x"]),
        ),
        Case(
            "FlipLeftRight/float32", "ReverseV2", "dtype", {"x": unit_img}, lambda p: tf.image.flip_left_right(p["x"])
        ),
        Case("Rot90/const", "Rot90", "const", {"x": unit_img}, lambda p: tf.image.rot90(p["x"], 1)),
        Case(
            "CentralCrop/const", "CentralCrop", "const", {"x": unit_img}, lambda p: tf.image.central_crop(p["x"], 0.5)
        ),
        Case(
            "PerImageStandardization/float32",
            "PerImageStandardization",
            "dtype",
            {"x": unit_img},
            lambda p: tf.image.per_image_standardization(p["x"]),
        ),
        Case(
            "TotalVariation/float32",
            "TotalVariation",
            "dtype",
            {"x": unit_img},
            lambda p: tf.image.total_variation(p["x"]),
        ),
        Case(
            "ExtractImagePatches/const",
            "ExtractImagePatches",
            "const",
            {"x": img},
            lambda p: tf.image.extract_patches(p["x"], [1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1], "VALID"),
        ),
        Case(
            "ImageConvert/uint8->float32",
            "Cast",
            "dtype",
            {"x": pair((1, 3, 3, 3), "uint8")},
            lambda p: tf.image.convert_image_dtype(p["x"], tf.float32),
            "uint8",
        ),
        Case(
            "CropToBoundingBox/const",
            "Slice",
            "const",
            {"x": unit_img},
            lambda p: tf.image.crop_to_bounding_box(p["x"], 1, 1, 2, 3),
        ),
        Case(
            "PadToBoundingBox/const",
            "Pad",
            "const",
            {"x": unit_img},
            lambda p: tf.image.pad_to_bounding_box(p["x"], 1, 1, 6, 7),
        ),
    ]
    boxes = (
        np.array(
            [[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], [0, 10.1, 1, 11.1], [0, 100, 1, 101]],
            np.float32,
        ),
        np.array(
            [[0, 0, 1, 1], [0.5, 0.5, 1, 1], [0, 0, 0.4, 0.4], [0, 2, 1, 3], [0, 2.1, 1, 3.1], [0, 5, 1, 6]], np.float32
        ),
    )
    scores = (
        np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32),
        np.array([0.1, 0.9, 0.8, 0.4, 0.7, 0.6], np.float32),
    )
    cases += P(
        "NonMaxSuppressionV3",
        lambda p: tf.image.non_max_suppression(p["b"], p["s"], p["n"], 0.5),
        {"b": boxes, "s": scores},
        {"n": two(3, 3)},
    )
    cases.append(
        Case(
            "NonMaxSuppressionV4/padded",
            "NonMaxSuppressionV4",
            "const",
            {"b": boxes, "s": scores},
            lambda p: tuple(tf.image.non_max_suppression_padded(p["b"], p["s"], 4, 0.5, pad_to_max_output_size=True)),
        )
    )
    return cases


def _nn() -> list[Case]:
    tf = _tf()
    cases: list[Case] = []
    x4 = pair((1, 6, 7, 3))
    w = values((3, 3, 3, 4)) / 3
    dw = values((3, 3, 3, 2)) / 3
    for pad in ("SAME", "VALID"):
        cases.append(
            Case(f"Conv2D/{pad}", "Conv2D", "const", {"x": x4}, lambda p, pad=pad: tf.nn.conv2d(p["x"], w, 2, pad))
        )
        cases.append(
            Case(
                f"DepthwiseConv2dNative/{pad}",
                "DepthwiseConv2dNative",
                "const",
                {"x": x4},
                lambda p, pad=pad: tf.nn.depthwise_conv2d(p["x"], dw, [1, 1, 1, 1], pad),
            )
        )
        cases.append(
            Case(
                f"MaxPool/{pad}", "MaxPool", "const", {"x": x4}, lambda p, pad=pad: tf.nn.max_pool2d(p["x"], 3, 2, pad)
            )
        )
        cases.append(
            Case(
                f"AvgPool/{pad}", "AvgPool", "const", {"x": x4}, lambda p, pad=pad: tf.nn.avg_pool2d(p["x"], 3, 2, pad)
            )
        )
    cases += [
        Case("Conv2D/dilated", "Conv2D", "const", {"x": x4}, lambda p: tf.nn.conv2d(p["x"], w, 1, "SAME", dilations=2)),
        Case(
            "Conv2D/weights_fed",
            "Conv2D",
            "feed",
            {"x": x4, "w": pair((3, 3, 3, 4))},
            lambda p: tf.nn.conv2d(p["x"], p["w"], 1, "SAME"),
        ),
        Case(
            "Conv2D/explicit",
            "Conv2D",
            "const",
            {"x": x4},
            lambda p: tf.nn.conv2d(p["x"], w, 1, [[0, 0], [1, 2], [0, 1], [0, 0]]),
        ),
        Case(
            "Conv1D/const", "Conv2D", "const", {"x": pair((1, 9, 3))}, lambda p: tf.nn.conv1d(p["x"], w[0], 2, "SAME")
        ),
        Case(
            "Conv3D/const",
            "Conv3D",
            "const",
            {"x": pair((1, 4, 5, 5, 2))},
            lambda p: tf.nn.conv3d(p["x"], values((2, 3, 3, 2, 3)) / 3, [1, 1, 1, 1, 1], "SAME"),
        ),
        Case(
            "MaxPool3D/const",
            "MaxPool3D",
            "const",
            {"x": pair((1, 4, 5, 5, 2))},
            lambda p: tf.nn.max_pool3d(p["x"], 2, 2, "VALID"),
        ),
        Case(
            "AvgPool3D/const",
            "AvgPool3D",
            "const",
            {"x": pair((1, 4, 5, 5, 2))},
            lambda p: tf.nn.avg_pool3d(p["x"], 2, 2, "SAME"),
        ),
        Case(
            "MaxPoolWithArgmax/const",
            "MaxPoolWithArgmax",
            "const",
            {"x": x4},
            lambda p: tuple(tf.nn.max_pool_with_argmax(p["x"], 2, 2, "VALID")),
        ),
        Case(
            "Dilation2D/const",
            "Dilation2D",
            "const",
            {"x": x4},
            lambda p: tf.nn.dilation2d(p["x"], values((2, 2, 3)) / 3, [1, 1, 1, 1], "SAME", "NHWC", [1, 1, 1, 1]),
        ),
        Case(
            "LRN/const",
            "LRN",
            "const",
            {"x": x4},
            lambda p: tf.nn.local_response_normalization(p["x"], 2, 1.0, 0.5, 0.75),
        ),
        Case(
            "FusedBatchNormV3/const",
            "FusedBatchNormV3",
            "const",
            {"x": x4},
            lambda p: tf.compat.v1.nn.fused_batch_norm(
                p["x"],
                np.ones(3, np.float32) * 2,
                np.arange(3, dtype=np.float32),
                np.ones(3, np.float32) * 0.5,
                np.ones(3, np.float32) * 3,
                is_training=False,
            )[0],
        ),
        Case(
            "FusedBatchNormV3/fed",
            "FusedBatchNormV3",
            "feed",
            {"x": x4, "s": pair((3,), "float32", "pos")},
            lambda p: tf.compat.v1.nn.fused_batch_norm(
                p["x"],
                p["s"],
                np.arange(3, dtype=np.float32),
                np.ones(3, np.float32) * 0.5,
                np.ones(3, np.float32) * 3,
                is_training=False,
            )[0],
        ),
        Case(
            "BatchNormalization/moments", "Moments", "const", {"x": x4}, lambda p: tuple(tf.nn.moments(p["x"], [1, 2]))
        ),
        Case(
            "Conv2DTranspose/const",
            "Conv2DBackpropInput",
            "const",
            {"x": pair((1, 3, 4, 4))},
            lambda p: tf.nn.conv2d_transpose(p["x"], w, [1, 6, 8, 3], 2, "SAME"),
        ),
        Case(
            "Conv2DTranspose/feed_sizes",
            "Conv2DBackpropInput",
            "feed",
            {"x": pair((1, 3, 4, 4)), "s": two([1, 6, 8, 3], [1, 5, 7, 3])},
            lambda p: tf.nn.conv2d_transpose(p["x"], w, p["s"], 2, "SAME"),
        ),
        Case(
            "InTopKV2/const",
            "InTopKV2",
            "const",
            {"x": pair((3, 5)), "t": two([0, 4, 2], [1, 1, 3])},
            lambda p: tf.math.in_top_k(p["t"], p["x"], 2),
        ),
        Case(
            "SoftmaxCrossEntropyWithLogits/const",
            "SoftmaxCrossEntropyWithLogits",
            "const",
            {"x": pair((3, 5)), "y": pair((3, 5), "float32", "pos")},
            lambda p: tf.nn.softmax_cross_entropy_with_logits(p["y"], p["x"]),
        ),
        Case(
            "SparseSoftmaxCrossEntropyWithLogits/const",
            "SparseSoftmaxCrossEntropyWithLogits",
            "const",
            {"x": pair((3, 5)), "t": two([0, 4, 2], [1, 1, 3])},
            lambda p: tf.nn.sparse_softmax_cross_entropy_with_logits(p["t"], p["x"]),
        ),
        Case(
            "SigmoidCrossEntropy/const",
            "SigmoidCrossEntropy",
            "const",
            {"x": pair((3, 5)), "y": pair((3, 5), "float32", "unit")},
            lambda p: tf.nn.sigmoid_cross_entropy_with_logits(p["y"], p["x"]),
        ),
        Case("Softmax/axis", "Softmax", "const", {"x": pair((2, 3, 4))}, lambda p: tf.nn.softmax(p["x"], axis=1)),
        Case(
            "Dropout/inference",
            "Identity",
            "const",
            {"x": pair((2, 3))},
            lambda p: tf.nn.dropout(p["x"], 0.5, seed=1) * 0 + p["x"],
        ),
        Case(
            "FakeQuantWithMinMaxArgs/const",
            "FakeQuantWithMinMaxArgs",
            "const",
            {"x": pair((2, 5))},
            lambda p: tf.quantization.fake_quant_with_min_max_args(p["x"], -3.0, 3.0),
        ),
        Case(
            "FakeQuantWithMinMaxVars/feed",
            "FakeQuantWithMinMaxVars",
            "feed",
            {"x": pair((2, 5)), "lo": two(-3.0, -1.0, "float32"), "hi": two(3.0, 5.0, "float32")},
            lambda p: tf.quantization.fake_quant_with_min_max_vars(p["x"], p["lo"], p["hi"]),
        ),
        Case(
            "QuantizeAndDequantizeV2/feed",
            "QuantizeAndDequantizeV2",
            "feed",
            {"x": pair((2, 5)), "lo": two(-3.0, -1.0, "float32"), "hi": two(3.0, 5.0, "float32")},
            lambda p: tf.quantization.quantize_and_dequantize(p["x"], p["lo"], p["hi"], range_given=True),
        ),
    ]
    return cases


def all_cases() -> list[Case]:
    return _math() + _reductions() + _arrays() + _linalg() + _images() + _nn()


# ---- writing ---------------------------------------------------------------------------------------------------


def _outputs(result: Any) -> list[Any]:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def write(case: Case, directory: Path) -> str | None:
    """Freeze `case` into `directory`; None, or why TF itself cannot run it (the case is then dropped)."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    names = list(case.feeds)
    signature = [tf.TensorSpec(case.feeds[n][0].shape, tf.as_dtype(case.feeds[n][0].dtype), name=n) for n in names]

    def body(*args):
        return [tf.identity(t) for t in _outputs(case.fn(dict(zip(names, args))))]

    try:
        concrete = tf.function(body, input_signature=signature, autograph=False).get_concrete_function()
        frozen = convert_variables_to_constants_v2(concrete)
        expected = {}
        for which in ("a", "b"):
            got = frozen(*[tf.constant(case.feeds[n]["ab".index(which)]) for n in names])
            for k, value in enumerate(_outputs(got)):
                expected[f"{which}_out/{k}"] = value.numpy()
    except Exception as exc:  # noqa: BLE001 -- TF has no kernel for this dtype / rejects the graph: not a TF graph
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
    directory.mkdir(parents=True, exist_ok=True)
    graph_def = frozen.graph.as_graph_def()
    (directory / "graph.pb").write_bytes(graph_def.SerializeToString())
    placeholders = [n.name for n in graph_def.node if n.op == "Placeholder"]
    outputs = [t.name.split(":")[0] if t.name.endswith(":0") else t.name for t in frozen.outputs]
    meta = {
        "name": case.name,
        "op": case.op,
        "style": case.style,
        "dtype": case.dtype,
        "inputs": names,
        "placeholders": placeholders,
        "outputs": outputs,
    }
    (directory / "case.json").write_text(json.dumps(meta))
    arrays = {f"{w}/{n}": case.feeds[n]["ab".index(w)] for n in names for w in "ab"}
    np.savez(directory / "feeds.npz", **arrays, **expected)
    return None


def directory_of(root: Path, name: str) -> Path:
    return root / name.replace("/", "__").replace(">", "").replace("-", "_")


def generate(root: Path, only: str | None = None) -> dict[str, str]:
    """Write every case under `root`; returns the dropped cases -> why TF could not run them."""
    dropped = {}
    seen = set()
    for case in all_cases():
        if case.name in seen:
            raise ValueError(f"two cases named {case.name}")
        seen.add(case.name)
        if only and only not in case.name:
            continue
        why = write(case, directory_of(root, case.name))
        if why:
            dropped[case.name] = why
    (root / "dropped.json").write_text(json.dumps(dropped, indent=1))
    return dropped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", default=None, help="only cases whose name contains this")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    dropped = generate(args.out, args.only)
    written = len([p for p in args.out.iterdir() if (p / "graph.pb").exists()])
    print(
        f"{written} graphs written to {args.out}; {len(dropped)} dropped (TF itself cannot run them)", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
