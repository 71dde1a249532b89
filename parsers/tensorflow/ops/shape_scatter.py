"""Scatters into a tensor at constant indices -- TensorScatterUpdate/Add/Sub/Max/Min,
ScatterNdNonAliasingAdd and SparseToDense. The output, flattened to rows (the indexed axes), is a concat of
runs of the base tensor's rows and the updated rows; an updated row is the update itself (Update) or the
base row combined with each update aimed at it in index order, as TF's kernel applies them. Copies and
those elementwise steps only: exact in every target."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..context import Context, NotConvertible
from ..lowering import Lowering
from ..table import tf_op
from .shape import _dense_slice

_MAX_INDICES = 512  # one slice per index tuple


def flat_rows(indices: np.ndarray, lead: tuple[int, ...], what: str) -> np.ndarray:
    """Constant index tuples (..., depth) -> the flat row each addresses in `lead`, checked in range."""
    depth = indices.shape[-1] if indices.ndim else 1
    rows = indices.reshape(-1, depth).astype(np.int64)
    if len(rows) > _MAX_INDICES:
        raise NotConvertible(f"{what} {len(rows)} index tuples (one slice each, at most {_MAX_INDICES})")
    for row in rows:
        if any(not 0 <= i < n for i, n in zip(row, lead)):
            raise NotConvertible(f"index {row.tolist()} is out of range for shape {list(lead)}")
    return np.ravel_multi_index(tuple(rows.T), lead) if depth else np.zeros(len(rows), np.int64)


def scatter_rows(low: Lowering, n_rows: int, base: Callable[[int, int], str], updates: str, flat: np.ndarray,
                 combine: str | None) -> str:
    """Rows 0..n_rows of the result: base(start, end) gives base rows, `updates` (k, *rest) row k goes
    to row flat[k], combined by IR op `combine` with what is there (None: it replaces it)."""
    pieces, start = [], 0
    for target in sorted(set(flat.tolist())):
        if target > start:
            pieces.append(base(start, target))
        row = None if combine is None else base(target, target + 1)
        for k in np.flatnonzero(flat == target):
            update = low.slice(f"update{k}", updates, 0, int(k), int(k) + 1)
            row = update if row is None else low.binary(combine, f"row{target}_{k}", row, update)
        pieces.append(row)
        start = target + 1
    if start < n_rows:
        pieces.append(base(start, n_rows))
    return low.concat("rows", pieces, 0)


_COMBINE = {"TensorScatterUpdate": None, "TensorScatterAdd": "add", "TensorScatterSub": "sub",
            "TensorScatterMax": "maximum", "TensorScatterMin": "minimum", "ScatterNdNonAliasingAdd": "add"}


@tf_op(*_COMBINE)
def tensor_scatter(ctx: Context, op: Any) -> None:
    low = Lowering(ctx, op)
    shape = ctx.shape(op.inputs[0])
    if not ctx.is_const(op.inputs[1]):
        ctx.set(op.outputs[0], _update_at_run_time(ctx, low, op, shape))
        return
    indices = np.asarray(ctx.const(op.inputs[1]))
    depth = indices.shape[-1]
    lead, rest = shape[:depth], shape[depth:] or (1,)  # rows of one element stay 2-D (OpenCV's Eltwise)
    flat = flat_rows(indices, lead, "scattering")
    combine = _COMBINE[op.type]
    if combine is None and len(set(flat.tolist())) < len(flat):
        raise NotConvertible("TensorScatterUpdate with a repeated index: TF leaves which update wins unspecified")
    n_rows = int(np.prod(lead))
    x = low.reshape("base", ctx.tf_order(op.inputs[0]), (n_rows,) + rest)
    updates = low.reshape("updates", ctx.tf_order(op.inputs[2]), (len(flat),) + rest)
    out = scatter_rows(low, n_rows, lambda a, b: low.slice(f"base{a}", x, 0, a, b), updates, flat, combine)
    ctx.set(op.outputs[0], low.reshape("", out, shape))


def _update_at_run_time(ctx: Context, low: Lowering, op: Any, shape: tuple[int, ...]) -> str:
    """TensorScatterUpdate at indices the graph computes: each row of the result picks, from the base rows
    followed by the update rows, the last update aimed at it (TF's CPU kernel writes them in order), else its
    own base row -- an index table the converted model works out (equal, max, select), then one gather."""
    if op.type != "TensorScatterUpdate":
        raise NotConvertible(
            f"{op.type} at indices computed at run time: only TensorScatterUpdate (a copy) has a run-time form; "
            "combining repeated updates would have to follow TF's order of additions")
    index_shape = tuple(ctx.shape(op.inputs[1]))
    depth = index_shape[-1]
    lead, rest = shape[:depth], shape[depth:]
    n_rows, count = int(np.prod(lead)), int(np.prod(index_shape[:-1]))
    if not n_rows or not count:
        raise NotConvertible(f"{op.type} with no rows or no updates at run-time indices: nothing to scatter")
    indices = low.reshape("indices", ctx.tf_order(op.inputs[1]), (count, depth))
    dtype = low.dtype(indices)
    strides = np.asarray([int(np.prod(lead[k + 1:])) for k in range(depth)])
    scaled = low.node("mul", "scaled", [indices, low.const("strides", strides, dtype)], (count, depth))
    flat = low.node("reduce_sum", "flat", [scaled], (count, 1), {"axes": (1,), "keepdims": True})
    aimed = low.node("equal", "aimed", [flat, low.const("rows", np.arange(n_rows)[None], dtype)], (count, n_rows),
                     dtype="bool")
    numbered = low.node("mul", "numbered", [low.node("cast", "aimed_int", [aimed], (count, n_rows), {"dtype": dtype},
                                                     dtype=dtype),
                                            low.const("update_numbers", np.arange(1, count + 1)[:, None], dtype)],
                        (count, n_rows))
    last = low.node("reduce_max", "last", [numbered], (n_rows,), {"axes": (0,), "keepdims": False})
    updated = low.node("greater", "updated", [last, low.const("zero", [0], dtype)], (n_rows,), dtype="bool")
    from_updates = low.node("add", "from_updates", [last, low.const("past_base", [n_rows - 1], dtype)], (n_rows,))
    row = low.node("select", "row", [updated, from_updates, low.const("own_rows", np.arange(n_rows), dtype)],
                   (n_rows,), dtype=dtype)
    base = low.reshape("base", ctx.tf_order(op.inputs[0]), (n_rows, *rest))
    updates = low.reshape("updates", ctx.tf_order(op.inputs[2]), (count, *rest))
    table = low.concat("table", [base, updates], 0)
    return low.reshape("", low.node("gather", "picked", [table, row], (n_rows, *rest), {"axis": 0}), shape)


@tf_op("SparseToDense")
def sparse_to_dense(ctx: Context, op: Any) -> None:
    """The default value everywhere but at the (constant, distinct) indices, which get their values."""
    low = Lowering(ctx, op)
    shape = tuple(int(d) for d in np.asarray(ctx.const(op.inputs[1])).reshape(-1))
    indices = np.asarray(ctx.const(op.inputs[0]))
    indices = indices.reshape(-1, 1) if indices.ndim < 2 else indices
    flat = flat_rows(indices, shape, "setting")
    if len(set(flat.tolist())) < len(flat):
        raise NotConvertible("SparseToDense with a repeated index (TF refuses it when validating, else the "
                             "winner is unspecified)")
    n = int(np.prod(shape))
    values = ctx.tf_order(op.inputs[2])
    if not low.shape(values):  # one value for every index
        one = low.reshape("value", values, (1, 1))
        values = low.repeat("values", one, 0, len(flat))
    values = low.reshape("values_rows", values, (len(flat), 1))  # rows of one element: 2-D (OpenCV's Eltwise)
    default = low.reshape("default", ctx.tf_order(op.inputs[3]), (1, 1))
    out = scatter_rows(low, n, lambda a, b: low.repeat(f"default{a}", default, 0, b - a), values, flat, None)
    ctx.set(op.outputs[0], low.reshape("", out, shape))


# ---- the same row scatter under other names: SparseTensorDenseAdd, SparseReduceSum ---------------------
def _sparse_flat(ctx: Context, op: Any, indices: Any, shape: Any) -> tuple[np.ndarray, tuple[int, ...]]:
    """A SparseTensor's constant indices -> (flat element numbers, its dense shape)."""
    dense = tuple(int(d) for d in np.asarray(ctx.const(shape)).reshape(-1))
    return flat_rows(np.asarray(ctx.const(indices)).reshape(-1, len(dense)), dense, "addressing"), dense


@tf_op("SparseTensorDenseAdd")
def sparse_tensor_dense_add(ctx: Context, op: Any) -> None:
    """The dense b with each sparse value added at its element."""
    low = Lowering(ctx, op)
    flat, dense = _sparse_flat(ctx, op, op.inputs[0], op.inputs[2])
    n = int(np.prod(dense))
    b = low.reshape("base", ctx.tf_order(op.inputs[3]), (n, 1))
    values = low.reshape("values", ctx.tf_order(op.inputs[1]), (len(flat), 1))
    out = scatter_rows(low, n, lambda s, e: low.slice(f"base{s}", b, 0, s, e), values, flat, "add")
    ctx.set(op.outputs[0], low.reshape("", out, dense))


@tf_op("SparseReduceSum")
def sparse_reduce_sum(ctx: Context, op: Any) -> None:
    """The sparse tensor made dense (zeros elsewhere, repeated indices added), then summed over the axes."""
    low = Lowering(ctx, op)
    flat, dense = _sparse_flat(ctx, op, op.inputs[0], op.inputs[2])
    n = int(np.prod(dense))
    dtype = _dtype_of(op.inputs[1])
    values = low.reshape("values", ctx.tf_order(op.inputs[1]), (len(flat), 1))
    zero = low.const("zero", np.zeros((1, 1)), dtype)
    full = scatter_rows(low, n, lambda s, e: low.repeat(f"zeros{s}", zero, 0, e - s), values, flat, "add")
    full = low.reshape("dense", full, dense)
    axes = [int(a) % len(dense) for a in np.asarray(ctx.const(op.inputs[3])).reshape(-1)] or list(range(len(dense)))
    out = low.reduce("reduce_sum", "sum", full, axes, bool(op.get_attr("keep_dims")))
    ctx.set(op.outputs[0], low.reshape("", out, ctx.shape(op.outputs[0])))


def _dtype_of(t: Any) -> str:
    return t.dtype.name


_CWISE = {"SparseDenseCwiseAdd": "add", "SparseDenseCwiseMul": "mul", "SparseDenseCwiseDiv": "div"}


@tf_op(*_CWISE)
def sparse_dense_cwise(ctx: Context, op: Any) -> None:
    """Each sparse value with the dense element at its index (the dense side broadcast to the sparse
    shape): one slice of the dense tensor per value."""
    low = Lowering(ctx, op)
    dense_shape = tuple(int(d) for d in np.asarray(ctx.const(op.inputs[2])).reshape(-1))
    indices = np.asarray(ctx.const(op.inputs[0])).reshape(-1, len(dense_shape)).astype(np.int64)
    if len(indices) > _MAX_INDICES:
        raise NotConvertible(f"{len(indices)} sparse values (one slice each, at most {_MAX_INDICES})")
    b_shape = ctx.shape(op.inputs[3])
    own = indices[:, len(dense_shape) - len(b_shape):]
    own = np.where(np.asarray(b_shape) == 1, 0, own)  # a broadcast axis of b
    flat = flat_rows(own, b_shape, "reading") if b_shape else np.zeros(len(indices), np.int64)
    b = low.reshape("dense", ctx.tf_order(op.inputs[3]), (int(np.prod(b_shape)), 1))
    picked = low.concat("picked", [low.slice(f"at{k}", b, 0, int(r), int(r) + 1) for k, r in enumerate(flat)], 0)
    values = low.reshape("values", ctx.tf_order(op.inputs[1]), (len(indices), 1))
    out = low.binary(_CWISE[op.type], "combined", values, picked)
    ctx.set(op.outputs[0], low.reshape("", out, (len(indices),)))


# ---- DynamicStitch and DynamicPartition of constant indices ---------------------------------------------
@tf_op("DynamicStitch", "ParallelDynamicStitch")
def dynamic_stitch(ctx: Context, op: Any) -> None:
    """Row r of the result is the data row whose index is r; of several, the last (DynamicStitch's rule)."""
    low = Lowering(ctx, op)
    n = len(op.inputs) // 2
    out_shape = ctx.shape(op.outputs[0])
    rest = tuple(out_shape[1:]) or (1,)
    source: dict[int, tuple[int, int]] = {}
    repeated = False
    for m in range(n):
        for k, r in enumerate(np.asarray(ctx.const(op.inputs[m])).reshape(-1).tolist()):
            repeated |= r in source
            source[int(r)] = (m, k)
    if repeated and op.type == "ParallelDynamicStitch":
        raise NotConvertible("ParallelDynamicStitch with a repeated index: TF leaves which row wins unspecified")
    missing = sorted(set(range(out_shape[0])) - set(source))
    if missing:
        raise NotConvertible(f"{op.type} gives no row {missing[0]} (TF leaves it uninitialized)")
    if out_shape[0] > _MAX_INDICES:
        raise NotConvertible(f"stitching {out_shape[0]} rows (one slice each, at most {_MAX_INDICES})")
    data = {}
    for m in sorted({m for m, _ in source.values()}):
        rows = int(np.prod(ctx.shape(op.inputs[m]))) if ctx.shape(op.inputs[m]) else 1
        data[m] = low.reshape(f"data{m}", ctx.tf_order(op.inputs[n + m]), (rows,) + rest)
    pieces = [low.slice(f"row{r}", data[m], 0, k, k + 1) for r, (m, k) in sorted(source.items())]
    ctx.set(op.outputs[0], low.reshape("", low.concat("rows", pieces, 0), out_shape))


@tf_op("DynamicPartition")
def dynamic_partition(ctx: Context, op: Any) -> None:
    """Output p holds the data rows whose (constant) partition is p, in order."""
    low = Lowering(ctx, op)
    partitions = np.asarray(ctx.const(op.inputs[1])).reshape(-1)
    shape = ctx.shape(op.inputs[0])
    rest = tuple(shape[np.asarray(ctx.const(op.inputs[1])).ndim:]) or (1,)
    data = low.reshape("rows", ctx.tf_order(op.inputs[0]), (len(partitions),) + rest)
    for p, out in enumerate(op.outputs):
        rows = np.flatnonzero(partitions == p)
        if not len(rows):
            raise NotConvertible(f"partition {p} is empty (an output of no rows)")
        cuts = np.flatnonzero(np.diff(rows) != 1) + 1
        pieces = [low.slice(f"part{p}_{int(r[0])}", data, 0, int(r[0]), int(r[-1]) + 1) for r in np.split(rows, cuts)]
        ctx.set(out, low.reshape(f"part{p}", low.concat(f"part{p}_rows", pieces, 0), ctx.shape(out)))


# ---- sparse (constant indices) x dense products, softmax and counts --------------------------------------
@tf_op("SparseTensorDenseMatMul")
def sparse_tensor_dense_matmul(ctx: Context, op: Any) -> None:
    """Row r of A @ B adds up a_value * B[col] over A's values in row r, in their order (TF's kernel loop):
    the same products and sums, so even inf and nan rows of B come out as TF's."""
    low = Lowering(ctx, op)
    a_shape = [int(d) for d in np.asarray(ctx.const(op.inputs[2])).reshape(-1)]
    indices = np.asarray(ctx.const(op.inputs[0])).reshape(-1, 2).astype(np.int64)
    if bool(op.get_attr("adjoint_a")):
        indices, a_shape = indices[:, ::-1], a_shape[::-1]
    if len(indices) > _MAX_INDICES:
        raise NotConvertible(f"{len(indices)} sparse values (one product each, at most {_MAX_INDICES})")
    flat_rows(indices, tuple(a_shape), "multiplying")  # range check
    b = ctx.tf_order(op.inputs[3])
    if bool(op.get_attr("adjoint_b")):
        k, n = low.shape(b)
        b = low.node("transpose", "b_t", [b], (n, k), {"perm": (1, 0)})
    n = low.shape(b)[1]
    values = low.reshape("values", ctx.tf_order(op.inputs[1]), (len(indices), 1))
    dtype = low.dtype(b)
    rows = []
    for r in range(a_shape[0]):
        acc = None
        for j in np.flatnonzero(indices[:, 0] == r):
            col = int(indices[j, 1])
            term = low.binary("mul", f"term{j}", low.slice(f"a{j}", values, 0, int(j), int(j) + 1),
                              low.slice(f"b{j}", b, 0, col, col + 1))
            acc = term if acc is None else low.binary("add", f"row{r}_{j}", acc, term)
        rows.append(acc if acc is not None else low.const(f"zeros{r}", np.zeros((1, n)), dtype))
    ctx.set(op.outputs[0], low.concat("", rows, 0))


def _groups(indices: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) of each run of values sharing all but the last index; each group must be one run."""
    keys = [tuple(row) for row in indices[:, :-1].tolist()]
    runs, start = [], 0
    for k in range(1, len(keys) + 1):
        if k == len(keys) or keys[k] != keys[start]:
            runs.append((start, k))
            start = k
    if len({keys[s] for s, _ in runs}) != len(runs):
        raise NotConvertible("SparseSoftmax of indices not in row-major order (a row's values are not together)")
    return runs


@tf_op("SparseSoftmax")
def sparse_softmax(ctx: Context, op: Any) -> None:
    """A softmax over each row's present values (the values sharing all but the last index)."""
    low = Lowering(ctx, op)
    indices = np.asarray(ctx.const(op.inputs[0]))
    indices = indices.reshape(len(indices), -1)
    values = low.reshape("values", ctx.tf_order(op.inputs[1]), (1, len(indices)))
    pieces = []
    for s, e in _groups(indices):
        group = low.slice(f"group{s}", values, 1, s, e)
        pieces.append(low.node("softmax", f"softmax{s}", [group], (1, e - s), {"axis": 1}))
    ctx.set(op.outputs[0], low.reshape("", low.concat("rows", pieces, 1), (len(indices),)))


@tf_op("TensorStridedSliceUpdate")
def tensor_strided_slice_update(ctx: Context, op: Any) -> None:
    """x with the elements a StridedSlice of these (constant) arguments picks replaced by value's, in
    value's row-major order: an element scatter."""
    low = Lowering(ctx, op)
    shape = ctx.shape(op.inputs[0])
    begin, end, strides = (np.asarray(ctx.const(t)).astype(int).reshape(-1).tolist() for t in op.inputs[1:4])
    masks = {m: int(op.get_attr(m)) for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                               "shrink_axis_mask")}
    ranges, _ = _dense_slice(shape, begin, end, strides, masks)
    picks = np.meshgrid(*[start + step * np.arange(count) for start, count, step in ranges], indexing="ij")
    flat = np.ravel_multi_index([p.reshape(-1) for p in picks], shape) if shape else np.zeros(1, np.int64)
    if int(np.prod(ctx.shape(op.inputs[4]))) != len(flat):
        raise NotConvertible(f"a value of shape {list(ctx.shape(op.inputs[4]))} for a slice of {len(flat)} elements "
                             "(broadcasting is not supported)")
    if len(flat) > _MAX_INDICES:
        raise NotConvertible(f"updating {len(flat)} elements (one slice each, at most {_MAX_INDICES})")
    n = int(np.prod(shape))
    x = low.reshape("base", ctx.tf_order(op.inputs[0]), (n, 1))
    updates = low.reshape("updates", ctx.tf_order(op.inputs[4]), (len(flat), 1))
    out = scatter_rows(low, n, lambda a, b: low.slice(f"base{a}", x, 0, a, b), updates, np.asarray(flat), None)
    ctx.set(op.outputs[0], low.reshape("", out, shape))
