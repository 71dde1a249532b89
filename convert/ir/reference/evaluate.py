"""Running a graph (or one node) on numpy inputs with the reference table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..graph import Graph, Node
from ..index import GraphIndex
from .table import REFERENCE, EvaluationError


def evaluate_node(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """The output of one node given its input values (in `node.inputs` order)."""
    fn = REFERENCE.get(node.op)
    if fn is None:
        raise EvaluationError(f"node {node.name}: IR op {node.op!r} has no reference function")
    with np.errstate(over="ignore", under="ignore"):  # exp overflow in sigmoid etc. is meant
        return np.asarray(fn(node, *inputs))


def evaluate(
    graph: Graph,
    feeds: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    outputs: Sequence[str] | None = None,
    keep_all: bool = False,
) -> dict[str, np.ndarray]:
    """Run `graph` on `feeds` (by input name, or a list in `graph.inputs` order).

    Returns the values of `outputs` (default: the graph outputs), or of every tensor computed when
    `keep_all`. Only the nodes the requested tensors depend on run. Each result's shape is checked
    against the graph's declaration."""
    if not isinstance(feeds, Mapping):
        feeds = dict(zip(graph.inputs, feeds))
    wanted = list(graph.outputs if outputs is None else outputs)
    env: dict[str, np.ndarray] = {name: np.asarray(value) for name, value in feeds.items()}
    needed = _needed_nodes(graph, wanted, env)
    remaining = _reader_counts(needed)
    keep = set(wanted)
    for node in needed:
        try:
            args = [env[i] for i in node.inputs]
        except KeyError as missing:
            raise EvaluationError(f"node {node.name}: input {missing.args[0]!r} is neither fed nor computed") from None
        value = evaluate_node(node, args)
        declared = graph.tensors[node.output].shape if node.output in graph.tensors else None
        if declared is not None and tuple(value.shape) != tuple(declared):
            raise EvaluationError(
                f"node {node.name} ({node.op}): computed shape {tuple(value.shape)}, graph declares {tuple(declared)}"
            )
        env[node.output] = value
        if not keep_all:  # free what no later node reads
            for i in node.inputs:
                remaining[i] -= 1
                if remaining[i] == 0 and i not in keep and i not in feeds:
                    env.pop(i, None)
    missing = [name for name in wanted if name not in env]
    if missing:
        raise EvaluationError(f"tensor(s) {missing} are neither fed nor produced by the graph")
    return dict(env) if keep_all else {name: env[name] for name in wanted}


def _needed_nodes(graph: Graph, wanted: Sequence[str], fed: Mapping[str, np.ndarray]) -> list[Node]:
    index = GraphIndex(graph)
    live: set[int] = set()
    stack = [t for t in wanted if t not in fed]
    seen: set[str] = set()
    while stack:
        tensor = stack.pop()
        if tensor in seen:
            continue
        seen.add(tensor)
        node = index.producer(tensor)
        if node is not None:
            live.add(id(node))
            stack.extend(i for i in node.inputs if i not in fed)
    return [n for n in graph.nodes if id(n) in live]


def _reader_counts(nodes: Sequence[Node]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in nodes:
        for i in node.inputs:
            counts[i] = counts.get(i, 0) + 1
    return counts
