"""Static shape inference, one function per TF op: `@shape_fn("Conv2D")`, `fn(node) -> [dims per
output]` where dims is a list (None for an unknown dim) or None (unknown rank). `node` gives the
inputs' dims, the constant value of an input when it has one, and the attrs. A function raises
ShapeError where TF's own inference would refuse the graph. An op without a function gets its
shape from its constant value when it has one, else unknown shapes.

SAME/VALID/EXPLICIT window sizes come from convert/padding/rules.py (every padding fact once).
"""

from __future__ import annotations

from ..fold import SHAPE_OPS
from . import array, array_matrix, control, detection, elementwise, nn, nn_extra, nn_recurrent, spectral  # noqa: F401 - registers the shape functions
from .base import SHAPE_FNS, Node, broadcast, infer, merge, out_dtypes, shape_fn

assert not set(SHAPE_OPS) - set(SHAPE_FNS)

__all__ = ["SHAPE_FNS", "Node", "broadcast", "infer", "merge", "out_dtypes", "shape_fn"]
