"""The graph index: producer and reader maps of a graph, kept up to date by the rewrites that change it.
The one way to ask "who produces t" and "who reads t" (Graph itself keeps no second, linear one).

Passes look up "who produces t" and "who reads t" many times per node; rebuilding those maps per
query made the passes quadratic in graph size. A `GraphIndex` builds them once and every rewrite
goes through its methods, which update them in place. Removed nodes are only marked; they leave
`graph.nodes` at `flush()` (the pass runner flushes after every pass), so removal is O(1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from .graph import Graph, Node


class GraphIndex:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.rebuild()

    # ---- building and checking ---------------------------------------------------------------
    def rebuild(self) -> None:
        """Drop pending removals and index the graph from scratch (after a bulk change like prune)."""
        self._dead: set[int] = set()
        self.flush()
        self._producer, self._readers = _build_maps(self.graph.nodes)

    def flush(self) -> None:
        """Apply pending node removals to `graph.nodes`."""
        if self._dead:
            self.graph.nodes = [n for n in self.graph.nodes if id(n) not in self._dead]
            self._dead.clear()

    def verify(self) -> None:
        """Raise ValueError if the maps differ from ones rebuilt from the graph (a rewrite bypassed us)."""
        live = [n for n in self.graph.nodes if id(n) not in self._dead]
        producer, readers = _build_maps(live)
        if {t: id(n) for t, n in producer.items()} != {t: id(n) for t, n in self._producer.items()}:
            raise ValueError("the producer index is stale (a node's outputs changed outside GraphIndex)")
        if _reader_ids(readers) != _reader_ids(self._readers):
            raise ValueError("the reader index is stale (a node's inputs changed outside GraphIndex)")

    # ---- queries --------------------------------------------------------------------------------
    def alive(self, node: Node) -> bool:
        return id(node) not in self._dead

    def producer(self, tensor: str) -> Node | None:
        return self._producer.get(tensor)

    def readers(self, tensor: str) -> list[Node]:
        """The nodes reading `tensor`, once per input slot (a node reading it twice appears twice)."""
        return list(self._readers.get(tensor, ()))

    def readers_through(self, tensor: str, through: Callable[[Node, str], bool]) -> Iterator[tuple[str, Node]]:
        """(t, reader of t) for `tensor` and every tensor reached from it through readers that `through(reader, t)`
        accepts (casts, reshapes...): what an input's values become before something uses them."""
        stack, seen = [tensor], set()
        while stack:
            t = stack.pop()
            if t in seen:
                continue
            seen.add(t)
            for node in self.readers(t):
                yield t, node
                if through(node, t):
                    stack.append(node.output)

    def single_reader(self, tensor: str) -> Node | None:
        """The only node reading `tensor`, if exactly one does and it is not a graph output."""
        if tensor in self.graph.outputs:
            return None
        users = self._readers.get(tensor, ())
        return users[0] if len(users) == 1 else None

    def const_value(self, tensor: str) -> np.ndarray | None:
        """The value of `tensor` if a `const` node produces it, else None."""
        node = self._producer.get(tensor)
        if node is not None and node.op == "const":
            return node.params["value"]
        return None

    def prune(self) -> None:
        """Drop dead nodes (`Graph.prune`) and re-index."""
        self.flush()
        self.graph.prune()
        self.rebuild()

    def unique_name(self, base: str) -> str:
        self.flush()
        return self.graph.unique_name(base)

    # ---- rewrites -------------------------------------------------------------------------------
    def set_inputs(self, node: Node, inputs: list[str]) -> None:
        for name in node.inputs:
            _discard(self._readers[name], node)
        node.inputs = list(inputs)
        for name in node.inputs:
            self._readers.setdefault(name, []).append(node)

    def set_outputs(self, node: Node, outputs: list[str]) -> None:
        for name in node.outputs:
            if self._producer.get(name) is node:
                del self._producer[name]
        node.outputs = list(outputs)
        for name in node.outputs:
            self._producer[name] = node

    def remove_node(self, node: Node) -> None:
        """Take `node` out of the graph. It keeps its inputs and outputs (callers still read them);
        its output tensors stay declared (callers drop or reuse them)."""
        for name in node.inputs:
            _discard(self._readers[name], node)
        for name in node.outputs:
            if self._producer.get(name) is node:
                del self._producer[name]
        self._dead.add(id(node))

    def rename_tensor(self, old: str, new: str) -> None:
        """Every reader of `old` (and the graph outputs) reads `new` instead."""
        for node in list({id(n): n for n in self._readers.get(old, ())}.values()):
            self.set_inputs(node, [new if i == old else i for i in node.inputs])
        self.graph.outputs = [new if o == old else o for o in self.graph.outputs]

    def move_after(self, node: Node, anchor: Node) -> None:
        """Put `node` right after `anchor` in the node order (rare: O(n))."""
        self.flush()
        nodes = self.graph.nodes
        nodes.pop(_position(nodes, node))
        nodes.insert(_position(nodes, anchor) + 1, node)

    def bypass(self, node: Node, source: str) -> None:
        """Remove `node`; its readers read `source` instead."""
        self.remove_node(node)
        self.rename_tensor(node.output, source)
        self.graph.tensors.pop(node.output, None)

    def remove_after(self, keep: Node, gone: Node) -> None:
        """Drop `gone` (the only reader of `keep`'s output). `keep` keeps its name (the layer name)
        unless `gone` produced a graph output: then `keep` takes over that name, so outputs keep theirs."""
        graph = self.graph
        self.remove_node(gone)
        if gone.output in graph.outputs:
            old = keep.output
            self.set_outputs(keep, [gone.output])
            keep.name = gone.name
            graph.tensors.pop(old, None)
            return
        self.rename_tensor(gone.output, keep.output)
        graph.tensors.pop(gone.output, None)


def _position(nodes: list[Node], node: Node) -> int:
    """Index of `node` itself (nodes are dataclasses: `list.index` would compare fields)."""
    return next(i for i, n in enumerate(nodes) if n is node)


def _discard(readers: list[Node], node: Node) -> None:
    """Remove one occurrence of `node` itself from `readers`."""
    del readers[_position(readers, node)]


def _reader_ids(readers: dict[str, list[Node]]) -> dict[str, list[int]]:
    return {t: sorted(id(n) for n in ns) for t, ns in readers.items() if ns}


def _build_maps(nodes: list[Node]) -> tuple[dict[str, Node], dict[str, list[Node]]]:
    producer: dict[str, Node] = {}
    readers: dict[str, list[Node]] = {}
    for node in nodes:
        for out in node.outputs:
            producer[out] = node
        for name in node.inputs:
            readers.setdefault(name, []).append(node)
    return producer, readers
