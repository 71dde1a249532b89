"""Linear algebra on the last two axes: ONNX's Det (no standard operator inverts a matrix)."""

from __future__ import annotations

from .contract import TABLE, Builder, Ctx, Emitted


@TABLE.register("matrix_determinant")
def matrix_determinant(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    b.op("Det", [b.x()], b.out)
    return b.done()
