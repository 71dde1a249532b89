"""A mutable view of a GraphDef for the training -> inference passes: nodes by name, tensor
references, consumers, a topological order that follows control edges too, and a small numpy
evaluator for the scalar constants that decide control flow (tfgraph's, no TF session involved)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from tf_convert.convert.ir.lazy import is_lazy
from tf_convert.parsers.common.order import topological

from ..graphio import split_ref
from ..protos import AttrValue, TensorProto
from ..tensors import dtype_enum, read_const, to_proto
from ..tfgraph import FOLDS, NodeAttrs
from ..tfgraph.fold import cast_to
from ..tfgraph.shapes import out_dtypes


def tensor_ref(node: str, index: int) -> str:
    return node if index == 0 else f"{node}:{index}"


def canonical(ref: str) -> str:
    node, index, control = split_ref(ref)
    return f"^{node}" if control else f"{node}:{index}"


class GraphView:
    def __init__(self, graph_def: Any):
        self.graph_def = graph_def
        self.nodes: dict[str, Any] = {n.name: n for n in graph_def.node}

    # ---- structure ---------------------------------------------------------------------------
    def node(self, name: str) -> Any:
        return self.nodes[name]

    def data_inputs(self, node: Any) -> list[tuple[str, int]]:
        return [(n, i) for n, i, c in map(split_ref, node.input) if not c]

    def consumers(self) -> dict[str, list[Any]]:
        """node name -> nodes that take one of its outputs (data or control)."""
        result: dict[str, list[Any]] = {}
        for n in self.graph_def.node:
            for ref in n.input:
                result.setdefault(split_ref(ref)[0], []).append(n)
        return result

    def order(self) -> list[str]:
        """Names with every input (data and control) first; names of missing nodes skipped."""
        return topological(self.nodes, lambda node: [split_ref(r)[0] for r in node.input])

    def ancestors(self, names: Iterable[str], stop: set[str] = frozenset(), control: bool = True) -> set[str]:
        seen: set[str] = set()
        stack = list(names)
        while stack:
            name = stack.pop()
            if name in seen or name not in self.nodes:
                continue
            seen.add(name)
            if name in stop:
                continue
            for ref in self.nodes[name].input:
                node, _, is_control = split_ref(ref)
                if control or not is_control:
                    stack.append(node)
        return seen

    # ---- editing -----------------------------------------------------------------------------
    def remove(self, names: set[str]) -> None:
        """Drop nodes and every control edge to them (data edges to them must be gone already)."""
        keep = [n for n in self.graph_def.node if n.name not in names]
        for n in keep:
            refs = [r for r in n.input if not (r.startswith("^") and r[1:] in names)]
            if len(refs) != len(n.input):
                del n.input[:]
                n.input.extend(refs)
        del self.graph_def.node[:]
        self.graph_def.node.extend(keep)
        self.nodes = {n.name: n for n in self.graph_def.node}

    def rewire(self, old: str, new: str) -> None:
        """Every data use of tensor `old` ('n:k') now reads `new`."""
        self.rewire_many({old: new})

    def rewire_many(self, mapping: dict[str, str]) -> None:
        """Every data use of each tensor `old` now reads `mapping[old]`, in one sweep."""
        wanted = {canonical(old): new for old, new in mapping.items()}
        names = {split_ref(old)[0] for old in wanted}
        for n in self.graph_def.node:
            for k, ref in enumerate(n.input):
                if not ref.startswith("^") and split_ref(ref)[0] in names and canonical(ref) in wanted:
                    n.input[k] = wanted[canonical(ref)]

    def add(self, name: str, op: str, inputs: list[str] = (), **attrs: Any) -> Any:
        node = self.graph_def.node.add()
        node.name, node.op = name, op
        node.input.extend(inputs)
        for key, value in attrs.items():
            node.attr[key].CopyFrom(value)
        self.nodes[name] = node
        return node

    def unique(self, base: str) -> str:
        name, k = base, 1
        while name in self.nodes:
            name, k = f"{base}_{k}", k + 1
        return name


# ---- constants ---------------------------------------------------------------------------------

# A PlaceholderWithDefault is a value the user may feed (flags.py decides scalar flags): not a constant.
_NOT_CONSTANT = {"PlaceholderWithDefault"}


def const_value(view: GraphView, ref: str, depth: int = 0) -> np.ndarray | None:
    """The value of tensor `ref` when it follows from Const nodes by ops with a numpy evaluator
    (tfgraph.fold, the same the parser folds constants with), else None."""
    name, index, _ = split_ref(ref)
    node = view.nodes.get(name)
    if node is None or depth > 32:
        return None
    if node.op == "Const":
        return read_const(node) if index == 0 else None
    fold = FOLDS.get(node.op)
    if fold is None or node.op in _NOT_CONSTANT:
        return None
    values = [const_value(view, tensor_ref(n, i), depth + 1) for n, i in view.data_inputs(node)]
    if any(v is None for v in values):
        return None
    op = NodeAttrs(node)
    try:
        result = fold(op, *values)
    except Exception:  # noqa: BLE001 - not a constant we can compute: the caller keeps the node
        return None
    results = result if isinstance(result, (list, tuple)) else [result]
    if index >= len(results):
        return None
    dtypes = out_dtypes(op)
    return np.asarray(cast_to(results[index], dtypes[index] if index < len(dtypes) else None))


def make_const(view: GraphView, name: str, value: Any, inputs: list[str] = ()) -> Any:
    """Replace (or add) node `name` with a Const holding `value`. A lazy value (convert.ir.lazy) is not
    copied in: the Const gets its dtype and shape only, and the value is kept beside the GraphDef
    (Frozen.weights), so the GraphDef stays small whatever the model's size."""

    if not is_lazy(value):
        value = np.asarray(value)
    node = view.nodes.get(name)
    if node is None:
        node = view.add(name, "Const")
    node.op = "Const"
    del node.input[:]
    node.input.extend(inputs)
    node.attr.clear()
    node.attr["dtype"].CopyFrom(AttrValue(type=dtype_enum(value.dtype)))
    if is_lazy(value):
        proto = TensorProto(dtype=dtype_enum(value.dtype))
        for d in value.shape:
            proto.tensor_shape.dim.add(size=int(d))
        node.attr["value"].CopyFrom(AttrValue(tensor=proto))
    else:
        node.attr["value"].CopyFrom(AttrValue(tensor=to_proto(value)))
    return node
