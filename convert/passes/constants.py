"""Constant folding: a node whose inputs are all constants becomes a constant, computed by the IR's
reference evaluator (so folding means exactly what the op means). So do nodes that read no value: one whose
output is empty (it holds no values, only its shape and dtype), and a reduction over an empty axis (TF's
identity of the reduction; the runtimes' kernels disagree on empties: onnxruntime's mean of nothing is 0,
torch's max of nothing an error). Such a value keeps the shape the converted size gives it: where its input's
sizes could follow the graph's inputs, the graph is pinned to the converted size (FIXED_SIZE_KEY)."""

from __future__ import annotations

import numpy as np

from ..ir import Node, evaluate_node, lazy
from ..ir.ops import FOLDABLE  # only cheap ops: the catalog's `foldable` flag says which, and why
from ..padding.sizes import FIXED_SIZE_KEY, size_flow
from .index import GraphIndex, graph_pass


def _empty_reduction(dtype: str) -> dict[str, object]:
    """IR reduction -> what TF gives over an empty axis (of a `dtype` output)."""
    kind = np.dtype(dtype).kind
    info = np.finfo(dtype) if kind == "f" else np.iinfo(dtype) if kind in "iu" else None
    lowest, highest = (-np.inf, np.inf) if kind == "f" else (info.min, info.max) if info else (False, True)
    return {"reduce_sum": 0, "reduce_prod": 1, "reduce_max": lowest, "reduce_min": highest,
            "reduce_mean": np.nan if kind == "f" else 0, "reduce_all": True, "reduce_any": False}


def _static(shape: list | None) -> bool:
    return shape is not None and all(isinstance(d, int) and d >= 0 for d in shape)


def _reads_no_value(node: Node, graph) -> np.ndarray | None:
    """The value of a node that needs none of its inputs' values (see the module's docstring), or None."""
    if len(node.outputs) != 1:
        return None
    shape, dtype = graph.shape(node.output), graph.tensors[node.output].dtype
    if not _static(shape):
        return None
    if 0 in shape:
        return np.zeros(shape, dtype)
    if node.op in _empty_reduction(dtype) and _over_empty_axis(node, graph.shape(node.inputs[0])):
        return np.full(shape, _empty_reduction(dtype)[node.op], dtype)
    return None


def _over_empty_axis(node: Node, shape: list) -> bool:
    if not shape or not _static(shape):
        return False
    return any(shape[int(a) % len(shape)] == 0 for a in node.attrs.get("axes", ()))


def _fold(node: Node, dtype: str, *inputs: np.ndarray) -> np.ndarray:
    return np.asarray(evaluate_node(node, list(inputs)).astype(dtype))


@graph_pass
def fold_constants(ix: GraphIndex) -> bool:
    graph = ix.graph
    changed = False
    values = {n.output: n.params["value"] for n in graph.nodes if n.op == "const" and ix.alive(n)}
    for node in graph.nodes:
        if node.op == "const" or not node.inputs or not ix.alive(node):
            continue
        dtype = graph.tensors[node.output].dtype
        value = _reads_no_value(node, graph)
        if value is not None:
            if FIXED_SIZE_KEY not in graph.metadata and any(i in size_flow(graph)[0] for i in node.inputs):
                graph.metadata[FIXED_SIZE_KEY] = (f"node '{node.name}' ({node.op}) is empty or reduces an empty axis "
                                                  "at the converted size: its value is fixed there")
            ix.set_inputs(node, [])
            node.op, node.attrs, node.params = "const", {}, {"value": value}
            values[node.output] = value
            changed = True
            continue
        if node.op not in FOLDABLE:
            continue
        if not all(i in values for i in node.inputs):
            continue
        folded = Node(node.name, node.op, list(node.inputs), list(node.outputs), dict(node.attrs), dict(node.params))
        # of a lazy constant (a checkpoint weight): computed when it is written
        value = lazy.apply(_fold, folded, dtype, *(values[i] for i in node.inputs),
                           shape=graph.shape(node.output), dtype=dtype)
        ix.set_inputs(node, [])
        node.op, node.attrs, node.params = "const", {}, {"value": value}
        values[node.output] = value
        changed = True
    return changed
