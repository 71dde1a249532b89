"""SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND on int8/uint8 tensors, the spelling TFLite's converter gives a
dilated Conv1D/Conv2D around its integer conv: the moves themselves (a pad with the zero point, reshapes and a
transpose in TFLite's element order), exact, with the integer conv between them running on the batch of phases."""

from __future__ import annotations

import numpy as np

from .op import Op
from .pieces import _reshape, from_source, source_ordered
from .quantized import _same_quantization, _single
from .table import QUANTIZED


def _block(op: Op, rank: int) -> list[int]:
    block = [int(b) for b in op.const(1, "block_shape").reshape(-1)]
    if not block or len(block) > rank - 1 or min(block) < 1:
        raise op.unsupported(f"block shape {block} for a rank-{rank} tensor")
    return block


@QUANTIZED.register("SPACE_TO_BATCH_ND")
def space_to_batch_nd(op: Op) -> list[str]:
    """Pad the spatial axes (with the zero point: TFLite's integer kernel), split each into (size / b, b), move the
    block axes in front of the batch, fold them into it."""
    _same_quantization(op, [0])
    shape = op.source_shape(0)
    block = _block(op, len(shape))
    pads = op.const(2, "paddings").astype(np.int64).reshape(len(block), 2)
    m = len(block)
    padded = [shape[0]] + [shape[1 + i] + int(pads[i].sum()) for i in range(m)] + list(shape[1 + m:])
    if any(padded[1 + i] % block[i] for i in range(m)) or (pads < 0).any():
        raise op.unsupported(f"paddings {pads.tolist()} that do not make the axes multiples of the block {block}")
    x = source_ordered(op, 0)
    all_pads = ((0, 0), *((int(b), int(e)) for b, e in pads), *((0, 0),) * (len(shape) - 1 - m))
    x = op.add("pad", [x], tuple(padded), {"pads": all_pads, "mode": "constant",
                                           "value": float(_single(op, op.tensor(0), "input")[1])}, suffix="/pad")
    split = [padded[0]] + [d for i in range(m) for d in (padded[1 + i] // block[i], block[i])] + padded[1 + m:]
    x = _reshape(op, x, tuple(split), "/split")
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(1 + 2 * m, len(split)))
    x = op.add("transpose", [x], tuple(split[p] for p in perm), {"perm": tuple(perm)}, suffix="/phases")
    out = [padded[0] * int(np.prod(block))] + [padded[1 + i] // block[i] for i in range(m)] + padded[1 + m:]
    return [from_source(op, _reshape(op, x, tuple(out), "/batch"))]


@QUANTIZED.register("BATCH_TO_SPACE_ND")
def batch_to_space_nd(op: Op) -> list[str]:
    """The inverse: the batch split into (block..., batch), each block axis moved behind its spatial axis, the
    pairs merged, the crops sliced off."""
    _same_quantization(op, [0])
    shape = op.source_shape(0)
    block = _block(op, len(shape))
    crops = op.const(2, "crops").astype(np.int64).reshape(len(block), 2)
    m = len(block)
    n = shape[0] // int(np.prod(block))
    if n * int(np.prod(block)) != shape[0] or (crops < 0).any():
        raise op.unsupported(f"a batch of {shape[0]} for the block {block} (crops {crops.tolist()})")
    x = _reshape(op, source_ordered(op, 0), (*block, n, *shape[1:]), "/split")
    perm = [m] + [p for i in range(m) for p in (m + 1 + i, i)] + list(range(2 * m + 1, m + len(shape)))
    x = op.add("transpose", [x], tuple(((*block, n, *shape[1:]))[p] for p in perm), {"perm": tuple(perm)},
               suffix="/interleave")
    merged = [n] + [shape[1 + i] * block[i] for i in range(m)] + list(shape[1 + m:])
    x = _reshape(op, x, tuple(merged), "/merge")
    if crops.any():
        end = [merged[0]] + [merged[1 + i] - int(crops[i][1]) for i in range(m)] + merged[1 + m:]
        begin = [0] + [int(crops[i][0]) for i in range(m)] + [0] * (len(merged) - 1 - m)
        x = op.add("slice", [x], tuple(e - b for b, e in zip(begin, end)), {"begin": tuple(begin), "end": tuple(end)},
                   suffix="/crop")
    return [from_source(op, x)]
