"""v1 control flow (Switch/Merge) with a constant predicate folds to the branch taken.

Deadness is propagated the way TF's executor does it: a Switch's untaken output is dead; a node
with a dead input (data or control) is dead; a Merge forwards its one live input. Dead nodes, the
untaken branch with its assign ops and control edges, disappear.
"""

from __future__ import annotations

import numpy as np

from .graph import GraphView, const_value, make_const, split_ref


def apply(view: GraphView, records: list[dict]) -> int:
    """Fold the Switches whose predicate is constant now; returns how many (nested conds need
    another round: an inner predicate enters through an outer Switch)."""
    live_port: dict[str, int] = {}
    for node in view.graph_def.node:
        if node.op in ("Switch", "RefSwitch"):
            pred = const_value(view, node.input[1])
            if pred is not None and np.size(pred) == 1:
                live_port[node.name] = 1 if bool(np.asarray(pred).item()) else 0
    if not live_port:
        return 0
    dead: set[str] = set()  # dead nodes
    merges: dict[str, int] = {}  # merge -> which of its inputs is the one live
    for name in view.order():
        node = view.nodes[name]
        refs = [split_ref(r) for r in node.input]
        if name in live_port:  # a Switch inside an untaken branch is dead as a whole
            if any(_is_dead(n, i, dead, live_port) for n, i, _ in refs):
                dead.add(name)
            continue
        if node.op in ("Merge", "RefMerge"):
            data = [(n, i) for n, i, c in refs if not c]
            live = [k for k, (n, i) in enumerate(data) if not _is_dead(n, i, dead, live_port)]
            if not live:
                dead.add(name)
            elif len(live) == 1 and len(data) > 1:
                merges[name] = live[0]
            continue
        if any(_is_dead(n, i, dead, live_port) for n, i, _ in refs):
            dead.add(name)
    def source(ref: str) -> str:
        """A Switch's data input may itself be a folded Switch's output: follow the chain."""
        while split_ref(ref)[0] in live_port and split_ref(ref)[1] == live_port[split_ref(ref)[0]]:
            ref = view.nodes[split_ref(ref)[0]].input[0]
        return ref

    view.rewire_many({f"{name}:{port}": source(view.nodes[name].input[0])
                      for name, port in live_port.items() if name not in dead})
    value_index: dict[str, str] = {}  # merge:1 (which input arrived) -> a constant
    for name, branch in merges.items():
        node = view.nodes[name]
        kept = [r for r in node.input if not r.startswith("^")][branch]
        index_name = view.unique(f"{name}/value_index")
        make_const(view, index_name, np.asarray(branch, np.int32))
        value_index[f"{name}:1"] = index_name
        node.op = "Identity"
        del node.input[:]
        node.input.append(kept)
        node.attr.pop("N", None)
    view.rewire_many(value_index)
    view.remove(dead | set(live_port))
    records.append({"pass": "cond_v1", "switches": len(live_port), "merges": len(merges),
                    "removed": len(dead),
                    "note": f"v1 cond: {len(live_port)} Switch nodes with a constant predicate folded, "
                            f"{len(dead)} nodes of untaken branches removed"})
    return len(live_port)


def _is_dead(node: str, index: int, dead: set[str], live_port: dict[str, int]) -> bool:
    if node in dead:
        return True
    if node in live_port:
        return index >= 0 and index != live_port[node]
    return False
