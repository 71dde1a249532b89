"""SparseTensor ops whose indices are constants. Where the indices are fixed, so
is every output index, shape and row count: those outputs are constants, and the values are picked
(slices of the values), combined elementwise or reduced per group -- exact in every target.

SparseReorder, SparseSlice, SparseConcat, SparseSplit, SparseFillEmptyRows, SparseReduceMax(Sparse),
SparseReduceSumSparse, SparseSparseMaximum/Minimum and SparseBincount."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..context import Context, NotConvertible
from ..lowering import Lowering
from ..table import tf_op
from .reduce_segment import reduce_segments

_MAX_VALUES = 512  # one slice per value


def _sparse(ctx: Context, op: Any, indices: int, shape: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """A SparseTensor's constant (indices (nnz, rank), dense shape)."""
    dense = tuple(int(d) for d in np.asarray(ctx.const(op.inputs[shape])).reshape(-1))
    at = np.asarray(ctx.const(op.inputs[indices])).reshape(-1, len(dense)).astype(np.int64)
    if len(at) > _MAX_VALUES:
        raise NotConvertible(f"{len(at)} sparse values (one slice each, at most {_MAX_VALUES})")
    return at, dense


def _values(low: Lowering, ctx: Context, t: Any, n: int) -> str:
    """A values vector as rows (n, 1): 2-D, so OpenCV's Eltwise takes its pieces too."""
    return low.reshape("values", ctx.tf_order(t), (n, 1))


def _pick(low: Lowering, values: str, order: list[int], part: str) -> str:
    """values rows in `order`, as a vector: one slice per run of consecutive rows."""
    if not order:
        raise NotConvertible("an output of no values")
    pieces, start = [], 0
    for k in range(1, len(order) + 1):
        if k == len(order) or order[k] != order[k - 1] + 1:
            pieces.append(low.slice(f"{part}{order[start]}", values, 0, order[start], order[k - 1] + 1))
            start = k
    out = low.concat(f"{part}_rows", pieces, 0)
    return low.reshape(part, out, (len(order),))


def _set_const(low: Lowering, ctx: Context, t: Any, part: str, value: Any) -> None:
    ctx.set(t, low.const(part, np.asarray(value), t.dtype.name))


def _canonical(indices: np.ndarray) -> list[int]:
    """The row-major order of the index tuples (stable)."""
    return sorted(range(len(indices)), key=lambda k: tuple(indices[k].tolist()))


@tf_op("SparseReorder")
def sparse_reorder(ctx: Context, op: Any) -> None:
    low = Lowering(ctx, op)
    at, dense = _sparse(ctx, op, 0, 2)
    order = _canonical(at)
    _set_const(low, ctx, op.outputs[0], "indices", at[order])
    ctx.set(op.outputs[1], _pick(low, _values(low, ctx, op.inputs[1], len(at)), order, "values_out"))


@tf_op("SparseSlice")
def sparse_slice(ctx: Context, op: Any) -> None:
    """The values inside the box [start, start + size), in their order; indices relative to start."""
    low = Lowering(ctx, op)
    at, dense = _sparse(ctx, op, 0, 2)
    start, size = (np.asarray(ctx.const(t)).reshape(-1).astype(np.int64) for t in op.inputs[3:5])
    end = np.minimum(start + size, dense)
    inside = [k for k in range(len(at)) if np.all((at[k] >= start) & (at[k] < end))]
    _set_const(low, ctx, op.outputs[0], "indices", (at[inside] - start).reshape(-1, len(dense)))
    ctx.set(op.outputs[1], _pick(low, _values(low, ctx, op.inputs[1], len(at)), inside, "values_out"))
    _set_const(low, ctx, op.outputs[2], "shape", np.maximum(end - start, 0))


@tf_op("SparseConcat")
def sparse_concat(ctx: Context, op: Any) -> None:
    """The inputs' values joined along concat_dim, then in row-major order of the joined indices."""
    low = Lowering(ctx, op)
    n = int(op.get_attr("N"))
    axis = int(op.get_attr("concat_dim"))
    parts, offset, shape = [], 0, None
    for i in range(n):
        at, dense = _sparse(ctx, op, i, 2 * n + i)
        axis %= len(dense)
        at = at.copy()
        at[:, axis] += offset
        offset += dense[axis]
        shape = list(dense)
        parts.append((at, _values(low, ctx, op.inputs[n + i], len(at))))
    joined = np.concatenate([p[0] for p in parts])
    values = low.concat("joined", [p[1] for p in parts], 0)
    order = _canonical(joined)
    shape[axis] = offset
    _set_const(low, ctx, op.outputs[0], "indices", joined[order])
    ctx.set(op.outputs[1], _pick(low, values, order, "values_out"))
    _set_const(low, ctx, op.outputs[2], "shape", shape)


@tf_op("SparseSplit")
def sparse_split(ctx: Context, op: Any) -> None:
    """Piece p holds the values whose split_dim index is in its range (TF's sizes: the first pieces one
    larger when the axis does not divide), in their order."""
    low = Lowering(ctx, op)
    at, dense = _sparse(ctx, op, 1, 3)
    axis = int(np.asarray(ctx.const(op.inputs[0])).reshape(())) % len(dense)
    k = int(op.get_attr("num_split"))
    base, extra = divmod(dense[axis], k)
    sizes = [base + (p < extra) for p in range(k)]
    starts = np.cumsum([0] + sizes)
    values = _values(low, ctx, op.inputs[2], len(at))
    for p in range(k):
        rows = [j for j in range(len(at)) if starts[p] <= at[j, axis] < starts[p + 1]]
        local = at[rows].reshape(-1, len(dense)).copy()
        local[:, axis] -= starts[p]
        shape = list(dense)
        shape[axis] = sizes[p]
        _set_const(low, ctx, op.outputs[p], f"indices{p}", local)
        ctx.set(op.outputs[k + p], _pick(low, values, rows, f"values{p}"))
        _set_const(low, ctx, op.outputs[2 * k + p], f"shape{p}", shape)


@tf_op("SparseFillEmptyRows")
def sparse_fill_empty_rows(ctx: Context, op: Any) -> None:
    """Each row (first index) with no value gets default_value at column 0; rows in order."""
    low = Lowering(ctx, op)
    at, dense = _sparse(ctx, op, 0, 2)
    if list(at[:, 0]) != sorted(at[:, 0]):
        raise NotConvertible("SparseFillEmptyRows of indices not ordered by row")
    values = _values(low, ctx, op.inputs[1], len(at))
    default = low.reshape("default", ctx.tf_order(op.inputs[3]), (1, 1))
    empty = [r for r in range(dense[0]) if r not in set(at[:, 0].tolist())]
    indices, pieces, reverse = [], [], []
    for r in range(dense[0]):
        rows = np.flatnonzero(at[:, 0] == r)
        if not len(rows):
            indices.append([r] + [0] * (len(dense) - 1))
            pieces.append(default)
            continue
        for j in rows:
            reverse.append(len(indices))
            indices.append(at[j].tolist())
            pieces.append(low.slice(f"value{j}", values, 0, int(j), int(j) + 1))
    _set_const(low, ctx, op.outputs[0], "indices", np.asarray(indices).reshape(-1, len(dense)))
    ctx.set(op.outputs[1], low.reshape("values_out", low.concat("rows", pieces, 0), (len(indices),)))
    _set_const(low, ctx, op.outputs[2], "empty_rows", [r in empty for r in range(dense[0])])
    _set_const(low, ctx, op.outputs[3], "reverse_index_map", reverse)


def _reduced_groups(ctx: Context, op: Any, at: np.ndarray,
                    dense: tuple[int, ...]) -> tuple[list[int], list[int], np.ndarray]:
    """(the reduced axes, the dense shape keeping them as 1s, each value's flat position in that shape)."""
    axes = sorted({int(a) % len(dense) for a in np.asarray(ctx.const(op.inputs[3])).reshape(-1)} or
                  set(range(len(dense))))
    kept = [1 if a in axes else d for a, d in enumerate(dense)]
    keys = np.where([a in axes for a in range(len(dense))], 0, at)
    return axes, kept, np.ravel_multi_index(tuple(keys.T), kept) if len(at) else np.zeros(0, np.int64)


_SPARSE_REDUCE = {"SparseReduceMax": "Max", "SparseReduceMaxSparse": "Max", "SparseReduceSumSparse": "Sum"}


@tf_op(*_SPARSE_REDUCE)
def sparse_reduce(ctx: Context, op: Any) -> None:
    """Each output element reduces the values present in its group (TF ignores the implicit zeros; a group
    with no value is 0). The *Sparse forms give the groups that have values, in row-major order."""
    low = Lowering(ctx, op)
    at, dense = _sparse(ctx, op, 0, 2)
    axes, kept, flat = _reduced_groups(ctx, op, at, dense)
    values = _values(low, ctx, op.inputs[1], len(at))
    kind = _SPARSE_REDUCE[op.type]
    if op.type == "SparseReduceMax":
        plan = [np.flatnonzero(flat == g) for g in range(int(np.prod(kept)))]
        out = reduce_segments(low, values, plan, kind, 0)
        ctx.set(op.outputs[0], low.reshape("", out, ctx.shape(op.outputs[0])))
        return
    groups = sorted(set(flat.tolist()))
    out = reduce_segments(low, values, [np.flatnonzero(flat == g) for g in groups], kind, 0)
    coords = np.stack(np.unravel_index(groups, kept), 1) if groups else np.zeros((0, len(kept)), np.int64)
    if not bool(op.get_attr("keep_dims")):
        coords, kept = np.delete(coords, axes, 1), [d for a, d in enumerate(dense) if a not in axes]
    _set_const(low, ctx, op.outputs[0], "indices", coords)
    ctx.set(op.outputs[1], low.reshape("values_out", out, (len(groups),)))
    _set_const(low, ctx, op.outputs[2], "shape", kept)


_SPARSE_SPARSE = {"SparseSparseMaximum": "maximum", "SparseSparseMinimum": "minimum"}


@tf_op(*_SPARSE_SPARSE)
def sparse_sparse_extreme(ctx: Context, op: Any) -> None:
    """At every index either tensor has (row-major order), the max/min of the two, an absent one being 0."""
    low = Lowering(ctx, op)
    a_at, dense = _sparse(ctx, op, 0, 2)
    b_at, _ = _sparse(ctx, op, 3, 5)
    a, b = _values(low, ctx, op.inputs[1], len(a_at)), _values(low, ctx, op.inputs[4], len(b_at))
    where_a = {tuple(r): k for k, r in enumerate(a_at.tolist())}
    where_b = {tuple(r): k for k, r in enumerate(b_at.tolist())}
    union = sorted(set(where_a) | set(where_b))
    zero = low.const("zero", np.zeros((1, 1)), low.dtype(a))
    rows = []
    for n, key in enumerate(union):
        pa = low.slice(f"a{n}", a, 0, where_a[key], where_a[key] + 1) if key in where_a else zero
        pb = low.slice(f"b{n}", b, 0, where_b[key], where_b[key] + 1) if key in where_b else zero
        rows.append(low.binary(_SPARSE_SPARSE[op.type], f"at{n}", pa, pb))
    _set_const(low, ctx, op.outputs[0], "indices", np.asarray(union, np.int64).reshape(-1, len(dense)))
    ctx.set(op.outputs[1], low.reshape("values_out", low.concat("rows", rows, 0), (len(union),)))


@tf_op("SparseBincount")
def sparse_bincount(ctx: Context, op: Any) -> None:
    """Bincount of the values (rank-1 input), or per row (rank 2: the row is the first index)."""
    low = Lowering(ctx, op)
    at, dense = _sparse(ctx, op, 0, 2)
    size = int(np.asarray(ctx.const(op.inputs[3])).reshape(()))
    dtype = op.outputs[0].dtype.name
    values = _values(low, ctx, op.inputs[1], len(at))
    hits = low.compare("equal", "hits", values, low.const("bins", np.arange(size)[None], low.dtype(values)))
    binary = bool(op.get_attr("binary_output"))
    if binary:
        terms = low.cast("terms", hits, dtype)
    elif int(np.prod(ctx.shape(op.inputs[4]))) == 0:
        terms = low.cast("ones", hits, dtype)
    else:
        if int(np.prod(ctx.shape(op.inputs[4]))) != len(at):
            raise NotConvertible(f"SparseBincount of {len(at)} values with {ctx.shape(op.inputs[4])} weights")
        weights = low.reshape("weights", ctx.tf_order(op.inputs[4]), (len(at), 1))
        terms = low.select("weighted", hits, weights, low.const("zero", 0, dtype))
    rows = [np.arange(len(at))] if len(dense) == 1 else [np.flatnonzero(at[:, 0] == r) for r in range(dense[0])]
    out = reduce_segments(low, terms, rows, "Max" if binary else "Sum", 0)
    ctx.set(op.outputs[0], low.reshape("", out, ctx.shape(op.outputs[0])))
