"""Parameters the graph computes while it runs (a slice's start fed by a placeholder, a band's widths).

A parameter may be known in part: a Pack of scalars holds the constant ones as they are (`known_ints`). A
run-time element becomes an IR tensor (`element`) that the lowering reads like any activation, so the
converted model computes with it; where the output's shape would follow the value, the IR (static shapes
only) cannot hold it, and `Context.shape_follows` says so by name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .context import Context
from .lowering import Lowering

# TF op -> the parameters a converted model reads at run time (each one run in every target against TF by
# tests/parsers/test_runtime_values.py; docs/ops.md's "run-time parameters" column)
RUN_TIME_PARAMETERS = {
    "Slice": "begin (with a constant size)",
    "StridedSlice": "begin of an indexed axis (x[i])",
    "MatrixBandPart": "num_lower, num_upper",
    "TensorScatterUpdate": "indices",
    "Roll": "shift",
    "AdjustContrastv2": "contrast_factor",
    "GatherV2": "indices (any batch_dims)",
    "GatherNd": "indices",
    "AdjustHue": "delta",
    "AdjustSaturation": "scale",
    "QuantizeAndDequantizeV2": "input_min, input_max",
    "QuantizeAndDequantizeV4": "input_min, input_max",
    "UnsortedSegmentSum": "segment_ids (a constant num_segments)",
    "UnsortedSegmentMax": "segment_ids (a constant num_segments)",
    "UnsortedSegmentMin": "segment_ids (a constant num_segments)",
    "UnsortedSegmentProd": "segment_ids (a constant num_segments)",
    "SparseSegmentSumWithNumSegments": "indices, segment_ids",
    "SparseSegmentMeanWithNumSegments": "indices, segment_ids",
    "SparseSegmentSqrtNWithNumSegments": "indices, segment_ids",
}


def known_ints(ctx: Context, t: Any) -> list[int | None]:
    """The elements of the integer scalar or vector `t` known at conversion: a constant's values, the
    constant inputs of a Pack of scalars; None for each element only the run computes."""
    if ctx.is_const(t):
        return [int(v) for v in np.asarray(ctx.const(t)).reshape(-1)]
    op = t.op
    if op.type == "Pack" and all(i.shape.rank == 0 for i in op.inputs):
        return [int(np.asarray(ctx.const(i)).reshape(-1)[0]) if ctx.is_const(i) else None for i in op.inputs]
    dims = t.shape.as_list() if t.shape.rank is not None else None
    if dims is None or None in dims:
        raise ctx.shape_follows(op, t, "parameter")
    return [None] * int(np.prod(dims))


def element(ctx: Context, low: Lowering, t: Any, i: int, part: str) -> str:
    """Element `i` of the run-time integer scalar or vector `t`, as an IR tensor of shape (1,)."""
    x = ctx.tf_order(t)
    if not low.shape(x):
        return low.reshape(part, x, (1,))
    return low.slice(part, x, 0, i, i + 1)


def gather_run(ctx: Context, low: Lowering, x: str, axis: int, start: str, count: int, wrap: int | None,
               part: str) -> str:
    """`count` elements of IR axis `axis` of `x` from the run-time index `start` (shape (1,)) on; `wrap`: the
    axis size a negative start counts back from (TF's x[-1]), None where TF allows no negative start."""
    dtype = low.dtype(start)
    index = start
    if count != 1:
        index = low.node("add", f"{part}/index", [start, low.const(f"{part}/steps", np.arange(count), dtype)],
                         (count,))
    if wrap:
        index = low.node("floor_mod", f"{part}/wrap", [index, low.const(f"{part}/size", [wrap], dtype)],
                         low.shape(index))
    shape = list(low.shape(x))
    shape[axis] = count
    return low.node("gather", part, [x, index], shape, {"axis": axis})
