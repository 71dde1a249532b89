"""Common subexpressions: nodes with the same op, inputs, attrs and params are computed once."""

from __future__ import annotations

import zlib
from typing import Any, Callable

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


def _digest(value: Any) -> tuple:
    """What values equal under _same_value share: dtype, shape and (where bytes decide) a CRC-32 of the
    bytes, -0.0 counted as 0.0 as np.array_equal counts it. Other dtypes (bfloat16, strings) get none."""
    value = np.asarray(value)
    if value.dtype.kind in "biu":
        data = value
    elif value.dtype.kind in "fc":
        data = value + value.dtype.type(0)  # -0.0 + 0 is 0.0; a NaN is never equal, whatever its bytes
    else:
        return value.dtype, value.shape
    return value.dtype, value.shape, zlib.crc32(np.ascontiguousarray(data).reshape(-1).view(np.uint8))


def _digests() -> Callable[[Any], tuple]:
    """_digest, computed once per value (a lazy weight is read once per pass, not once per comparison:
    70 same-shaped bias constants were 4830 checkpoint reads). Keeps the values it saw alive, so an
    id is never reused while the pass runs."""
    seen: dict[int, tuple[Any, tuple]] = {}

    def digest(value: Any) -> tuple:
        if id(value) not in seen:
            seen[id(value)] = (value, _digest(value))
        return seen[id(value)][1]

    return digest


def _same_node(a: Node, b: Node, digest: Callable[[Any], tuple] = _digest) -> bool:
    """Same attrs and params (op, inputs and output shapes are the caller's key)."""
    return (
        a.attrs.keys() == b.attrs.keys()
        and all(_same_value(a.attrs[k], b.attrs[k]) for k in a.attrs)
        and a.params.keys() == b.params.keys()
        and all(a.params[k] is b.params[k] or (np.shape(a.params[k]) == np.shape(b.params[k])
                                               and digest(a.params[k]) == digest(b.params[k])
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
    digest = _digests()
    for node in graph.nodes:
        if not ix.alive(node):
            continue
        inputs = [alias.get(i, i) for i in node.inputs]  # topological order: sources first
        if inputs != node.inputs:
            ix.set_inputs(node, inputs)
        out = tuple((graph.tensors[o].shape, graph.tensors[o].dtype) for o in node.outputs)
        key = (node.op, tuple(node.inputs), out)
        twin = next((k for k in seen.get(key, []) if _same_node(k, node, digest)), None)
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
