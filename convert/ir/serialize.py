"""Save and load an IR graph: `graph.json` (structure) plus `weights.npz` (parameters)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from .graph import Graph, Node, Tensor
from .lazy import is_lazy

IR_VERSION = 1


def _jsonable(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)  # "inf" / "-inf" survive JSON this way
    return value


def save(graph: Graph, directory: str | Path) -> None:
    """Write `graph.json` (structure) and `weights.npz` (parameters) into `directory`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    nodes = []
    for index, node in enumerate(graph.nodes):
        keys = {}
        for pname, value in node.params.items():
            key = f"{index}/{pname}"
            arrays[key] = value if is_lazy(value) else np.asarray(value)  # np.savez reads them one at a time
            keys[pname] = key
        nodes.append(
            {
                "name": node.name,
                "op": node.op,
                "inputs": node.inputs,
                "outputs": node.outputs,
                "attrs": {k: _jsonable(v) for k, v in node.attrs.items()},
                "params": keys,
                "source_op": node.source_op,
            }
        )
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


def _restore(value: Any) -> Any:
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
    for name, t in doc["tensors"].items():
        graph.tensors[name] = Tensor(name, tuple(t["shape"]), t["dtype"])
    for n in doc["nodes"]:
        graph.nodes.append(
            Node(
                n["name"],
                n["op"],
                list(n["inputs"]),
                list(n["outputs"]),
                {k: _restore(v) for k, v in n["attrs"].items()},
                {k: arrays[key] for k, key in n["params"].items()},
                n.get("source_op", ""),
            )
        )
    return graph
