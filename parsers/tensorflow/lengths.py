"""Tensors whose length depends on the data (a non-max suppression that is not padded to a fixed size).

The IR holds such a tensor at its longest (the padded selection), with the IR tensor that counts its valid
rows: `mark` records it. Only ops that work row by row may read it (a gather by the selected indices, an
identity): `follow` passes the length on to their outputs and refuses every other reader by name, since
the rows past the count would take part in it. A graph output that has such a length is cut to its count
at the end (`cut`, an IR `prefix`): that is the one place the converted graph has a data-dependent size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .context import Context, NotConvertible

_PASS_THROUGH = ("Identity", "StopGradient", "Snapshot", "Cast")
_GATHERS = ("GatherV2", "Gather")
_KEEPING_ROWS = ("Squeeze", "ExpandDims")  # when TF leaves axis 0 unknown, they kept it: row by row


@dataclass(frozen=True)
class Length:
    count: str  # the IR int32 scalar: how many leading rows are valid
    longest: int  # the IR tensor's (padded) length along axis 0
    source: str  # the op whose output it is, for messages


def mark(ctx: Context, t: Any, count: str, longest: int, source: str) -> None:
    ctx.lengths[t.name] = Length(count, longest, source)


def follow(ctx: Context, op: Any) -> None:
    """Before `op`'s handler runs: the lengths its outputs get from the data-dependent tensors it reads,
    or a refusal naming the first such tensor."""
    read = [t for t in op.inputs if t.name in ctx.lengths]
    if not read:
        return
    length = ctx.lengths[read[0].name]
    if op.type in _PASS_THROUGH:
        ctx.lengths[op.outputs[0].name] = length
        return
    if op.type in _GATHERS and read == [op.inputs[1]] and _gather_axis(ctx, op) == 0:
        ctx.lengths[op.outputs[0].name] = length
        return
    if op.type == "GatherNd" and read == [op.inputs[1]]:  # a row of index tuples, a row of the result
        ctx.lengths[op.outputs[0].name] = length
        return
    dims = op.outputs[0].shape.as_list() if op.outputs[0].shape.rank else None
    if op.type in _KEEPING_ROWS and read == [op.inputs[0]] and dims and dims[0] is None:
        ctx.lengths[op.outputs[0].name] = length
        return
    raise NotConvertible(
        f"{op.type} reads '{read[0].name}', whose length depends on the data (the selection of {length.source}); "
        "only gathers along axis 0 by it and graph outputs can take such a tensor: give it a fixed size "
        "(non-max suppression: pad_to_max_output_size=True; top-k: a constant k) or make it a graph output")


def _gather_axis(ctx: Context, op: Any) -> int | None:
    if op.type == "Gather":
        return 0
    if not ctx.is_const(op.inputs[2]):
        return None
    axis = int(np.asarray(ctx.const(op.inputs[2])).reshape(-1)[0])
    return axis % max(len(op.inputs[0].shape.as_list() or [0]), 1) if axis < 0 else axis


def cut(ctx: Context, t: Any, ir_name: str, name: str) -> str:
    """The graph output `t` (IR `ir_name`) cut to its data-dependent length, when it has one."""
    length = ctx.lengths.get(t.name)
    if length is None:
        return ir_name
    return ctx.graph.add_node("prefix", ctx.graph.unique_name(name), [ir_name, length.count],
                              ctx.graph.shape(ir_name), source_op=length.source)
