"""Linear algebra on the last two axes: torch.linalg's determinant and inverse (LU with partial pivoting)."""

from __future__ import annotations

from .contract import TABLE, Ctx, Lowered


@TABLE.register("matrix_determinant")
def matrix_determinant(ctx: Ctx) -> Lowered:
    return Lowered(lines=[f"{ctx.var} = torch.linalg.det({ctx.args[0]})"])


@TABLE.register("matrix_inverse")
def matrix_inverse(ctx: Ctx) -> Lowered:
    return Lowered(lines=[f"{ctx.var} = torch.linalg.inv({ctx.args[0]})"])
