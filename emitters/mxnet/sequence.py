"""Embeddings and token inputs: gather (take) and one_hot."""

from __future__ import annotations

from tf_convert.emitters.base import NodeContext

from .contract import TABLE, Ctx, Fragment


@TABLE.register("gather")
def gather(ctx: Ctx) -> Fragment:
    f = Fragment()
    # mode 'clip' is never reached: TF refuses out-of-range ids, and --verify feeds valid ones
    f.op("take", ctx.name, ctx.inputs, axis=int(ctx.attrs["axis"]), mode="clip")
    return f


def _one_hot_limits(ctx: NodeContext) -> str | None:
    rank = len(ctx.graph.shape(ctx.node.output))
    return None if int(ctx.attrs["axis"]) == rank - 1 else "one_hot on an axis other than the last"


@TABLE.register("one_hot", limit=_one_hot_limits)
def one_hot(ctx: Ctx) -> Fragment:
    f = Fragment()
    # MXNet's one_hot gives an all-off row for an index outside [0, depth), as TF
    f.op("one_hot", ctx.name, ctx.inputs, depth=int(ctx.attrs["depth"]), on_value=float(ctx.attrs["on"]),
         off_value=float(ctx.attrs["off"]), dtype="float32")
    return f
