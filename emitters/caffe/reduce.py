"""The Caffe handlers of the reduce family: reductions, argmax and softmax. A mean, max or sum is a global
pooling: over H, W of a 4-D tensor in BVLC Caffe; over any axes in OpenCV DNN's dialect (a Permute moves them
last, a Reshape makes them the pooling window)."""

from __future__ import annotations

import numpy as np

from tf_convert.emitters.base import NodeContext

from .builder import POOL
from .contract import TABLE, Ctx, opencv_dialect, opencv_hint, positive_axis


@TABLE.register("softmax")
def _softmax(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    top = b.unique(f"{node.name}/softmax")
    axis = positive_axis(node.attrs["axis"], len(b.shape(x)))
    b.add("Softmax", top, [x], [top], [b.shape(x)], softmax_param={"axis": axis})
    return top


_SPATIAL_ONLY = "only reductions over the spatial axes H, W of a 4-D tensor (global pooling)"


def _over_hw(ctx: NodeContext) -> bool:
    rank = len(ctx.graph.shape(ctx.node.inputs[0]))
    return rank == 4 and sorted(positive_axis(a, 4) for a in ctx.node.attrs["axes"]) == [2, 3]


def _reduce_limit(ctx: NodeContext) -> str | None:
    """BVLC: global pooling over H, W only; OpenCV DNN: any axes (its Permute moves them last)."""
    if _over_hw(ctx):
        return None
    if opencv_dialect(ctx):  # OpenCV's Reshape refuses an empty shape
        return None if ctx.graph.shape(ctx.node.output) else "a reduction to a 0-d value: Caffe blobs have axes"
    return opencv_hint(_SPATIAL_ONLY, "Permute layer (the reduced axes moved last, then a global pooling)")


def _pooled(ctx: Ctx, method: str) -> tuple[str, int]:
    """Global `method` pooling of the node's input over its reduced axes: the blob (prod of the kept axes
    as channels, 1 x 1) and how many elements each window held. Over H, W of a 4-D tensor: the pooling
    alone; over other axes (OpenCV dialect): a Permute puts the reduced axes last, a Reshape makes them
    the window (H = their product, W = 1)."""
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    shape = b.shape(x)
    if _over_hw(ctx):
        n, c, h, w = shape
        top = b.unique(f"{node.name}/pool")
        b.add("Pooling", top, [x], [top], [(n, c, 1, 1)], pooling_param={"pool": POOL[method],
                                                                          "global_pooling": True})
        return top, h * w
    reduced = sorted({positive_axis(a, len(shape)) for a in node.attrs["axes"]})
    kept = [a for a in range(len(shape)) if a not in reduced]
    order = kept + reduced
    if order != list(range(len(shape))):
        x = b.permute(f"{node.name}/permute", x, order)
    rows, window = int(np.prod([shape[a] for a in kept])), int(np.prod([shape[a] for a in reduced]))
    x = b.reshape(f"{node.name}/window", x, (1, rows, window, 1))
    top = b.unique(f"{node.name}/pool")
    b.add("Pooling", top, [x], [top], [(1, rows, 1, 1)], pooling_param={"pool": POOL[method], "global_pooling": True})
    return top, window


@TABLE.register("reduce_mean", "reduce_max", limit=_reduce_limit)
def _reduce(ctx: Ctx) -> str:
    b, g, node = ctx.builder, ctx.graph, ctx.node
    top, _ = _pooled(ctx, "AVE" if node.op == "reduce_mean" else "MAX")
    if tuple(b.shape(top)) != tuple(g.shape(node.output)):
        top = b.reshape(f"{node.name}/reshape", top, g.shape(node.output))
    return top


# ---- sums over axes ----------------------------------------------------------------------------------------

@TABLE.register("reduce_sum", limit=_reduce_limit)
def _reduce_sum(ctx: Ctx) -> str:
    """Global average pooling times the window size (as the converter lowered Sum before the IR had
    reduce_sum)."""
    b, g, node = ctx.builder, ctx.graph, ctx.node
    pooled, window = _pooled(ctx, "AVE")
    top = b.power(f"{node.name}/sum", pooled, scale=float(window))
    if tuple(b.shape(top)) != tuple(g.shape(node.output)):
        top = b.reshape(f"{node.name}/reshape", top, g.shape(node.output))
    return top
