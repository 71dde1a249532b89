"""Choosing a training graph's inference inputs and outputs.

Outputs (unless given): the ends of the forward path, i.e. float tensors that depend on a data
source and feed nothing else of the forward path; losses, labels, optimizer, gradients, summaries,
savers and update ops are not the forward path. Inputs (unless given): the data sources the
chosen outputs depend on (placeholders, or the input pipeline's tensor); dangling placeholders are
ignored. Each choice is recorded with its reason.
"""

from __future__ import annotations

from typing import Any

from tf_convert.convert.errors import UsageError

from ..graphio import check_names, node_of, tensor_name
from .flags import is_flag
from .graph import GraphView, split_ref, tensor_ref

PIPELINE = ("IteratorGetNext", "IteratorGetNextSync", "QueueDequeueV2", "QueueDequeueManyV2",
            "QueueDequeueUpToV2", "QueueDequeue", "QueueDequeueMany", "QueueDequeueUpTo")
_LOSS_OPS = ("SparseSoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits", "L2Loss")
_BOOKKEEPING = {
    "NoOp", "Assert", "SaveV2", "RestoreV2", "MergeV2Checkpoints", "PrintV2", "StringJoin",
    "ShardedFilename", "Const", "Placeholder", "PlaceholderWithDefault", "VariableV2", "VarHandleOp",
    "ReadVariableOp", "Shape", "ShapeN", "Size", "Rank", "VarIsInitializedOp", "IsVariableInitialized",
    "ScalarSummary", "HistogramSummary", "ImageSummary", "MergeSummary", "TensorSummaryV2",
    "Assign", "AssignSub", "AssignAdd", "AssignVariableOp", "AssignSubVariableOp", "AssignAddVariableOp",
}
_ASSIGNS = ("Assign", "AssignSub", "AssignAdd", "AssignVariableOp", "AssignSubVariableOp",
            "AssignAddVariableOp")
_TRAINING_SCOPES = ("AssignMovingAvg", "AssignMovingAvg_1", "gradients", "training", "train", "save", "Momentum",
                    "Adam", "GradientDescent", "RMSProp", "Adagrad", "loss", "losses", "total_loss", "summaries",
                    "report_uninitialized",
                    "softmax_cross_entropy_loss", "sparse_softmax_cross_entropy_loss", "accuracy", "metrics",
                    "ExponentialMovingAverage")
_FLOAT = (1, 2, 19, 14)  # float, double, half, bfloat16


def _training_scope(name: str) -> bool:
    parts = name.split("/")
    return any(p in _TRAINING_SCOPES or p.startswith("gradients") for p in parts[:-1]) or \
        parts[-1] in ("loss", "total_loss", "train_op", "init", "init_all_tables")


def _output_dtype(node: Any, index: int = 0) -> int | None:
    for key in ("T", "dtype", "out_type", "DstT"):
        if key in node.attr and node.attr[key].type:
            return node.attr[key].type
    types = node.attr["output_types"].list.type if "output_types" in node.attr else []
    if not types and "component_types" in node.attr:
        types = node.attr["component_types"].list.type
    return types[index] if index < len(types) else None


def sources(view: GraphView) -> list[str]:
    """Every data source tensor: non-flag placeholders and the outputs of pipeline ops."""
    result = []
    for node in view.graph_def.node:
        if node.op in ("Placeholder", "PlaceholderWithDefault") and not is_flag(node) \
                and not _training_scope(node.name):
            result.append(f"{node.name}:0")
        elif node.op in PIPELINE:
            count = len(node.attr["output_types"].list.type or node.attr["component_types"].list.type)
            result.extend(f"{node.name}:{k}" for k in range(max(count, 1)))
    return result


def _labels(view: GraphView, tensors: list[str]) -> set[str]:
    """Integer source tensors of rank <= 1 (labels), whose dependants are the training side."""
    result = set()
    for t in tensors:
        name, index, _ = split_ref(t)
        node = view.nodes[name]
        dtype = _output_dtype(node, index)
        if dtype in (3, 9, 4, 6, 5):  # int32, int64, uint8, int8, int16
            shapes = node.attr["output_shapes"].list.shape if "output_shapes" in node.attr else []
            shape = shapes[index] if index < len(shapes) else node.attr["shape"].shape
            if not shape.unknown_rank and len(shape.dim) <= 1:
                result.add(t)
    return result


def _statistic(view: GraphView, node: str, index: int) -> bool:
    """Outputs 1.. of a fused batch norm are its statistics, not activations."""
    return index > 0 and view.nodes[node].op.startswith("FusedBatchNorm")


def _moments(view: GraphView, node: str) -> bool:
    """A tf.nn.moments batch statistic (a non-fused batch norm's; left dangling once its training cond is
    folded), not an activation."""
    return "moments/" in node and view.nodes[node].op in ("Squeeze", "Mean", "StopGradient")


def find_outputs(view: GraphView, notes: list[str]) -> list[str]:
    all_sources = sources(view)
    labels = _labels(view, all_sources)
    data = [t for t in all_sources if t not in labels]
    forward: set[str] = set()
    training: set[str] = set()
    for name in view.order():
        node = view.nodes[name]
        refs = [split_ref(r) for r in node.input if not r.startswith("^")]
        if node.op in _BOOKKEEPING:
            continue
        if node.op in _LOSS_OPS or _training_scope(name):
            if any(n in forward or n in training for n, _, _ in refs):
                training.add(name)
            continue
        if any(f"{n}:{i}" in labels or n in training for n, i, _ in refs):
            training.add(name)
        elif any((n in forward and not _statistic(view, n, i)) or f"{n}:{i}" in data for n, i, _ in refs):
            forward.add(name)
    # what an update op writes (AssignMovingAvg's value) is consumed, not an output
    writers = forward | {n for n, node in view.nodes.items() if node.op in _ASSIGNS}
    consumed = {split_ref(r)[0] for n in writers for r in view.nodes[n].input if not r.startswith("^")}
    sinks = [n for n in view.order() if n in forward and n not in consumed and not _moments(view, n)
             and _output_dtype(view.nodes[n]) in _FLOAT + (None,)]
    if not sinks:
        raise UsageError("could not find the graph's outputs (no float tensor at the end of the "
                         "forward path); name them with --outputs")
    outs = [f"{n}:0" for n in sinks]
    notes.append(f"outputs auto-detected: {', '.join(outs)} (ends of the forward path; losses, "
                 "optimizer, summaries and update ops left out)")
    return outs


def find_inputs(view: GraphView, outputs: list[str], notes: list[str]) -> list[str]:
    # stop at sources: images = placeholder_with_default(IteratorGetNext, ...) is the input, not both
    all_sources = sources(view)
    needed = view.ancestors([node_of(o) for o in outputs], stop={node_of(t) for t in all_sources}, control=False)
    needed -= {node_of(t) for t in all_sources}
    refs = {canonical_data(r) for n in needed for r in view.nodes[n].input if not r.startswith("^")}
    refs |= {tensor_name(o) for o in outputs}
    ins = [t for t in all_sources if t in refs]
    if not ins:  # TF's ones_like or shape of a static input: the outputs are constants, the model takes nothing
        notes.append("inputs: none (the outputs depend on no placeholder or input pipeline: they are constants)")
        return []
    dangling = [t for t in all_sources if t not in refs and view.nodes[node_of(t)].op == "Placeholder"]
    why = "the data sources the outputs depend on"
    if dangling:
        why += f"; unused placeholders ignored: {', '.join(dangling[:5])}"
    notes.append(f"inputs auto-detected: {', '.join(ins)} ({why})")
    return ins


def canonical_data(ref: str) -> str:
    name, index, _ = split_ref(ref)
    return f"{name}:{index}"


def check_outputs(view: GraphView, outputs: list[str]) -> None:
    """An output between SpaceToBatchND and BatchToSpaceND (a dilated conv's batch-folded phases)
    has no equivalent: say which tensor to take instead, before pruning drops the BatchToSpaceND."""
    consumers = view.consumers()
    for out in outputs:
        node = view.nodes[node_of(out)]
        s2b = view.nodes.get(split_ref(node.input[0])[0]) if node.input else None
        if s2b is None or s2b.op != "SpaceToBatchND":
            continue
        b2s = [c.name for c in consumers.get(node.name, []) if c.op == "BatchToSpaceND"]
        if b2s:
            raise UsageError(
                f"an output lies inside the dilated convolution {s2b.name} -> {node.name} -> {b2s[0]}, "
                f"whose inner tensors are batch-folded phases with no equivalent; use '{b2s[0]}'")


def choose(view: GraphView, inputs: list[str] | None, outputs: list[str] | None,
           notes: list[str], default_inputs=None, default_outputs=None) -> tuple[list[str], list[str]]:
    if outputs:
        outs = check_names(view.graph_def, outputs, "outputs")
    elif default_outputs:
        outs = list(default_outputs)
        notes.append(f"outputs auto-detected: {', '.join(outs)} (the serving signature)")
    else:
        outs = find_outputs(view, notes)
    if inputs:
        ins = check_names(view.graph_def, inputs, "inputs")
    elif default_inputs:
        ins = list(default_inputs)
        notes.append(f"inputs auto-detected: {', '.join(ins)} (the serving signature)")
    else:
        ins = find_inputs(view, outs, notes)
    return ins, outs


__all__ = ["choose", "find_outputs", "find_inputs", "sources", "tensor_ref"]
