"""Linear algebra on the last two axes: determinant and inverse (numpy's LAPACK, in the input's dtype)."""

from __future__ import annotations

import numpy as np

from ..graph import Node
from .table import reference_op


@reference_op("matrix_determinant")
def matrix_determinant(node: Node, x: np.ndarray) -> np.ndarray:
    return np.linalg.det(x).astype(x.dtype)


@reference_op("matrix_inverse")
def matrix_inverse(node: Node, x: np.ndarray) -> np.ndarray:
    return np.linalg.inv(x).astype(x.dtype)
