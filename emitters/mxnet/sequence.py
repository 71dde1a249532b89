"""Embeddings and token inputs: gather (take) and one_hot."""

from __future__ import annotations

from tf_convert.emitters.base import NodeContext

from .contract import TABLE, Ctx, Fragment


def _scalar_index(ctx: NodeContext) -> str | None:
    """MXNet 1.x holds a rank-0 tensor as (1,): indexing by one would add an axis TF does not have."""
    if not ctx.graph.shape(ctx.node.inputs[-1]):
        return "a rank-0 index: MXNet 1.x holds it as shape (1,), which would add an axis to the result"
    return None


@TABLE.register("gather", limit=_scalar_index)
def gather(ctx: Ctx) -> Fragment:
    f = Fragment()
    # mode 'clip' is never reached: TF refuses out-of-range ids, and --verify feeds valid ones
    f.op("take", ctx.name, ctx.inputs, axis=int(ctx.attrs["axis"]), mode="clip")
    return f


def _one_hot_limits(ctx: NodeContext) -> str | None:
    rank = len(ctx.graph.shape(ctx.node.output))
    return _scalar_index(ctx) or (None if int(ctx.attrs["axis"]) == rank - 1 else
                                  "one_hot on an axis other than the last")


@TABLE.register("one_hot", limit=_one_hot_limits)
def one_hot(ctx: Ctx) -> Fragment:
    f = Fragment()
    scalar = ctx.in_shape(0) == ()  # held as (1,) (MXNet 1.x has no 0-d arrays): its one-hot row is (depth,)
    # MXNet's one_hot gives an all-off row for an index outside [0, depth), as TF
    y = f.op("one_hot", f"{ctx.name}_row" if scalar else ctx.name, ctx.inputs, depth=int(ctx.attrs["depth"]),
             on_value=float(ctx.attrs["on"]), off_value=float(ctx.attrs["off"]), dtype="float32")
    if scalar:
        f.op("Reshape", ctx.name, [y], shape=tuple(ctx.out_shape))
    return f
