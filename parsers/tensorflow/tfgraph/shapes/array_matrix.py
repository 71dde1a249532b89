"""Shape functions of the identity-likes, the matrix diagonal / band family and the bitwise
ops (TF's own shape rules; an unknown input gives unknown dims)."""

from __future__ import annotations

from ..static import TensorShape
from .base import Node, broadcast, shape_fn


@shape_fn("CheckNumericsV2", "DeepCopy", "Copy", "CopyHost", "MatrixBandPart", "MatrixSetDiag", "MatrixSetDiagV2",
          "MatrixSetDiagV3", "BatchMatrixBandPart", "BatchMatrixSetDiag", "GuaranteeConst", "InplaceUpdate",
          "InplaceAdd", "InplaceSub")
def _same_as_input(node: Node) -> list:
    return [node.dims(0)]


def _k(node: Node, i: int) -> tuple[int, int] | None:
    k = node.ints(i)
    if not k:
        return None
    return (k[0], k[0]) if len(k) == 1 else (k[0], k[1])


def _diag_len(m: int, n: int, low: int, high: int) -> int:
    return min(m + min(high, 0), n - max(low, 0))


@shape_fn("MatrixDiagPart", "MatrixDiagPartV2", "MatrixDiagPartV3", "BatchMatrixDiagPart")
def _matrix_diag_part(node: Node) -> list:
    x = node.dims(0)
    k = (0, 0) if node.op.type in ("MatrixDiagPart", "BatchMatrixDiagPart") else _k(node, 1)
    if x is None or len(x) < 2 or k is None or x[-1] is None or x[-2] is None:
        return [None]
    low, high = k
    length = _diag_len(x[-2], x[-1], low, high)
    return [list(x[:-2]) + ([] if low == high else [high - low + 1]) + [length]]


@shape_fn("MatrixDiag", "MatrixDiagV2", "MatrixDiagV3", "BatchMatrixDiag")
def _matrix_diag(node: Node) -> list:
    d = node.dims(0)
    if d is None or not d:
        return [None]
    if node.op.type in ("MatrixDiag", "BatchMatrixDiag"):
        return [list(d) + [d[-1]]]
    k, rows, cols = _k(node, 1), node.ints(2), node.ints(3)
    if k is None or rows is None or cols is None or d[-1] is None:
        return [None]
    low, high = k
    longest = d[-1]
    batch = list(d[:-1]) if low == high else list(d[:-2])
    min_rows, min_cols = longest - min(high, 0), longest + max(low, 0)
    rows, cols = rows[0], cols[0]
    if rows == -1 and cols == -1:
        rows = cols = max(min_rows, min_cols)
    elif rows == -1:
        rows = min_rows
    elif cols == -1:
        cols = min_cols
    return [batch + [rows, cols]]


@shape_fn("Diag")
def _diag(node: Node) -> list:
    d = node.dims(0)
    return [None if d is None else list(d) + list(d)]


@shape_fn("DiagPart")
def _diag_part(node: Node) -> list:
    d = node.dims(0)
    return [None if d is None or len(d) % 2 else list(d[: len(d) // 2])]


@shape_fn("BitwiseAnd", "BitwiseOr", "BitwiseXor", "LeftShift", "RightShift")
def _bitwise(node: Node) -> list:
    return [broadcast(node.dims(0), node.dims(1))]


@shape_fn("Invert", "PopulationCount")
def _invert(node: Node) -> list:
    return [node.dims(0)]


@shape_fn("Conv3DBackpropInput")
def _conv3d_backprop_input_v1(node: Node) -> list:
    return [node.dims(0)]  # the forward input's shape


@shape_fn("ParallelConcat")
def _parallel_concat(node: Node) -> list:
    return [TensorShape.from_proto(node.attr("shape")).dims]


@shape_fn("ToBool")
def _to_bool(node: Node) -> list:
    return [[]]
