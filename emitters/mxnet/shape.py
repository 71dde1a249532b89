"""The MXNet handlers of the shape family: reshape, transpose, concat, slice, depth/space moves and constants."""

from __future__ import annotations

from .contract import TABLE, Ctx, Fragment
from .symbol import symbol_dtype


@TABLE.register("reshape")
def reshape(ctx: Ctx) -> Fragment:
    f = Fragment()
    shape = list(ctx.out_shape)
    if shape and ctx.in_shape(0) and shape[0] == ctx.in_shape(0)[0]:  # a 0-d input has no batch
        shape[0] = 0  # MXNet: copy the input's batch, so other batch sizes run
    # MXNet 1.x has no 0-d arrays: a scalar is held as (1,), the shape its runtime returns one in
    f.op("Reshape", ctx.name, ctx.inputs, shape=tuple(shape) or (1,))
    return f


@TABLE.register("transpose")
def transpose(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op("transpose", ctx.name, ctx.inputs, axes=tuple(ctx.attrs["perm"]))
    return f


@TABLE.register("concat")
def concat(ctx: Ctx) -> Fragment:
    f = Fragment()
    axis = ctx.attrs["axis"] % len(ctx.out_shape)
    f.op("Concat", ctx.name, ctx.inputs, dim=axis, num_args=len(ctx.inputs))
    return f


@TABLE.register("slice")
def slice_(ctx: Ctx) -> Fragment:
    f, shape = Fragment(), ctx.in_shape()
    # resolve negative / open ends against the static shape: MXNet gets plain indices
    bounds = [slice(b, e).indices(n)[:2] for b, e, n in zip(ctx.attrs["begin"], ctx.attrs["end"], shape)]
    f.op("slice", ctx.name, ctx.inputs, begin=tuple(b for b, _ in bounds), end=tuple(e for _, e in bounds))
    return f


@TABLE.register("const")
def const(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.output = f.var(ctx.name, ctx.node.params["value"], symbol_dtype(ctx.graph.tensors[ctx.node.output].dtype))
    return f


@TABLE.register("depth_to_space", "space_to_depth")
def depth_space(ctx: Ctx) -> Fragment:
    f = Fragment()  # MXNet's operators use TF's (DCR) channel order
    f.op(ctx.node.op, ctx.name, ctx.inputs, block_size=int(ctx.attrs["block_size"]))
    return f
