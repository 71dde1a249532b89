"""What bounds a TF While loop: one whose trip count the data decides is never unrolled (no fixed graph
computes it; ops/control.py converts it to a run-time loop, and its refusals say what bounds it);
unroll.py unrolls the others.

A functional While takes its loop variables as inputs; its `cond` function reads some of them and
its `body` returns the next value of each. A variable depends on the data when its first value
does (an input-dependent tensor) or when the body computes its next value from a variable that
does (fixpoint). The trip count depends on the data when `cond` reads such a variable.
"""

from __future__ import annotations

from typing import Any, Callable

from .safety import INPUT_OPS, LOOP_HINT
from .tfgraph.fold import SHAPE_OPS


def _name(ref: str) -> str:
    return ref.lstrip("^").split(":")[0]


def args_read(fdef: Any, refs: list[str]) -> set[str]:
    """The argument names of `fdef` that the tensors `refs` (inside it) are computed from."""
    args = {a.name for a in fdef.signature.input_arg}
    nodes = {n.name: n for n in fdef.node_def}
    found, seen, stack = set(), set(), [_name(r) for r in refs]
    while stack:
        name = stack.pop()
        if name in args:
            found.add(name)
        elif name in nodes and name not in seen:
            seen.add(name)
            stack.extend(_name(i) for i in nodes[name].input)
    return found


def returned_refs(fdef: Any) -> list[str]:
    return [fdef.ret[out.name] for out in fdef.signature.output_arg if out.name in fdef.ret]


def data_dependent_bounds(node: Any, inputs: list[str], library: dict[str, Any],
                          is_data: Callable[[str], bool]) -> list[str] | None:
    """The inputs of While `node` (its NodeDef; `inputs` its data input tensors) that make its trip
    count depend on the data ([] when none does; `is_data(tensor)` says whether a tensor depends on
    an input's values), or None when its functions are not in `library` (nothing can be said)."""
    cond = library.get(node.attr["cond"].func.name)
    body = library.get(node.attr["body"].func.name)
    if cond is None or body is None:
        return None
    names = [a.name for a in body.signature.input_arg]
    cond_names = [a.name for a in cond.signature.input_arg]
    if len(names) != len(inputs) or len(cond_names) != len(inputs):
        return None
    data = {i for i, t in enumerate(inputs) if is_data(t)}
    feeds = [{names.index(a) for a in args_read(body, [ref])} for ref in returned_refs(body)]
    changed = len(feeds) == len(inputs)
    while changed:
        changed = False
        for i, sources in enumerate(feeds):
            if i not in data and sources & data:
                data.add(i)
                changed = True
    read = {cond_names.index(a) for a in args_read(cond, returned_refs(cond))}
    return [inputs[i] for i in sorted(read & data)]


def loop_hint(node: Any, inputs: list[str], library: dict[str, Any], is_data: Callable[[str], bool],
              label: Callable[[str], str] = str, origins: Callable[[str], list[str]] | None = None) -> str:
    """The refusal of loop node `node` (a NodeDef): by what its trip count depends on where that can
    be told. `label` names a tensor as the user knows it (an input by its --inputs name); `origins`
    gives the inputs a tensor is computed from (dynamic_rnn's bound from its `sequence_length`)."""
    if node.op not in ("While", "StatelessWhile", "_While"):
        return LOOP_HINT
    bounds = data_dependent_bounds(node, inputs, library, is_data)
    if not bounds:
        return LOOP_HINT
    reads = ", ".join(repr(label(b)) + _computed_from(b, origins) for b in bounds)
    return (f"a While loop whose trip count depends on the data (its condition reads {reads}): not convertible, "
            "make the number of steps a constant")


def _computed_from(tensor: str, origins: Callable[[str], list[str]] | None) -> str:
    sources = [s for s in (origins(tensor) if origins else []) if s != tensor.split(":")[0]]
    return f" (computed from input {', '.join(map(repr, sources))})" if sources else ""


def input_ancestors(nodes: dict[str, Any], tensor: str) -> list[str]:
    """The placeholders (node names) that GraphDef tensor `tensor` is computed from."""
    found, seen, stack = [], set(), [_name(tensor)]
    while stack:
        name = stack.pop()
        if name in seen or name not in nodes:
            continue
        seen.add(name)
        if nodes[name].op in INPUT_OPS:
            found.append(name)
        stack.extend(_name(i) for i in nodes[name].input if not i.startswith("^"))
    return sorted(found)


def input_dependent(nodes: dict[str, Any]) -> set[str]:
    """Names of the GraphDef `nodes` whose values depend on a placeholder's values (Shape, Size and
    Rank do not: the input sizes are fixed when converting)."""
    consumers: dict[str, list[str]] = {}
    for name, node in nodes.items():
        for ref in node.input:
            if not ref.startswith("^"):
                consumers.setdefault(_name(ref), []).append(name)
    found: set[str] = set()
    stack = [n for n, node in nodes.items() if node.op in INPUT_OPS]
    while stack:
        name = stack.pop()
        if name in found or nodes[name].op in SHAPE_OPS:
            continue
        found.add(name)
        stack.extend(consumers.get(name, ()))
    return found
