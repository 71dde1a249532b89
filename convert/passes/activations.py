"""Activation fusion: the primitive spellings of swish, hard sigmoid and hard swish become one op."""

from __future__ import annotations

from .index import GraphIndex, graph_pass
from .match import scalar_operand


@graph_pass
def fuse_swish(ix: GraphIndex) -> bool:
    """mul(x, sigmoid(x)) -> swish(x), when the sigmoid feeds only that mul."""
    graph = ix.graph
    changed = False
    for node in list(graph.nodes):
        if node.op != "mul" or len(node.inputs) != 2 or not ix.alive(node):
            continue
        for x, s in (node.inputs, node.inputs[::-1]):
            sig = ix.producer(s)
            if sig is not None and sig.op == "sigmoid" and sig.inputs[0] == x and ix.single_reader(s) is node:
                ix.remove_node(sig)
                ix.set_inputs(node, [x])
                node.op, node.attrs = "swish", {}
                node.source_op = f"{sig.source_op}+{node.source_op}".strip("+")
                graph.tensors.pop(s, None)
                changed = True
                break
    return changed


@graph_pass
def fuse_hard_sigmoid(ix: GraphIndex) -> bool:
    """relu6(x + 3) / 6 (or * 1/6), as Keras/TF graphs spell it -> hard_sigmoid(1/6, 0.5);
    then x * hard_sigmoid(x) -> hard_swish(x)."""
    graph = ix.graph
    changed = False
    for node in list(graph.nodes):
        if not ix.alive(node):
            continue
        scaled = scalar_operand(ix, node)
        if node.op not in ("div", "mul") or scaled is None or node.inputs[0] != scaled[0] and node.op == "div":
            continue
        factor = scaled[1] if node.op == "mul" else 1.0 / scaled[1]
        clip = ix.producer(scaled[0])
        if abs(factor - 1 / 6) > 1e-7 or clip is None or clip.op != "clip" or (
            (clip.attrs["min"], clip.attrs["max"]) != (0.0, 6.0) or ix.single_reader(clip.output) is not node
        ):
            continue
        add = ix.producer(clip.inputs[0])
        shifted = scalar_operand(ix, add) if add is not None and add.op == "add" else None
        if shifted is None or shifted[1] != 3.0 or ix.single_reader(add.output) is not clip:
            continue
        for gone in (clip, add):
            ix.remove_node(gone)
            graph.tensors.pop(gone.output, None)
        ix.set_inputs(node, [shifted[0]])
        node.op = "hard_sigmoid"
        node.attrs = {"alpha": 1.0 / 6.0, "beta": 0.5}
        node.source_op = "+".join(filter(None, (add.source_op, clip.source_op, node.source_op)))
        changed = True
    for node in list(graph.nodes):  # x * hard_sigmoid(x) -> hard_swish
        if node.op != "mul" or len(node.inputs) != 2 or not ix.alive(node):
            continue
        for x, h in (node.inputs, node.inputs[::-1]):
            hs = ix.producer(h)
            if hs is not None and hs.op == "hard_sigmoid" and hs.inputs[0] == x and (
                abs(hs.attrs["alpha"] - 1 / 6) < 1e-9 and hs.attrs["beta"] == 0.5
                and ix.single_reader(h) is node
            ):
                ix.remove_node(hs)
                ix.set_inputs(node, [x])
                node.op, node.attrs = "hard_swish", {}
                node.source_op = f"{hs.source_op}+{node.source_op}"
                graph.tensors.pop(hs.output, None)
                changed = True
                break
    return changed
