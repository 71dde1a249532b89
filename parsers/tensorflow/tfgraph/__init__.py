"""A TF-free model of a GraphDef: ops in topological order with static shapes (shapes/, one
function per op) and constant values (fold.py, one numpy evaluator per op, evaluated by
evaluate.py). What the parser uses instead of tf.import_graph_def and a session."""

from . import fold_complex, fold_matrix  # noqa: F401 - register the complex and matrix folds
from .fold import FOLDS, SHAPE_OPS, fold
from .graph import DType, Graph, NodeAttrs, Op, ShapeError, Tensor, TensorShape
from .shapes import SHAPE_FNS, shape_fn

__all__ = ["DType", "Graph", "NodeAttrs", "Op", "ShapeError", "Tensor", "TensorShape", "FOLDS",
           "SHAPE_OPS", "fold", "SHAPE_FNS", "shape_fn"]
