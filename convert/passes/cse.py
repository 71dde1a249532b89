"""Common subexpressions: nodes with the same op, inputs, attrs and params are computed once."""

from __future__ import annotations

import numpy as np

from ..ir import Node
from .index import GraphIndex, graph_pass


def _same_value(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _same_node(a: Node, b: Node) -> bool:
    """Same attrs and params (op, inputs and output shapes are the caller's key)."""
    return (
        a.attrs.keys() == b.attrs.keys()
        and all(_same_value(a.attrs[k], b.attrs[k]) for k in a.attrs)
        and a.params.keys() == b.params.keys()
        and all(a.params[k] is b.params[k] or (np.shape(a.params[k]) == np.shape(b.params[k])
                                               and _same_value(np.asarray(a.params[k]), np.asarray(b.params[k])))
                for k in a.params)
    )


@graph_pass
def merge_duplicates(ix: GraphIndex) -> bool:
    """Nodes computing the same thing (same op, inputs, attrs and params) become one: the first
    stays, later ones' readers read it (Keras NASNet graphs repeat a Relu per reader). A node that
    produces a graph output is never merged away, so outputs keep their names."""
    graph = ix.graph
    alias: dict[str, str] = {}
    seen: dict[tuple, list[Node]] = {}
    gone: list[Node] = []
    outputs = set(graph.outputs)
    for node in graph.nodes:
        if not ix.alive(node):
            continue
        inputs = [alias.get(i, i) for i in node.inputs]  # topological order: sources first
        if inputs != node.inputs:
            ix.set_inputs(node, inputs)
        out = tuple((graph.tensors[o].shape, graph.tensors[o].dtype) for o in node.outputs)
        key = (node.op, tuple(node.inputs), out)
        twin = next((k for k in seen.get(key, []) if _same_node(k, node)), None)
        if twin is None or outputs.intersection(node.outputs):
            seen.setdefault(key, []).append(node)
            continue
        alias.update(zip(node.outputs, twin.outputs))
        gone.append(node)
    for node in gone:
        ix.remove_node(node)
        for o in node.outputs:
            graph.tensors.pop(o, None)
    return bool(gone)
