"""The ONNX handlers of the shape family: reshape, transpose, concat, slice, depth/space moves and constants."""

from __future__ import annotations

import numpy as np

from tf_convert.convert.ir.lazy import is_lazy
from tf_convert.convert.padding.sizes import kept_prefix, unit_axis_moves

from .contract import TABLE, Builder, Ctx, Emitted


@TABLE.register("reshape")
def reshape(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    moves = unit_axis_moves(ctx.shape(node.inputs[0]), tuple(node.attrs["shape"]))
    if moves and ctx.free_axes.get(node.inputs[0]):  # a 1-D layer's (N, C, L) <-> (N, C, 1, L): L stays free
        removed, inserted = moves
        x = b.x()
        if removed:
            x = b.op("Squeeze", [x, b.ints("removed", removed)], None if inserted else b.out)
        if inserted:
            b.op("Unsqueeze", [x, b.ints("inserted", inserted)], b.out)
        elif not removed:
            b.op("Identity", [x], b.out)
        return b.done()
    shape = list(node.attrs["shape"])
    if shape and ctx.shape(node.inputs[0]) and shape[0] == ctx.shape(node.inputs[0])[0]:  # a 0-d input has no batch
        shape[0] = 0  # copy the batch from the input: any batch size runs
    if ctx.free_axes.get(node.inputs[0]):  # size_flow let it through: the axes up to the free ones are kept
        kept = kept_prefix(ctx.shape(node.inputs[0]), tuple(node.attrs["shape"]))
        shape[:kept] = [0] * kept  # copied from the input at run time
    b.op("Reshape", [b.x(), b.ints("shape", shape)], b.out)
    return b.done()


@TABLE.register("transpose")
def transpose(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    b.op("Transpose", [b.x()], b.out, perm=[int(p) for p in node.attrs["perm"]])
    return b.done()


@TABLE.register("concat")
def concat(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    b.op("Concat", [ctx.names[i] for i in node.inputs], b.out, axis=int(node.attrs["axis"]))
    return b.done()


@TABLE.register("slice")
def slice_(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    shape = ctx.shape(node.inputs[0])
    starts, ends, axes = [], [], []
    for axis, (n, begin, end) in enumerate(zip(shape, node.attrs["begin"], node.attrs["end"])):
        begin, end = slice(begin, end).indices(n)[:2]  # python semantics: None, negatives
        if (begin, end) != (0, n):
            starts.append(begin), ends.append(end), axes.append(axis)
    if not axes:
        b.op("Identity", [b.x()], b.out)
    else:
        b.op("Slice", [b.x(), b.ints("starts", starts), b.ints("ends", ends), b.ints("axes", axes)], b.out)
    return b.done()


@TABLE.register("const")
def const(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    dtype = ctx.dtype(node.output)
    value = node.params["value"]
    value = value.astype(dtype) if is_lazy(value) else np.asarray(value, dtype=dtype)
    if node.output in ctx.graph.outputs:  # an initializer cannot be a graph output by itself
        b.op("Identity", [b.const("value", value, dtype)], b.out)
    else:
        b.const("value", value, dtype, name=b.out)
    return b.done()


@TABLE.register("depth_to_space")
def depth_to_space(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    b.op("DepthToSpace", [b.x()], b.out, blocksize=int(node.attrs["block_size"]), mode="DCR")
    return b.done()


@TABLE.register("space_to_depth")
def space_to_depth(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    b.op("SpaceToDepth", [b.x()], b.out, blocksize=int(node.attrs["block_size"]))
    return b.done()
