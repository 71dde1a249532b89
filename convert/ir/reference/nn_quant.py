"""TFLite's integer kernels (full-integer models): quantize, dequantize, requantize (the fixed-point
multiplier of convert.fixed_point) and the int32 accumulators of conv, fully-connected and average pooling,
as TFLite's reference kernels compute them."""

from __future__ import annotations

import numpy as np

from ... import fixed_point
from ..graph import Node
from .table import reference_op


@reference_op("quantize")
def quantize(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    info = np.iinfo(a["dtype"])
    q = fixed_point.round_half_away(x.astype(np.float32).astype(np.float64) / np.float64(np.float32(a["scale"])))
    q = np.clip(q, -(2.0 ** 31), 2.0 ** 31 - 1).astype(np.int64) + int(a["zero_point"])
    return np.clip(q, info.min, info.max).astype(a["dtype"])


@reference_op("dequantize")
def dequantize(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    centred = x.astype(np.int64) - int(a["zero_point"])
    return (np.float64(np.float32(a["scale"])) * centred).astype(np.float32)


def per_channel(values: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """A parameter holding one value per channel of `axis` (or one value) shaped to broadcast on rank-`rank` x."""
    values = np.asarray(values, np.int64).reshape(-1)
    if values.size == 1:
        return values.reshape(())
    shape = [1] * rank
    shape[axis] = -1
    return values.reshape(shape)


@reference_op("requantize")
def requantize(node: Node, x: np.ndarray) -> np.ndarray:
    a, p = node.attrs, node.params
    axis = int(a.get("axis", 1)) % max(x.ndim, 1)
    m, s = (per_channel(p[k], axis, x.ndim) for k in ("multiplier", "shift"))
    shifted = (x.astype(np.int64) + int(a.get("offset", 0))) << int(a.get("pre_shift", 0))
    multiply = fixed_point.multiply_once if a.get("rounding", "double") == "single" else fixed_point.multiply
    y = multiply(shifted, m, s) + int(a.get("zero_point", 0))
    return np.clip(y, int(a["min"]), int(a["max"])).astype(a["dtype"])


def _windows(x: np.ndarray, kernel, stride, dilation, edges) -> tuple[np.ndarray, np.ndarray]:
    """(windows (N, C, OH, OW, KH, KW) of x zero-padded by edges, the same of a ones map: 1 where real)."""
    t, b, left, r = (int(e) for e in edges)
    padded = np.pad(x, ((0, 0), (0, 0), (t, b), (left, r)))
    real = np.pad(np.ones(x.shape[2:], np.int64), ((t, b), (left, r)))
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    oh = (padded.shape[2] - (kh - 1) * dh - 1) // sh + 1
    ow = (padded.shape[3] - (kw - 1) * dw - 1) // sw + 1
    rows = (np.arange(oh) * sh)[:, None] + np.arange(kh) * dh  # (OH, KH)
    cols = (np.arange(ow) * sw)[:, None] + np.arange(kw) * dw  # (OW, KW)
    win = padded[:, :, rows[:, None, :, None], cols[None, :, None, :]]  # (N, C, OH, OW, KH, KW)
    return win, real[rows[:, None, :, None], cols[None, :, None, :]]


@reference_op("integer_conv2d")
def integer_conv2d(node: Node, x: np.ndarray) -> np.ndarray:
    a, p = node.attrs, node.params
    centred = x.astype(np.int64) - int(a["input_zero_point"])
    weight = p["weight"].astype(np.int64) - int(a.get("weight_zero_point", 0))  # (O, I/g, KH, KW)
    win, _ = _windows(centred, a["kernel"], a["stride"], a["dilation"], a["edges"])
    groups = int(a["groups"])
    n, c, oh, ow, kh, kw = win.shape
    out_c = weight.shape[0]
    win = win.reshape(n, groups, c // groups, oh, ow, kh, kw)
    w = weight.reshape(groups, out_c // groups, c // groups, kh, kw)
    acc = np.einsum("ngchwij,gocij->ngohw", win, w).reshape(n, out_c, oh, ow)
    if "bias" in p:
        acc = acc + p["bias"].astype(np.int64).reshape(1, -1, 1, 1)
    return acc.astype(np.int32)


@reference_op("integer_linear")
def integer_linear(node: Node, x: np.ndarray) -> np.ndarray:
    a, p = node.attrs, node.params
    centred = x.astype(np.int64) - int(a["input_zero_point"])
    weight = p["weight"].astype(np.int64) - int(a.get("weight_zero_point", 0))
    acc = centred @ weight.T
    if "bias" in p:
        acc = acc + p["bias"].astype(np.int64).reshape(-1)
    return acc.astype(np.int32)


@reference_op("integer_avg_pool2d")
def integer_avg_pool2d(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    win, real = _windows(x.astype(np.int64), a["kernel"], a["stride"], (1, 1), a["edges"])
    total = win.sum(axis=(4, 5))
    count = real.sum(axis=(2, 3))  # (OH, OW)
    half = count // 2
    rounded = np.where(total > 0, total + half, total - half)
    quotient = np.abs(rounded) // count * np.sign(rounded)  # C's division: toward zero
    return np.clip(quotient, int(a["min"]), int(a["max"])).astype(x.dtype)


@reference_op("lookup")
def lookup(node: Node, x: np.ndarray) -> np.ndarray:
    table = np.asarray(node.params["table"])
    return table[x.astype(np.int64) - int(node.attrs["low"])]


def softmax_rows(e: np.ndarray, axis: int, low: int, high: int) -> np.ndarray:
    """The part of TFLite's 8-bit softmax after the exp table (integer_softmax): the rescaled sum along `axis`,
    its reciprocal, each e scaled by it, the output's lowest integer added, clamped."""
    total = fixed_point.divide_by_pot(e, 12).sum(axis=axis, keepdims=True)
    zeros = fixed_point.count_leading_zeros(total)
    reciprocal = fixed_point.one_over_one_plus_x(total * (np.int64(1) << zeros) - (np.int64(1) << 31))
    y = fixed_point.divide_by_pot(fixed_point.high_mul(reciprocal, e), 12 - zeros + 23) + low
    return np.clip(y, low, high)


@reference_op("integer_softmax")
def integer_softmax(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    axis = int(a["axis"]) % x.ndim
    x = x.astype(np.int64)
    e = np.asarray(node.params["exp"], np.int64)[x.max(axis=axis, keepdims=True) - x]
    return softmax_rows(e, axis, int(a["min"]), int(a["max"])).astype(a["dtype"])
