"""Check a graph's nodes against the op catalog: required attributes set, string attributes within
their choices, and every output shape equal to what the op's shape rule computes.

`Graph.validate` checks the structure (order, known ops, declared tensors); `problems` checks what
each node says against what its op means. Parsers and passes must leave no problem behind
(tests/core/test_catalog.py runs it on parsed graphs).
"""

from __future__ import annotations

from typing import Any

from .graph import Graph, Node
from .ops import OPS
from .shapes import RUN_TIME


def _param_shapes(node: Node) -> dict[str, tuple[int, ...]]:
    return {name: tuple(int(d) for d in value.shape) for name, value in node.params.items()}


def node_problems(graph: Graph, node: Node) -> list[str]:
    """What is wrong with one node (empty when it agrees with its catalog row)."""
    spec = OPS.get(node.op)
    if spec is None:
        return [f"node {node.name}: unknown IR op {node.op!r}"]
    found = []
    for name, attr in spec.attributes.items():
        value: Any = node.attrs.get(name)
        if name not in node.attrs and attr.required:
            found.append(f"node {node.name} ({node.op}): attribute {name!r} is required")
        elif attr.choices and value is not None and value not in attr.choices:
            found.append(f"node {node.name} ({node.op}): {name}={value!r} is not one of {attr.choices}")
    if spec.shape is not None and not found:
        try:
            want = tuple(spec.shape([graph.shape(i) for i in node.inputs], node.attrs, _param_shapes(node)))
        except (KeyError, ValueError, IndexError, TypeError) as exc:
            return [f"node {node.name} ({node.op}): its shape rule cannot run ({type(exc).__name__}: {exc})"]
        have = tuple(graph.shape(node.output))
        if not _agrees(want, have):
            found.append(f"node {node.name} ({node.op}): output shape {have}, the op's shape rule gives {want}")
    return found


def _agrees(want: tuple[int, ...], have: tuple[int, ...]) -> bool:
    """The declared shape is the rule's; where the rule has a run-time size, the parser may know it (TF's own
    shape inference fixes the size a run-time value must give)."""
    return want == have or (len(want) == len(have) and all(w in (h, RUN_TIME) for w, h in zip(want, have)))


def problems(graph: Graph) -> list[str]:
    """Every node's problems, in graph order."""
    return [p for node in graph.nodes for p in node_problems(graph, node)]
