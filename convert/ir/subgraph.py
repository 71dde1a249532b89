"""Nested graphs: the condition and body of a `while_loop`, the branches of a `cond` (catalog rows).

A `Subgraph` is an IR graph held as a node attribute. Its `inputs` are bound, in order, to the node's
inputs (a loop: the loop variables, then the invariants it reads); its `outputs` are what it returns.
It compares by identity, so passes that compare attributes (common subexpressions) never walk two
bodies: the nodes of one loop share one Subgraph object. Passes leave bodies alone.

A control op's row returns one value (`output`): a loop read for k of its variables is k nodes of the same
op, nested graphs and inputs (`siblings`). The emitters write the first of them as one loop (one branch)
computing all k, and the others as the values it left.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .graph import Graph, Node, Tensor
from .index import GraphIndex

# the attributes of the control ops that hold nested graphs
SUBGRAPH_ATTRS = ("cond", "body", "then_branch", "else_branch")


@dataclass(eq=False)
class Subgraph(Graph):
    """An IR graph nested in a node (a loop body, a branch); equal only to itself."""

    def output_shapes(self) -> list[tuple[int, ...]]:
        return [self.shape(t) for t in self.outputs]

    def output_dtypes(self) -> list[str]:
        return [self.tensors[t].dtype for t in self.outputs]


def as_subgraph(graph: Graph) -> Subgraph:
    """`graph`'s contents as a Subgraph (the same nodes and tensors, not copied)."""
    return Subgraph(graph.name, graph.nodes, graph.tensors, graph.inputs, graph.outputs, graph.source_names,
                    graph.source_layouts, graph.metadata)


def subgraphs(node: Node) -> Iterator[tuple[str, Subgraph]]:
    """(attribute, nested graph) of a control node, in SUBGRAPH_ATTRS order."""
    for name in SUBGRAPH_ATTRS:
        value = node.attrs.get(name)
        if isinstance(value, Graph):
            yield name, value


def walk(graph: Graph) -> Iterator[Node]:
    """Every node of `graph` and of the graphs nested in it, depth first."""
    for node in graph.nodes:
        yield node
        for _, body in subgraphs(node):
            yield from walk(body)


def inputs_reaching(graph: Graph, tensors: list[str]) -> set[int]:
    """The positions in `graph.inputs` of the inputs that `tensors` are computed from."""
    producers = {out: node for node in graph.nodes for out in node.outputs}
    found, seen, stack = set(), set(), list(tensors)
    while stack:
        tensor = stack.pop()
        if tensor in seen:
            continue
        seen.add(tensor)
        if tensor in graph.inputs:
            found.add(graph.inputs.index(tensor))
        elif tensor in producers:
            stack.extend(producers[tensor].inputs)
    return found


def _same_control(a: Node, b: Node) -> bool:
    return a.op == b.op and a.inputs == b.inputs and all(
        a.attrs.get(name) is b.attrs.get(name) for name in SUBGRAPH_ATTRS) and a.attrs.get("carried") == b.attrs.get(
        "carried")


def siblings(index: GraphIndex, node: Node) -> list[Node]:
    """The nodes computing the outputs of `node`'s loop or conditional (itself included): the same op on the
    same inputs with the same nested graphs, differing only in `output`; in graph order, so the first one is
    where all of them are computed."""
    found = {id(n): n for n in index.readers(node.inputs[0]) if _same_control(n, node)} if node.inputs else {}
    found[id(node)] = node
    if len(found) == 1:
        return [node]
    return [n for n in index.graph.nodes if id(n) in found]


def branches_selected(graph: Graph, nodes: list[Node]) -> Graph:
    """The `cond` nodes of one conditional (`siblings`, the first one leading) as plain nodes, for a target
    without conditionals: both branches inlined on the operands (their tensors renamed `<node>/<branch>/<name>`)
    and per node a `select` of the branches' output `output` by the predicate. The same values: each is the taken
    branch's own, the other's are discarded, never mixed (only the cost differs: both branches run). Its inputs
    are the nodes' inputs, its outputs the nodes' outputs."""
    node = nodes[0]
    out = Graph(f"{node.name}/selected")
    out.inputs = list(dict.fromkeys(node.inputs))
    out.tensors = {t: graph.tensors[t] for t in out.inputs}
    picked: dict[str, list[str]] = {}
    for attr in ("then_branch", "else_branch"):
        branch, prefix = node.attrs[attr], f"{node.name}/{attr}/"
        renamed = dict(zip(branch.inputs, node.inputs[1:]))
        for name, tensor in branch.tensors.items():
            if name not in renamed:
                renamed[name] = prefix + name
                out.tensors[prefix + name] = Tensor(prefix + name, tensor.shape, tensor.dtype)
        out.nodes += [Node(prefix + n.name, n.op, [renamed[i] for i in n.inputs], [renamed[o] for o in n.outputs],
                           dict(n.attrs), dict(n.params), n.source_op) for n in branch.nodes]
        picked[attr] = [renamed[t] for t in branch.outputs]
    predicates: dict[int, str] = {}
    for reader in nodes:
        k, shape = int(reader.attrs["output"]), graph.shape(reader.output)
        if len(shape) not in predicates:
            ones = (1,) * len(shape)
            predicates[len(shape)] = out.add_node("reshape", f"{node.name}/predicate{len(shape)}", [node.inputs[0]],
                                                  ones, {"shape": ones}, source_op=node.source_op, out_dtype="bool")
        out.tensors[reader.output] = graph.tensors[reader.output]
        out.nodes.append(Node(f"{node.name}/select_{reader.output}", "select",
                              [predicates[len(shape)], picked["then_branch"][k], picked["else_branch"][k]],
                              [reader.output], source_op=node.source_op))
        out.outputs.append(reader.output)
    return out
