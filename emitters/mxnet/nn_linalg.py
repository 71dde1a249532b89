"""Linear algebra on the last two axes: MXNet's linalg.det and linalg.inverse (LAPACK's LU)."""

from __future__ import annotations

from .contract import TABLE, Ctx, Fragment


@TABLE.register("matrix_determinant")
def matrix_determinant(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op("_linalg_det", ctx.name, ctx.inputs)
    return f


@TABLE.register("matrix_inverse")
def matrix_inverse(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op("_linalg_inverse", ctx.name, ctx.inputs)
    return f
