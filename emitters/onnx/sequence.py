"""Embeddings and token inputs: gather and one_hot. Integer inputs keep the
type the source declares (int32 token ids stay int32: ONNX Gather takes either index type)."""

from __future__ import annotations

import numpy as np

from .contract import TABLE, Builder, Ctx, Emitted

_ONNX_FLOAT = 1  # TensorProto.FLOAT


@TABLE.register("gather")
def gather(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    b.op("Gather", [b.x(0), b.x(1)], b.out, axis=int(ctx.node.attrs["axis"]))
    return b.done()


@TABLE.register("one_hot")
def one_hot(ctx: Ctx) -> Emitted:
    # ONNX OneHot wraps negative indices (-1 -> depth-1); TF gives an all-off row: compare instead
    node = ctx.node
    a = node.attrs
    depth, axis = int(a["depth"]), int(a["axis"])
    b = Builder(ctx, node)
    rank = len(ctx.shape(node.output))
    ids_shape = list(ctx.shape(node.inputs[0]))
    ids = b.op("Reshape", [b.x(), b.ints("shape", ids_shape[:axis] + [1] + ids_shape[axis:])])
    positions = np.arange(depth, dtype=ctx.dtype(node.inputs[0])).reshape((depth,) + (1,) * (rank - 1 - axis))
    hit = b.op("Equal", [ids, b.const("positions", positions, positions.dtype)])
    if (float(a["on"]), float(a["off"])) == (1.0, 0.0):
        b.op("Cast", [hit], b.out, to=_ONNX_FLOAT)
    else:
        b.op("Where", [hit, b.const("on", np.float32(a["on"])), b.const("off", np.float32(a["off"]))], b.out)
    return b.done()
