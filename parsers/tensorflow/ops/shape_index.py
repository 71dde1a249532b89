"""TF's index and layout ops, lowered to IR copies, comparisons and integer
arithmetic, so exact in every target: Concat (v1), Reverse (v1), ConjugateTranspose, Roll, Fill and LinSpace
of runtime values, BroadcastArgs, ConcatOffset, InvertPermutation, UnravelIndex, DataFormatDimMap,
DataFormatVecPermute, LowerBound/UpperBound, Cross, ReverseSequence and InTopK; Range and Where of runtime
values are refused by name (their output size depends on the values)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import runtime_shapes
from ..context import Context, NotConvertible, ir_axis
from ..lengths import mark
from ..lowering import Lowering
from ..runtime_values import element, known_ints
from ..table import tf_op
from .shape import concat_along, reverse_axis, transpose


def _dtype(t: Any) -> str:
    return t.dtype.name


@tf_op("Concat")
def concat_v1(ctx: Context, op: Any) -> None:
    """ConcatV2 with the axis first."""
    concat_along(ctx, op, list(op.inputs[1:]), int(ctx.const(op.inputs[0])))


@tf_op("Reverse")
def reverse_v1(ctx: Context, op: Any) -> None:
    """ReverseV2 with one bool per axis in place of the axis list."""
    v = ctx.val(op.inputs[0])
    dims = np.asarray(ctx.const(op.inputs[1])).reshape(-1)
    rank = len(ctx.shape(op.inputs[0]))
    x = v.ir
    for a in np.flatnonzero(dims):
        x = reverse_axis(ctx, f"{op.name}/axis{a}", x, ir_axis(int(a), rank, v.perm), op.type)
    ctx.set(op.outputs[0], x, v.perm)


@tf_op("ConjugateTranspose")
def conjugate_transpose(ctx: Context, op: Any) -> None:
    """The conjugate of a real tensor is itself: a Transpose."""
    if _dtype(op.inputs[0]).startswith("complex"):
        raise NotConvertible("ConjugateTranspose of a complex tensor (the converted graph holds real tensors only)")
    transpose(ctx, op)


@tf_op("Roll")
def roll(ctx: Context, op: Any) -> None:
    """Per rolled axis: the last `shift` elements, then the others (TF adds up shifts of a repeated axis)."""
    v = ctx.val(op.inputs[0])
    shape = ctx.shape(op.inputs[0])
    rank = len(shape)
    shifts = known_ints(ctx, op.inputs[1])
    axes = np.asarray(ctx.const(op.inputs[2])).reshape(-1).tolist()
    if len(shifts) != len(axes):
        raise NotConvertible(f"Roll with {len(shifts)} shifts for {len(axes)} axes")
    low = Lowering(ctx, op)
    x = v.ir
    late: dict[int, str] = {}  # axis -> its shift computed at run time: x[(i - shift) mod n] by a gather
    for k, (s, a) in enumerate(zip(shifts, axes)):
        if s is None:
            a = int(a) % rank
            shift = element(ctx, low, op.inputs[1], k, f"shift{k}")
            late[a] = shift if a not in late else low.node("add", f"shift{k}_sum", [late[a], shift], (1,))
    for a, shift in sorted(late.items()):
        dtype = low.dtype(shift)
        back = low.node("sub", f"axis{a}_from", [low.const(f"axis{a}_positions", np.arange(shape[a]), dtype), shift],
                        (shape[a],))
        index = low.node("floor_mod", f"axis{a}_index", [back, low.const(f"axis{a}_size", [shape[a]], dtype)],
                         (shape[a],))
        x = low.node("gather", f"axis{a}_rolled", [x, index], low.shape(x), {"axis": ir_axis(a, rank, v.perm)})
    total: dict[int, int] = {}
    for s, a in zip(shifts, axes):
        if s is not None:
            total[int(a) % rank] = total.get(int(a) % rank, 0) + int(s)
    for a, s in sorted(total.items()):
        n = shape[a]
        s %= n
        if s:
            axis = ir_axis(a, rank, v.perm)
            x = low.concat(f"axis{a}", [low.slice(f"axis{a}_tail", x, axis, n - s, n),
                                        low.slice(f"axis{a}_head", x, axis, 0, n - s)], axis)
    ctx.set(op.outputs[0], x, v.perm)


def _scalar(low: Lowering, ctx: Context, t: Any, part: str) -> str:
    """A scalar TF tensor as an IR tensor of shape (1,)."""
    return low.reshape(part, ctx.tf_order(t), (1,))


@tf_op("Fill")
def fill(ctx: Context, op: Any) -> None:
    """A runtime value copied to the (constant) shape."""
    if runtime_shapes.follows(ctx, op, 0):
        runtime_shapes.fill(ctx, op)
        return
    shape = ctx.shape(op.outputs[0])
    if 0 in shape:
        raise NotConvertible(f"Fill of an empty shape {list(shape)}")
    low = Lowering(ctx, op)
    x = low.reshape("value", ctx.tf_order(op.inputs[1]), (1,) * len(shape))
    for a, n in enumerate(shape):
        x = low.repeat(f"axis{a}", x, a, n)
    ctx.set(op.outputs[0], x)


@tf_op("LinSpace")
def lin_space(ctx: Context, op: Any) -> None:
    """TF's kernel: step = (stop - start) / (num - 1), start + step * i, and stop itself last."""
    num = int(np.asarray(ctx.const(op.inputs[2])).reshape(()))
    if num < 1:
        raise NotConvertible(f"LinSpace of {num} values")
    dtype = _dtype(op.outputs[0])
    low = Lowering(ctx, op)
    start = _scalar(low, ctx, op.inputs[0], "start")
    if num == 1:
        ctx.set(op.outputs[0], start)
        return
    stop = _scalar(low, ctx, op.inputs[1], "stop")
    span = low.binary("sub", "span", stop, start)
    step = low.binary("div", "step", span, low.const("intervals", [num - 1], dtype))
    body = low.binary("add", "body", start, low.binary("mul", "offsets", step, low.const("i", np.arange(num - 1),
                                                                                       dtype)))
    ctx.set(op.outputs[0], low.concat("", [body, stop], 0))


@tf_op("Range")
def range_(ctx: Context, op: Any) -> None:
    """Reached only when start, limit or delta is a runtime value (constants are folded)."""
    runtime_shapes.range_(ctx, op)


@tf_op("Where")
def where(ctx: Context, op: Any) -> None:
    """The coordinates of the true elements of a runtime condition (a constant one is folded): held at the
    most rows there can be, with their count, the length depending on the data (parsers/tensorflow/lengths.py)."""
    shape = ctx.shape(op.inputs[0])
    if not shape:
        raise NotConvertible("Where of a scalar condition: (count, 0) coordinates; give it at least one axis")
    cond = ctx.tf_order(op.inputs[0])
    inputs, longest = [cond], int(np.prod(shape))
    count = ctx.emit("nonzero", f"{op.name}/count", inputs, (), {"output": "count"}, source_op=op.type,
                     out_dtype="int32")
    ctx.set(op.outputs[0], ctx.emit("nonzero", op.name, inputs, (longest, len(shape)), {"output": "indices"},
                                    source_op=op.type, out_dtype=op.outputs[0].dtype.name))  # int64, as TF's
    mark(ctx, op.outputs[0], count, longest, f"Where '{op.name}'")


@tf_op("BroadcastArgs")
def broadcast_args(ctx: Context, op: Any) -> None:
    """The broadcast of two shape vectors: the shorter gets leading 1s; where one is 1, the other."""
    low = Lowering(ctx, op)
    a, b = ctx.tf_order(op.inputs[0]), ctx.tf_order(op.inputs[1])
    n = max(low.shape(a)[0], low.shape(b)[0])
    dtype = _dtype(op.outputs[0])
    padded = []
    for name, s in (("s0", a), ("s1", b)):
        k = n - low.shape(s)[0]
        padded.append(low.concat(f"{name}_ones", [low.const(f"{name}_lead", np.ones(k), dtype), s], 0) if k else s)
    is_one = low.compare("equal", "s0_is_1", padded[0], low.const("one", [1], dtype))
    ctx.set(op.outputs[0], low.select("", is_one, padded[1], padded[0]))


@tf_op("ConcatOffset")
def concat_offset(ctx: Context, op: Any) -> None:
    """Offset i is 0 but on the concat axis, where it is the sum of the shapes before i there."""
    axis = int(np.asarray(ctx.const(op.inputs[0])).reshape(()))
    shapes = op.inputs[1:]
    rank = ctx.shape(shapes[0])[0]
    axis %= rank
    dtype = _dtype(op.outputs[0])
    low = Lowering(ctx, op)
    before, after = np.zeros(axis), np.zeros(rank - axis - 1)
    total = None
    for i, out in enumerate(op.outputs):
        if total is None:
            ctx.set(out, low.const(f"offset{i}", np.zeros(rank), dtype))
        else:
            pieces = ([low.const(f"before{i}", before, dtype)] if axis else []) + [total] + \
                ([low.const(f"after{i}", after, dtype)] if len(after) else [])
            ctx.set(out, low.concat(f"offset{i}", pieces, 0))
        size = low.slice(f"size{i}", ctx.tf_order(shapes[i]), 0, axis, axis + 1)
        total = size if total is None else low.binary("add", f"sum{i}", total, size)


@tf_op("InvertPermutation")
def invert_permutation(ctx: Context, op: Any) -> None:
    """y[x[i]] = i: y[j] = the sum over i of (x[i] == j ? i : 0)."""
    low = Lowering(ctx, op)
    x = ctx.tf_order(op.inputs[0])
    n = low.shape(x)[0]
    dtype = _dtype(op.outputs[0])
    hits = low.compare("equal", "hits", low.reshape("column", x, (n, 1)), low.const("j", np.arange(n)[None], dtype))
    picked = low.select("picked", hits, low.const("i", np.arange(n)[:, None], dtype), low.const("zero", 0, dtype))
    ctx.set(op.outputs[0], low.reduce("reduce_sum", "", picked, [0]))


@tf_op("UnravelIndex")
def unravel_index(ctx: Context, op: Any) -> None:
    """Coordinate k of a flat index: (index // stride_k) mod dims_k (constant dims)."""
    dims = [int(d) for d in np.asarray(ctx.const(op.inputs[1])).reshape(-1)]
    low = Lowering(ctx, op)
    dtype = _dtype(op.outputs[0])
    index = ctx.tf_order(op.inputs[0])
    n = int(np.prod(low.shape(index)))
    index = low.reshape("row", index, (1, n))
    rows = []
    for k, d in enumerate(dims):
        stride = int(np.prod(dims[k + 1:]))
        q = low.binary("floor_div", f"div{k}", index, low.const(f"stride{k}", stride, dtype)) if stride > 1 else index
        rows.append(low.binary("floor_mod", f"coord{k}", q, low.const(f"dim{k}", d, dtype)) if k else q)
    out = low.concat("coords", rows, 0)
    ctx.set(op.outputs[0], low.reshape("", out, ctx.shape(op.outputs[0])))


def _formats(op: Any) -> tuple[str, str]:
    src, dst = (op.get_attr(a) for a in ("src_format", "dst_format"))
    src, dst = (f.decode() if isinstance(f, bytes) else f for f in (src, dst))
    if sorted(src) != sorted(dst):
        raise NotConvertible(f"{op.type} from {src} to {dst}: not a permutation of the same axes")
    return src, dst


@tf_op("DataFormatDimMap")
def data_format_dim_map(ctx: Context, op: Any) -> None:
    """An axis of the source format (in [-rank, rank)) -> its position in the destination format:
    a lookup in the constant table by the axis mod rank."""
    src, dst = _formats(op)
    dtype = _dtype(op.outputs[0])
    low = Lowering(ctx, op)
    x = ctx.tf_order(op.inputs[0])
    axis = low.binary("floor_mod", "axis", x, low.const("rank", len(src), dtype))
    table = low.const("table", [dst.index(c) for c in src], dtype)
    ctx.set(op.outputs[0], low.node("gather", "", [table, axis], low.shape(x), {"axis": 0}, dtype))


@tf_op("DataFormatVecPermute")
def data_format_vec_permute(ctx: Context, op: Any) -> None:
    """A vector (or rows of pairs) over the source format's axes, reordered to the destination format."""
    src, dst = _formats(op)
    low = Lowering(ctx, op)
    x = ctx.tf_order(op.inputs[0])
    if low.shape(x)[0] != len(src):
        raise NotConvertible(f"DataFormatVecPermute of {low.shape(x)[0]} values for the {len(src)} axes of {src}")
    rows = [low.slice(f"{c}", x, 0, src.index(c), src.index(c) + 1) for c in dst]
    ctx.set(op.outputs[0], low.concat("", rows, 0))


@tf_op("LowerBound", "UpperBound")
def search_sorted(ctx: Context, op: Any) -> None:
    """Per row, how many sorted values are < (LowerBound) or <= (UpperBound) each value: the index a
    binary search finds in a sorted row."""
    low = Lowering(ctx, op)
    rows, values = ctx.tf_order(op.inputs[0]), ctx.tf_order(op.inputs[1])
    (b, n), (_, m) = low.shape(rows), low.shape(values)
    before = low.compare("less" if op.type == "LowerBound" else "less_equal", "before",
                         low.reshape("rows", rows, (b, 1, n)), low.reshape("values", values, (b, m, 1)))
    dtype = _dtype(op.outputs[0])
    ctx.set(op.outputs[0], low.reduce("reduce_sum", "", low.cast("count", before, dtype), [2]))


@tf_op("Cross")
def cross(ctx: Context, op: Any) -> None:
    """TF's formula per component: (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0) on the last axis."""
    low = Lowering(ctx, op)
    a, b = ctx.tf_order(op.inputs[0]), ctx.tf_order(op.inputs[1])
    last = len(low.shape(a)) - 1
    ai = [low.slice(f"a{i}", a, last, i, i + 1) for i in range(3)]
    bi = [low.slice(f"b{i}", b, last, i, i + 1) for i in range(3)]
    parts = []
    for k, (i, j) in enumerate(((1, 2), (2, 0), (0, 1))):
        parts.append(low.binary("sub", f"c{k}", low.binary("mul", f"c{k}_l", ai[i], bi[j]),
                                low.binary("mul", f"c{k}_r", ai[j], bi[i])))
    ctx.set(op.outputs[0], low.concat("", parts, last))


@tf_op("ReverseSequence")
def reverse_sequence(ctx: Context, op: Any) -> None:
    """Row b's first lengths[b] steps reversed: out[b, t] = x[b, source(b, t)], source = L - 1 - t where
    t < L else t, picked by an equality mask and a sum over the steps (one term is not zero: exact)."""
    low = Lowering(ctx, op)
    shape = ctx.shape(op.inputs[0])
    rank = len(shape)
    seq, batch = int(op.get_attr("seq_dim")) % rank, int(op.get_attr("batch_dim")) % rank
    order = [batch, seq] + [a for a in range(rank) if a not in (batch, seq)]
    x = ctx.tf_order(op.inputs[0])
    moved = tuple(shape[a] for a in order)
    if order != list(range(rank)):
        x = low.node("transpose", "to_batch_seq", [x], moved, {"perm": tuple(order)})
    b, t = moved[:2]
    rest = moved[2:]
    ldt = _dtype(op.inputs[1])
    lengths = low.reshape("lengths", ctx.tf_order(op.inputs[1]), (b, 1))
    steps = low.const("t", np.arange(t)[None], ldt)
    inside = low.compare("less", "inside", steps, lengths)
    mirrored = low.binary("sub", "mirrored", low.binary("sub", "last", lengths, low.const("one", 1, ldt)), steps)
    source = low.select("source", inside, mirrored, low.binary("add", "t_b", steps, low.const("zero", np.zeros((b, 1)),
                                                                                               ldt)))
    hits = low.compare("equal", "hits", low.reshape("source_col", source, (b, t, 1) + (1,) * len(rest)),
                       low.const("s", np.arange(t).reshape((1, 1, t) + (1,) * len(rest)), ldt))
    xs = low.reshape("x_rows", x, (b, 1, t) + rest)
    zero = low.const("x_zero", 0, low.dtype(x))
    out = low.reduce("reduce_sum", "picked", low.select("select", hits, xs, zero), [2])
    if order != list(range(rank)):
        inv = tuple(int(i) for i in np.argsort(order))
        out = low.node("transpose", "", [out], shape, {"perm": inv})
    ctx.set(op.outputs[0], out)


@tf_op("InTopK", "InTopKV2")
def in_top_k(ctx: Context, op: Any) -> None:
    """TF's rule: false where the target is out of range or any prediction of the row is not finite;
    else true when fewer than k predictions are strictly greater than the target's."""
    low = Lowering(ctx, op)
    k = int(op.get_attr("k")) if op.type == "InTopK" else int(np.asarray(ctx.const(op.inputs[2])).reshape(()))
    predictions, targets = ctx.tf_order(op.inputs[0]), ctx.tf_order(op.inputs[1])
    b, n = low.shape(predictions)
    tdt = _dtype(op.inputs[1])
    hits = low.compare("equal", "hits", low.reshape("targets", targets, (b, 1)),
                       low.const("classes", np.arange(n)[None], tdt))
    zero = low.const("zero", 0, low.dtype(predictions))
    target = low.reduce("reduce_sum", "target", low.select("at_target", hits, predictions, zero), [1], True)
    greater = low.cast("greater_i", low.compare("greater", "greater", predictions, target), "int32")
    fewer = low.compare("less", "fewer", low.reduce("reduce_sum", "ahead", greater, [1]), low.const("k", k, "int32"))
    finite = low.reduce("reduce_all", "finite", low.node("is_finite", "is_finite", [predictions], (b, n),
                                                          dtype="bool"), [1])
    known = low.binary("logical_and", "known", low.reduce("reduce_any", "in_range", hits, [1]), finite)
    ctx.set(op.outputs[0], low.binary("logical_and", "", known, fewer))

