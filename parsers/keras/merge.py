"""Merge layers (Add, Multiply, Concatenate, ...) and keras.ops arithmetic (`x + 3.0`)."""

from __future__ import annotations


import numpy as np

from . import layout
from .call import Call, TensorRef
from .table import TABLE


def _broadcast(*shapes) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*shapes))


def to_rank(call: Call, x: str, rank: int, suffix: str) -> str:
    """Give x the rank of its partner the way numpy (Keras) broadcasting does, in IR layout."""
    shape = call.shape(x)
    if len(shape) >= rank:
        return x
    kshape = (1,) * (rank - len(shape)) + layout.keras_shape(shape)
    target = layout.ir_shape(kshape)
    return call.add("reshape", [x], target, {"shape": target}, suffix=suffix)


def _binary_chain(call: Call, op: str, inputs: list[str], last_suffix: str = "") -> str:
    rank = max(len(call.shape(t)) for t in inputs)
    inputs = [to_rank(call, t, rank, f"/in{i}") for i, t in enumerate(inputs)]
    acc = inputs[0]
    for i, t in enumerate(inputs[1:], start=1):
        shape = _broadcast(call.shape(acc), call.shape(t))
        suffix = last_suffix if i == len(inputs) - 1 else f"/{op}{i}"
        acc = call.add(op, [acc, t], shape, suffix=suffix)
    return acc


def _merge(op: str):
    def handler(call: Call) -> list[str]:
        return [_binary_chain(call, op, list(call.inputs))]

    return handler


TABLE.register("Add")(_merge("add"))
TABLE.register("Subtract")(_merge("sub"))
TABLE.register("Multiply")(_merge("mul"))
TABLE.register("Maximum")(_merge("maximum"))
TABLE.register("Minimum")(_merge("minimum"))


@TABLE.register("Average")
def average(call: Call) -> list[str]:
    total = _binary_chain(call, "add", list(call.inputs), last_suffix="/sum")
    rank = len(call.shape(total))
    k = call.const(layout.ir_array(1.0 / len(call.inputs), rank), "/inv_n")
    return [call.add("mul", [total, k], call.shape(total))]


@TABLE.register("Concatenate")
def concatenate(call: Call) -> list[str]:
    rank = len(call.shape())
    axis = layout.ir_axis(int(call.cfg("axis", -1)), rank)
    shape = list(call.shape())
    shape[axis] = sum(call.shape(t)[axis] for t in call.inputs)
    return [call.add("concat", list(call.inputs), shape, {"axis": axis})]


def _ops_binary(op: str):
    """keras.ops.<op>(a, b) with tensors and/or Python constants."""

    def handler(call: Call) -> list[str]:
        args = call.args[:2]
        rank = max(len(call.shape(a.name)) for a in args if isinstance(a, TensorRef))
        names = []
        for i, a in enumerate(args):
            if isinstance(a, TensorRef):
                names.append(a.name)
            else:
                names.append(call.const(layout.ir_array(a, rank), f"/c{i}"))
        names = [to_rank(call, t, rank, f"/in{i}") for i, t in enumerate(names)]
        shape = _broadcast(*(call.shape(t) for t in names))
        return [call.add(op, names, shape)]

    return handler


TABLE.register("ops.Add")(_ops_binary("add"))
TABLE.register("ops.Subtract")(_ops_binary("sub"))
TABLE.register("ops.Multiply")(_ops_binary("mul"))
TABLE.register("ops.Divide", "ops.TrueDivide")(_ops_binary("div"))
TABLE.register("ops.Maximum")(_ops_binary("maximum"))
TABLE.register("ops.Minimum")(_ops_binary("minimum"))


