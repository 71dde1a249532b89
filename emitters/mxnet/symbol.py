"""Building MXNet symbol graphs as plain data and writing `model-symbol.json` without MXNet.

Handlers return a `Fragment` (the symbol nodes and parameter values for one IR node); the emitter
appends fragments to a `SymbolGraph`, which writes the JSON MXNet 1.9.1 itself writes: `nodes`
(`op`, `name`, string `attrs`, `inputs` as [node, output, version]), `arg_nodes`, `node_row_ptr`,
`heads` and `attrs.mxnet_version`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tf_convert.convert.ir.lazy import is_lazy
from tf_convert.convert.progress import SILENT, Progress

from . import params as params_io

MXNET_VERSION = 10901
# ops whose node has more outputs than the one we read (matters for node_row_ptr only)
NUM_OUTPUTS = {"BatchNorm": 3, "LayerNorm": 3}


@dataclass(frozen=True)
class Ref:
    """Output `index` of the symbol node called `node`."""

    node: str
    index: int = 0


@dataclass
class SymNode:
    op: str  # "null" for a variable (graph input or parameter)
    name: str
    inputs: list[Ref] = field(default_factory=list)
    attrs: dict[str, str] = field(default_factory=dict)


def attr_str(value: Any) -> str:
    """MXNet's attribute spelling: tuples as '(1, 2)', bools as 'True', floats via repr."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(attr_str(v) for v in value) + ")"
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return str(value)


# MXNet's dtype flags (mshadow), for the `__dtype__` of graph inputs
DTYPE_FLAGS = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5, "int64": 6, "bool": 7}
MASK = "float32"  # MXNet 1.x ops compute masks as numbers: an IR bool tensor is a 0/1 float32 one inside


def symbol_dtype(ir_dtype: str) -> str:
    """The dtype an IR tensor has inside the symbol: integers as they are, bool as a 0/1 mask, floats float32."""
    return ir_dtype if ir_dtype in ("int32", "int64", "int8", "uint8") else MASK


def safe_name(name: str) -> str:
    """TF scope names ('block1/conv:0') as MXNet-friendly identifiers."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name) or "node"


@dataclass
class Fragment:
    """The symbol nodes and parameters one IR node lowers to. `output` is what consumers read."""

    nodes: list[SymNode] = field(default_factory=list)
    params: dict[str, np.ndarray] = field(default_factory=dict)
    aux: set[str] = field(default_factory=set)
    pad_layers: list[dict[str, Any]] = field(default_factory=list)
    output: Ref | None = None
    # other nodes' outputs this fragment computes too (the other outputs of one conditional): the emitter lowers
    # nothing for those nodes
    computes: dict[str, Ref] = field(default_factory=dict)

    def var(self, name: str, value: np.ndarray, dtype: str = "float32", aux: bool = False) -> Ref:
        value = value.astype(dtype) if is_lazy(value) else np.asarray(value, dtype=dtype)
        if value.ndim == 0:
            value = value.reshape(1)
        # __shape__ lets shape inference type parameters it cannot infer (broadcast operands)
        # __dtype__: type inference cannot always tell (a constant that is a graph output)
        attrs = {"__shape__": attr_str(value.shape), "__dtype__": str(DTYPE_FLAGS[dtype])}
        self.nodes.append(SymNode("null", name, [], attrs))
        self.params[name] = value
        if aux:
            self.aux.add(name)
        return Ref(name)

    def op(self, op: str, name: str, inputs: list[Ref], **attrs: Any) -> Ref:
        self.nodes.append(SymNode(op, name, list(inputs), {k: attr_str(v) for k, v in attrs.items()}))
        self.output = Ref(name)
        return self.output


class SymbolGraph:
    """Accumulates fragments; writes the symbol JSON and the parameter dict."""

    def __init__(self) -> None:
        self.nodes: list[SymNode] = []
        self.params: dict[str, np.ndarray] = {}
        self.aux: set[str] = set()
        self._names: set[str] = set()

    def taken(self, name: str) -> bool:
        return name in self._names

    def add_input(self, name: str, attrs: dict[str, str] | None = None) -> Ref:
        self._add(SymNode("null", name, [], dict(attrs or {})))
        return Ref(name)

    def add(self, fragment: Fragment) -> None:
        for node in fragment.nodes:
            self._add(node)
        self.params.update(fragment.params)
        self.aux |= fragment.aux

    def _add(self, node: SymNode) -> None:
        if node.name in self._names:
            raise ValueError(f"two MXNet symbol nodes named {node.name!r}")
        self._names.add(node.name)
        self.nodes.append(node)

    def _live(self, heads: list[Ref]) -> list[SymNode]:
        by_name = {n.name: n for n in self.nodes}
        live: set[str] = set()
        stack = [h.node for h in heads]
        while stack:
            name = stack.pop()
            if name not in live:
                live.add(name)
                stack.extend(r.node for r in by_name[name].inputs)
        # graph inputs stay even when unused, so the runner sees every declared input
        return [n for n in self.nodes if n.name in live or (n.op == "null" and n.name not in self.params)]

    def to_json(self, heads: list[Ref]) -> dict[str, Any]:
        nodes = self._live(heads)
        index = {n.name: i for i, n in enumerate(nodes)}
        aux_index = {index[n] for n in self.aux if n in index}
        json_nodes, row_ptr = [], [0]
        for node in nodes:
            entry: dict[str, Any] = {"op": node.op, "name": node.name}
            if node.attrs:
                entry["attrs"] = dict(node.attrs)
            # MXNet writes version 1 for inputs that the op mutates (BatchNorm's aux states)
            entry["inputs"] = [[index[r.node], r.index, int(index[r.node] in aux_index)] for r in node.inputs]
            json_nodes.append(entry)
            row_ptr.append(row_ptr[-1] + NUM_OUTPUTS.get(node.op, 1))
        return {
            "nodes": json_nodes,
            "arg_nodes": [i for i, n in enumerate(nodes) if n.op == "null"],
            "node_row_ptr": row_ptr,
            "heads": [[index[h.node], h.index, 0] for h in heads],
            "attrs": {"mxnet_version": ["int", MXNET_VERSION]},
        }

    def live_params(self, heads: list[Ref]) -> dict[str, np.ndarray]:
        """`arg:`/`aux:`-prefixed parameters the written symbol uses, in node order."""
        out = {}
        for node in self._live(heads):
            if node.name in self.params:
                prefix = "aux:" if node.name in self.aux else "arg:"
                out[prefix + node.name] = self.params[node.name]
        return out

    def write(self, heads: list[Ref], symbol_path, params_path, progress: Progress = SILENT) -> None:
        with open(symbol_path, "w") as f:
            json.dump(self.to_json(heads), f, indent=2)
        params_io.save(params_path, self.live_params(heads), progress)
