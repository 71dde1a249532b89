"""Elementwise ops: activations, math, comparisons, logic, casts, selects, fake quantization and bitwise ops,
each in TF's own formula where TF's differs from the textbook one."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..graph import Node
from .table import reference_op


@reference_op("clip")
def clip(node: Node, x: np.ndarray) -> np.ndarray:
    return np.clip(x, node.attrs["min"], node.attrs["max"])


@reference_op("leaky_relu")
def leaky_relu(node: Node, x: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, x, x * node.attrs["alpha"])


@reference_op("elu")
def elu(node: Node, x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)) * node.attrs["alpha"])


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


@reference_op("hard_sigmoid")
def hard_sigmoid(node: Node, x: np.ndarray) -> np.ndarray:
    return np.clip(x * node.attrs["alpha"] + node.attrs["beta"], 0, 1)


_erf = np.frompyfunc(math.erf, 1, 1)  # numpy has no erf; math.erf is exact to double precision


@reference_op("gelu")
def gelu(node: Node, x: np.ndarray) -> np.ndarray:
    if node.attrs.get("approximate", "none") == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    erf = np.asarray(_erf(x / math.sqrt(2)), np.float64).astype(x.dtype)
    return 0.5 * x * (1 + erf)


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _softplus(x: np.ndarray) -> np.ndarray:
    """TF's thresholds: x above -(log(eps) + 2) is x, below log(eps) + 2 is exp(x)."""
    threshold = np.log(np.finfo(x.dtype).eps) + 2
    e = np.exp(x)
    return np.where(x > -threshold, x, np.where(x < threshold, e, np.log(e + 1)))


def _floor_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m = np.fmod(a, b)
    return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)


def _floor_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.floor(a / b) if np.result_type(a, b).kind == "f" else a // b


def _truncate_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.result_type(a, b).kind == "f":
        return np.trunc(a / b)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q).astype(np.result_type(a, b))


def _div_no_nan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    zero = b == 0
    return np.where(zero, np.zeros((), np.result_type(a, b)), a / np.where(zero, np.ones((), b.dtype), b))


def _erf_of(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erf(x), np.float64).astype(x.dtype)


# IR op -> its numpy meaning, of one input (x) or two (a, b): every elementwise op without attributes
ELEMENTWISE: dict[str, Callable[..., np.ndarray]] = {
    "relu": lambda x: np.maximum(x, 0), "sigmoid": sigmoid, "tanh": np.tanh, "swish": lambda x: x * sigmoid(x),
    "hard_swish": lambda x: x * np.clip(x + 3, 0, 6) / 6, "exp": np.exp, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "square": lambda x: x * x, "neg": lambda x: -x, "abs": np.abs,
    "identity": lambda x: x,
    "softplus": _softplus,
    "softsign": lambda x: x / (1 + np.abs(x)),
    "selu": lambda x: np.where(x > 0, x * x.dtype.type(_SELU_SCALE),
                               np.expm1(np.minimum(x, 0)) * x.dtype.type(_SELU_ALPHA * _SELU_SCALE)),
    "erf": _erf_of,
    "erfc": lambda x: np.asarray(np.frompyfunc(math.erfc, 1, 1)(x), np.float64).astype(x.dtype),
    "floor": np.floor, "ceil": np.ceil, "round": np.rint, "sign": np.sign,
    "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "reciprocal": lambda x: 1 / x,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "is_nan": np.isnan, "is_inf": np.isinf, "is_finite": np.isfinite, "logical_not": np.logical_not,
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
    "maximum": np.maximum, "minimum": np.minimum,
    "pow": np.power, "floor_div": _floor_div, "floor_mod": _floor_mod, "truncate_div": _truncate_div,
    "truncate_mod": np.fmod, "div_no_nan": _div_no_nan, "atan2": np.arctan2,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or,
}
for _name, _fn in ELEMENTWISE.items():
    reference_op(_name)(lambda node, *xs, _fn=_fn: _fn(*xs))


@reference_op("select")
def select(node: Node, cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(cond, a, b)


@reference_op("cast")
def cast(node: Node, x: np.ndarray) -> np.ndarray:
    dtype = np.dtype(node.attrs["dtype"])
    return (x != 0) if dtype == np.bool_ else x.astype(dtype)


@reference_op("fake_quant")
def fake_quant(node: Node, x: np.ndarray) -> np.ndarray:
    a, f32 = node.attrs, np.float32
    c = np.maximum(np.minimum(x.astype(f32), f32(a["max"])), f32(a["min"])) - f32(a["min"])
    q = c / f32(a["step"]) if a["divide"] else c * f32(a["step"])
    return np.floor(q - f32(a["zero"]) + f32(0.5)) * f32(a["scale"])


def _shift_amount(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """b clamped to [0, width of a - 1] (TF's shift kernels)."""
    return np.clip(b, 0, a.dtype.itemsize * 8 - 1).astype(a.dtype)


def _left_shift(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """In the unsigned type of a's width: the bits shifted past the width are dropped."""
    unsigned = np.dtype(f"uint{a.dtype.itemsize * 8}")
    shifted = np.left_shift(a.astype(unsigned), _shift_amount(a, b).astype(unsigned))
    return shifted.astype(a.dtype)


reference_op("bitwise_and")(lambda node, a, b: np.bitwise_and(a, b))
reference_op("bitwise_or")(lambda node, a, b: np.bitwise_or(a, b))
reference_op("bitwise_xor")(lambda node, a, b: np.bitwise_xor(a, b))
reference_op("bitwise_not")(lambda node, x: np.invert(x))
reference_op("left_shift")(lambda node, a, b: _left_shift(a, b))
reference_op("right_shift")(lambda node, a, b: np.right_shift(a, _shift_amount(a, b)))
