"""v2 control flow (If, StatelessIf, Case) with a constant predicate becomes a call of the branch
taken; inline.inline_calls then splices its body in (nested calls too)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .graph import GraphView, const_value

_IF = ("If", "StatelessIf")
_CASE = ("Case", "StatelessCase")


def apply(view: GraphView, records: list[dict]) -> int:
    folded = 0
    for node in list(view.graph_def.node):
        if node.op not in _IF + _CASE:
            continue
        pred = const_value(view, node.input[0])
        if pred is None or np.size(pred) != 1:
            continue
        take_branch(node, pred)
        folded += 1
    if folded:
        records.append({"pass": "cond_v2", "folded": folded,
                        "note": f"v2 cond: {folded} If/Case nodes with a constant predicate folded"})
    return folded


def take_branch(node: Any, pred: Any) -> None:
    """If/Case `node` rewritten in place as a call of the branch its constant predicate `pred` takes."""
    if node.op in _IF:
        branch = node.attr["then_branch" if bool(np.asarray(pred).item()) else "else_branch"].func
    else:
        branches = node.attr["branches"].list.func
        index = int(np.asarray(pred).item())
        branch = branches[index if 0 <= index < len(branches) else len(branches) - 1]
    tin, tout = node.attr["Tin"], node.attr["Tout"]
    func = type(node.attr["then_branch" if node.op in _IF else "Tin"])()
    func.func.CopyFrom(branch)
    stateful = node.op in ("If", "Case")
    node.op = "StatefulPartitionedCall" if stateful else "PartitionedCall"
    inputs = list(node.input[1:])
    del node.input[:]
    node.input.extend(inputs)
    node.attr.clear()
    node.attr["f"].CopyFrom(func)
    node.attr["Tin"].CopyFrom(tin)
    node.attr["Tout"].CopyFrom(tout)
