"""TF1 while loops (control-flow frames) rewritten as functional While nodes.

TF 1.x (and TF2 with its control flow turned off) writes a loop as a frame: each loop variable
enters through Enter -> Merge (with the NextIteration back edge) -> Switch on the LoopCond -> the
body reads Switch:1, and leaves through Exit (Switch:0); loop-invariant tensors enter through
constant Enters. This pass turns each frame into the TF2 form unroll.py unrolls: a While node whose
`cond` function computes the LoopCond's input and whose `body` function returns each NextIteration's
input, the frame's nodes copied into both (with their FunctionDef references), the constant Enters
as invariant arguments. Each Exit becomes an Identity of the While's output (its name kept). Nested
frames and frames of an unexpected shape are refused by name (exit 3).
"""

from __future__ import annotations

from typing import Any

from tf_convert.convert.errors import Unsupported, UnsupportedError

from .graphio import split_ref
from .known_ops import output_args
from .protos import GraphDef

_CONTROL = frozenset({"Enter", "Merge", "Switch", "LoopCond", "NextIteration", "Exit"})


class _Refused(Exception):
    pass


def _consumers(nodes: dict[str, Any]) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for node in nodes.values():
        for ref in node.input:
            found.setdefault(split_ref(ref)[0], []).append(node)
    return found


def _out_ref(node: Any, index: int) -> str:
    """FunctionDef reference of output `index` of `node` ("name:out_arg:i")."""
    args = output_args(node.op) or [("output", "", "")]
    position = 0
    for name, number_attr, type_list_attr in args:
        if number_attr:
            size = node.attr[number_attr].i
        elif type_list_attr:
            size = len(node.attr[type_list_attr].list.type)
        else:
            size = 1
        if index < position + size:
            return f"{node.name}:{name}:{index - position}"
        position += size
    raise _Refused(f"node '{node.name}' has no output {index}")


class _Frame:
    def __init__(self, loop_cond: Any, nodes: dict[str, Any], consumers: dict[str, list[Any]]):
        self.loop_cond = loop_cond
        self.all = nodes
        self.borrowed: set[str] = set()
        switches = [c for c in consumers.get(loop_cond.name, []) if c.op == "Switch"]
        if not switches or not loop_cond.input:
            raise _Refused("its LoopCond drives no loop variable")
        self.merges, self.enters, self.nexts, self.exits = [], [], [], []
        self.switches = switches
        for switch in switches:
            merge = nodes.get(split_ref(switch.input[0])[0]) if switch.input else None
            if merge is None or merge.op != "Merge" or len(merge.input) != 2:
                raise _Refused(f"its Switch '{switch.name}' does not read a loop Merge")
            sources = [nodes.get(split_ref(r)[0]) for r in merge.input]
            by_op = {n.op: n for n in sources if n is not None}
            if set(by_op) != {"Enter", "NextIteration"}:
                raise _Refused(f"its Merge '{merge.name}' is not an Enter and a NextIteration")
            self.merges.append(merge)
            self.enters.append(by_op["Enter"])
            self.nexts.append(by_op["NextIteration"])
            self.exits.append([c for c in consumers.get(switch.name, [])
                               if c.op == "Exit" and split_ref(c.input[0])[1] == 0])
        frame = self.enters[0].attr["frame_name"].s if self.enters else b""
        self.name = frame.decode(errors="replace")
        self.invariants = [n for n in nodes.values() if n.op == "Enter" and n.attr["frame_name"].s == frame
                           and n.name not in {e.name for e in self.enters}]
        self.body = self._members(consumers)

    def _members(self, consumers: dict[str, list[Any]]) -> list[Any]:
        """The frame's own nodes: forward from its Merges, Switches and constant Enters, up to the Exits."""
        seen: dict[str, Any] = {}
        stack = [n.name for n in self.merges + self.switches + self.invariants]
        while stack:
            for consumer in consumers.get(stack.pop(), []):
                if consumer.op in _CONTROL or consumer.name in seen:
                    if consumer.op == "Enter" and consumer.attr["frame_name"].s.decode(errors="replace") != self.name:
                        raise _Refused(f"it holds another loop (Enter '{consumer.name}'): nested TF1 loops are not "
                                       "unrolled")
                    continue
                seen[consumer.name] = consumer
                stack.append(consumer.name)
        for node in list(seen.values()):  # constants whose pivot control edge was pruned: copied in
            for ref in node.input:
                source = self.all.get(split_ref(ref)[0])
                if source is not None and source.op == "Const" and not source.input and source.name not in seen:
                    seen[source.name] = source
                    self.borrowed.add(source.name)  # copied, not moved: others may read it
        return list(seen.values())


def _function(frame: _Frame, nodes: dict[str, Any], name: str, returns: list[str], library: Any) -> Any:
    """A FunctionDef of the frame's nodes: arguments loop_var_<k> then invariant_<j>; `returns` are
    GraphDef refs inside the frame (or its arguments)."""
    fdef = library.function.add()
    fdef.signature.name = name
    args: dict[str, str] = {}
    for k, (merge, switch, enter) in enumerate(zip(frame.merges, frame.switches, frame.enters)):
        arg = fdef.signature.input_arg.add(name=f"loop_var_{k}", type=enter.attr["T"].type)
        args[f"{merge.name}:0"] = args[f"{switch.name}:1"] = arg.name
    for j, enter in enumerate(frame.invariants):
        arg = fdef.signature.input_arg.add(name=f"invariant_{j}", type=enter.attr["T"].type)
        args[f"{enter.name}:0"] = arg.name
    members = {n.name for n in frame.body}

    def ref(r: str) -> str:
        node, index, control = split_ref(r)
        if control:
            return f"^{node}" if node in members else ""
        if f"{node}:{index}" in args:
            return args[f"{node}:{index}"]
        if node in members and node in nodes:
            return _out_ref(nodes[node], index)
        raise _Refused(f"node '{r}' inside the loop reads a tensor from outside it without an Enter")

    for node in frame.body:
        copy = fdef.node_def.add()
        copy.CopyFrom(node)
        del copy.input[:]
        copy.input.extend(r for r in map(ref, node.input) if r)
    for i, r in enumerate(returns):
        out = fdef.signature.output_arg.add(name=f"output_{i}")
        node, index, _ = split_ref(r)
        out.type = _dtype(nodes, node, index, frame)
        fdef.ret[out.name] = ref(r)
    return fdef


def _dtype(nodes: dict[str, Any], node: str, index: int, frame: _Frame) -> int:
    """The dtype of a returned tensor: the LoopCond's is bool; a loop variable's is its Enter's."""
    for k, merge in enumerate(frame.merges):
        if node in (merge.name, frame.switches[k].name):
            return frame.enters[k].attr["T"].type
    return 10  # DT_BOOL: only cond returns a tensor that is not a loop variable's


def functional_loops(graph_def: Any) -> Any:
    """`graph_def` with each TF1 frame a While node (itself when it has none)."""

    conds = [n for n in graph_def.node if n.op == "LoopCond"]
    if not conds:
        return graph_def
    out = GraphDef()
    out.CopyFrom(graph_def)
    nodes = {n.name: n for n in out.node}
    consumers = _consumers(nodes)
    problems, removed, added = [], set(), []
    for loop_cond in conds:
        try:
            frame = _Frame(nodes[loop_cond.name], nodes, consumers)
            added.extend(_rewrite(frame, nodes, out.library, removed))
        except _Refused as e:
            problems.append(Unsupported("LoopCond", loop_cond.name, f"a TF1 while loop that is not unrolled: {e}"))
    if problems:
        raise UnsupportedError(problems)
    kept = [n for n in out.node if n.name not in removed]
    removed -= {n.name for n in added}  # the Exits, now Identities of the While's outputs
    for node in kept:  # control edges on the frame's nodes go; a data edge into it is a malformed loop
        if any(split_ref(r)[0] in removed for r in node.input):
            inputs = [r for r in node.input if not (r.startswith("^") and split_ref(r)[0] in removed)]
            inside = next((r for r in inputs if split_ref(r)[0] in removed), None)
            if inside is not None:
                raise UnsupportedError([Unsupported(node.op, node.name, f"reads '{inside}' inside a TF1 while loop "
                                                    "without an Exit; the loop is not unrolled")])
            del node.input[:]
            node.input.extend(inputs)
    del out.node[:]
    out.node.extend(kept + added)
    return out


def _rewrite(frame: _Frame, nodes: dict[str, Any], library: Any, removed: set[str]) -> list[Any]:

    base = f"{frame.name}/functional_while"
    name = base
    while name in nodes:
        name += "_"
    cond = _function(frame, nodes, f"{name.replace('/', '_')}_cond", [frame.loop_cond.input[0]], library)
    n = len(frame.merges)
    body_returns = [nx.input[0] for nx in frame.nexts]
    body = _function(frame, nodes, f"{name.replace('/', '_')}_body", body_returns, library)
    for j in range(len(frame.invariants)):  # invariants are passed back unchanged
        out = body.signature.output_arg.add(name=f"output_{n + j}", type=frame.invariants[j].attr["T"].type)
        body.ret[out.name] = f"invariant_{j}"
    holder = GraphDef()
    loop = holder.node.add(name=name, op="While")
    loop.input.extend([e.input[0] for e in frame.enters] + [e.input[0] for e in frame.invariants])
    loop.attr["T"].list.type.extend([e.attr["T"].type for e in frame.enters + frame.invariants])
    loop.attr["cond"].func.name = cond.signature.name
    loop.attr["body"].func.name = body.signature.name
    added = [loop]
    for k, exits in enumerate(frame.exits):
        for exit_node in exits:  # the Exit's name now reads the While's output
            forward = holder.node.add(name=exit_node.name, op="Identity")
            forward.input.append(f"{name}:{k}" if k else name)
            forward.attr["T"].type = frame.enters[k].attr["T"].type
            added.append(forward)
            removed.add(exit_node.name)
    removed.update(n.name for n in frame.body if n.name not in frame.borrowed)
    removed.update(n.name for n in frame.merges + frame.switches + frame.enters + frame.nexts
                   + frame.invariants + [frame.loop_cond])
    return added
