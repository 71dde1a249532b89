"""The valid value range of an integer model input (token ids, segment ids, masks), read off the IR:
ids that reach a gather must be below its table size, ids that reach a one_hot below its depth;
an integer input that only meets integer arithmetic (sums, products, comparisons, a matmul...) is fed
the whole range of its dtype, where a sum or a product overflows as it may in use (a target computing in
a narrower type than TF's shows there); any other integer input (an attention mask, a flag) is fed 0/1.
A float input that is cast to integer ids (a Keras 2 text model fed float ids) gets its ids' range too,
as whole numbers."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from tf_convert.convert.ir import Graph, GraphIndex, Node
from tf_convert.convert.ir.ops import INTEGER_ENDING, INTEGER_WRAPPING, VALUE_KEEPING

MASK_RANGE = (0, 2)
RANGES = "input_ranges"  # graph.metadata key: ranges recorded in conversion.json (a re-run's skeleton graph)


def integer_range(graph: Graph, name: str) -> tuple[int, int]:
    """[low, high) for integer input `name`: its tightest gather/one_hot bound, else its dtype's whole range
    where only integer arithmetic reads it (_whole_range), else 0/1."""
    if name in graph.metadata.get(RANGES, {}):
        return tuple(graph.metadata[RANGES][name])
    high = _index_bound(graph, name)
    if high:
        return (0, high)
    dtype = graph.tensors[name].dtype
    if dtype != "bool" and _whole_range(graph, name):
        info = np.iinfo(dtype)
        return (int(info.min), int(info.max) + 1)
    return MASK_RANGE


def _ends(node: Node) -> bool:
    """A reader past which an integer's magnitude no longer matters (INTEGER_ENDING, a cast to bool)."""
    return node.op in INTEGER_ENDING or (node.op == "cast" and str(node.attrs.get("dtype", "")) == "bool")


def _wraps(node: Node, tensor: str) -> bool:
    """A reader that takes any integer in `tensor` and passes its wrap-around on: INTEGER_WRAPPING, the values
    of a select, the data of a reshape/slice..., a cast to another integer type."""
    cast_to = str(node.attrs.get("dtype", "")) if node.op == "cast" else ""
    return (node.op in INTEGER_WRAPPING or cast_to.startswith(("int", "uint"))
            or (node.op == "select" and tensor in node.inputs[1:])
            or (node.op in VALUE_KEEPING and (node.op == "concat" or tensor == node.inputs[0])))


def _whole_range(graph: Graph, name: str) -> bool:
    """Whether every reader of `name`, and of what it computes, takes any integer or ends the magnitudes,
    up to the graph's outputs."""
    reached = GraphIndex(graph).readers_through(name, _carries_on)
    return all(_ends(node) or _wraps(node, tensor) for tensor, node in reached)


def _carries_on(node: Node, tensor: str) -> bool:
    return not _ends(node) and _wraps(node, tensor)


def value_range(graph: Graph, name: str) -> tuple[int, int] | None:
    """What --verify feeds input `name`: whole numbers in [low, high) for integer inputs and for float
    ones that become ids; None for any other float input (standard normal)."""
    if is_integer(graph, name) or name in graph.metadata.get(RANGES, {}):
        return integer_range(graph, name)
    high = _index_bound(graph, name)  # a float reaches a gather/one_hot only through a cast to int
    return (0, high) if high else None


def _keeps_ids(node, tensor: str) -> bool:
    """Whether valid ids in `tensor` pass through `node` unchanged in value: a cast to another integer type, a
    reshape..., or a select that takes them as one of its values (Keras's wrap of negative ids,
    `select(ids < 0, ids + n, ids)`, as a Keras 3 Embedding exported to a SavedModel has it)."""
    return (node.op in VALUE_KEEPING or (node.op == "cast" and str(node.attrs["dtype"]).startswith("int"))
            or (node.op == "select" and tensor in node.inputs[1:]))


def _id_readers(graph: Graph, name: str) -> Iterator[tuple[str, Node]]:
    """(t, reader of t) for input `name` and every tensor its ids reach unchanged (_keeps_ids)."""
    return GraphIndex(graph).readers_through(name, _keeps_ids)


def _index_bound(graph: Graph, name: str) -> int | None:
    """The tightest table size / depth the values of `name` index, else None."""
    high: int | None = None
    for tensor, node in _id_readers(graph, name):
        bound = None
        if node.op == "gather" and node.inputs[1] == tensor:
            bound = graph.shape(node.inputs[0])[int(node.attrs["axis"])]
        elif node.op == "one_hot":
            bound = int(node.attrs["depth"])
        if bound is not None:
            high = bound if high is None else min(high, bound)
    return high


def is_integer(graph: Graph, name: str) -> bool:
    return graph.tensors[name].dtype.startswith(("int", "uint", "bool"))
