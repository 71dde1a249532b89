"""Resizes and other resampling: TF's resize grid (convert.sampling), depth <-> space moves, repeats."""

from __future__ import annotations

import numpy as np

from tf_convert.convert.sampling import linear_taps, nearest_indices

from ..graph import Node
from .table import reference_op


@reference_op("resize")
def resize(node: Node, x: np.ndarray) -> np.ndarray:
    return resample(x, node.attrs["mode"], node.attrs["coordinate"], node.attrs["size"])


def resample(x: np.ndarray, mode: str, coordinate: str, size: tuple[int, int]) -> np.ndarray:
    """NCHW `x` resized to `size` on TF's grid (resize, and resize_to's run-time size)."""
    (in_h, in_w), (out_h, out_w) = x.shape[2:], size
    if mode == "nearest":
        rows, cols = (nearest_indices(i, o, coordinate) for i, o in ((in_h, out_h), (in_w, out_w)))
        return x[:, :, rows][:, :, :, cols]
    (ylo, yhi, wy), (xlo, xhi, wx) = (linear_taps(i, o, coordinate) for i, o in ((in_h, out_h), (in_w, out_w)))
    wx, wy = wx.astype(x.dtype), wy.astype(x.dtype)[:, None]
    left, right = x[:, :, :, xlo], x[:, :, :, xhi]
    across = left + (right - left) * wx  # TF lerps along x first, then along y
    top, bottom = across[:, :, ylo], across[:, :, yhi]
    return top + (bottom - top) * wy


@reference_op("depth_to_space")
def depth_to_space(node: Node, x: np.ndarray) -> np.ndarray:
    b = int(node.attrs["block_size"])
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return y.reshape(n, c // (b * b), h * b, w * b)


@reference_op("space_to_depth")
def space_to_depth(node: Node, x: np.ndarray) -> np.ndarray:
    b = int(node.attrs["block_size"])
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


@reference_op("repeat")
def repeat(node: Node, x: np.ndarray) -> np.ndarray:
    for axis, times in enumerate(node.attrs["repeats"]):
        if int(times) != 1:
            x = np.repeat(x, int(times), axis=axis)
    return x
