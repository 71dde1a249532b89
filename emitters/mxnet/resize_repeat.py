"""The MXNet handler of the resize family's `repeat` (Keras UpSampling3D)."""

from __future__ import annotations

from .contract import TABLE, Ctx
from .symbol import Fragment


@TABLE.register("repeat")
def repeat(ctx: Ctx) -> Fragment:
    """One `repeat` operator per repeated axis (the last one named after the node)."""
    f, y = Fragment(), ctx.inputs[0]
    axes = [(axis, int(times)) for axis, times in enumerate(ctx.attrs["repeats"]) if int(times) != 1] or [(0, 1)]
    for i, (axis, times) in enumerate(axes):
        last = i == len(axes) - 1
        y = f.op("repeat", ctx.name if last else f"{ctx.name}_axis{axis}", [y], repeats=times, axis=axis)
    return f
