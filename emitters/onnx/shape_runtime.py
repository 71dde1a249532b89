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


_ONNX_TYPES = {"int32": 6, "int64": 7}


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
