"""The PyTorch handler of the resize family's `repeat` (Keras UpSampling3D)."""

from __future__ import annotations

from .contract import TABLE, Ctx, Lowered


@TABLE.register("repeat")
def repeat(ctx: Ctx) -> Lowered:
    """One repeat_interleave per repeated axis: exact copies, and the output follows the runtime size."""
    y = ctx.args[0]
    for axis, times in enumerate(ctx.attrs["repeats"]):
        if int(times) != 1:
            y = f"{y}.repeat_interleave({int(times)}, dim={axis})"
    return Lowered(expr=y)
