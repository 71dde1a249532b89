"""Masked steps for --verify: random inputs almost never hold a Keras mask value (random
normal features are never exactly Masking's mask_value; random ids are 0 only by chance), so the
mask would go unexercised. An input whose values the IR compares with a constant (`not_equal`, as
Masking, Embedding(mask_zero=True) and Keras 3's NotEqual build the step mask) gets that constant
planted at whole steps: the first, every third and the last, shifted per batch row."""

from __future__ import annotations

import numpy as np

from tf_convert.convert.ir import Graph, GraphIndex
from tf_convert.convert.ir.ops import VALUE_KEEPING


def mask_value(graph: Graph, name: str) -> float | None:
    """The constant that masks a step of input `name` (compared to it by a not_equal), or None."""
    index = GraphIndex(graph)
    for tensor, node in index.readers_through(name, lambda node, _: node.op == "cast" or node.op in VALUE_KEEPING):
        if node.op == "not_equal":
            other = [i for i in node.inputs if i != tensor]
            producer = index.producer(other[0]) if other else None
            if producer is not None and producer.op == "const" and np.asarray(producer.params["value"]).size == 1:
                return float(np.asarray(producer.params["value"]).reshape(()))
        elif node.op == "cast" and node.attrs["dtype"] == "bool" and _is_integer(graph, tensor):
            return 0.0  # ids != 0: Embedding(mask_zero=True) as Keras 2 files have it
    return None


def masked_steps(length: int, row: int) -> list[int]:
    """The steps --verify masks in batch row `row`: the first, every third, the last (shifted per row)."""
    return sorted({(t + row) % length for t in range(0, length, 3)} | {(length - 1 + row) % length})


def plant(graph: Graph, name: str, values: np.ndarray) -> np.ndarray:
    """`values` with the input's mask value at whole steps (axis 1) when the IR masks steps of it."""
    value = mask_value(graph, name)
    if value is None or values.ndim not in (2, 3):
        return values
    values = values.copy()
    for row in range(values.shape[0]):
        values[row, masked_steps(values.shape[1], row)] = value
    return values


def _is_integer(graph: Graph, tensor: str) -> bool:
    return graph.tensors[tensor].dtype.startswith(("int", "uint"))
