"""SpaceToBatchND and BatchToSpaceND on their own (not the phases of a dilated convolution), on one or two
block axes: reshapes and transposes in TF's axis order, at most 5-D, plus zero rows and columns for the
paddings and slices for the crops. Copies only: exact in every target that has the moves.

SpaceToBatchND of (N, H, W, C) padded to (N, H'bh, W'bw, C) is (bh * bw * N, H', W', C) with batch index
(i * bw + j) * N + n holding rows i, i + bh, ... and columns j, j + bw, ... of image n; BatchToSpaceND
undoes it and crops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .context import Context, NotConvertible
from .lowering import Lowering


def _blocks(ctx: Context, op: Any) -> tuple[list[int], list[tuple[int, int]], tuple[int, ...]]:
    """(block per block axis, (before, after) per block axis, the input's TF shape), checked."""
    block = [int(b) for b in np.atleast_1d(ctx.const(op.inputs[1])).reshape(-1)]
    pairs = [(int(a), int(b)) for a, b in np.asarray(ctx.const(op.inputs[2])).reshape(-1, 2)]
    shape = tuple(ctx.shape(op.inputs[0]))
    if len(block) not in (1, 2) or len(pairs) != len(block) or len(shape) < len(block) + 1:
        raise NotConvertible(f"{op.type} over {len(block)} block axes of a rank-{len(shape)} tensor: one or two "
                             "block axes after the batch only")
    if min(block) < 1 or min(min(p) for p in pairs) < 0:
        raise NotConvertible(f"{op.type} with block_shape {block} and paddings/crops {pairs}: TF needs blocks >= 1 "
                             "and paddings >= 0")
    return block, pairs, shape


def _as_image(low: Lowering, x: str, shape: tuple[int, ...], axes: int) -> str:
    """(N, H, W, C): a 1-D block gets H = 1, the axes after the block axes become one C."""
    inner = shape[1:1 + axes]
    image = (shape[0], *((1,) if axes == 1 else ()), *inner, int(np.prod(shape[1 + axes:], dtype=np.int64)))
    return low.reshape("image", x, image)


def _zeros(low: Lowering, part: str, like: str, axis: int, count: int) -> str:
    shape = list(low.shape(like))
    shape[axis] = count
    return low.const(part, np.zeros(shape), low.dtype(like))


def space_to_batch(ctx: Context, op: Any) -> None:
    block, pads, shape = _blocks(ctx, op)
    low = Lowering(ctx, op)
    x = _as_image(low, ctx.tf_order(op.inputs[0]), shape, len(block))
    (bh, bw), ((top, bottom), (left, right)) = ([1, *block], [(0, 0), *pads]) if len(block) == 1 else (block, pads)
    for axis, (before, after) in ((1, (top, bottom)), (2, (left, right))):
        pieces = ([_zeros(low, f"pad{axis}_before", x, axis, before)] if before else []) + [x] + (
            [_zeros(low, f"pad{axis}_after", x, axis, after)] if after else [])
        x = low.concat(f"padded{axis}", pieces, axis)
    n, h, w, c = low.shape(x)
    if h % bh or w % bw:
        raise NotConvertible(f"{op.type}: the padded size {h}x{w} is not a multiple of the block {bh}x{bw}")
    oh, ow = h // bh, w // bw
    y = low.reshape("columns", x, (n * h, ow, bw, c))
    y = low.node("transpose", "column_blocks", [y], (bw, n * h, ow, c), {"perm": (2, 0, 1, 3)})
    y = low.reshape("rows", y, (bw, n, oh, bh, ow * c))
    y = low.node("transpose", "row_blocks", [y], (bh, bw, n, oh, ow * c), {"perm": (3, 0, 1, 2, 4)})
    ctx.set(op.outputs[0], low.reshape("", y, ctx.shape(op.outputs[0])))


def batch_to_space(ctx: Context, op: Any) -> None:
    block, crops, shape = _blocks(ctx, op)
    low = Lowering(ctx, op)
    x = _as_image(low, ctx.tf_order(op.inputs[0]), shape, len(block))
    (bh, bw), ((top, bottom), (left, right)) = ([1, *block], [(0, 0), *crops]) if len(block) == 1 else (block, crops)
    nb, h, w, c = low.shape(x)
    if nb % (bh * bw):
        raise NotConvertible(f"{op.type}: batch {nb} is not a multiple of the block {bh}x{bw}")
    n = nb // (bh * bw)
    y = low.reshape("blocks", x, (bh, bw, n, h, w * c))
    y = low.node("transpose", "rows_in", [y], (n, h, bh, bw, w * c), {"perm": (2, 3, 0, 1, 4)})
    y = low.reshape("columns", y, (n * h * bh, bw, w, c))
    y = low.node("transpose", "columns_in", [y], (n * h * bh, w, bw, c), {"perm": (0, 2, 1, 3)})
    y = low.reshape("full", y, (n, h * bh, w * bw, c))
    if top + bottom > h * bh or left + right > w * bw:
        raise NotConvertible(f"{op.type}: crops {crops} exceed the {h * bh}x{w * bw} result")
    y = low.slice("crop_rows", y, 1, top, h * bh - bottom)
    y = low.slice("crop_columns", y, 2, left, w * bw - right)
    ctx.set(op.outputs[0], low.reshape("", y, ctx.shape(op.outputs[0])))
