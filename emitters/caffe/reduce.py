"""The Caffe handlers of the reduce family: reductions, argmax and softmax."""

from __future__ import annotations

from tf_convert.emitters.base import NodeContext

from .builder import POOL
from .contract import TABLE, Ctx, positive_axis


@TABLE.register("softmax")
def _softmax(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    top = b.unique(f"{node.name}/softmax")
    axis = positive_axis(node.attrs["axis"], len(b.shape(x)))
    b.add("Softmax", top, [x], [top], [b.shape(x)], softmax_param={"axis": axis})
    return top


def _spatial_reduce(ctx: NodeContext) -> str | None:
    g, node = ctx.graph, ctx.node
    rank = len(g.shape(node.inputs[0]))
    if rank != 4 or sorted(positive_axis(a, 4) for a in node.attrs["axes"]) != [2, 3]:
        return "only reductions over the spatial axes H, W of a 4-D tensor (global pooling)"
    return None


@TABLE.register("reduce_mean", "reduce_max", limit=_spatial_reduce)
def _reduce(ctx: Ctx) -> str:
    b, g, node = ctx.builder, ctx.graph, ctx.node
    x = node.inputs[0]
    n, c, _, _ = b.shape(x)
    top = b.unique(f"{node.name}/pool")
    method = POOL["AVE" if node.op == "reduce_mean" else "MAX"]
    b.add("Pooling", top, [x], [top], [(n, c, 1, 1)], pooling_param={"pool": method, "global_pooling": True})
    if tuple(g.shape(node.output)) != (n, c, 1, 1):
        top = b.reshape(f"{node.name}/reshape", top, g.shape(node.output))
    return top


# ---- sums over axes ----------------------------------------------------------------------------------------

@TABLE.register("reduce_sum", limit=_spatial_reduce)
def _reduce_sum(ctx: Ctx) -> str:
    """Global average pooling times the window size (as the converter lowered Sum before the IR had
    reduce_sum)."""
    b, g, node = ctx.builder, ctx.graph, ctx.node
    x = node.inputs[0]
    n, c, h, w = b.shape(x)
    pooled = b.unique(f"{node.name}/pool")
    b.add("Pooling", pooled, [x], [pooled], [(n, c, 1, 1)], pooling_param={"pool": POOL["AVE"], "global_pooling": True})
    top = b.power(f"{node.name}/sum", pooled, scale=float(h * w))
    if tuple(g.shape(node.output)) != (n, c, 1, 1):
        top = b.reshape(f"{node.name}/reshape", top, g.shape(node.output))
    return top
