"""Shape functions: variables, v1 control flow and input pipelines (what the training passes see)."""

from __future__ import annotations

from ..static import TensorShape
from .base import Node, shape_fn


@shape_fn("VariableV2", "Variable", "VarHandleOp")
def _variable(node: Node) -> list:
    dims = TensorShape.from_proto(node.attr("shape")).dims
    return [[] if node.op.type == "VarHandleOp" else dims]


@shape_fn("ReadVariableOp")
def _read_variable(node: Node) -> list:
    handle = node.op.inputs[0].op
    return [TensorShape.from_proto(handle.get_attr("shape")).dims if handle.type == "VarHandleOp" else None]


@shape_fn("Switch", "RefSwitch")
def _switch(node: Node) -> list:
    return [node.dims(0)] * 2


@shape_fn("Enter", "RefEnter")
def _enter(node: Node) -> list:
    """A loop variable may change shape from one iteration to the next: known only when constant."""
    return [node.dims(0) if node.attr("is_constant", False) else None]


@shape_fn("Exit", "RefExit", "NextIteration", "Assign")
def _forward(node: Node) -> list:
    return [node.dims(0)]


@shape_fn("Merge", "RefMerge")
def _merge(node: Node) -> list:
    """The dims every input agrees on (a cond's branches may differ: TF relaxes, not refuses)."""
    shapes = [node.dims(i) for i in range(len(node.op.inputs))]
    out = shapes[0] if shapes else None
    for s in shapes[1:]:
        if out is None or s is None or len(s) != len(out):
            out = None
            break
        out = [a if a == b else None for a, b in zip(out, s)]
    return [out, []]


@shape_fn("NoOp")
def _no_op(node: Node) -> list:
    return []


@shape_fn("IteratorGetNext", "IteratorGetNextSync")
def _iterator(node: Node) -> list:
    return [TensorShape.from_proto(s).dims for s in node.attr("output_shapes", []) or []]


@shape_fn("While", "StatelessWhile")
def _while(node: Node) -> list:
    """Output k has input k's shape where TF's recorded shape of it (`output_shapes`, the loop's shape
    invariants) agrees; an axis TF relaxed stays unknown, so nothing folds a shape the loop may change
    (parsers/tensorflow/ops/control.py refuses a body that changes one). A While from TF1 frames records
    none: its variables' first shapes."""
    firsts = [node.dims(i) for i in range(len(node.op.inputs))]
    attr = node.op.node_def.attr
    recorded = [TensorShape.from_proto(s).dims for s in attr["output_shapes"].list.shape] \
        if "output_shapes" in attr else []
    if len(recorded) != len(firsts):
        return firsts
    return [None if r is None or f is None or len(r) != len(f) else [a if a == b else None for a, b in zip(f, r)]
            for f, r in zip(firsts, recorded)]


@shape_fn("If", "StatelessIf")
def _if(node: Node) -> list:
    """The branches' output shapes as TF recorded them (None where it did not)."""
    recorded = node.op.node_def.attr["output_shapes"].list.shape if "output_shapes" in node.op.node_def.attr else []
    shapes = [TensorShape.from_proto(s).dims for s in recorded]
    return shapes if len(shapes) == len(node.op.outputs) else [None] * len(node.op.outputs)
