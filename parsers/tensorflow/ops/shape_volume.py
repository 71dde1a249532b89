"""ExtractVolumePatches, ExtractImagePatches' 3-D form (NDHWC, no rates). Every kernel
offset is a strided slice of the zero-padded volume; their concatenation along channels is TF's depth order
(plane, row, column, channel). Copies of elements only: exact in every target."""

from __future__ import annotations

import math
from typing import Any

from tf_convert.convert.padding.rules import same_pads_1d

from ..context import NDHWC_TO_NCDHW, Context, NotConvertible
from ..table import tf_op
from .shape import pick_every

_MAX_TAPS = 256  # one slice per kernel position


@tf_op("ExtractVolumePatches")
def extract_volume_patches(ctx: Context, op: Any) -> None:
    n, *size, c = ctx.shape(op.inputs[0])
    _, *out, _ = ctx.shape(op.outputs[0])
    kernel, strides = (list(op.get_attr(a))[1:4] for a in ("ksizes", "strides"))
    taps = kernel[0] * kernel[1] * kernel[2]
    if taps > _MAX_TAPS:
        raise NotConvertible(f"a {'x'.join(map(str, kernel))} patch is {taps} slices here (at most {_MAX_TAPS})")
    x = ctx.ir(op.inputs[0], NDHWC_TO_NCDHW)
    if op.get_attr("padding").decode() == "SAME":
        pads = [same_pads_1d(s, k, st, 1) for s, k, st in zip(size, kernel, strides)]
        if any(p for pair in pads for p in pair):
            size = [s + b + a for s, (b, a) in zip(size, pads)]
            x = ctx.emit("pad", f"{op.name}/pad", [x], (n, c, *size),
                         {"pads": ((0, 0), (0, 0), *pads), "mode": "constant", "value": 0.0}, source_op=op.type)
    spans = [(o - 1) * st + 1 for o, st in zip(out, strides)]
    pieces = []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            for k in range(kernel[2]):
                name = f"{op.name}/tap{i}_{j}_{k}"
                begin = (0, 0, i, j, k)
                y = ctx.emit("slice", name, [x], (n, c, *spans),
                             {"begin": begin, "end": (n, c, *(b + s for b, s in zip(begin[2:], spans)))},
                             source_op=op.type)
                for axis, (st, o) in enumerate(zip(strides, out), start=2):
                    if st > 1 and o > 1:
                        y = _pick_every_3d(ctx, f"{name}/axis{axis}", y, axis, st, o, op.type)
                pieces.append(y)
    result = pieces[0] if len(pieces) == 1 else ctx.emit("concat", op.name, pieces, (n, taps * c, *out), {"axis": 1},
                                                         source_op=op.type)
    ctx.set(op.outputs[0], result, NDHWC_TO_NCDHW)


def _pick_every_3d(ctx: Context, name: str, x: str, axis: int, step: int, count: int, source_op: str) -> str:
    """pick_every along `axis` of a 5-D tensor, on a 3-D view (leading axes merged, trailing ones merged):
    the pick splits the axis in two, and MXNet slices at most 5 axes."""
    shape = tuple(ctx.graph.shape(x))
    lead, rest = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    view = ctx.emit("reshape", f"{name}/view", [x], (lead, shape[axis], rest), {"shape": (lead, shape[axis], rest)},
                    source_op=source_op)
    picked = pick_every(ctx, name, view, 1, step, count, source_op)
    out = shape[:axis] + (count,) + shape[axis + 1:]
    return ctx.emit("reshape", f"{name}/back", [picked], out, {"shape": out}, source_op=source_op)
