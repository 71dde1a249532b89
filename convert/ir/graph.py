"""The IR's data structures: tensors, nodes and the graph (queries, building, pruning, validation).
The conventions they follow are in the package doc (`convert/ir/__init__.py`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .ops import OPS

# graph.metadata key: source op type -> how the parser lowered it to IR ops (a target refusing one of those
# nodes names the source op and the lowering, not only the IR op)
LOWERINGS = "lowerings"


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"


@dataclass
class Node:
    name: str
    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    params: dict[str, np.ndarray] = field(default_factory=dict)
    source_op: str = ""  # the source framework's op type(s), for messages and `inspect`

    @property
    def output(self) -> str:
        return self.outputs[0]


@dataclass
class Graph:
    name: str
    nodes: list[Node] = field(default_factory=list)
    tensors: dict[str, Tensor] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    # IR tensor name -> the source framework's tensor name (e.g. "input:0")
    source_names: dict[str, str] = field(default_factory=dict)
    # IR tensor name -> layout of that tensor in the source ("NHWC", "NCHW" or "" for other ranks)
    source_layouts: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    # ---- queries ---------------------------------------------------------------------------
    def shape(self, tensor: str) -> tuple[int, ...]:
        return self.tensors[tensor].shape

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    def data_dependent_length(self, tensor: str) -> int | None:
        """The longest `tensor` can be along axis 0 when its length there depends on the data (the output of
        a catalog op flagged `data_dependent`, through identities), else None."""
        producers = {out: node for node in self.nodes for out in node.outputs}
        node = producers.get(tensor)
        while node is not None and node.op == "identity":
            node = producers.get(node.inputs[0])
        if node is None or not OPS[node.op].data_dependent:
            return None
        return self.shape(node.output)[0]

    # ---- building --------------------------------------------------------------------------
    def add_tensor(self, name: str, shape: Iterable[int], dtype: str = "float32") -> str:
        self.tensors[name] = Tensor(name, tuple(int(d) for d in shape), dtype)
        return name

    def add_node(
        self,
        op: str,
        name: str,
        inputs: list[str],
        out_shape: Iterable[int],
        attrs: dict[str, Any] | None = None,
        params: dict[str, np.ndarray] | None = None,
        source_op: str = "",
        out_dtype: str | None = None,
    ) -> str:
        """Append a single-output node; its output tensor is named after the node. Its dtype is
        `out_dtype`, by default its first input's (float32 for a node without inputs)."""
        if op not in OPS:
            raise ValueError(f"unknown IR op {op!r}")
        if out_dtype is None:
            first = self.tensors.get(inputs[0]) if inputs else None
            out_dtype = first.dtype if first is not None else "float32"
        out = name
        self.add_tensor(out, out_shape, out_dtype)
        self.nodes.append(
            Node(name, op, list(inputs), [out], dict(attrs or {}), dict(params or {}), source_op)
        )
        return out

    def unique_name(self, base: str) -> str:
        taken = set(self.tensors) | {n.name for n in self.nodes}
        if base not in taken:
            return base
        i = 1
        while f"{base}_{i}" in taken:
            i += 1
        return f"{base}_{i}"

    def prune(self) -> None:
        """Drop nodes and tensors that no graph output depends on."""
        producers = {out: node for node in self.nodes for out in node.outputs}  # one pass, O(n)
        live: set[str] = set()
        stack = list(self.outputs)
        while stack:
            t = stack.pop()
            if t in live:
                continue
            live.add(t)
            node = producers.get(t)
            if node is not None:
                stack.extend(node.inputs)
        self.nodes = [n for n in self.nodes if any(o in live for o in n.outputs)]
        keep = live | set(self.inputs)
        self.tensors = {k: v for k, v in self.tensors.items() if k in keep}

    def rename_tensor(self, old: str, new: str) -> None:
        """Make every consumer (and the graph outputs) read `new` instead of `old`."""
        for node in self.nodes:
            node.inputs = [new if i == old else i for i in node.inputs]
        self.outputs = [new if o == old else o for o in self.outputs]

    def validate(self) -> None:
        """Topological order, known ops, every tensor declared."""
        known = set(self.inputs)
        for node in self.nodes:
            if node.op not in OPS:
                raise ValueError(f"node {node.name}: unknown IR op {node.op!r}")
            for i in node.inputs:
                if i not in known:
                    raise ValueError(f"node {node.name}: input {i!r} is not produced before it")
            for o in node.outputs:
                if o not in self.tensors:
                    raise ValueError(f"node {node.name}: output {o!r} has no tensor entry")
                known.add(o)
        for o in self.outputs:
            if o not in known:
                raise ValueError(f"graph output {o!r} is not produced")
