"""Sizes that follow run-time values: a Reshape to a shape the graph computes, a Fill of fed dims, a Pad of fed
paddings, a slice to a fed bound, a one-hot of a fed depth.

The IR holds such a size as RUN_TIME (convert.ir.runtime_dims) and the parameter as an input tensor of an op
that computes with it (`reshape_to`, `broadcast_to`, `tile_by`, `pad_by`, `slice_to`, `one_hot_by`, `range`,
`expand_dims_by`). An op reaches these lowerings only when TF leaves an output size unknown although every input
size is given, or when it reads a tensor with a run-time size: a static graph converts as before. The tensors
these lowerings read and write are in TF's own axis order. Any other op reading a run-time size is refused by
name (`refusal`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.ir import shapes
from tf_convert.convert.ir.runtime_dims import RUN_TIME, TF_FOLLOWING

from .context import Context, NotConvertible, attr, fmt_perm
from .lowering import Lowering

# TF ops whose handler carries a run-time size on (their lowering here, or an IR op that follows one)
READS_RUN_TIME = frozenset({
    "Identity", "StopGradient", "Snapshot", "PreventGradient", "IdentityN", "Cast", "Mul",
    "Reshape", "ExpandDims", "Fill", "BroadcastTo", "Tile", "Pad", "PadV2", "MirrorPad", "Slice", "StridedSlice",
    "OneHot", "ResizeBilinear", "ResizeNearestNeighbor",
    "Unique", "UniqueV2", "UniqueWithCounts", "UniqueWithCountsV2", "Bincount", "DenseBincount",
}) | TF_FOLLOWING

_INDEX_TYPES = ("int32", "int64")

# TF op -> the parameters whose run-time values its output's sizes follow, in PyTorch and ONNX (each run against
# TF at two values by tests/parsers/test_runtime_shapes.py; docs/ops.md's "run-time parameters" column)
RUN_TIME_SIZES = {
    "Reshape": "shape (sizes follow it)",
    "ExpandDims": "axis (sizes follow it)",
    "Fill": "dims (sizes follow them)",
    "BroadcastTo": "shape (sizes follow it)",
    "Tile": "multiples (sizes follow them)",
    "Pad": "paddings (sizes follow them)",
    "PadV2": "paddings (sizes follow them)",
    "MirrorPad": "paddings, REFLECT and SYMMETRIC (sizes follow them)",
    "Slice": "begin and size (sizes follow them)",
    "StridedSlice": "begin, end with constant strides (negative too), masks, ellipsis, new axes (sizes follow them)",
    "OneHot": "depth (sizes follow it)",
    "ResizeBilinear": "size, every align_corners / half_pixel_centers (sizes follow it)",
    "ResizeNearestNeighbor": "size, every align_corners / half_pixel_centers (sizes follow it)",
    "Range": "start, limit, delta, integer or float (sizes follow them)",
    "Bincount": "size (the number of bins follows it)",
    "DenseBincount": "size (the number of bins follows it)",
}


def follows(ctx: Context, op: Any, *parameters: int) -> bool:
    """Whether `op` takes the run-time path: one of its inputs `parameters` is computed by the run and TF
    leaves an output size unknown though every input size is given, or an input already has a run-time size."""
    if ctx.reads_run_time(op):
        return True
    return (ctx.sizes_given and not all(ctx.is_const(op.inputs[i]) for i in parameters)
            and not all(o.shape.is_fully_defined() for o in op.outputs)
            and not any(i.name in ctx.lengths for i in op.inputs))


def refusal(ctx: Context, op: Any) -> str | None:
    """Why `op` cannot be converted: it reads a size that follows a run-time value and needs it while converting."""
    if op.type in READS_RUN_TIME:
        return None
    for t in op.inputs:
        shape = ctx.run_time_sizes(t)
        if shape:
            return (f"the size of axis {list(shape).index(RUN_TIME)} of tensor '{ctx.shown(t)}' follows a run-time "
                    f"value; {op.type} needs it while converting (make that value a constant, --set NAME=VALUE)")
    return None


def _out(ctx: Context, t: Any) -> tuple[int, ...]:
    """TF's shape of output `t`, each size TF leaves unknown RUN_TIME."""
    if t.shape.rank is None:
        raise NotConvertible(f"the rank of '{t.name}' follows a run-time value; the converted graph needs ranks")
    return tuple(RUN_TIME if d is None else int(d) for d in t.shape.as_list())


def _integer(ctx: Context, op: Any, t: Any, what: str) -> str:
    """The run-time integer parameter `t` as an IR tensor (TF order)."""
    if t.dtype.name not in _INDEX_TYPES:
        raise NotConvertible(f"{op.type} '{op.name}': its {what} '{ctx.shown(t)}' is {t.dtype.name}; int32 and int64 "
                             "are converted")
    return ctx.tf_order(t)


def _emit(ctx: Context, op: Any, ir_op: str, inputs: list[str], attrs: dict | None = None,
          dtype: str | None = None) -> None:
    out = op.outputs[0]
    ctx.set(out, ctx.emit(ir_op, op.name, inputs, _out(ctx, out), attrs, source_op=op.type,
                          out_dtype=dtype or out.dtype.name))


def reshape(ctx: Context, op: Any) -> None:
    """Reshape to a computed shape; ExpandDims at a computed axis."""
    x = ctx.tf_order(op.inputs[0])
    if op.type == "ExpandDims":  # TF knows no size of the output, nor its rank: one more than the input's
        out = ctx.emit("expand_dims_by", op.name, [x, _integer(ctx, op, op.inputs[1], "axis")],
                       (RUN_TIME,) * (len(ctx.graph.shape(x)) + 1), source_op=op.type)
        ctx.set(op.outputs[0], out)
        return
    _emit(ctx, op, "reshape_to", [x, _integer(ctx, op, op.inputs[1], "shape")])


def fill(ctx: Context, op: Any) -> None:
    """Fill(dims, value) and BroadcastTo(x, shape): the value broadcast to the run-time shape."""
    dims, value = (op.inputs[0], op.inputs[1]) if op.type == "Fill" else (op.inputs[1], op.inputs[0])
    _emit(ctx, op, "broadcast_to", [ctx.tf_order(value), _integer(ctx, op, dims, "shape")])


def tile(ctx: Context, op: Any) -> None:
    _emit(ctx, op, "tile_by", [ctx.tf_order(op.inputs[0]), _integer(ctx, op, op.inputs[1], "multiples")])


def pad(ctx: Context, op: Any) -> None:
    """A pad by run-time paddings: constant (Pad, PadV2), reflect or symmetric (MirrorPad)."""
    mode = attr(op, "mode", "REFLECT").lower() if op.type == "MirrorPad" else "constant"
    value = 0.0
    if op.type == "PadV2":
        if not ctx.is_const(op.inputs[2]):
            raise NotConvertible(f"PadV2 '{op.name}': its constant_values '{ctx.shown(op.inputs[2])}' is computed at "
                                 "run time; make it a constant")
        value = float(np.asarray(ctx.const(op.inputs[2])).reshape(()))
    _emit(ctx, op, "pad_by", [ctx.tf_order(op.inputs[0]), _integer(ctx, op, op.inputs[1], "paddings")],
          {"value": value, "mode": mode})


def _vector(low: Lowering, part: str, values: list[int], dtype: str) -> str:
    return low.const(part, np.asarray(values, dtype), dtype)


def slice_(ctx: Context, op: Any) -> None:
    """Slice(x, begin, size): x[begin:end] with end = begin + size, or the axis end where size is -1."""
    low = Lowering(ctx, op)
    begin = _integer(ctx, op, op.inputs[1], "begin")
    size = _integer(ctx, op, op.inputs[2], "size")
    dtype = low.dtype(begin)
    if low.dtype(size) != dtype:
        size = low.cast("size", size, dtype)
    whole = _vector(low, "to_end", [np.iinfo(dtype).max] * low.shape(begin)[0], dtype)
    open_end = low.compare("less", "open", size, _vector(low, "zero", [0], dtype))
    end = low.select("end", open_end, whole, low.binary("add", "stop", begin, size))
    _emit(ctx, op, "slice_to", [ctx.tf_order(op.inputs[0]), begin, end])


def strided_slice(ctx: Context, op: Any) -> None:
    """x[b:e:s] per axis with run-time bounds and constant strides (negative ones too), begin/end masks, an
    ellipsis and new axes (an axis the spec leaves out is whole); a shrunk axis keeps the static path's
    refusal (its removal needs the size while converting)."""
    masks = {m: int(op.get_attr(m)) for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                               "shrink_axis_mask")}
    strides = op.inputs[3]
    if not ctx.is_const(strides):
        raise ctx.shape_follows(op, strides, "strides (run-time bounds are converted with constant strides)")
    if masks["shrink_axis_mask"]:
        raise ctx.shape_follows(op, op.inputs[1], "bounds (run-time bounds are converted without a shrunk axis, "
                                                  "x[i]; slice it as x[i:i + 1] and reshape)")
    steps = [int(v) for v in np.asarray(ctx.const(strides)).reshape(-1)]
    low = Lowering(ctx, op)
    rank = len(op.inputs[0].shape.as_list())
    begin = _integer(ctx, op, op.inputs[1], "begin")
    dtype = low.dtype(begin)
    end = low.cast("end_type", _integer(ctx, op, op.inputs[2], "end"), dtype)
    big, small = int(np.iinfo(dtype).max), int(np.iinfo(dtype).min)
    # per input axis: (its spec entry or None for a whole axis, its step); the positions of new output axes
    axes: list[tuple[int | None, int]] = []
    new_axes: list[int] = []
    count = len(steps)
    ellipsis = next((i for i in range(count) if masks["ellipsis_mask"] >> i & 1), None)
    spanned = rank - sum(1 for i in range(count) if i != ellipsis and not masks["new_axis_mask"] >> i & 1)
    for i in range(count):
        if i == ellipsis:
            axes += [(None, 1)] * spanned
        elif masks["new_axis_mask"] >> i & 1:
            new_axes.append(len(axes) + len(new_axes))
        else:
            axes.append((i, steps[i]))
    axes += [(None, 1)] * (rank - len(axes))
    starts, ends = [], []
    for axis, (i, step) in enumerate(axes):
        for bound, mask, pieces, first in ((begin, "begin_mask", starts, True), (end, "end_mask", ends, False)):
            part = f"{'start' if first else 'end'}{axis}"
            if i is None or masks[mask] >> i & 1:  # the whole axis in the step's direction (clamped to its ends)
                stand_in = (0 if first else big) if step > 0 else (big if first else small)
                pieces.append(_vector(low, part, [stand_in], dtype))
            else:
                pieces.append(low.slice(part, bound, 0, i, i + 1))
    sliced_starts = low.concat("starts", starts, 0) if len(starts) > 1 else starts[0]
    sliced_ends = low.concat("ends", ends, 0) if len(ends) > 1 else ends[0]
    x = ctx.tf_order(op.inputs[0])
    attrs = {"steps": tuple(step for _, step in axes)} if any(step != 1 for _, step in axes) else None
    if not new_axes:
        _emit(ctx, op, "slice_to", [x, sliced_starts, sliced_ends], attrs)
        return
    out = ctx.emit("slice_to", f"{op.name}/slice", [x, sliced_starts, sliced_ends], (RUN_TIME,) * rank, attrs,
                   source_op=op.type, out_dtype=op.outputs[0].dtype.name)
    for k, position in enumerate(new_axes):
        last = k == len(new_axes) - 1
        shape = _out(ctx, op.outputs[0]) if last else (RUN_TIME,) * (rank + k + 1)
        axis = low.const(f"axis{k}", np.asarray(position, dtype), dtype)
        out = ctx.emit("expand_dims_by", op.name if last else f"{op.name}/new_axis{k}", [out, axis], shape,
                       source_op=op.type)
    ctx.set(op.outputs[0], out)


def resize(ctx: Context, op: Any, mode: str, coordinate: str) -> None:
    """ResizeBilinear / ResizeNearestNeighbor to a size the graph computes (NCHW in the IR, as `resize`)."""
    if mode == "bilinear" and op.inputs[0].dtype.name != "float32":
        raise NotConvertible(f"{op.type} '{op.name}' of a {op.inputs[0].dtype.name} image to a run-time size: float32 "
                             "images are converted; cast it first")
    x = ctx.nchw(op.inputs[0], "NHWC")
    size = _integer(ctx, op, op.inputs[1], "size")
    out = ctx.emit("resize_to", op.name, [x, size], (*ctx.graph.shape(x)[:2], RUN_TIME, RUN_TIME),
                   {"mode": mode, "coordinate": coordinate}, source_op=op.type, out_dtype=op.outputs[0].dtype.name)
    ctx.set(op.outputs[0], out, fmt_perm("NHWC"))


def one_hot(ctx: Context, op: Any, indices: str, attrs: dict[str, Any]) -> str:
    """OneHot to a run-time depth (float32, as the IR's one_hot; the handler casts)."""
    depth = _integer(ctx, op, op.inputs[1], "depth")
    return ctx.emit("one_hot_by", op.name, [indices, depth], _out(ctx, op.outputs[0]), attrs, source_op=op.type,
                    out_dtype="float32")


def range_(ctx: Context, op: Any) -> None:
    """Range of start, limit and delta known at run time (integers or float32: the catalog's `range` computes
    the length and the values in that type, as TF's kernel)."""
    if op.outputs[0].dtype.name not in (*_INDEX_TYPES, "float32"):
        raise NotConvertible(f"Range '{op.name}' of {op.outputs[0].dtype.name} values with a run-time start, limit "
                             "or delta: int32, int64 and float32 ranges are converted; make them constants")
    low = Lowering(ctx, op)
    dtype = op.outputs[0].dtype.name
    scalars = [low.cast(f"{part}_type", low.reshape(part, ctx.tf_order(t), ()), dtype)
               for part, t in zip(("start", "limit", "delta"), op.inputs)]
    _emit(ctx, op, "range", scalars)


_BIN_TYPES = ("int32", "int64", "float32")


def bincount(ctx: Context, op: Any) -> None:
    """Bincount / DenseBincount with a run-time number of bins (tf.math.bincount's max + 1): one row of bins of
    a rank-2 DenseBincount's rows, else of all the values."""
    low = Lowering(ctx, op)
    dtype = op.outputs[0].dtype.name
    if dtype not in _BIN_TYPES:
        raise NotConvertible(f"{op.type} '{op.name}' counting in {dtype}: {', '.join(_BIN_TYPES)} are converted")
    values = ctx.tf_order(op.inputs[0])
    shape = low.shape(values)
    batched = op.type == "DenseBincount" and len(shape) == 2
    if not batched and len(shape) != 1:
        if RUN_TIME in shape:
            raise NotConvertible(f"{op.type} '{op.name}' of a rank-{len(shape)} input with run-time sizes: a vector "
                                 "(or DenseBincount's rows) is converted")
        values = low.reshape("flat", values, (int(np.prod(shape)),))
    size = low.reshape("size", _integer(ctx, op, op.inputs[1], "size"), ())
    inputs = [values, size]
    weights = op.inputs[2]  # empty: none, every value counts 1
    if not (ctx.is_const(weights) and np.size(ctx.const(weights)) == 0):
        inputs.append(low.reshape("weights", ctx.tf_order(weights), low.shape(values)))
    binary = op.type == "DenseBincount" and bool(op.get_attr("binary_output"))
    attrs = {"binary_output": binary, "dtype": dtype}
    out = ctx.emit("bincount_by", op.name, inputs, shapes.bincount_by([low.shape(values)], attrs, {}), attrs,
                   source_op=op.type, out_dtype=dtype)
    ctx.set(op.outputs[0], out)
