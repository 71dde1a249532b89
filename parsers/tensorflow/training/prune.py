"""Keep only what the chosen outputs depend on, cut at the chosen inputs.

An input that is not a Placeholder (`IteratorGetNext:0`, a queue's `batch:0`, any inner tensor)
becomes a Placeholder of its dtype and static shape, so the input pipeline, labels and everything
upstream go. Control edges go too: in an inference graph they only order side effects (update
ops, asserts, savers) that are not kept.
"""

from __future__ import annotations

from typing import Any

from tf_convert.convert.errors import UsageError

from ..protos import AttrValue, GraphDef, TensorShapeProto
from ..tfgraph import Graph, ShapeError
from .graph import GraphView, split_ref


def _signature(view: GraphView, tensor: str) -> tuple[int, Any]:
    """dtype enum and TensorShapeProto of `tensor`, from shape inference on its ancestors."""

    name = split_ref(tensor)[0]
    sub = GraphDef()
    keep = view.ancestors([name])
    sub.node.extend(n for n in view.graph_def.node if n.name in keep)
    try:
        t = Graph(sub).get_tensor_by_name(tensor)
    except (ShapeError, KeyError) as e:
        line = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise UsageError(f"--inputs {tensor}: cannot cut the graph there ({line}); name a placeholder "
                         "or a tensor of the forward path") from None
    if t.dtype is None:
        raise UsageError(f"--inputs {tensor}: cannot tell the dtype of that tensor ({t.op.type}); name a "
                         "placeholder or a tensor of the forward path")
    shape = t.shape.as_proto() if t.shape.rank is not None else _queue_shape(view, tensor) or t.shape.as_proto()
    return int(t.dtype), shape


def _queue_shape(view: GraphView, tensor: str) -> Any:
    """A queue's dequeue has no inferred shape; the queue's `shapes` attr has it (plus the batch
    dimension for DequeueMany/UpTo)."""

    name, index, _ = split_ref(tensor)
    node = view.nodes[name]
    if not node.op.startswith("QueueDequeue") or not node.input:
        return None
    queue = view.nodes.get(split_ref(node.input[0])[0])
    shapes = queue.attr["shapes"].list.shape if queue is not None and "shapes" in queue.attr else []
    if index >= len(shapes):
        return None
    shape = TensorShapeProto()
    if "Many" in node.op or "UpTo" in node.op:
        shape.dim.add(size=-1)
    shape.dim.extend(shapes[index].dim)
    return shape


def cut_inputs(view: GraphView, inputs: list[str]) -> list[str]:
    """Turn each non-placeholder input into a Placeholder; returns the inputs' (new) names."""

    result = []
    for tensor in inputs:
        name, index, _ = split_ref(tensor)
        node = view.nodes[name]
        if node.op == "Placeholder" and index == 0:
            result.append(tensor)
            continue
        dtype, shape = _signature(view, tensor)
        target = name if index == 0 else view.unique(f"{name}_{index}")
        if index:
            view.rewire(tensor, target)
        placeholder = view.nodes.get(target) or view.add(target, "Placeholder")
        placeholder.op = "Placeholder"
        del placeholder.input[:]
        placeholder.attr.clear()
        placeholder.attr["dtype"].CopyFrom(AttrValue(type=dtype))
        placeholder.attr["shape"].CopyFrom(AttrValue(shape=shape))
        result.append(f"{target}:0")
    return result


def keep_needed(view: GraphView, outputs: list[str]) -> int:
    """Drop every node the outputs do not need (data edges only) and all control edges, but those
    that pin a constant into a TF1 loop frame (TF runs it there, and refuses the frame without)."""
    needed = view.ancestors([split_ref(o)[0] for o in outputs], control=False)
    dropped = {n for n in view.nodes if n not in needed}
    view.remove(dropped)
    frames = any(n.op == "LoopCond" for n in view.graph_def.node)
    for node in view.graph_def.node:
        refs = [r for r in node.input if not r.startswith("^")]
        if frames and not refs:
            refs = [r for r in node.input if split_ref(r)[0] in view.nodes]
        if len(refs) != len(node.input):
            del node.input[:]
            node.input.extend(refs)
    return len(dropped)


_HINTS = ("_output_shapes", "_class")


def drop_hints(graph_def: Any) -> int:
    """`_output_shapes` (shape hints, stale in graphs rewritten by older TF) and `_class`
    (colocation with nodes that pruning removes) change no value: drop them."""
    count = 0
    for node in list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]:
        for key in _HINTS:
            if key in node.attr:
                del node.attr[key]
                count += 1
    return count
