"""TF1 conditionals (Switch/Merge) with a run-time predicate rewritten as functional If nodes.

TF 1.x (and TF2 with its control flow turned off) writes tf.cond as: every tensor a branch reads enters
through a Switch on the predicate (output 1 in the true branch, 0 in the false one), and a Merge takes
the value of the branch that ran. This pass turns each Merge of that simple form into a StatelessIf (its
name kept) whose then/else functions hold the branches' nodes, each Switch's data input an argument; the
parser converts it to an IR `cond` (ops/control.py), so only the branch the predicate picks runs.
Simple means: two Merge inputs, each computed from Switch outputs of one side only (one predicate for
all), through nodes nothing outside the branch reads. Other Merges are left as they are (refused by name).
Run after frames.py has turned loops into While nodes (their Merges are gone then).
"""

from __future__ import annotations

from typing import Any

from .frames import _out_ref, _Refused
from .graphio import split_ref
from .protos import GraphDef

_SWITCH, _MERGE = ("Switch", "RefSwitch"), ("Merge", "RefMerge")


class _Branch:
    """The nodes computing one Merge input, and the Switch outputs they read."""

    def __init__(self, ref: str, nodes: dict[str, Any]):
        self.ref = ref
        self.members: dict[str, Any] = {}
        self.reads: dict[str, tuple[str, int]] = {}  # Switch node -> (its data input, the port read)
        stack = [ref]
        while stack:
            name, index, control = split_ref(stack.pop())
            node = nodes.get(name)
            if control or node is None:
                continue
            if node.op in _SWITCH:
                self.reads[name] = (node.input[0], index)
                continue
            if node.op in _MERGE or node.op in ("Placeholder", "PlaceholderV2", "Enter", "Exit"):
                raise _Refused(f"its branch reads '{name}' ({node.op}) without a Switch")
            if name not in self.members:
                self.members[name] = node
                stack.extend(node.input)

    @property
    def side(self) -> int | None:
        ports = {port for _, port in self.reads.values()}
        return ports.pop() if len(ports) == 1 else None


def _function(library: Any, name: str, branch: _Branch, args: list[str], nodes: dict[str, Any], dtypes: list[int],
              out_type: int) -> None:
    fdef = library.function.add()
    fdef.signature.name = name
    for k, dtype in enumerate(dtypes):
        fdef.signature.input_arg.add(name=f"arg_{k}", type=dtype)
    bound = {switch: f"arg_{args.index(src)}" for switch, (src, _) in branch.reads.items()}

    def ref(r: str) -> str:
        node, index, control = split_ref(r)
        if control:
            return f"^{node}" if node in branch.members else ""
        if node in bound:
            return bound[node]
        return _out_ref(nodes[node], index)

    for node in branch.members.values():
        copy = fdef.node_def.add()
        copy.CopyFrom(node)
        del copy.input[:]
        copy.input.extend(r for r in map(ref, node.input) if r)
    out = fdef.signature.output_arg.add(name="output_0", type=out_type)
    fdef.ret[out.name] = ref(branch.ref)


def functional_conds(graph_def: Any) -> Any:
    """`graph_def` with each simple TF1 cond's Merge a StatelessIf (itself when it has none)."""
    if not any(n.op in _MERGE for n in graph_def.node):
        return graph_def
    out = GraphDef()
    out.CopyFrom(graph_def)
    merges = [n for n in out.node if n.op in _MERGE and len(n.input) == 2]
    nodes = {n.name: n for n in out.node}
    consumers: dict[str, set[str]] = {}
    for node in out.node:
        for r in node.input:
            consumers.setdefault(split_ref(r)[0], set()).add(node.name)
    removed: set[str] = set()
    for merge in merges:
        try:
            branches = [_Branch(r, nodes) for r in merge.input]
        except _Refused:
            continue
        sides = [b.side for b in branches]
        preds = {nodes[s].input[1] for b in branches for s in b.reads}
        inside = {n for b in branches for n in b.members} | {merge.name}
        if sorted(sides, key=str) != [0, 1] or len(preds) != 1 or any(
                consumers.get(n, set()) - inside for b in branches for n in b.members):
            continue
        if any(split_ref(r)[1] == 1 for c in consumers.get(merge.name, ()) for r in nodes[c].input
               if split_ref(r)[0] == merge.name):
            continue  # a reader of the Merge's value_index
        then, other = (branches[0], branches[1]) if sides[0] == 1 else (branches[1], branches[0])
        args = sorted({src for b in branches for src, _ in b.reads.values()})
        switch_of = {src: s for b in branches for s, (src, _) in b.reads.items()}
        dtypes = [nodes[switch_of[a]].attr["T"].type for a in args]
        base = merge.name.replace("/", "_")
        out_type = merge.attr["T"].type
        _function(out.library, f"{base}_then", then, args, nodes, dtypes, out_type)
        _function(out.library, f"{base}_else", other, args, nodes, dtypes, out_type)
        pred = preds.pop()
        merge.op = "StatelessIf"
        del merge.input[:]
        merge.input.extend([pred, *args])
        merge.attr.clear()
        merge.attr["Tcond"].type = 10  # DT_BOOL
        merge.attr["Tin"].list.type.extend(dtypes)
        merge.attr["Tout"].list.type.append(out_type)
        merge.attr["then_branch"].func.name = f"{base}_then"
        merge.attr["else_branch"].func.name = f"{base}_else"
        removed |= set(then.members) | set(other.members)
    if not removed:
        return graph_def
    kept = [n for n in out.node if n.name not in removed]
    live = {split_ref(r)[0] for n in kept for r in n.input}
    kept = [n for n in kept if n.op not in _SWITCH or n.name in live]  # Switches no branch reads any more
    del out.node[:]
    out.node.extend(kept)
    return out
