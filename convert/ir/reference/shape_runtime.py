"""Shape ops whose sizes follow run-time values: the parameter (a shape, multiples, paddings, bounds, a depth)
is an input tensor, as TF computes it (convert.ir.runtime_dims)."""

from __future__ import annotations

import numpy as np

from ..graph import Node
from .resize import resample
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


def unique_along(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, indices, counts) of TF's Unique along `axis`: first-occurrence order, slices equal by == (a NaN
    equals nothing, -0.0 equals 0.0: Python's tuple comparison of floats)."""
    x = np.asarray(x)
    slices = np.moveaxis(x, axis, 0)
    position: dict[tuple, int] = {}
    firsts, indices = [], []
    for i, piece in enumerate(slices.reshape(len(slices), int(np.prod(slices.shape[1:])))):
        key = tuple(piece.tolist())
        if key not in position:
            position[key] = len(firsts)
            firsts.append(i)
        indices.append(position[key])
    indices_ = np.asarray(indices, np.int64)
    values = np.take(x, np.asarray(firsts, np.int64), axis=axis)
    return values, indices_, np.bincount(indices_, minlength=len(firsts))


@reference_op("unique")
def unique(node: Node, x: np.ndarray) -> np.ndarray:
    axis = int(node.attrs["axis"]) % max(np.ndim(x), 1)
    values, indices, counts = unique_along(x, axis)
    out = node.attrs["output"]
    if out == "values":
        return values
    return (indices if out == "indices" else counts).astype(node.attrs.get("index_dtype", "int32"))


@reference_op("bincount_by")
def bincount_by(node: Node, values: np.ndarray, size: np.ndarray, *weights: np.ndarray) -> np.ndarray:
    dtype = np.dtype(node.attrs["dtype"])
    hits = np.asarray(values)[..., None] == np.arange(int(np.asarray(size).reshape(())))
    if node.attrs.get("binary_output"):
        return hits.any(-2).astype(dtype)
    if not weights or np.size(weights[0]) == 0:
        return hits.sum(-2).astype(dtype)
    return np.where(hits, np.asarray(weights[0])[..., None].astype(dtype), dtype.type(0)).sum(-2, dtype=dtype)


def ragged_range_rows(starts: np.ndarray, limits: np.ndarray, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row_splits as int64, values) of TF's RaggedRange of integer vectors (a float range's length rounds in TF's
    own way: not computed here)."""
    if np.asarray(starts).dtype.kind not in "iu":
        raise ValueError(f"RaggedRange of {np.asarray(starts).dtype} values: integer ranges only")
    rows = [np.arange(int(s), int(lim), int(d)) for s, lim, d in zip(starts, limits, deltas)]
    splits = np.concatenate([[0], np.cumsum([len(r) for r in rows], dtype=np.int64)]).astype(np.int64)
    values = np.concatenate(rows) if rows else np.zeros(0)
    return splits, values.astype(np.asarray(starts).dtype)


@reference_op("ragged_range")
def ragged_range(node: Node, starts: np.ndarray, limits: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    splits, values = ragged_range_rows(np.asarray(starts), np.asarray(limits), np.asarray(deltas))
    if node.attrs["output"] == "row_splits":
        return splits.astype(node.attrs.get("splits_dtype", "int64"))
    return values


def ctc_greedy(logits: np.ndarray, lengths: np.ndarray, blank: int,
               merge_repeated: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(indices, values, shape, log_probability) of TF's CTCGreedyDecoder, step by step as its kernel."""
    steps, batch, classes = np.shape(logits)
    blank = blank % classes
    rows, log_probability = [], np.zeros((batch, 1), np.float32)
    for b in range(batch):
        row, previous = [], -1
        for t in range(int(lengths[b])):
            c = int(np.argmax(logits[t, b]))
            log_probability[b, 0] += -logits[t, b, c]
            if c != blank and not (merge_repeated and c == previous):
                row.append(c)
            previous = c
        rows.append(row)
    indices = np.asarray([(b, j) for b, row in enumerate(rows) for j in range(len(row))], np.int64).reshape(-1, 2)
    values = np.asarray([c for row in rows for c in row], np.int64)
    shape = np.asarray([batch, max([len(r) for r in rows] or [0])], np.int64)
    return indices, values, shape, log_probability


@reference_op("ctc_greedy_decoder")
def ctc_greedy_decoder(node: Node, logits: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    found = ctc_greedy(np.asarray(logits, np.float32), np.asarray(lengths), int(node.attrs["blank"]),
                       bool(node.attrs["merge_repeated"]))
    return found[("indices", "values", "shape", "log_probability").index(node.attrs["output"])]


@reference_op("resize_to")
def resize_to(node: Node, x: np.ndarray, size: np.ndarray) -> np.ndarray:
    out_h, out_w = _ints(size)
    return resample(np.asarray(x), node.attrs["mode"], node.attrs["coordinate"], (out_h, out_w))
