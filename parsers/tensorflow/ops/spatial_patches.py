"""Issue 22 part B (opsb): ExtractVolumePatches, the 3-D ExtractImagePatches: every kernel offset is a
strided slice (unit slices joined) of the zero-padded NDHWC input (TF's SAME pads per axis), joined along
the last axis in TF's depth order (d, h, w, channel). Copies only: exact in every target."""

from __future__ import annotations

from typing import Any

from tf_convert.convert.padding.rules import same_pads_1d

from ..context import Context, NotConvertible
from ..table import tf_op
from .lowering import Lowering

_MAX_TAPS = 256  # one slice per kernel position


@tf_op("ExtractVolumePatches")
def extract_volume_patches(ctx: Context, op: Any) -> None:
    low = Lowering(ctx, op)
    n, *size, c = ctx.shape(op.inputs[0])
    out = ctx.shape(op.outputs[0])[1:4]
    kernel, strides = (list(op.get_attr(a))[1:4] for a in ("ksizes", "strides"))
    taps = kernel[0] * kernel[1] * kernel[2]
    if taps > _MAX_TAPS:
        raise NotConvertible(f"a {'x'.join(map(str, kernel))} patch is {taps} slices here (at most {_MAX_TAPS})")
    x = ctx.tf_order(op.inputs[0])
    if op.get_attr("padding").decode() == "SAME":
        pads = [same_pads_1d(s, k, st, 1) for s, k, st in zip(size, kernel, strides)]
        if any(a or b for a, b in pads):
            size = [s + a + b for s, (a, b) in zip(size, pads)]
            x = low.node("pad", "pad", [x], (n, *size, c),
                         {"pads": ((0, 0), *pads, (0, 0)), "mode": "constant", "value": 0.0})
    pieces = []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            for k in range(kernel[2]):
                y = x
                for axis, offset in zip((1, 2, 3), (i, j, k)):
                    span = (out[axis - 1] - 1) * strides[axis - 1] + 1
                    y = low.slice(f"tap{i}_{j}_{k}_{axis}", y, axis, offset, offset + span)
                    if strides[axis - 1] > 1 and out[axis - 1] > 1:  # unit slices: MXNet slices 5-D at most
                        step = strides[axis - 1]
                        y = low.concat(f"tap{i}_{j}_{k}_{axis}_every", [
                            low.slice(f"tap{i}_{j}_{k}_{axis}_{m}", y, axis, m * step, m * step + 1)
                            for m in range(out[axis - 1])], axis)
                pieces.append(y)
    ctx.set(op.outputs[0], low.concat("", pieces, 4))
