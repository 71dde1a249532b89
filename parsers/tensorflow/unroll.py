"""TF2 While loops with a static trip count, unrolled into plain nodes.

A functional While (`While`/`StatelessWhile`) carries loop variables through its `body` function
while its `cond` function says so. At the conversion's fixed input shapes, a Keras RNN's or a
tf.while_loop's condition reads counters only (the time step, the iteration count), so the trip
count is known while converting. Each loop variable is one of:
- invariant: the body passes it back unchanged (kernels, the input sequence): every copy of the
  body reads the loop's input itself;
- static: its first value is a constant and its next value is computed from static variables only
  (the counters): its value at each step is computed here, with tfgraph's numpy evaluators, and
  each copy of the body reads it as a Const;
- carried: anything else (the state, lists of outputs): each copy of the body reads the previous
  copy's result.
A loop whose condition reads a variable that is not static (the data decides its trip count) is left
in place: the parser converts it to a run-time loop (ops/control.py), never unrolled.
The body is copied once per step (inline.body_nodes), the loop's consumers read
the last copy's results; nested loops unroll on the next round. The unrolled size is capped so a
hostile file cannot blow up memory. TensorList variables are lowered after unrolling
(tensor_lists.py).

The GraphDef TensorFlow runs (the reference) keeps its loops: only the converter's copy is unrolled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tf_convert.convert.errors import Unsupported, UnsupportedError

from .conds import functional_conds
from .frames import functional_loops
from .graphio import split_ref
from .inline import body_nodes, inline_calls, rewire
from .loops import args_read, input_ancestors, input_dependent, loop_hint, returned_refs
from .protos import GraphDef
from .recurrent_loops import raise_loop, stack_sequences
from .tensor_lists import lower_tensor_lists
from .tensors import const_node
from .tfgraph import Graph

WHILE_OPS = frozenset({"While", "StatelessWhile"})
MAX_TRIPS = 10_000  # steps of one loop
MAX_UNROLLED_NODES = 500_000  # body nodes copied, over all loops
MAX_NESTING = 8  # loops in loop bodies


def _canonical(ref: str) -> str:
    node, index, _ = split_ref(ref)
    return f"{node}:{index}"


def _refuse(node: Any, hint: str) -> UnsupportedError:
    return UnsupportedError([Unsupported(node.op, node.name, hint)])


class _Loop:
    """One While node: its functions and the kind of each loop variable."""

    def __init__(self, node: Any, library: dict[str, Any], graph: Graph):
        self.node = node
        self.cond = library.get(node.attr["cond"].func.name)
        self.body = library.get(node.attr["body"].func.name)
        if self.cond is None or self.body is None:
            raise _refuse(node, "its cond/body functions are not in the graph's library; the file is corrupt")
        self.refs = [ref for ref in node.input if not ref.startswith("^")]
        self.args = [a.name for a in self.body.signature.input_arg]
        outputs = self.body.signature.output_arg
        if not (len(self.refs) == len(self.args) == len(outputs) == len(self.cond.signature.input_arg)):
            raise _refuse(node, "its cond/body functions do not take its loop variables; the file is corrupt")
        self.invariant = {i for i, out in enumerate(outputs) if self.body.ret.get(out.name) == self.args[i]}
        values = {i: graph.evaluator.value(graph.get_tensor_by_name(_canonical(ref)))
                  for i, ref in enumerate(self.refs)}
        self.first = {i: v for i, v in values.items() if v is not None}
        self.static = self._static()

    def _static(self) -> set[int]:
        """Variables whose every value is known while converting: a constant first value, and a next
        value computed from such variables only (a fixpoint, as loops.data_dependent_bounds)."""
        self.reads = [{self.args.index(a) for a in args_read(self.body, [ref])} for ref in returned_refs(self.body)]
        static = set(self.first)
        changed = True
        while changed:
            changed = False
            for i in sorted(static - self.invariant):
                if not self.reads[i] <= static:
                    static.discard(i)
                    changed = True
        return static

    def cond_reads(self) -> set[int]:
        names = [a.name for a in self.cond.signature.input_arg]
        return {names.index(a) for a in args_read(self.cond, returned_refs(self.cond))}


def _counter_nodes(loop: _Loop, library: dict[str, Any], indices: list[int]) -> tuple[list[Any], list[str]]:
    """The nodes of `cond` and of the body's results `indices` (the counters), their arguments read
    from nodes `loop_var_<i>`; and the tensors of cond's value and of those results."""
    nodes, wanted = [], []
    for prefix, fdef, outputs in (("cond/", loop.cond, [0]), ("body/", loop.body, indices)):
        bound = {a.name: f"loop_var_{i}" for i, a in enumerate(fdef.signature.input_arg)}
        copies, returns = body_nodes(fdef, library, prefix, bound)
        needed = _closure(copies, [returns[k] for k in outputs])
        nodes.extend(n for n in copies if n.name in needed)
        wanted.extend(returns[k] for k in outputs)
    return nodes, wanted


def _evaluate(loop: _Loop, counters: tuple[list[Any], list[str]], state: dict[int, Any]) -> tuple[bool, dict]:
    """(cond's value, the static variables' next values) for static values `state`, by numpy;
    `counters` is _counter_nodes(..., sorted(state))."""

    graph_def = GraphDef()
    graph_def.node.extend(const_node(f"loop_var_{i}", value) for i, value in state.items())
    nodes, wanted = counters
    graph_def.node.extend(nodes)
    graph = Graph(graph_def)
    value = graph.evaluator.value

    def of(ref: str) -> Any:
        return value(graph.get_tensor_by_name(_canonical(ref)))

    go = of(wanted[0])
    if go is None:
        raise _refuse(loop.node, "its condition cannot be computed while converting (an op without a numpy "
                                 "evaluator); make the number of steps a constant")
    following = {i: of(ref) for i, ref in zip(sorted(state), wanted[1:])}
    missing = [loop.args[i] for i, v in following.items() if v is None]
    if missing:
        raise _refuse(loop.node, f"the next value of its counter '{missing[0]}' cannot be computed while "
                                 "converting; make the number of steps a constant")
    return bool(np.asarray(go).reshape(-1)[0]), following


def _closure(nodes: list[Any], refs: list[str]) -> set[str]:
    by_name = {n.name: n for n in nodes}
    seen: set[str] = set()
    stack = [split_ref(r)[0] for r in refs]
    while stack:
        name = stack.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        stack.extend(split_ref(r)[0] for r in by_name[name].input)
    return seen


def _trajectory(loop: _Loop, library: dict[str, Any], budget: int, is_data: Callable[[str], bool],
                label: Callable[[str], str], origins: Callable[[str], list[str]]) -> tuple[list[dict], dict]:
    """The static variables' values at the start of each step (as many as the loop runs), and after
    the last."""
    read = loop.cond_reads()
    if not read <= loop.static:
        bad = sorted(read - loop.static)
        hint = loop_hint(loop.node, loop.refs, library, is_data, label, origins)
        if "depends on the data" not in hint:
            hint = (f"its condition reads loop variable '{loop.args[bad[0]]}', which is not known while converting "
                    "(not a counter from constants); make the number of steps a constant")
        raise _refuse(loop.node, hint)
    counters = loop.static - loop.invariant
    needed = (read | {a for i in counters for a in loop.reads[i]}) & loop.invariant  # constants they read
    state = {i: loop.first[i] for i in counters | needed}
    steps: list[dict] = []
    size = max(len(loop.body.node_def), 1)
    nodes = _counter_nodes(loop, library, sorted(state))
    while True:
        go, following = _evaluate(loop, nodes, state)
        if not go:
            return steps, following
        if len(steps) >= MAX_TRIPS or (len(steps) + 1) * size > budget:
            raise _refuse(loop.node, f"unrolling it takes more than {min(MAX_TRIPS, budget // size)} steps of "
                                     f"{size} nodes (the cap on an unrolled loop's size); convert a model with "
                                     "fewer steps (a shorter --input-shape)")
        steps.append(state)
        state = {i: following[i] for i in state}


def _scopes(names: Any) -> set[str]:
    """Every name scope ("a/", "a/b/") that node names `names` are under."""
    return {name[:k + 1] for name in names for k, c in enumerate(name) if c == "/"}


def _free_prefix(base: str, taken: set[str]) -> str:
    """`base` ("scope/"), or "scope_/" ... when nodes are under it already (`taken`: _scopes); taken now."""
    prefix = base
    while prefix in taken:
        prefix = prefix[:-1] + "_/"
    taken.add(prefix)
    return prefix


def _unroll(loop: _Loop, library: dict[str, Any], steps: list[dict], after: dict,
            taken: set[str]) -> tuple[list, list[str]]:
    """The nodes of every copy of the body, and the tensor that holds each loop variable at the end."""
    name = loop.node.name
    nodes: list[Any] = []
    current = list(loop.refs)
    for k, state in enumerate(steps):
        prefix = _free_prefix(f"{name}/step_{k}/", taken)
        bound = {}
        for i, arg in enumerate(loop.args):
            if i in state and i not in loop.invariant:
                const = const_node(f"{prefix}loop_var_{i}", state[i])
                nodes.append(const)
                bound[arg] = const.name
            else:
                bound[arg] = loop.refs[i] if i in loop.invariant else current[i]
        copies, returns = body_nodes(loop.body, library, prefix, bound)
        nodes.extend(copies)
        current = [loop.refs[i] if i in loop.invariant else returns[i] for i in range(len(loop.args))]
    for i, value in after.items():
        if i not in loop.invariant:  # its value after the last step, as a constant
            const = const_node(_free_prefix(f"{name}/final_{i}/", taken) + "value", value)
            nodes.append(const)
            current[i] = const.name
    return nodes, current


def _forwarder(node: Any, finals: list[str]) -> Any:
    """The While node turned into an IdentityN of its final values (its name is an input or output)."""

    copy = GraphDef().node.add(name=node.name, op="IdentityN")
    copy.input.extend(finals)
    copy.attr["T"].list.type.extend(node.attr["T"].list.type)
    return copy


def _fed_by_loops(nodes: dict[str, Any], loops: list[Any]) -> set[str]:
    """The loops of `loops` that read another one's results (a stacked RNN's upper layers): a loop is
    raised to a recurrent node only where its input's shape is known (recurrent_loops.py)."""
    names = {n.name for n in loops}
    fed = set()
    for loop in loops:
        seen: set[str] = set()
        stack = [split_ref(r)[0] for r in loop.input if not r.startswith("^")]
        while stack:
            name = stack.pop()
            if name in seen or name not in nodes:
                continue
            seen.add(name)
            if name in names:
                fed.add(loop.name)
                break
            stack.extend(split_ref(r)[0] for r in nodes[name].input if not r.startswith("^"))
    return fed


def _reads_data(loop: _Loop) -> bool:
    """Whether the loop's condition reads a variable not known while converting: its trip count is decided
    at run time (an IR while_loop, ops/control.py), never unrolled."""
    return not loop.cond_reads() <= loop.static


_LIST_TYPES = (20, 21)  # DT_RESOURCE, DT_VARIANT: a TensorArray / TensorList handle


def _refuse_lists(node: Any, library: dict[str, Any], is_data: Callable[[str], bool], label: Callable[[str], str],
                  origins: Callable[[str], list[str]]) -> None:
    """A run-time loop that carries a TensorList/TensorArray (dynamic_rnn's outputs, a map_fn): its length
    is the trip count, which the data decides: refused by name (exit 3)."""
    if any(t in _LIST_TYPES for t in node.attr["T"].list.type):
        refs = [r for r in node.input if not r.startswith("^")]
        hint = loop_hint(node, refs, library, is_data, label, origins).split(": not convertible")[0]
        if "depends on the data" not in hint:
            hint = "a While loop whose trip count depends on the data"
        raise _refuse(node, f"{hint}: it carries a TensorList/TensorArray whose length follows the trip count; "
                            "lists of run-time length are not converted, make the number of steps a constant")


def unroll_loops(graph_def: Any, input_map: dict[str, tuple[Any, Any]], weights: dict[str, Any],
                 keep: list[str], label: Callable[[str], str] = str, notes: list[str] | None = None) -> Any:
    """`graph_def` with its While loops unrolled at the fixed input shapes `input_map` (as
    tfgraph.Graph takes it) and its TensorLists lowered; `graph_def` itself when it has no loop.
    A loop whose body is a known recurrent cell becomes one recurrent node instead (recurrent_loops.py;
    a line in `notes` says so). Tensors named in `keep` (inputs, outputs) keep their meaning."""

    graph_def = functional_conds(functional_loops(graph_def))  # TF1 frames as While nodes, TF1 conds as If
    if not any(n.op in WHILE_OPS for n in graph_def.node):
        return lower_tensor_lists(graph_def, input_map, weights)
    library = {f.signature.name: f for f in graph_def.library.function}
    kept = {split_ref(k)[0] for k in keep}
    budget = MAX_UNROLLED_NODES
    current = GraphDef()
    current.CopyFrom(graph_def)  # rewired in place below: the reference run keeps the original
    nesting = 0
    runtime: set[str] = set()  # loops whose condition reads the data: kept, converted as run-time loops
    while nesting < MAX_NESTING:
        graph = Graph(current, input_map, weights)
        by_name = {n.name: n for n in current.node}
        data = input_dependent(by_name)
        for node in current.node:
            if node.op in WHILE_OPS and node.name not in runtime and _reads_data(_Loop(node, library, graph)):
                _refuse_lists(node, library, lambda ref, data=data: split_ref(ref)[0] in data, label,
                              lambda ref, nodes=by_name: input_ancestors(nodes, ref))
                runtime.add(node.name)
        loops = [n for n in current.node if n.op in WHILE_OPS and n.name not in runtime]
        if not loops:
            return lower_tensor_lists(current, input_map, weights)
        taken = _scopes(n.name for n in current.node)
        added, returns, sequence_lists = [], {}, set()
        deferred = _fed_by_loops(by_name, loops)  # next round, when their input's shape is known
        for node in loops:
            if node.name in deferred:
                continue
            loop = _Loop(node, library, graph)
            steps, after = _trajectory(loop, library, budget, lambda ref, data=data: split_ref(ref)[0] in data, label,
                                       lambda ref, nodes=by_name: input_ancestors(nodes, ref))
            raised = raise_loop(loop, library, graph, steps, after, by_name)
            if raised is not None:
                nodes, finals = raised.nodes, raised.finals
                sequence_lists.add(raised.sequence_list)
                if notes is not None:
                    notes.append(raised.note)
            else:
                nodes, finals = _unroll(loop, library, steps, after, taken)
            budget -= len(nodes)
            added.extend(nodes)
            if node.name in kept:
                added.append(_forwarder(node, finals))
            returns[node.name] = finals
        remaining = [n for n in current.node if n.op not in WHILE_OPS or n.name in deferred | runtime] + added
        rewire(remaining, {name: finals for name, finals in returns.items() if name not in kept})
        remaining = stack_sequences(remaining, sequence_lists)
        unrolled = GraphDef()
        unrolled.library.CopyFrom(current.library)
        unrolled.versions.CopyFrom(current.versions)
        unrolled.node.extend(remaining)
        current = inline_calls(unrolled, keep=keep)
        nesting += not deferred  # a round of chained loops (stacked RNN layers) is not a nesting level
    raise _refuse(next(n for n in current.node if n.op in WHILE_OPS),
                  f"its loops nest deeper than {MAX_NESTING} levels; convert a simpler model")
