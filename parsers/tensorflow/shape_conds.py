"""v2 conds (If, StatelessIf, Case) whose predicate the fixed input shapes decide (Whisper's decoder picks its
causal mask with `tf.cond(sequence_length > 1, ...)`) become a call of the branch taken, inlined: the graph the
converter reads at those shapes. The GraphDef TensorFlow runs (the reference) keeps them."""

from __future__ import annotations

from typing import Any

import numpy as np

from .graphio import split_ref
from .inline import inline_calls
from .protos import GraphDef
from .tfgraph import Graph
from .training.cond_v2 import take_branch

_CONDS = frozenset({"If", "StatelessIf", "Case", "StatelessCase"})
MAX_ROUNDS = 8  # conds in the branches of conds


def fold_shape_conds(graph_def: Any, input_map: dict[str, tuple[Any, Any]], weights: dict[str, Any],
                     keep: list[str]) -> Any:
    """`graph_def` with every cond whose predicate is known at the shapes `input_map` (as tfgraph.Graph takes
    it) replaced by its branch; `graph_def` itself when none is."""
    current = graph_def
    for _ in range(MAX_ROUNDS):
        conds = [n.name for n in current.node if n.op in _CONDS]
        if not conds:
            return current
        graph = Graph(current, input_map, weights)
        decided = {}
        for node in current.node:
            if node.op in _CONDS:
                node_name, index, _ = split_ref(node.input[0])
                pred = graph.evaluator.value(graph.get_tensor_by_name(f"{node_name}:{index}"))
                if pred is not None and np.size(pred) == 1:
                    decided[node.name] = pred
        if not decided:
            return current
        folded = GraphDef()
        folded.CopyFrom(current)  # rewritten below: the reference run keeps the original
        for node in folded.node:
            if node.name in decided:
                take_branch(node, decided[node.name])
        current = inline_calls(folded, keep=keep)
    return current
