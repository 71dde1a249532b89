"""Shape ops whose sizes follow run-time values: the parameter (a shape, multiples, paddings, bounds, a depth)
is an input tensor, as TF computes it (convert.ir.runtime_dims)."""

from __future__ import annotations

import numpy as np

from ..graph import Node
from .table import reference_op


def _ints(v: np.ndarray) -> list[int]:
    return [int(i) for i in np.asarray(v).reshape(-1)]


@reference_op("reshape_to")
def reshape_to(node: Node, x: np.ndarray, shape: np.ndarray) -> np.ndarray:
    return np.asarray(x).reshape(_ints(shape))


@reference_op("broadcast_to")
def broadcast_to(node: Node, x: np.ndarray, shape: np.ndarray) -> np.ndarray:
    return np.array(np.broadcast_to(x, _ints(shape)))


@reference_op("tile_by")
def tile_by(node: Node, x: np.ndarray, multiples: np.ndarray) -> np.ndarray:
    return np.tile(x, _ints(multiples))


@reference_op("pad_by")
def pad_by(node: Node, x: np.ndarray, paddings: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    pads = np.asarray(paddings).reshape(x.ndim, 2).astype(int)
    mode = node.attrs.get("mode", "constant")
    if mode != "constant":
        return np.pad(x, pads, mode=mode)
    return np.pad(x, pads, constant_values=np.asarray(node.attrs.get("value", 0.0)).astype(x.dtype))


@reference_op("slice_to")
def slice_to(node: Node, x: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    steps = node.attrs.get("steps") or [1] * np.ndim(x)
    return np.asarray(x)[tuple(slice(b, e, s) for b, e, s in zip(_ints(starts), _ints(ends), steps))]


@reference_op("one_hot_by")
def one_hot_by(node: Node, indices: np.ndarray, depth: np.ndarray) -> np.ndarray:
    depth_, axis = int(np.asarray(depth).reshape(())), int(node.attrs["axis"])
    hit = np.expand_dims(np.asarray(indices), axis) == np.arange(depth_).reshape(
        (depth_,) + (1,) * (np.ndim(indices) - axis))
    return np.where(hit, np.float32(node.attrs["on"]), np.float32(node.attrs["off"]))


@reference_op("range")
def range_(node: Node, start: np.ndarray, limit: np.ndarray, delta: np.ndarray) -> np.ndarray:
    dtype = np.asarray(start).dtype
    if np.issubdtype(dtype, np.integer):
        return np.arange(int(start), int(limit), int(delta)).astype(dtype)
    start, limit, delta = (np.asarray(v, dtype).reshape(()) for v in (start, limit, delta))
    count = int(np.ceil(np.abs((limit - start) / delta)))  # in the inputs' type, as TF's kernel
    return (start + np.arange(count).astype(dtype) * delta).astype(dtype)


@reference_op("expand_dims_by")
def expand_dims_by(node: Node, x: np.ndarray, axis: np.ndarray) -> np.ndarray:
    return np.expand_dims(np.asarray(x), int(np.asarray(axis).reshape(())))
