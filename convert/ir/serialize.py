"""Save and load an IR graph: `graph.json` (structure) plus `weights.npz` (parameters)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from .graph import Graph, Node, Tensor
from .lazy import is_lazy
from .subgraph import Subgraph

SUBGRAPH_KEY = "subgraph"  # an attribute holding a nested graph (a loop body, a branch) is {"subgraph": ...}

IR_VERSION = 1


def _jsonable(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)  # "inf" / "-inf" survive JSON this way
    return value


def _nodes(graph: Graph, arrays: dict[str, np.ndarray], prefix: str = "") -> list[dict[str, Any]]:
    """The nodes as JSON; their parameters go to `arrays` under `<prefix><index>/<param>` (a nested graph's
    under its node's key and attribute, so keys never repeat)."""
    nodes = []
    for index, node in enumerate(graph.nodes):
        keys = {}
        for pname, value in node.params.items():
            key = f"{prefix}{index}/{pname}"
            arrays[key] = value if is_lazy(value) else np.asarray(value)  # np.savez reads them one at a time
            keys[pname] = key
        attrs = {k: {SUBGRAPH_KEY: _subgraph_doc(v, arrays, f"{prefix}{index}/{k}/")} if isinstance(v, Graph)
                 else _jsonable(v) for k, v in node.attrs.items()}
        nodes.append(
            {
                "name": node.name,
                "op": node.op,
                "inputs": node.inputs,
                "outputs": node.outputs,
                "attrs": attrs,
                "params": keys,
                "source_op": node.source_op,
            }
        )
    return nodes


def _subgraph_doc(graph: Graph, arrays: dict[str, np.ndarray], prefix: str) -> dict[str, Any]:
    """A nested graph (a loop body, a branch) as JSON: its structure, its nodes' parameters in `arrays`."""
    return {"inputs": graph.inputs, "outputs": graph.outputs,
            "tensors": {t.name: {"shape": list(t.shape), "dtype": t.dtype} for t in graph.tensors.values()},
            "nodes": _nodes(graph, arrays, prefix)}


def save(graph: Graph, directory: str | Path) -> None:
    """Write `graph.json` (structure) and `weights.npz` (parameters) into `directory`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    nodes = _nodes(graph, arrays)
    doc = {
        "ir_version": IR_VERSION,
        "name": graph.name,
        "inputs": graph.inputs,
        "outputs": graph.outputs,
        "tensors": {t.name: {"shape": list(t.shape), "dtype": t.dtype} for t in graph.tensors.values()},
        "source_names": graph.source_names,
        "source_layouts": graph.source_layouts,
        "metadata": _jsonable(graph.metadata),
        "nodes": nodes,
    }
    (directory / "graph.json").write_text(json.dumps(doc, indent=1))
    np.savez(directory / "weights.npz", **arrays)


def _restore(value: Any, arrays: dict[str, np.ndarray] | None = None) -> Any:
    if isinstance(value, dict) and SUBGRAPH_KEY in value:
        doc = value[SUBGRAPH_KEY]
        nested = Subgraph("", inputs=list(doc["inputs"]), outputs=list(doc["outputs"]))
        _fill(nested, doc, arrays or {})
        return nested
    if isinstance(value, list):
        return tuple(_restore(v) for v in value)
    if value in ("inf", "-inf", "nan"):
        return float(value)
    return value


def load(directory: str | Path) -> Graph:
    directory = Path(directory)
    doc = json.loads((directory / "graph.json").read_text())
    with np.load(directory / "weights.npz") as weights:
        arrays = {k: weights[k] for k in weights.files}
    graph = Graph(
        name=doc["name"],
        inputs=list(doc["inputs"]),
        outputs=list(doc["outputs"]),
        source_names=dict(doc.get("source_names", {})),
        source_layouts=dict(doc.get("source_layouts", {})),
        metadata=dict(doc.get("metadata", {})),
    )
    _fill(graph, doc, arrays)
    return graph


def _fill(graph: Graph, doc: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """`graph`'s tensors and nodes from `doc` (a saved graph or nested graph)."""
    for name, t in doc["tensors"].items():
        graph.tensors[name] = Tensor(name, tuple(t["shape"]), t["dtype"])
    for n in doc["nodes"]:
        graph.nodes.append(
            Node(
                n["name"],
                n["op"],
                list(n["inputs"]),
                list(n["outputs"]),
                {k: _restore(v, arrays) for k, v in n["attrs"].items()},
                {k: arrays[key] for k, key in n["params"].items()},
                n.get("source_op", ""),
            )
        )
