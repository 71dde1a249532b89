"""The PyTorch handler of the shape family's `crop` (Keras Cropping3D)."""

from __future__ import annotations

from .contract import TABLE, Ctx, assign


@TABLE.register("crop")
@assign
def crop(ctx: Ctx) -> str:
    """Indices counted from each end, so the same elements go at every input size."""
    parts = [f"{int(b) or ''}:{-int(e) if int(e) else ''}" for b, e in ctx.attrs["crops"]]
    while parts and parts[-1] == ":":
        parts.pop()
    return f"{ctx.args[0]}[{', '.join(parts)}]" if parts else ctx.args[0]
