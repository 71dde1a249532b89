"""Small pattern-matching helpers shared by several passes."""

from __future__ import annotations

import numpy as np

from ..ir import Node
from .index import GraphIndex


def scalar_operand(ix: GraphIndex, node: Node) -> tuple[str, float] | None:
    """(other input, c) when one input of a binary node is a single-valued constant c."""
    if len(node.inputs) != 2:
        return None
    graph = ix.graph
    for x, c in (node.inputs, node.inputs[::-1]):
        value = ix.const_value(c)
        if value is not None and ix.const_value(x) is None and value.size >= 1 and np.all(value == value.flat[0]):
            if graph.shape(x) == graph.shape(node.output):
                return x, float(value.flat[0])
    return None


def other_input(node: Node, tensor: str) -> str | None:
    """The other input of a binary node that reads `tensor`."""
    if len(node.inputs) != 2 or tensor not in node.inputs:
        return None
    return node.inputs[1] if node.inputs[0] == tensor else node.inputs[0]
