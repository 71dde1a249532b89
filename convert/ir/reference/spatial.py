"""Spatial ops: convolutions (2-D, 3-D, transposed), pooling and pads, in TF's semantics: explicit per-side
pads, max pooling that ignores padded elements, average pooling that divides by the number of real
elements unless ``count_include_pad``, transposed convolution computed in full and then cropped to
``output_size``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..graph import Node
from .table import EvaluationError, reference_op


def _pad_spatial(x: np.ndarray, pads: Sequence[int], value: float = 0.0) -> np.ndarray:
    """Pad the spatial axes of (N, C, *spatial) `x` by flat (begin, end) pairs."""
    widths = [(0, 0), (0, 0)] + [(int(pads[2 * i]), int(pads[2 * i + 1])) for i in range(x.ndim - 2)]
    return np.pad(x, widths, constant_values=value) if any(map(any, widths)) else x


def _windows(x: np.ndarray, kernel, stride, dilation=None) -> np.ndarray:
    """(N, C, *out, *kernel) view of every window of the (already padded) `x`."""
    rank = x.ndim - 2
    dilation = dilation or (1,) * rank
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
    view = sliding_window_view(x, span, axis=tuple(range(2, 2 + rank)))
    steps = tuple(slice(None, None, s) for s in stride) + tuple(slice(None, None, d) for d in dilation)
    return view[(slice(None), slice(None)) + steps]


@reference_op("conv2d")
def conv2d(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    weight = np.asarray(node.params["weight"])
    groups = int(a["groups"])
    win = _windows(_pad_spatial(x, a["pads"]), a["kernel"], a["stride"], a["dilation"])
    n, c, oh, ow, kh, kw = win.shape
    out_c, cg = weight.shape[0], c // groups
    cols = win.reshape(n, groups, cg, oh, ow, kh, kw).transpose(0, 1, 3, 4, 2, 5, 6)
    cols = cols.reshape(n, groups, oh * ow, cg * kh * kw)
    kernels = weight.reshape(groups, out_c // groups, cg * kh * kw).transpose(0, 2, 1)
    y = np.matmul(cols, kernels)  # (n, groups, oh*ow, out_c / groups)
    y = y.transpose(0, 1, 3, 2).reshape(n, out_c, oh, ow)
    if "bias" in node.params:
        y = y + np.asarray(node.params["bias"]).reshape(1, -1, 1, 1)
    return y


@reference_op("conv_transpose2d")
def conv_transpose2d(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    weight = np.asarray(node.params["weight"])  # IOHW: (in, out / groups, kh, kw)
    groups = int(a["groups"])
    (kh, kw), (sh, sw), (dh, dw) = a["kernel"], a["stride"], a["dilation"]
    n, c, h, w = x.shape
    cg, og = c // groups, weight.shape[1]
    full_h, full_w = (h - 1) * sh + (kh - 1) * dh + 1, (w - 1) * sw + (kw - 1) * dw + 1
    full = np.zeros((n, groups * og, full_h, full_w), np.result_type(x, weight))
    xs = x.reshape(n, groups, cg, h * w)
    ws = weight.reshape(groups, cg, og, kh, kw)
    for i in range(kh):
        for j in range(kw):
            part = np.matmul(ws[:, :, :, i, j].transpose(0, 2, 1), xs)  # (n, groups, og, h*w)
            full[:, :, i * dh:i * dh + (h - 1) * sh + 1:sh, j * dw:j * dw + (w - 1) * sw + 1:sw] += (
                part.reshape(n, groups * og, h, w)
            )
    (ct, cl), (oh, ow) = a["crop"], a["output_size"]
    # rows or columns asked for past the full output are zeros (before the bias)
    full = np.pad(full, ((0, 0), (0, 0), (0, max(0, ct + oh - full_h)), (0, max(0, cl + ow - full_w))))
    y = full[:, :, ct:ct + oh, cl:cl + ow]
    if "bias" in node.params:
        y = y + np.asarray(node.params["bias"]).reshape(1, -1, 1, 1)
    return y


@reference_op("max_pool2d", "max_pool3d")
def max_pool(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs  # padded elements never win: pad with -inf
    window_axes = tuple(range(-(x.ndim - 2), 0))
    return _windows(_pad_spatial(x, a["pads"], -np.inf), a["kernel"], a["stride"]).max(axis=window_axes)


@reference_op("avg_pool2d", "avg_pool3d")
def avg_pool(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    kernel, stride = a["kernel"], a["stride"]
    window_axes = tuple(range(-(x.ndim - 2), 0))
    total = _windows(_pad_spatial(x, a["pads"]), kernel, stride).sum(axis=window_axes)
    if a.get("count_include_pad"):
        return total / x.dtype.type(math.prod(kernel))
    real = np.ones((1, 1) + x.shape[2:], x.dtype)
    return total / _windows(_pad_spatial(real, a["pads"]), kernel, stride).sum(axis=window_axes)


@reference_op("pad")
def pad(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    widths = [tuple(int(p) for p in pair) for pair in a["pads"]]
    mode = a.get("mode", "constant")
    if mode == "constant":
        return np.pad(x, widths, constant_values=x.dtype.type(a.get("value", 0.0)))
    if mode in ("reflect", "symmetric"):
        return np.pad(x, widths, mode=mode)
    raise EvaluationError(f"node {node.name}: unknown pad mode {mode!r}")


@reference_op("conv3d")
def conv3d(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    weight = np.asarray(node.params["weight"])  # (O, I / groups, kd, kh, kw)
    groups = int(a["groups"])
    win = _windows(_pad_spatial(x, a["pads"]), a["kernel"], a["stride"], a["dilation"])
    n, c = win.shape[:2]
    out_sp, cg, og = win.shape[2:5], c // groups, weight.shape[0] // groups
    parts = [
        np.einsum("ncdhwijk,ocijk->nodhw", win[:, g * cg:(g + 1) * cg], weight[g * og:(g + 1) * og])
        for g in range(groups)
    ]
    y = np.concatenate(parts, axis=1).reshape(n, weight.shape[0], *out_sp)
    if "bias" in node.params:
        y = y + np.asarray(node.params["bias"]).reshape(1, -1, 1, 1, 1)
    return y


@reference_op("conv_transpose3d")
def conv_transpose3d(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    weight = np.asarray(node.params["weight"])  # (I, O / groups, kd, kh, kw)
    if int(a["groups"]) != 1:
        raise EvaluationError(f"node {node.name}: grouped conv_transpose3d has no reference")
    kernel, stride, dilation = a["kernel"], a["stride"], a["dilation"]
    size = x.shape[2:]
    full_size = [(n - 1) * s + (k - 1) * d + 1 for n, k, s, d in zip(size, kernel, stride, dilation)]
    full = np.zeros((x.shape[0], weight.shape[1], *full_size), np.result_type(x, weight))
    for tap in np.ndindex(*kernel):
        at = tuple(slice(t * d, t * d + (n - 1) * s + 1, s) for t, n, s, d in zip(tap, size, stride, dilation))
        tap_weight = weight[(slice(None), slice(None)) + tap]
        full[(slice(None), slice(None)) + at] += np.einsum("ncdhw,co->nodhw", x, tap_weight)
    crop, out = a["crop"], a["output_size"]
    # positions asked for past the full output are zeros (before the bias)
    tail = [(0, max(0, c + o - f)) for c, o, f in zip(crop, out, full_size)]
    full = np.pad(full, [(0, 0), (0, 0)] + tail)
    y = full[(slice(None), slice(None)) + tuple(slice(c, c + o) for c, o in zip(crop, out))]
    if "bias" in node.params:
        y = y + np.asarray(node.params["bias"]).reshape(1, -1, 1, 1, 1)
    return y
