"""Shape TF ops: reshape, transpose, concat, slices and splits, depth/space moves (Cast is elementwise.py's)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.padding.rules import same_pads_1d

from .. import runtime_shapes
from ..context import (
    NHWC_TO_NCHW,
    Context,
    NotConvertible,
    Perm,
    attr,
    fmt_perm,
    identity,
    ir_axis,
    permute_shape,
    show_shape,
)
from ..lowering import Lowering
from ..runtime_values import element, gather_run, known_ints
from ..table import tf_op
from .spatial import inside_dilated_conv, nchw_out


@tf_op("Shape", "ShapeN", "Size", "Rank")
def shape_of(ctx: Context, op: Any) -> None:
    """Only reached when the shape is not static (a static one is a constant): the graph computes
    with the input size (a dilated conv's SpaceToBatchND paddings, say), so it must be fixed."""
    t = op.inputs[0]
    dims = t.shape.as_list() if t.shape.rank is not None else None
    raise ctx.needs_input_shape(
        f"node '{op.name}' ({op.type}) reads a tensor size that is unknown here {show_shape(dims)}: the "
        "graph computes with it (e.g. the paddings of a dilated convolution built for any input size)"
    )


@tf_op("Reshape", "Squeeze", "ExpandDims")
def reshape(ctx: Context, op: Any) -> None:
    if inside_dilated_conv(op):
        return  # a batch-folded phase tensor: the BatchToSpaceND after it emits the whole conv
    if op.type != "Squeeze" and runtime_shapes.follows(ctx, op, 1):
        runtime_shapes.reshape(ctx, op)
        return
    x = ctx.tf_order(op.inputs[0])
    shape = ctx.shape(op.outputs[0])
    if tuple(ctx.graph.shape(x)) == tuple(shape):
        ctx.set(op.outputs[0], x)
        return
    out = ctx.emit("reshape", op.name, [x], shape, {"shape": tuple(shape)}, source_op=op.type)
    ctx.set(op.outputs[0], out)


@tf_op("Transpose")
def transpose(ctx: Context, op: Any) -> None:
    perm = tuple(int(p) for p in ctx.const(op.inputs[1]))
    v = ctx.val(op.inputs[0])
    rank = len(perm)
    # ir_in = tf_in.T(p_in); tf_out = tf_in.T(perm): keep the output in TF order.
    p_in = v.perm if v.perm is not None else tuple(range(rank))
    inv = tuple(int(i) for i in np.argsort(p_in))
    step = tuple(inv[p] for p in perm)
    if step == tuple(range(rank)):  # already in the requested order (Tensordot's no-op transpose)
        ctx.set(op.outputs[0], v.ir)
        return
    if rank == 4 and tuple(perm.index(p) for p in p_in) == NHWC_TO_NCHW:  # to NHWC: the IR keeps it NCHW as it is
        ctx.set(op.outputs[0], v.ir, NHWC_TO_NCHW)
        return
    out = ctx.emit("transpose", op.name, [v.ir], ctx.shape(op.outputs[0]), {"perm": step},
                   source_op=op.type)
    ctx.set(op.outputs[0], out)


@tf_op("ConcatV2")
def concat(ctx: Context, op: Any) -> None:
    concat_along(ctx, op, list(op.inputs[:-1]), int(ctx.const(op.inputs[-1])))


def concat_along(ctx: Context, op: Any, tensors: list[Any], axis: int) -> None:
    """TF tensors `tensors` joined along TF axis `axis`, in the first activation's IR order."""
    rank = len(ctx.shape(op.outputs[0]))
    perm = next((ctx.val(t).perm for t in tensors if not ctx.is_const(t)), None)
    names = [ctx.ir(t, perm, rank) for t in tensors]
    out_shape = permute_shape(ctx.shape(op.outputs[0]), perm)
    out = ctx.emit("concat", op.name, names, out_shape, {"axis": ir_axis(axis, rank, perm)},
                   source_op=op.type)
    ctx.set(op.outputs[0], out, perm)


def _slice(ctx: Context, op: Any, begin: list[int], end: list[int], x: Any = None,
           index: int = 0) -> tuple[str, Perm]:
    """Static slice given in TF axis order -> IR slice in the tensor's IR order, set as output
    `index` of `op` (input `x`, default the first)."""
    x = op.inputs[0] if x is None else x
    v = ctx.val(x)
    rank = len(begin)
    perm = v.perm if v.perm is not None else tuple(range(rank))
    shape = tuple(max(e - b, 0) for b, e in zip(begin, end))
    name = op.name if index == 0 else f"{op.name}:{index}"
    out = ctx.emit("slice", name, [v.ir], permute_shape(shape, v.perm),
                   {"begin": tuple(begin[p] for p in perm), "end": tuple(end[p] for p in perm)},
                   source_op=op.type)
    ctx.set(op.outputs[index], out, v.perm)
    return out, v.perm


def _split(ctx: Context, op: Any, x: Any, axis: int) -> list[tuple[str, Perm]]:
    """One slice per output of a Split / SplitV / Unpack along TF axis `axis`; the pieces' sizes
    are the outputs' static sizes (SplitV's -1 is resolved by TF's shape inference)."""
    shape = list(ctx.shape(x))
    axis %= len(shape)
    start, pieces = 0, []
    for i, t in enumerate(op.outputs):
        size = ctx.shape(t)[axis] if len(ctx.shape(t)) == len(shape) else 1  # Unpack drops the axis
        begin, end = [0] * len(shape), list(shape)
        begin[axis], end[axis] = start, start + size
        pieces.append(_slice(ctx, op, begin, end, x, i))
        start += size
    return pieces


@tf_op("Split")
def split(ctx: Context, op: Any) -> None:
    _split(ctx, op, op.inputs[1], int(ctx.const(op.inputs[0])))


@tf_op("SplitV")
def split_v(ctx: Context, op: Any) -> None:
    _split(ctx, op, op.inputs[0], int(ctx.const(op.inputs[2])))


@tf_op("Unpack")
def unpack(ctx: Context, op: Any) -> None:
    """Slices, then each drops the sliced axis: a reshape that keeps the IR order, so the result
    keeps the input's layout minus that axis."""
    rank = len(ctx.shape(op.inputs[0]))
    axis = int(op.get_attr("axis")) % rank
    for i, (piece, perm) in enumerate(_split(ctx, op, op.inputs[0], axis)):
        perm = perm if perm is not None else tuple(range(rank))
        out_perm = tuple(p - (p > axis) for p in perm if p != axis)
        out_shape = permute_shape(ctx.shape(op.outputs[i]), out_perm)
        out = ctx.emit("reshape", f"{op.name}:{i}/squeeze", [piece], out_shape, {"shape": out_shape},
                       source_op=op.type)
        ctx.set(op.outputs[i], out, out_perm)


def _first_bit(mask: int) -> int | None:
    return (mask & -mask).bit_length() - 1 if mask else None


def _picked(n: int, begin: int, end: int, step: int, masks: dict[str, int], i: int) -> tuple[int, int, int]:
    """TF's clamping of one strided range over an axis of size n -> (start, count, step): the
    elements start + k*step for k < count."""
    if step == 0:
        raise NotConvertible("StridedSlice with a zero stride is invalid")
    if step > 0:
        lo = 0 if masks["begin_mask"] >> i & 1 else begin
        hi = n if masks["end_mask"] >> i & 1 else end
        lo, hi = (lo + n if lo < 0 else lo), (hi + n if hi < 0 else hi)
        lo, hi = max(0, min(lo, n)), max(0, min(hi, n))
        return lo, max(0, -(-(hi - lo) // step)), step
    lo = n - 1 if masks["begin_mask"] >> i & 1 else begin
    hi = -1 if masks["end_mask"] >> i & 1 else end
    lo = lo + n if lo < 0 else lo
    hi = hi + n if hi < 0 and not masks["end_mask"] >> i & 1 else hi
    lo, hi = max(-1, min(lo, n - 1)), max(-1, min(hi, n - 1))
    return lo, max(0, -(-(lo - hi) // -step)), step


def _dense_slice(shape: tuple[int, ...], begin: list[int], end: list[int], strides: list[int],
                 masks: dict[str, int]) -> tuple[list[tuple[int, int, int]], list[int | None]]:
    """TF's sparse slice spec -> (start, count, step) per input axis (clamped like TF) and the
    output's axes in TF order: the input axis each comes from, None for a new (size-1) axis."""
    ellipsis = _first_bit(masks["ellipsis_mask"])  # TF allows one; a spec without one ends in one
    spec = list(range(len(begin))) + ([] if ellipsis is not None else [-1])
    used = sum(1 for i in range(len(begin)) if i != ellipsis and not masks["new_axis_mask"] >> i & 1)
    ranges: list[tuple[int, int, int]] = []
    out_axes: list[int | None] = []
    for i in spec:
        if i == -1 or i == ellipsis:  # the full range of every axis the spec does not name
            for _ in range(len(shape) - used):
                out_axes.append(len(ranges))
                ranges.append((0, shape[len(ranges)], 1))
        elif masks["new_axis_mask"] >> i & 1:
            out_axes.append(None)
        elif masks["shrink_axis_mask"] >> i & 1:  # x[k]: TF ignores the masks and the end here
            n = shape[len(ranges)]
            k = begin[i] + n if begin[i] < 0 else begin[i]
            if not 0 <= k < n:
                raise NotConvertible(f"index {begin[i]} is out of range for an axis of size {n}")
            ranges.append((k, 1, 1))
        else:
            out_axes.append(len(ranges))
            ranges.append(_picked(shape[len(ranges)], begin[i], end[i], strides[i], masks, i))
    return ranges, out_axes


def _bounds(start: int, count: int, step: int) -> tuple[int, int]:
    """The unit-step range holding the picked elements."""
    if count == 0:
        return start, start
    first, last = sorted((start, start + (count - 1) * step))
    return first, last + 1


def pick_every(ctx: Context, name: str, x: str, axis: int, step: int, count: int, source_op: str) -> str:
    """Elements 0, step, 2*step, ... (count of them) of IR axis `axis`: the axis split into
    (count, step) by a reshape, the first column sliced, the split undone; the last element comes
    by its own slice when the axis is shorter than count*step."""
    shape = list(ctx.graph.shape(x))
    groups = count if shape[axis] >= count * step else count - 1
    pieces = []
    if groups:
        head = list(shape)
        head[axis] = groups * step
        y = x
        if head[axis] != shape[axis]:
            y = ctx.emit("slice", f"{name}/head", [x], head, {"begin": (0,) * len(shape), "end": tuple(head)},
                         source_op=source_op)
        split = head[:axis] + [groups, step] + head[axis + 1:]
        y = ctx.emit("reshape", f"{name}/split", [y], split, {"shape": tuple(split)}, source_op=source_op)
        first = list(split)
        first[axis + 1] = 1
        y = ctx.emit("slice", f"{name}/pick", [y], first, {"begin": (0,) * len(split), "end": tuple(first)},
                     source_op=source_op)
        merged = list(shape)
        merged[axis] = groups
        pieces.append(ctx.emit("reshape", f"{name}/merge", [y], merged, {"shape": tuple(merged)},
                               source_op=source_op))
    if groups < count:
        begin, end = [0] * len(shape), list(shape)
        begin[axis], end[axis] = groups * step, groups * step + 1
        one = list(shape)
        one[axis] = 1
        pieces.append(ctx.emit("slice", f"{name}/last", [x], one, {"begin": tuple(begin), "end": tuple(end)},
                               source_op=source_op))
    if len(pieces) == 1:
        return pieces[0]
    out = list(shape)
    out[axis] = count
    return ctx.emit("concat", name, pieces, out, {"axis": axis}, source_op=source_op)


def reverse_axis(ctx: Context, name: str, x: str, axis: int, source_op: str) -> str:
    """IR axis `axis` in reverse order: unit slices concatenated last to first."""
    shape = list(ctx.graph.shape(x))
    if shape[axis] > _MAX_REVERSED:
        raise NotConvertible(f"reversing an axis of {shape[axis]} elements (the lowering takes one slice "
                             f"per element, at most {_MAX_REVERSED})")
    if shape[axis] == 1:
        return x
    pieces = []
    for k in reversed(range(shape[axis])):
        begin, end = [0] * len(shape), list(shape)
        begin[axis], end[axis] = k, k + 1
        one = list(shape)
        one[axis] = 1
        pieces.append(ctx.emit("slice", f"{name}_{k}", [x], one, {"begin": tuple(begin), "end": tuple(end)},
                               source_op=source_op))
    return ctx.emit("concat", name, pieces, shape, {"axis": axis}, source_op=source_op)


_MAX_REVERSED = 512  # a reversed axis becomes one slice per element


def _out_perm(in_perm: tuple[int, ...], out_axes: list[int | None]) -> tuple[int, ...]:
    """The output's IR order: the kept input axes stay in their IR order (so the reshape that drops
    shrunk axes and adds new ones keeps the element order); a new axis follows the output axis
    before it in TF order."""
    pos = {a: k for k, a in enumerate(out_axes) if a is not None}
    order = [pos[a] for a in in_perm if a in pos]
    for k, a in enumerate(out_axes):
        if a is None:
            order.insert(order.index(k - 1) + 1 if k else 0, k)
    return tuple(order)


def _input_axes(spec: int, rank: int, masks: dict[str, int]) -> dict[int, int]:
    """Slice spec entry -> the input axis it addresses (entries that add an axis, and the ellipsis, none)."""
    ellipsis = _first_bit(masks["ellipsis_mask"])
    used = sum(1 for i in range(spec) if i != ellipsis and not masks["new_axis_mask"] >> i & 1)
    found, axis = {}, 0
    for i in range(spec):
        if i == ellipsis:
            axis += rank - used
        elif not masks["new_axis_mask"] >> i & 1:
            found[i], axis = axis, axis + 1
    return found


def _fixed_at_run_time(ctx: Context, op: Any, i: int, begin: int | None, end: int | None, stride: int | None,
                       masks: dict[str, int]) -> tuple[int | None, int, int]:
    """Spec entry `i` with a bound only the run knows: what TF ignores there replaced by a stand-in; the
    begin of a shrunk axis stays None (a gather takes it). Any other run-time bound sets the output's size."""
    if masks["new_axis_mask"] >> i & 1 or masks["ellipsis_mask"] >> i & 1:
        return 0, 1, 1  # TF reads no bound of these
    if masks["shrink_axis_mask"] >> i & 1:  # x[k]: TF reads begin only
        return begin, 0, 1
    if begin is None and not masks["begin_mask"] >> i & 1:
        raise ctx.shape_follows(op, op.inputs[1], "begin")
    if end is None and not masks["end_mask"] >> i & 1:
        raise ctx.shape_follows(op, op.inputs[2], "end")
    if stride is None:
        raise ctx.shape_follows(op, op.inputs[3], "strides")
    return (0 if begin is None else begin), (0 if end is None else end), stride


@tf_op("StridedSlice")
def strided_slice(ctx: Context, op: Any) -> None:
    """Any strides and masks (x[:, 0], x[..., None], x[:, 1:-1], x[::2], x[::-1]): an IR slice of
    the range holding the picked elements, in the input's IR order; every |stride|-th element by a
    reshape and a slice; a negative stride reverses; then a reshape drops the shrunk axes and
    inserts the new ones."""
    if runtime_shapes.follows(ctx, op, 1, 2, 3):
        runtime_shapes.strided_slice(ctx, op)
        return
    shape = list(ctx.shape(op.inputs[0]))
    begin, end, strides = (known_ints(ctx, t) for t in op.inputs[1:4])
    masks = {m: int(op.get_attr(m)) for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                               "shrink_axis_mask")}
    v = ctx.val(op.inputs[0])
    in_perm = v.perm if v.perm is not None else tuple(range(len(shape)))
    x = v.ir
    late = [i for i, bounds in enumerate(zip(begin, end, strides)) if None in bounds]
    if late:  # x[i] with i computed: that element taken by a gather, then the axis is an axis of size 1
        low = Lowering(ctx, op)
        axes = _input_axes(len(begin), len(shape), masks)
        for i in late:
            begin[i], end[i], strides[i] = _fixed_at_run_time(ctx, op, i, begin[i], end[i], strides[i], masks)
            if begin[i] is None:
                start = element(ctx, low, op.inputs[1], i, f"begin{i}")
                a = axes[i]
                x = gather_run(ctx, low, x, in_perm.index(a), start, 1, shape[a], f"at{i}")
                shape[a], begin[i] = 1, 0
    shape = tuple(shape)
    ranges, out_axes = _dense_slice(shape, begin, end, strides, masks)
    bounds = [_bounds(*r) for r in ranges]
    if any((lo, hi) != (0, n) for (lo, hi), n in zip(bounds, shape)):
        sliced = tuple(hi - lo for lo, hi in bounds)
        name = op.name if len(out_axes) == len(shape) and None not in out_axes else f"{op.name}/slice"
        x = ctx.emit("slice", name, [x], permute_shape(sliced, v.perm),
                     {"begin": tuple(bounds[p][0] for p in in_perm),
                      "end": tuple(bounds[p][1] for p in in_perm)}, source_op=op.type)
    for a, (_, count, step) in enumerate(ranges):  # strides other than 1: pick, then reverse
        axis = in_perm.index(a)
        if abs(step) > 1 and count > 1:
            x = pick_every(ctx, f"{op.name}/every{a}", x, axis, abs(step), count, op.type)
        if step < 0 and count > 1:
            x = reverse_axis(ctx, f"{op.name}/reverse{a}", x, axis, op.type)
    out_perm = _out_perm(in_perm, out_axes)
    out_shape = permute_shape(ctx.shape(op.outputs[0]), out_perm)
    if tuple(ctx.graph.shape(x)) != out_shape:  # a shrunk or a new axis
        x = ctx.emit("reshape", op.name, [x], out_shape, {"shape": out_shape}, source_op=op.type)
    ctx.set(op.outputs[0], x, out_perm)


@tf_op("Slice")
def slice_(ctx: Context, op: Any) -> None:
    """A static slice; a start the graph computes (with a constant size) takes `size` elements by a gather
    from it, on that axis."""
    if runtime_shapes.follows(ctx, op, 1, 2):
        runtime_shapes.slice_(ctx, op)
        return
    shape = ctx.shape(op.inputs[0])
    begin = known_ints(ctx, op.inputs[1])
    size = known_ints(ctx, op.inputs[2])
    if None in size:
        raise ctx.shape_follows(op, op.inputs[2], "size")
    late = [a for a, b in enumerate(begin) if b is None]
    if not late:
        end = [n if s == -1 else b + s for b, s, n in zip(begin, size, shape)]
        _slice(ctx, op, begin, end)
        return
    if any(size[a] == -1 for a in late):
        raise ctx.shape_follows(op, op.inputs[1], "begin (with size -1)")
    low = Lowering(ctx, op)
    v = ctx.val(op.inputs[0])
    perm = identity(v.perm, len(shape))
    x = v.ir
    for a in range(len(shape)):
        axis = perm.index(a)
        if a in late:
            start = element(ctx, low, op.inputs[1], a, f"begin{a}")
            x = gather_run(ctx, low, x, axis, start, size[a], None, f"at{a}")
        else:
            x = low.slice(f"slice{a}", x, axis, begin[a], shape[a] if size[a] == -1 else begin[a] + size[a])
    ctx.set(op.outputs[0], x, v.perm)


_BLOCK_OPS = {"DepthToSpace": "depth_to_space", "SpaceToDepth": "space_to_depth"}


@tf_op(*_BLOCK_OPS)
def depth_space(ctx: Context, op: Any) -> None:
    fmt = attr(op, "data_format", "NHWC")
    if fmt != "NHWC":
        raise NotConvertible(f"{op.type} with data_format={fmt} (only NHWC is supported)")
    ctx.shape(op.outputs[0]), ctx.shape(op.inputs[0])
    x_ir = ctx.nchw(op.inputs[0], fmt)
    out = ctx.emit(_BLOCK_OPS[op.type], op.name, [x_ir], nchw_out(ctx, op, fmt),
                   {"block_size": int(attr(op, "block_size"))}, source_op=op.type)
    ctx.set(op.outputs[0], out, fmt_perm(fmt))


# ---- Pack, Tile, BroadcastTo, ReverseV2 -----------------------------
# Lowered to IR slices, reshapes and concats: copies of elements, so exact in every target.

def _concat_copies(ctx: Context, base: str, x: str, axis: int, copies: list[str]) -> str:
    """Concatenate IR tensors `copies` (all shaped like `x`) along IR axis `axis`."""
    shape = list(ctx.graph.shape(x))
    shape[axis] *= len(copies)
    return ctx.emit("concat", base, copies, shape, {"axis": axis}, source_op="(copy)")


@tf_op("Pack")
def pack(ctx: Context, op: Any) -> None:
    """Each input gets the new axis (a reshape in TF order), then one concat along it."""
    out_shape = ctx.shape(op.outputs[0])
    axis = int(op.get_attr("axis")) % len(out_shape)
    one = list(out_shape)
    one[axis] = 1
    pieces = []
    for i, t in enumerate(op.inputs):
        x = ctx.ir(t, None, len(out_shape) - 1)
        pieces.append(ctx.emit("reshape", f"{op.name}/expand_{i}", [x], one, {"shape": tuple(one)},
                               source_op=op.type))
    out = pieces[0] if len(pieces) == 1 else ctx.emit("concat", op.name, pieces, out_shape, {"axis": axis},
                                                      source_op=op.type)
    ctx.set(op.outputs[0], out)


@tf_op("Tile")
def tile(ctx: Context, op: Any) -> None:
    """One concat of copies per tiled axis, in the input's own IR order (a conv output stays NCHW)."""
    if runtime_shapes.follows(ctx, op, 1):
        runtime_shapes.tile(ctx, op)
        return
    v = ctx.val(op.inputs[0])
    multiples = [int(m) for m in np.atleast_1d(ctx.const(op.inputs[1]))]
    rank = len(multiples)
    x = v.ir
    for a, m in enumerate(multiples):
        if m != 1:
            axis = ir_axis(a, rank, v.perm)
            x = _concat_copies(ctx, f"{op.name}/axis{a}", x, axis, [x] * m)
    ctx.set(op.outputs[0], x, v.perm)


def broadcast_ir(ctx: Context, name: str, x: str, out_shape: tuple[int, ...], source_op: str) -> str:
    """IR tensor `x` broadcast numpy-style to `out_shape`: leading 1s by a reshape, then copies
    along each axis of size 1 that grows."""
    shape = (1,) * (len(out_shape) - len(ctx.graph.shape(x))) + tuple(ctx.graph.shape(x))
    if tuple(ctx.graph.shape(x)) != shape:
        x = ctx.emit("reshape", f"{name}/rank", [x], shape, {"shape": shape}, source_op=source_op)
    for a, (n, want) in enumerate(zip(shape, out_shape)):
        if n != want:
            x = _concat_copies(ctx, f"{name}/axis{a}", x, a, [x] * want)
    return x


@tf_op("BroadcastTo")
def broadcast_to(ctx: Context, op: Any) -> None:
    if runtime_shapes.follows(ctx, op, 1):
        runtime_shapes.fill(ctx, op)
        return
    x = ctx.ir(op.inputs[0], None, len(ctx.shape(op.inputs[0])))
    ctx.set(op.outputs[0], broadcast_ir(ctx, op.name, x, tuple(ctx.shape(op.outputs[0])), op.type))


@tf_op("ReverseV2")
def reverse(ctx: Context, op: Any) -> None:
    """Per reversed axis: its elements as unit slices, concatenated in reverse order."""
    v = ctx.val(op.inputs[0])
    rank = len(ctx.shape(op.inputs[0]))
    x = v.ir
    for a in sorted({int(a) % rank for a in np.atleast_1d(ctx.const(op.inputs[1]))}):
        x = reverse_axis(ctx, f"{op.name}/axis{a}", x, ir_axis(a, rank, v.perm), op.type)
    ctx.set(op.outputs[0], x, v.perm)


# ---- ExtractImagePatches ----------------------------------------------
# Every kernel offset is a strided slice of the zero-padded input; their concatenation along channels
# is TF's depth order (row, col, channel). Copies of elements only, so exact in every target.

_MAX_TAPS = 256  # one slice per kernel position


@tf_op("ExtractImagePatches")
def extract_image_patches(ctx: Context, op: Any) -> None:
    n, h, w, c = ctx.shape(op.inputs[0])
    _, oh, ow, _ = ctx.shape(op.outputs[0])
    (_, kh, kw, _), (_, sh, sw, _), (_, rh, rw, _) = (list(op.get_attr(a)) for a in ("ksizes", "strides", "rates"))
    if kh * kw > _MAX_TAPS:
        raise NotConvertible(f"a {kh}x{kw} patch is {kh * kw} slices here (at most {_MAX_TAPS})")
    x = ctx.ir(op.inputs[0], NHWC_TO_NCHW)
    if op.get_attr("padding").decode() == "SAME":
        (t, b), (left, r) = same_pads_1d(h, kh, sh, rh), same_pads_1d(w, kw, sw, rw)
        if t or b or left or r:
            h, w = h + t + b, w + left + r
            x = ctx.emit("pad", f"{op.name}/pad", [x], (n, c, h, w),
                         {"pads": ((0, 0), (0, 0), (t, b), (left, r)), "mode": "constant", "value": 0.0},
                         source_op=op.type)
    taps = []
    for i in range(kh):
        for j in range(kw):
            top, lft = i * rh, j * rw
            rows, cols = (oh - 1) * sh + 1, (ow - 1) * sw + 1
            y = ctx.emit("slice", f"{op.name}/tap{i}_{j}", [x], (n, c, rows, cols),
                         {"begin": (0, 0, top, lft), "end": (n, c, top + rows, lft + cols)}, source_op=op.type)
            if sh > 1 and oh > 1:
                y = pick_every(ctx, f"{op.name}/tap{i}_{j}/rows", y, 2, sh, oh, op.type)
            if sw > 1 and ow > 1:
                y = pick_every(ctx, f"{op.name}/tap{i}_{j}/cols", y, 3, sw, ow, op.type)
            taps.append(y)
    out = taps[0] if len(taps) == 1 else ctx.emit("concat", op.name, taps, (n, kh * kw * c, oh, ow), {"axis": 1},
                                                  source_op=op.type)
    ctx.set(op.outputs[0], out, NHWC_TO_NCHW)


# ---- GatherNd with constant indices -----------------------------------
_MAX_GATHERED = 512  # one slice per gathered index tuple


@tf_op("GatherNd")
def gather_nd(ctx: Context, op: Any) -> None:
    """One slice per index tuple (constant indices, e.g. from a Where over a constant mask), stacked
    by a concat and reshaped to indices.shape[:-1] + params.shape[depth:]. Copies only: exact."""
    if not ctx.is_const(op.inputs[1]):
        _gather_nd_runtime(ctx, op)
        return
    indices = np.asarray(ctx.const(op.inputs[1])).astype(np.int64)
    shape = ctx.shape(op.inputs[0])
    depth = indices.shape[-1]
    rows = indices.reshape(-1, depth)
    if len(rows) > _MAX_GATHERED:
        raise NotConvertible(f"gathering {len(rows)} index tuples (one slice each, at most {_MAX_GATHERED})")
    rest = tuple(shape[depth:])
    x = ctx.tf_order(op.inputs[0])
    pieces = []
    for k, row in enumerate(rows):
        if any(not 0 <= i < n for i, n in zip(row, shape)):
            raise NotConvertible(f"index {row.tolist()} is out of range for shape {tuple(shape)}")
        begin = tuple(int(i) for i in row) + (0,) * len(rest)
        end = tuple(int(i) + 1 for i in row) + rest
        piece = ctx.emit("slice", f"{op.name}/at{k}", [x], (1,) * depth + rest, {"begin": begin, "end": end},
                         source_op=op.type)
        if depth != 1:
            piece = ctx.emit("reshape", f"{op.name}/at{k}/row", [piece], (1,) + rest, {"shape": (1,) + rest},
                             source_op=op.type)
        pieces.append(piece)
    stacked = pieces[0] if len(pieces) == 1 else ctx.emit("concat", f"{op.name}/rows", pieces,
                                                          (len(rows),) + rest, {"axis": 0}, source_op=op.type)
    out_shape = tuple(ctx.shape(op.outputs[0]))
    if tuple(ctx.graph.shape(stacked)) != out_shape:
        stacked = ctx.emit("reshape", op.name, [stacked], out_shape, {"shape": out_shape}, source_op=op.type)
    ctx.set(op.outputs[0], stacked)


def _gather_nd_runtime(ctx: Context, op: Any) -> None:
    """Index tuples known at run time only (a Where's coordinates): the leading `depth` axes of params
    flattened, each tuple made one row number (sum of index * stride, int32), a gather of those rows."""
    shape = ctx.shape(op.inputs[0])
    index_shape = ctx.shape(op.inputs[1])
    depth = index_shape[-1]
    if len(index_shape) != 2 or not 1 <= depth <= len(shape):
        raise NotConvertible(f"GatherNd of runtime indices shaped {index_shape} into params {shape}: (rows, depth) "
                             "indices only")
    rest = tuple(shape[depth:])
    rows = int(np.prod(shape[:depth]))
    if rows >= 2 ** 31:
        raise NotConvertible(f"GatherNd into {rows} rows: int32 row numbers only")
    flat = ctx.emit("reshape", f"{op.name}/rows", [ctx.tf_order(op.inputs[0])], (rows, *rest), {"shape": (rows, *rest)},
                    source_op=op.type)
    at = ctx.tf_order(op.inputs[1])
    if ctx.graph.tensors[at].dtype != "int32":
        at = ctx.emit("cast", f"{op.name}/int32", [at], tuple(index_shape), {"dtype": "int32"}, source_op=op.type,
                      out_dtype="int32")
    strides = np.int32([int(np.prod(shape[k + 1:depth])) for k in range(depth)])
    stride = ctx.emit("const", f"{op.name}/strides", [], (depth,), params={"value": strides}, source_op=op.type,
                      out_dtype="int32")
    scaled = ctx.emit("mul", f"{op.name}/scaled", [at, stride], tuple(index_shape), source_op=op.type)
    row = ctx.emit("reduce_sum", f"{op.name}/row", [scaled], (index_shape[0],), {"axes": (1,), "keepdims": False},
                   source_op=op.type)
    ctx.set(op.outputs[0], ctx.emit("gather", op.name, [flat, row], (index_shape[0], *rest), {"axis": 0},
                                    source_op=op.type))


# ---- ScatterNd with constant indices -----------------------------------
@tf_op("ScatterNd")
def scatter_nd(ctx: Context, op: Any) -> None:
    """Zeros of `shape` with the update rows put at their (constant) indices: the output, flattened
    to (rows, *rest), is a concat of runs of zero rows and update rows (one slice each; updates
    aimed at the same row are added, as TF sums duplicates). Copies and those sums only: exact."""
    indices = np.asarray(ctx.const(op.inputs[0])).astype(np.int64)
    shape = tuple(int(d) for d in np.asarray(ctx.const(op.inputs[2])).reshape(-1))
    depth = indices.shape[-1]
    rows_of = indices.reshape(-1, depth)
    if len(rows_of) > _MAX_GATHERED:
        raise NotConvertible(f"scattering {len(rows_of)} index tuples (one slice each, at most {_MAX_GATHERED})")
    lead, rest = shape[:depth], shape[depth:]
    for row in rows_of:
        if any(not 0 <= i < n for i, n in zip(row, lead)):
            raise NotConvertible(f"index {row.tolist()} is out of range for shape {shape}")
    flat = np.ravel_multi_index(tuple(rows_of.T), lead) if depth else np.zeros(len(rows_of), np.int64)
    n_rows = int(np.prod(lead))
    updates = ctx.tf_order(op.inputs[1])
    updates = ctx.emit("reshape", f"{op.name}/updates", [updates], (len(rows_of),) + rest,
                       {"shape": (len(rows_of),) + rest}, source_op=op.type)
    dtype = np.dtype(ctx.graph.tensors[updates].dtype)
    pieces, zeros_from = [], 0

    def zeros_until(end: int) -> None:
        if end > zeros_from:
            value = np.zeros((end - zeros_from,) + rest, dtype)
            pieces.append(ctx.emit("const", f"{op.name}/zeros{zeros_from}", [], value.shape,
                                   params={"value": value}, source_op=op.type))

    for target in sorted(set(flat.tolist())):
        zeros_until(target)
        picked = []
        for k in np.flatnonzero(flat == target):
            picked.append(ctx.emit("slice", f"{op.name}/update{k}", [updates], (1,) + rest,
                                   {"begin": (int(k),) + (0,) * len(rest), "end": (int(k) + 1,) + rest},
                                   source_op=op.type))
        row = picked[0]
        for i, other in enumerate(picked[1:]):
            row = ctx.emit("add", f"{op.name}/sum{target}_{i}", [row, other], (1,) + rest, source_op=op.type)
        pieces.append(row)
        zeros_from = target + 1
    zeros_until(n_rows)
    out = pieces[0] if len(pieces) == 1 else ctx.emit("concat", f"{op.name}/rows", pieces, (n_rows,) + rest,
                                                      {"axis": 0}, source_op=op.type)
    if (n_rows,) + rest != shape:
        out = ctx.emit("reshape", op.name, [out], shape, {"shape": shape}, source_op=op.type)
    ctx.set(op.outputs[0], out)
