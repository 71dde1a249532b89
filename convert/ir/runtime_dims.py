"""Dimensions known only at run time: a size that follows a value the model computes (a Reshape to a fed
shape, a Fill of fed dims, a Pad of fed paddings).

`Tensor.shape` holds such an axis as RUN_TIME (-1); a static graph never holds one, so everything written for
static shapes sees exactly what it saw before. The shape rules of the ops in FOLLOWING carry run-time axes on;
every other consumer refuses by name (`refusal`): a padding plan, a weight or a Caffe/MXNet layer needs the
size while converting.
"""

from __future__ import annotations

from collections.abc import Sequence

from .graph import Graph, Node
from .index import GraphIndex
from .ops import PASSES_RUN_TIME_SIZES, RUN_TIME_SIZED, TF_OPS
from .shapes import RUN_TIME

__all__ = ["FOLLOWING", "RUN_TIME", "TARGETS", "TF_FOLLOWING", "has_run_time", "parameter_reader", "parameter_inputs",
           "refusal", "run_time_axes"]

# IR ops whose shape rule and PyTorch/ONNX handlers take run-time sizes: the rows that compute with a run-time
# size, and those a run-time size passes through (the catalog's flags)
FOLLOWING = RUN_TIME_SIZED | PASSES_RUN_TIME_SIZES
# the TF ops that are one of those (a row's `tf`): the TF parser lets them read run-time sizes
TF_FOLLOWING = frozenset(tf_op for tf_op, (op, _) in TF_OPS.items() if op in FOLLOWING)
TARGETS = ("torch", "onnx")  # the targets whose models compute sizes while they run


def run_time_axes(shape: Sequence[int]) -> list[int]:
    return [axis for axis, size in enumerate(shape) if size == RUN_TIME]


def has_run_time(graph: Graph) -> bool:
    return any(RUN_TIME in t.shape for t in graph.tensors.values())


# the inputs of a RUN_TIME_SIZED op that set its sizes: every one after the data, but for these (a unique's
# length follows its data, which a check may draw at random; a bincount's weights set no size)
_SIZE_PARAMETERS = {"unique": slice(0, 0), "bincount_by": slice(1, 2)}


def parameter_reader(index: GraphIndex, tensor: str) -> Node | None:
    """The first node whose output sizes follow the run-time parameter `tensor` flows into (None if none)."""
    seen, stack = set(), [tensor]
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        for node in index.readers(t):
            if node.op in RUN_TIME_SIZED and t in node.inputs[_SIZE_PARAMETERS.get(node.op, slice(1, None))]:
                return node
            stack.extend(node.outputs)
    return None


def parameter_inputs(graph: Graph) -> frozenset[str]:
    """The graph inputs that set sizes while the model runs (a shape, paddings, a depth): parameters, not data
    with an image's or a sequence's size (convert.padding.sizes leaves them out)."""
    if not has_run_time(graph):
        return frozenset()
    index = GraphIndex(graph)
    return frozenset(name for name in graph.inputs if parameter_reader(index, name) is not None)


def follows(graph: Graph, node: Node) -> str | None:
    """"the size of axis k of tensor T follows a run-time value" for the first such tensor `node` reads or
    writes, None when they are all static."""
    for tensor in [*node.inputs, *node.outputs]:
        axes = run_time_axes(graph.shape(tensor)) if tensor in graph.tensors else []
        if axes:
            return f"the size of axis {axes[0]} of tensor '{tensor}' follows a run-time value"
    return None


def refusal(graph: Graph, node: Node, target: str) -> str | None:
    """Why `target` cannot express `node` because of a run-time size (None when it can, or all are static)."""
    why = follows(graph, node)
    if why is None:
        return None
    if target not in TARGETS:
        return f"{why}; the {target} format holds static shapes only (make that value a constant, --set NAME=VALUE)"
    if node.op not in FOLLOWING:
        return f"{why}; the {target} lowering of {node.op} needs it while converting (make that value a constant)"
    return None
