"""TridiagonalMatMul, the product of a tridiagonal matrix (its three diagonals,
each (..., 1, M)) and rhs (..., M, N): row i is main[i] * rhs[i] + sub[i] * rhs[i - 1] + super[i] *
rhs[i + 1] (the first and last rows without the missing neighbour), by row slices. Products and sums only."""

from __future__ import annotations

from typing import Any

from ..context import Context
from ..lowering import Lowering
from ..table import tf_op


@tf_op("TridiagonalMatMul")
def tridiagonal_matmul(ctx: Context, op: Any) -> None:
    low = Lowering(ctx, op)
    superdiag, maindiag, subdiag, rhs = (ctx.tf_order(t) for t in op.inputs)
    shape = low.shape(rhs)
    axis, m = len(shape) - 2, shape[-2]
    column = shape[:-2] + (m, 1)
    sup, main, sub = (low.reshape(name, d, column) for name, d in (("super", superdiag), ("main", maindiag),
                                                                    ("sub", subdiag)))
    if m == 1:
        ctx.set(op.outputs[0], low.binary("mul", "", main, rhs))
        return

    def rows(part: str, x: str, start: int, end: int) -> str:
        return low.slice(f"{part}{start}", x, axis, start, end)

    def term(part: str, diag: str, start: int, end: int, offset: int) -> str:
        """diag[start:end] * rhs[start + offset:end + offset]."""
        return low.binary("mul", f"{part}{start}", rows(f"{part}_d", diag, start, end),
                          rows(f"{part}_x", rhs, start + offset, end + offset))

    pieces = [low.binary("add", "first", term("main", main, 0, 1, 0), term("super", sup, 0, 1, 1))]
    if m > 2:
        middle = low.binary("add", "middle_sub", term("main", main, 1, m - 1, 0), term("sub", sub, 1, m - 1, -1))
        pieces.append(low.binary("add", "middle", middle, term("super", sup, 1, m - 1, 1)))
    pieces.append(low.binary("add", "last", term("main", main, m - 1, m, 0), term("sub", sub, m - 1, m, -1)))
    ctx.set(op.outputs[0], low.concat("", pieces, axis))
