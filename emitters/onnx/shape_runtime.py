"""The ONNX handlers of the shape ops whose sizes follow run-time values (convert.ir.runtime_dims): the
operators' input forms (Reshape, Expand, Tile, Pad, Slice, Range, Unsqueeze) read the parameter tensor, cast to
int64 where ONNX wants it; the sizes are symbolic in the graph's value infos (model.py)."""

from __future__ import annotations

import numpy as np

from tf_convert.convert.ir.runtime_dims import RUN_TIME

from ..base import NodeContext
from .contract import TABLE, Builder, Ctx, Emitted

_INT64 = 7  # TensorProto.INT64
_FLOAT = 1  # TensorProto.FLOAT


def _int64(b: Builder, index: int) -> str:
    """The node's index-th input as int64 (what ONNX's shape inputs take)."""
    if np.dtype(b.ctx.graph.tensors[b.node.inputs[index]].dtype) == np.int64:
        return b.x(index)
    return b.op("Cast", [b.x(index)], to=_INT64)


def _may_be_empty(ctx: NodeContext) -> bool:
    """Whether the reshaped input can hold no element: a run-time or zero size. Only then can TF's shape hold a
    0 (a size of 0; any 0 in the shape of a non-empty input is TF's error), where ONNX's Reshape before opset 14
    copies the input's size instead."""
    shape = ctx.graph.shape(ctx.node.inputs[0])
    return any(d == RUN_TIME or d == 0 for d in shape)


def _zero_is_zero(ctx: NodeContext) -> str | None:
    if int(ctx.options.opset) >= 14 or not _may_be_empty(ctx):
        return None
    return ("a reshape of a tensor that may be empty to a run-time shape needs Reshape's allowzero (a 0 in the "
            "shape is a size of 0, as in TF): opset 14 or later")


@TABLE.register("reshape_to", limit=_zero_is_zero)
def reshape_to(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    if int(ctx.options.opset) >= 14:
        b.op("Reshape", [b.x(0), _int64(b, 1)], b.out, allowzero=1)
    else:  # a non-empty input: no 0 in a shape TF accepts, so Reshape-13's copying of a 0 never happens
        b.op("Reshape", [b.x(0), _int64(b, 1)], b.out)
    return b.done()


@TABLE.register("broadcast_to")
def broadcast_to(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    b.op("Expand", [b.x(0), _int64(b, 1)], b.out)
    return b.done()


@TABLE.register("tile_by")
def tile_by(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    b.op("Tile", [b.x(0), _int64(b, 1)], b.out)
    return b.done()


@TABLE.register("pad_by")
def pad_by(ctx: Ctx) -> Emitted:
    """ONNX's pads are every axis' before, then every axis' after: TF's (rank, 2) paddings transposed."""
    if ctx.node.attrs.get("mode", "constant") != "constant":
        return _mirror_by(ctx)
    b = Builder(ctx, ctx.node)
    pads = b.op("Reshape", [b.op("Transpose", [_int64(b, 1)], perm=[1, 0]), b.ints("flat", [-1])])
    dtype = np.dtype(ctx.graph.tensors[ctx.node.inputs[0]].dtype)
    b.op("Pad", [b.x(0), pads, b.const("value", np.array(ctx.attrs.get("value", 0.0)).astype(dtype), dtype)], b.out,
         mode="constant")
    return b.done()


def _mirror_by(ctx: Ctx) -> Emitted:
    """TF's MirrorPad by run-time paddings: per axis, Gather of each output position's source (ONNX's reflect
    Pad has no symmetric twin; TF allows one reflection at most, so one fold is enough)."""
    b = Builder(ctx, ctx.node)
    rank = len(ctx.shape(ctx.node.inputs[0]))
    pads, cur = _int64(b, 1), b.x(0)
    one, two = (b.const(n, np.array(v, np.int64), np.int64) for n, v in (("one", 1), ("two", 2)))
    if not rank:
        b.op("Identity", [cur], b.out)
        return b.done()
    for axis in range(rank):
        def element(side: int, axis=axis) -> str:
            return b.op("Gather", [b.op("Gather", [pads, b.const(f"axis{axis}", np.array(axis, np.int64), np.int64)],
                                        axis=0), b.const(f"side{side}", np.array(side, np.int64), np.int64)], axis=0)
        n = b.op("Gather", [b.op("Shape", [cur]), b.const(f"dim{axis}", np.array(axis, np.int64), np.int64)], axis=0)
        at = b.op("Range", [b.op("Neg", [element(0)]), b.op("Add", [n, element(1)]), one])
        if ctx.node.attrs["mode"] == "reflect":
            last = b.op("Sub", [n, one])
            source = b.op("Sub", [last, b.op("Abs", [b.op("Sub", [last, b.op("Abs", [at])])])])
        else:
            below = b.op("Sub", [b.op("Neg", [one]), at])
            above = b.op("Sub", [b.op("Sub", [b.op("Mul", [two, n]), one]), at])
            source = b.op("Where", [b.op("Less", [at, b.const("zero", np.array(0, np.int64), np.int64)]), below,
                                    b.op("Where", [b.op("GreaterOrEqual", [at, n]), above, at])])
        cur = b.op("Gather", [cur, source], b.out if axis == rank - 1 else None, axis=axis)
    return b.done()


@TABLE.register("slice_to")
def slice_to(ctx: Ctx) -> Emitted:
    """ONNX Slice clamps and counts negative bounds from the end as Python (and TF, for a step of 1) do."""
    b = Builder(ctx, ctx.node)
    rank = len(ctx.shape(ctx.node.inputs[0]))
    if not rank:
        b.op("Identity", [b.x(0)], b.out)
        return b.done()
    steps = list(ctx.node.attrs.get("steps") or [1] * rank)
    starts, ends = _int64(b, 1), _int64(b, 2)
    if any(s < 0 for s in steps):
        # ONNX clamps a backward start below the axis to 0, Python and TF to "before 0": an empty slice there
        dims = b.op("Shape", [b.x(0)])
        before = b.op("And", [b.op("Less", [starts, b.op("Neg", [dims])]),
                              b.const("backward", np.array([s < 0 for s in steps]), np.bool_)])
        zero = b.const("zero", np.zeros(rank, np.int64), np.int64)
        starts, ends = (b.op("Where", [before, zero, t]) for t in (starts, ends))
    b.op("Slice", [b.x(0), starts, ends, b.ints("axes", range(rank)), b.ints("steps", steps)], b.out)
    return b.done()


@TABLE.register("one_hot_by")
def one_hot_by(ctx: Ctx) -> Emitted:
    """A comparison with the positions 0..depth-1 (ONNX's OneHot counts a negative index from the end; TF's is
    all `off`)."""
    a = ctx.node.attrs
    axis = int(a["axis"])
    b = Builder(ctx, ctx.node)
    ids_type = np.dtype(ctx.graph.tensors[ctx.node.inputs[0]].dtype)
    rank = len(ctx.shape(ctx.node.inputs[0]))
    ids = b.op("Unsqueeze", [b.x(0), b.ints("axis", [axis])])
    depth = b.op("Cast", [b.x(1)], to=int(_ONNX_TYPES[ids_type.name]))
    positions = b.op("Range", [b.const("zero", np.array(0, ids_type), ids_type), depth,
                               b.const("one", np.array(1, ids_type), ids_type)])
    positions = b.op("Reshape", [positions, b.ints("positions", [-1] + [1] * (rank - axis))])
    hit = b.op("Equal", [ids, positions])
    if (float(a["on"]), float(a["off"])) == (1.0, 0.0):
        b.op("Cast", [hit], b.out, to=_FLOAT)
    else:
        b.op("Where", [hit, b.const("on", np.float32(a["on"])), b.const("off", np.float32(a["off"]))], b.out)
    return b.done()


_ONNX_TYPES = {"int32": 6, "int64": 7, "float32": _FLOAT}


@TABLE.register("range")
def range_(ctx: Ctx) -> Emitted:
    """Integers: ONNX's Range. Floats: TF's length ceil(|(limit - start) / delta|) and start + float(i) * delta
    in the inputs' type (onnxruntime's float Range takes the length in double and accumulates the values)."""
    b = Builder(ctx, ctx.node)
    dtype = np.dtype(ctx.graph.tensors[ctx.node.output].dtype)
    if np.issubdtype(dtype, np.integer):
        b.op("Range", [b.x(0), b.x(1), b.x(2)], b.out)
        return b.done()
    count = b.op("Cast", [b.op("Ceil", [b.op("Abs", [b.op("Div", [b.op("Sub", [b.x(1), b.x(0)]), b.x(2)])])])],
                 to=_INT64)
    steps = b.op("Range", [b.const("zero", np.array(0, np.int64), np.int64), count,
                           b.const("one", np.array(1, np.int64), np.int64)])
    offsets = b.op("Mul", [b.op("Cast", [steps], to=_ONNX_FLOATS[dtype.name]), b.x(2)])
    b.op("Add", [b.x(0), offsets], b.out)
    return b.done()


_ONNX_FLOATS = {"float32": 1, "float64": 11}


@TABLE.register("expand_dims_by")
def expand_dims_by(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    b.op("Unsqueeze", [b.x(0), b.op("Reshape", [_int64(b, 1), b.ints("one", [1])])], b.out)
    return b.done()


_UNIQUE_TYPES = ("float32", "int64", "int8")  # onnxruntime's Unique kernels (of the IR's dtypes)


@TABLE.register("unique")
def unique(ctx: Ctx) -> Emitted:
    """ONNX Unique with sorted=0: the distinct slices in the order of their first occurrence, as TF's; its
    int64 inverse indices and counts cast to the node's type. onnxruntime has no int32, uint8 or bool Unique:
    those go through int64 (every value, and so every equality, kept)."""
    from onnx import helper

    b = Builder(ctx, ctx.node)
    x_type = ctx.dtype(ctx.node.inputs[0])
    axis = int(ctx.attrs["axis"]) % max(len(ctx.shape(ctx.node.inputs[0])), 1)
    x = b.x(0) if x_type.name in _UNIQUE_TYPES else b.op("Cast", [b.x(0)], to=_INT64)
    outputs = [b.fresh(part) for part in ("values", "first", "indices", "counts")]
    b.op_outputs("Unique", [x], outputs, sorted=0, axis=axis)
    output = ctx.attrs["output"]
    if output == "values":
        b.op("Cast", [outputs[0]], b.out, to=helper.np_dtype_to_tensor_dtype(x_type))
    else:
        kept = outputs[2] if output == "indices" else outputs[3]
        b.op("Cast", [kept], b.out, to=_ONNX_TYPES[ctx.attrs.get("index_dtype", "int32")])
    return b.done()


@TABLE.register("bincount_by")
def bincount_by(ctx: Ctx) -> Emitted:
    """An equality mask of the values against Range(0, size) (the run-time number of bins), its terms (ones or
    the weights) summed over the values as TF's kernel adds them, one after the other: a CumSum (which wraps
    integers as TF's, where ReduceSum saturates) from a zero row put in front, and its last row."""
    b = Builder(ctx, ctx.node)
    values_type = np.dtype(ctx.graph.tensors[ctx.node.inputs[0]].dtype)
    out_type = np.dtype(ctx.attrs["dtype"])
    rank = len(ctx.shape(ctx.node.inputs[0]))
    size = b.op("Cast", [b.op("Reshape", [b.x(1), b.ints("scalar", [])])], to=_ONNX_TYPES[values_type.name])
    bins = b.op("Range", [b.const("zero", np.array(0, values_type), values_type), size,
                          b.const("one", np.array(1, values_type), values_type)])
    hits = b.op("Equal", [b.op("Unsqueeze", [b.x(0), b.ints("last", [-1])]), bins])
    binary = bool(ctx.attrs.get("binary_output"))
    sum_type = np.dtype(np.int64) if binary or out_type.kind in "iu" else out_type
    if binary or len(ctx.node.inputs) < 3:
        terms = b.op("Cast", [hits], to=_ONNX_TYPES[sum_type.name])
    else:
        weights = b.op("Cast", [b.op("Unsqueeze", [b.x(2), b.ints("last_w", [-1])])], to=_ONNX_TYPES[sum_type.name])
        terms = b.op("Where", [hits, weights, b.const("no_weight", np.array(0, sum_type), sum_type)])
    front = [0] * (rank + 1) * 2
    front[rank - 1] = 1  # one zero row before the values' axis: the sum of no values
    padded = b.op("Pad", [terms, b.ints("front", front)], mode="constant")
    running = b.op("CumSum", [padded, b.const("values_axis", np.int64(rank - 1), np.int64)])
    total = b.op("Gather", [running, b.const("last_row", np.int64(-1), np.int64)], axis=rank - 1)
    if binary:
        total = b.op("Greater", [total, b.const("none", np.int64(0), np.int64)])
    b.op("Cast", [total], b.out, to=_ONNX_TYPES[out_type.name])
    return b.done()


@TABLE.register("ragged_range")
def ragged_range(ctx: Ctx) -> Emitted:
    """Each row's length as TF's kernel counts it, (|limit - start| + |delta| - 1) / |delta| (0 where delta
    points away), their running sum the row splits; each value's row is how many row ends lie at or before its
    position, its place in the row gives start + place * delta."""
    b = Builder(ctx, ctx.node)
    dtype = ctx.dtype(ctx.node.inputs[0])
    starts, limits, deltas = b.x(0), b.x(1), b.x(2)
    zero = b.const("zero", np.array(0, dtype), dtype)
    span, step = b.op("Abs", [b.op("Sub", [limits, starts])]), b.op("Abs", [deltas])
    away = b.op("Or", [b.op("And", [b.op("Greater", [deltas, zero]), b.op("Less", [limits, starts])]),
                       b.op("And", [b.op("Less", [deltas, zero]), b.op("Greater", [limits, starts])])])
    count = b.op("Div", [b.op("Sub", [b.op("Add", [span, step]), b.const("one", np.array(1, dtype), dtype)]), step])
    lengths = b.op("Cast", [b.op("Where", [away, zero, count])], to=_INT64)
    ends = b.op("CumSum", [lengths, b.const("axis", np.int64(0), np.int64)])
    splits = b.op("Concat", [b.ints("first", [0]), ends], axis=0)
    if ctx.attrs["output"] == "row_splits":
        b.op("Cast", [splits], b.out, to=_ONNX_TYPES[ctx.attrs.get("splits_dtype", "int64")])
        return b.done()
    total = b.op("ReduceSum", [lengths, b.ints("all", [0])], keepdims=0)
    positions = b.op("Range", [b.const("from", np.int64(0), np.int64), total, b.const("by", np.int64(1), np.int64)])
    passed = b.op("GreaterOrEqual", [b.op("Unsqueeze", [positions, b.ints("column", [1])]),
                                     b.op("Unsqueeze", [ends, b.ints("row", [0])])])
    rows = b.op("ReduceSum", [b.op("Cast", [passed], to=_INT64), b.ints("ends_axis", [1])], keepdims=0)
    place = b.op("Cast", [b.op("Sub", [positions, b.op("Gather", [splits, rows], axis=0)])],
                 to=_ONNX_TYPES[dtype.name])
    at = [b.op("Gather", [t, rows], axis=0) for t in (starts, deltas)]
    b.op("Add", [at[0], b.op("Mul", [place, at[1]])], b.out)
    return b.done()


@TABLE.register("ctc_greedy_decoder")
def ctc_greedy_decoder(ctx: Ctx) -> Emitted:
    """Each step's best class (ArgMax: the first on ties) where the step is within its sequence; the kept ones
    (not blank, not a repeat) found batch by batch (NonZero of the (B, T) mask, row-major); the log probability
    a CumSum in step order."""
    b = Builder(ctx, ctx.node)
    steps, batch, classes = (int(d) for d in ctx.shape(ctx.node.inputs[0]))
    output = ctx.attrs["output"]
    live = b.op("Less", [b.const("steps", np.arange(steps, dtype=np.int32).reshape(steps, 1), np.int32),
                         b.op("Unsqueeze", [b.x(1), b.ints("batch_row", [0])])])  # (T, B)
    if output == "log_probability":
        if ctx.opset >= 18:
            best = b.op("ReduceMax", [b.x(0), b.ints("classes", [-1])], keepdims=0)
        else:
            best = b.op("ReduceMax", [b.x(0)], axes=[-1], keepdims=0)
        terms = b.op("Where", [live, b.op("Neg", [best]), b.const("none", np.float32(0))])
        padded = b.op("Pad", [terms, b.ints("front", [1, 0, 0, 0])], mode="constant")
        running = b.op("CumSum", [padded, b.const("step_axis", np.int64(0), np.int64)])
        last = b.op("Slice", [running, b.ints("last", [-1]), b.ints("end", [np.iinfo(np.int64).max]),
                              b.ints("axis0", [0])])
        b.op("Transpose", [last], b.out, perm=[1, 0])
        return b.done()
    best_class = b.op("ArgMax", [b.x(0)], axis=-1, keepdims=0)  # (T, B) int64
    keep = b.op("And", [live, b.op("Not", [b.op("Equal", [best_class, b.const(
        "blank", np.int64(int(ctx.attrs["blank"]) % classes), np.int64)])])])
    if ctx.attrs["merge_repeated"] and steps > 1:
        def steps_from(part: str, start: int, end: int) -> str:
            return b.op("Slice", [best_class, b.ints(f"{part}_from", [start]), b.ints(f"{part}_to", [end]),
                                  b.ints(f"{part}_axis", [0])])
        changed = b.op("Not", [b.op("Equal", [steps_from("now", 1, steps), steps_from("before", 0, steps - 1)])])
        first = b.const("first_step", np.ones((1, batch), bool), bool)
        keep = b.op("And", [keep, b.op("Concat", [first, changed], axis=0)])
    kept = b.op("Transpose", [keep], perm=[1, 0])  # (B, T): batch by batch
    found = b.op("Transpose", [b.op("NonZero", [kept])], perm=[1, 0])  # (K, 2): (b, t)
    if output == "values":
        b.op("GatherND", [b.op("Transpose", [best_class], perm=[1, 0]), found], b.out)
        return b.done()
    place = b.op("CumSum", [b.op("Cast", [kept], to=_INT64), b.const("step_axis", np.int64(1), np.int64)])
    if output == "shape":
        longest = b.op("ReduceMax", [b.op("Slice", [place, b.ints("last", [-1]), b.ints("end", [
            np.iinfo(np.int64).max]), b.ints("axis1", [1])])], keepdims=1) if steps else b.ints("none", [0])
        b.op("Concat", [b.ints("batch", [batch]), b.op("Reshape", [longest, b.ints("one", [1])])], b.out, axis=0)
        return b.done()
    rows = b.op("Slice", [found, b.ints("b_from", [0]), b.ints("b_to", [1]), b.ints("axis1", [1])])
    positions = b.op("Sub", [b.op("Unsqueeze", [b.op("GatherND", [place, found]), b.ints("column", [1])]),
                             b.const("one", np.int64(1), np.int64)])
    b.op("Concat", [rows, positions], b.out, axis=1)
    return b.done()


@TABLE.register("resize_to")
def resize_to(ctx: Ctx) -> Emitted:
    """TF's resize grid computed while the model runs, in float32 as TF (convert.sampling.rules), then Gathers
    (nearest) or TF's two lerps, x first (bilinear): ONNX's Resize rounds its coordinates its own way."""
    b = Builder(ctx, ctx.node)
    mode, coordinate = ctx.node.attrs["mode"], ctx.node.attrs["coordinate"]
    x, dims, size = b.x(0), b.op("Shape", [b.x(0)]), _int64(b, 1)
    one_f, half = (b.const(n, np.float32(v), np.float32) for n, v in (("one_f", 1.0), ("half", 0.5)))
    zero, one = (b.const(n, np.array(v, np.int64), np.int64) for n, v in (("zero", 0), ("one", 1)))
    taps = {}
    for axis in (2, 3):
        n = b.op("Gather", [dims, b.const(f"axis{axis}", np.array(axis, np.int64), np.int64)], axis=0)
        o = b.op("Gather", [size, b.const(f"size{axis}", np.array(axis - 2, np.int64), np.int64)], axis=0)
        n_f, o_f = (b.op("Cast", [t], to=_FLOAT) for t in (n, o))
        scale = b.op("Div", [n_f, o_f])
        if coordinate == "align_corners":
            corners = b.op("Div", [b.op("Sub", [n_f, one_f]), b.op("Sub", [o_f, one_f])])
            scale = b.op("Where", [b.op("Greater", [o, one]), corners, scale])
        dst = b.op("Cast", [b.op("Range", [zero, o, one])], to=_FLOAT)
        if coordinate == "half_pixel":
            dst = b.op("Add", [dst, half])
        src = b.op("Mul", [dst, scale])
        if coordinate == "half_pixel" and mode == "bilinear":
            src = b.op("Sub", [src, half])
        floor = b.op("Floor", [src])
        last = b.op("Sub", [n, one])
        if mode == "nearest":
            index = floor
            if coordinate == "align_corners":  # TF rounds half away from zero there
                up = b.op("GreaterOrEqual", [b.op("Sub", [src, floor]), half])
                index = b.op("Add", [floor, b.op("Cast", [up], to=_FLOAT)])
            taps[axis] = (b.op("Clip", [b.op("Cast", [index], to=_INT64), zero, last]),)
            continue
        lo = b.op("Max", [b.op("Cast", [floor], to=_INT64), zero])
        hi = b.op("Min", [b.op("Cast", [b.op("Ceil", [src])], to=_INT64), last])
        taps[axis] = (lo, hi, b.op("Sub", [src, floor]))
    if mode == "nearest":
        b.op("Gather", [b.op("Gather", [x, taps[2][0]], axis=2), taps[3][0]], b.out, axis=3)
        return b.done()
    (ylo, yhi, wy), (xlo, xhi, wx) = taps[2], taps[3]
    left, right = b.op("Gather", [x, xlo], axis=3), b.op("Gather", [x, xhi], axis=3)
    across = b.op("Add", [left, b.op("Mul", [b.op("Sub", [right, left]), wx])])  # along x first, then y
    top, bottom = b.op("Gather", [across, ylo], axis=2), b.op("Gather", [across, yhi], axis=2)
    wy = b.op("Unsqueeze", [wy, b.ints("column", [1])])
    b.op("Add", [top, b.op("Mul", [b.op("Sub", [bottom, top]), wy])], b.out)
    return b.done()
