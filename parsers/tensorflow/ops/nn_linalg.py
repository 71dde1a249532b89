"""Linear algebra on square matrices: MatrixDeterminant and MatrixInverse (and their Batch* spellings),
float32, as the IR's matrix_determinant / matrix_inverse (an adjoint inverse: the inverse of the transpose)."""

from __future__ import annotations

from typing import Any

from ..context import Context, NotConvertible, attr
from ..lowering import Lowering
from ..table import tf_op


def _square(ctx: Context, op: Any) -> str:
    shape = ctx.shape(op.inputs[0])
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise NotConvertible(f"{op.type} of shape {tuple(shape)}: the last two axes must be a square matrix")
    if op.inputs[0].dtype.name != "float32":
        raise NotConvertible(f"{op.type} of {op.inputs[0].dtype.name}: only float32 matrices are supported")
    return ctx.tf_order(op.inputs[0])


@tf_op("MatrixDeterminant", "BatchMatrixDeterminant")
def matrix_determinant(ctx: Context, op: Any) -> None:
    x = _square(ctx, op)
    ctx.set(op.outputs[0], Lowering(ctx, op).node("matrix_determinant", "", [x], ctx.shape(op.outputs[0])))


@tf_op("MatrixInverse", "BatchMatrixInverse")
def matrix_inverse(ctx: Context, op: Any) -> None:
    low = Lowering(ctx, op)
    x = _square(ctx, op)
    shape = low.shape(x)
    if bool(attr(op, "adjoint", False)):  # real matrices: the adjoint is the transpose
        perm = (*range(len(shape) - 2), len(shape) - 1, len(shape) - 2)
        x = low.node("transpose", "adjoint", [x], shape, {"perm": perm})
    ctx.set(op.outputs[0], low.node("matrix_inverse", "", [x], shape))
