"""Choosing a GraphDef's inputs and outputs: the user's names, checked, or auto-detected ones.

Works on the GraphDef proto only (no session), so checkpoints can name their outputs before
their variables are frozen.
"""

from __future__ import annotations

import difflib
from typing import Any

from tf_convert.convert.errors import UsageError
from tf_convert.parsers.common.order import topological

# Nodes that are never model outputs: bookkeeping of savers, initialisers and training.
_NOT_OUTPUT_OPS = {
    "NoOp", "Assert", "SaveV2", "SaveSlices", "RestoreV2", "MergeV2Checkpoints", "Assign",
    "AssignVariableOp", "AssignAdd", "AssignSub", "AssignAddVariableOp", "AssignSubVariableOp",
    "VarIsInitializedOp", "IsVariableInitialized", "Print", "PrintV2", "StringJoin",
    "ShardedFilename", "Const", "Placeholder", "PlaceholderWithDefault", "VariableV2",
    "VarHandleOp", "ReadVariableOp", "Shape", "ShapeN", "Size", "Rank",
}
_NOT_OUTPUT_SCOPES = ("save/", "gradients/", "training/", "train/", "report_uninitialized")


def tensor_name(name: str) -> str:
    """'x' -> 'x:0'; 'x:1' unchanged; '^x' and leading '/' tolerated."""
    name = name.strip().lstrip("^")
    if ":" in name and name.rsplit(":", 1)[1].isdigit():
        return name
    return f"{name}:0"


def node_of(tensor: str) -> str:
    return tensor.rsplit(":", 1)[0]


def _inputs_of(node: Any) -> list[str]:
    """Data inputs (control inputs '^x' are not data dependencies)."""
    return [node_of(tensor_name(i)) for i in node.input if not i.startswith("^")]


def _skipped(name: str) -> bool:
    return any(name.startswith(s) or f"/{s}" in name for s in _NOT_OUTPUT_SCOPES)


def find_placeholders(graph_def: Any) -> list[str]:
    return [
        f"{n.name}:0"
        for n in graph_def.node
        if n.op == "Placeholder" and not _skipped(n.name)
    ]


def find_sinks(graph_def: Any, inputs: list[str]) -> list[str]:
    """Nodes that depend on an input and feed nothing that does: the inference graph's ends."""
    nodes = {n.name: n for n in graph_def.node}
    order = topological(nodes, _inputs_of)  # data inputs first (GraphDefs need not be sorted)
    dependent = {node_of(t) for t in inputs}
    for name in order:
        if any(i in dependent for i in _inputs_of(nodes[name])):
            dependent.add(name)
    consumed: set[str] = set()
    for name in dependent:
        node = nodes.get(name)
        if node is None or node.op in _NOT_OUTPUT_OPS or _skipped(name):
            continue
        consumed.update(i for i in _inputs_of(node) if i in dependent)
    sinks = [
        n for n in order
        if n in dependent and n not in consumed and nodes[n].op not in _NOT_OUTPUT_OPS
        and not _skipped(n) and _is_float(nodes[n])
    ]
    return [f"{n}:0" for n in sinks]


def _is_float(node: Any) -> bool:
    attr = node.attr.get("T") or node.attr.get("dtype")
    return attr is None or attr.type in (1, 2, 19)  # DT_FLOAT, DT_DOUBLE, DT_HALF


def check_names(graph_def: Any, names: list[str], what: str) -> list[str]:
    """Normalise user tensor names; a name not in the graph -> UsageError with close matches."""
    nodes = {n.name: n for n in graph_def.node}
    result = []
    for raw in names:
        t = tensor_name(raw)
        if node_of(t) not in nodes:
            close = difflib.get_close_matches(node_of(t), list(nodes), n=5, cutoff=0.5)
            hint = f"; close matches: {', '.join(close)}" if close else ""
            placeholders = [n.name for n in graph_def.node if n.op == "Placeholder"]
            if not close and what == "inputs" and placeholders:
                hint = f"; the graph's placeholders: {', '.join(placeholders[:10])}"
            raise UsageError(f"--{what} {raw!r}: no node of that name in the graph{hint}")
        result.append(t)
    return result


def choose_io(
    graph_def: Any,
    inputs: list[str] | None,
    outputs: list[str] | None,
    notes: list[str],
    default_inputs: list[str] | None = None,
    default_outputs: list[str] | None = None,
) -> tuple[list[str], list[str]]:
    """The input and output tensor names; records in `notes` what was auto-chosen."""
    if inputs:
        ins = check_names(graph_def, inputs, "inputs")
    else:
        ins = default_inputs or find_placeholders(graph_def)
        if not ins:
            raise UsageError("no Placeholder found in the graph; name the input with --inputs")
        notes.append(f"inputs auto-detected: {', '.join(ins)}")
    if outputs:
        outs = check_names(graph_def, outputs, "outputs")
    else:
        outs = default_outputs or find_sinks(graph_def, ins)
        if not outs:
            raise UsageError("could not find the graph's outputs; name them with --outputs")
        notes.append(f"outputs auto-detected: {', '.join(outs)}")
    return ins, outs


def split_ref(ref: str) -> tuple[str, int, bool]:
    """'^a' -> ('a', -1, True); 'a' -> ('a', 0, False); 'a:2' -> ('a', 2, False)."""
    if ref.startswith("^"):
        return ref[1:], -1, True
    node, _, index = ref.partition(":")
    return node, int(index) if index.isdigit() else 0, False
