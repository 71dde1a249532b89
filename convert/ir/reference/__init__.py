"""The numpy reference evaluator: what every IR op computes, one function per op, one module per family.

This is the executable form of the op catalog (`ops.OPS`) and follows TensorFlow's semantics (each family's
module says how). Constant folding uses it, the pass tests compare graphs with it, and its tests check it
against TensorFlow op by op.

Arithmetic follows numpy's type rules on the arrays given: float32 feeds compute in float32 (as
the targets do), float64 feeds in float64 (a tighter reference).

    evaluate(graph, feeds)            -> {output name: array}
    evaluate_node(node, [x, ...])     -> array
"""

from . import detection, elementwise, nn, reduce, resize, sequence, shape, spatial  # noqa: F401  (fill REFERENCE)
from .detection import combined_slots, crop_positions, iou_matrix, nms_selected, soft_nms_selected
from .evaluate import evaluate, evaluate_node
from .sequence import RECURRENT_ACTIVATIONS
from .table import REFERENCE, EvaluationError, OpFunction, reference_op

__all__ = [
    "REFERENCE", "RECURRENT_ACTIVATIONS", "EvaluationError", "OpFunction", "combined_slots", "crop_positions",
    "evaluate", "evaluate_node", "iou_matrix", "nms_selected", "reference_op", "soft_nms_selected",
]
