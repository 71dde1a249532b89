"""SpaceToBatch and BatchToSpace (v1: one block size for H and W) on their own,
not inside a dilated conv, as copies on the NCHW activation: block (i, j) of the batch holds rows i, i + b,
... and columns j, j + b, ... of the padded image (batch index (i * b + j) * N + n, TF's order). At most
5-D intermediates (MXNet slices 5-D at most). Exact in every target."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..context import NHWC_TO_NCHW, Context, NotConvertible
from ..lowering import Lowering
from ..table import tf_op
from .shape import pick_every


def _block(op: Any) -> int:
    b = int(op.get_attr("block_size"))
    if b < 2:
        raise NotConvertible(f"{op.type} with block_size {b}")
    return b


@tf_op("SpaceToBatch")
def space_to_batch_v1(ctx: Context, op: Any) -> None:
    low = Lowering(ctx, op)
    b = _block(op)
    (top, bottom), (left, right) = np.asarray(ctx.const(op.inputs[1])).reshape(2, 2).astype(int).tolist()
    x = ctx.nchw(op.inputs[0], "NHWC")
    n, c, h, w = low.shape(x)
    if top or bottom or left or right:
        h, w = h + top + bottom, w + left + right
        x = low.node("pad", "pad", [x], (n, c, h, w),
                     {"pads": ((0, 0), (0, 0), (top, bottom), (left, right)), "mode": "constant", "value": 0.0})
    oh, ow = h // b, w // b
    blocks = []
    for i in range(b):
        rows = low.slice(f"rows{i}", x, 2, i, i + (oh - 1) * b + 1)
        if oh > 1:
            rows = pick_every(ctx, f"{op.name}/rows{i}_every", rows, 2, b, oh, op.type)
        for j in range(b):
            y = low.slice(f"block{i}_{j}", rows, 3, j, j + (ow - 1) * b + 1)
            blocks.append(pick_every(ctx, f"{op.name}/block{i}_{j}_every", y, 3, b, ow, op.type) if ow > 1 else y)
    ctx.set(op.outputs[0], low.concat("", blocks, 0), NHWC_TO_NCHW)


@tf_op("BatchToSpace")
def batch_to_space_v1(ctx: Context, op: Any) -> None:
    low = Lowering(ctx, op)
    b = _block(op)
    (top, bottom), (left, right) = np.asarray(ctx.const(op.inputs[1])).reshape(2, 2).astype(int).tolist()
    x = ctx.nchw(op.inputs[0], "NHWC")
    nb, c, h, w = low.shape(x)
    n = nb // (b * b)
    row_groups = []
    for i in range(b):
        cols = [low.reshape(f"block{i}_{j}_col", low.slice(f"block{i}_{j}", x, 0, (i * b + j) * n, (i * b + j + 1) * n),
                            (n, c, h, w, 1)) for j in range(b)]
        joined = low.reshape(f"rows{i}", low.concat(f"rows{i}_cols", cols, 4), (n, c, h, w * b))
        row_groups.append(low.reshape(f"rows{i}_row", joined, (n, c, h, 1, w * b)))
    full = low.reshape("full", low.concat("interleaved", row_groups, 3), (n, c, h * b, w * b))
    out = low.slice("crop_h", full, 2, top, h * b - bottom)
    ctx.set(op.outputs[0], low.slice("", out, 3, left, w * b - right), NHWC_TO_NCHW)
