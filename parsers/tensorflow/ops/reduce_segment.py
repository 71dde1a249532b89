"""Issue 22 part B (opsb): segment reductions over constant segment ids and counts of runtime integers.

Segment*/UnsortedSegment*: each output row reduces the data rows of its segment (their slices, joined);
an empty segment is TF's value for it (Segment*: 0; UnsortedSegment: 0 for a sum, 1 for a product, the
dtype's lowest for a max and highest for a min). Bincount/DenseBincount: an equality mask of the values
against each bin, summed (of ones or the weights)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..context import Context, NotConvertible
from ..table import tf_op
from .lowering import Lowering

_MAX_PIECES = 512  # one slice per run of rows

_SEGMENT = {"Sum": "reduce_sum", "Mean": "reduce_mean", "Max": "reduce_max", "Min": "reduce_min",
            "Prod": "reduce_prod"}


def _runs(rows: np.ndarray) -> list[tuple[int, int]]:
    """Sorted row numbers -> (start, end) of each run of consecutive ones."""
    cuts = np.flatnonzero(np.diff(rows) != 1) + 1
    return [(int(r[0]), int(r[-1]) + 1) for r in np.split(rows, cuts)]


def _empty(kind: str, dtype: str, sorted_ids: bool) -> Any:
    if kind == "Prod":
        return 1
    if sorted_ids or kind in ("Sum", "Mean"):
        return 0
    info = np.finfo(dtype) if dtype.startswith("float") else np.iinfo(dtype)
    return info.min if kind == "Max" else info.max


def _segments(ctx: Context, op: Any, kind: str, ids: np.ndarray, count: int, sorted_ids: bool) -> None:
    low = Lowering(ctx, op)
    data_shape = ctx.shape(op.inputs[0])
    rest = data_shape[ids.ndim:]
    flat_ids = ids.reshape(-1).astype(np.int64)
    data = low.reshape("rows", ctx.tf_order(op.inputs[0]), (len(flat_ids),) + rest)
    dtype = low.dtype(data)
    plan = [_runs(np.flatnonzero(flat_ids == k)) if (flat_ids == k).any() else [] for k in range(count)]
    if sum(len(p) for p in plan) > _MAX_PIECES:
        raise NotConvertible(f"{sum(len(p) for p in plan)} runs of segment rows (one slice each, at most "
                             f"{_MAX_PIECES})")
    out = []
    for k, runs in enumerate(plan):
        if not runs:
            out.append(low.const(f"empty{k}", np.full((1,) + rest, _empty(kind, dtype, sorted_ids), dtype)))
            continue
        rows = low.concat(f"segment{k}", [low.slice(f"segment{k}_{a}", data, 0, a, b) for a, b in runs], 0)
        one = low.shape(rows)[0] == 1
        out.append(rows if one else low.reduce(_SEGMENT[kind], f"reduce{k}", rows, [0], True))
    ctx.set(op.outputs[0], low.concat("", out, 0))


def _register_sorted(kind: str) -> None:
    @tf_op(f"Segment{kind}")
    def handler(ctx: Context, op: Any) -> None:
        ids = np.asarray(ctx.const(op.inputs[1]))
        if ids.ndim != 1 or np.any(np.diff(ids) < 0) or (ids.size and ids[0] < 0):
            raise NotConvertible(f"{op.type} needs sorted, non-negative segment ids (TF refuses others)")
        _segments(ctx, op, kind, ids, ctx.shape(op.outputs[0])[0], True)


def _register_unsorted(kind: str) -> None:
    @tf_op(f"UnsortedSegment{kind}")
    def handler(ctx: Context, op: Any) -> None:
        ids = np.asarray(ctx.const(op.inputs[1]))
        count = int(np.asarray(ctx.const(op.inputs[2])).reshape(()))
        if np.any(ids >= count):
            raise NotConvertible(f"{op.type}: segment id {int(ids.max())} is out of range for {count} segments")
        _segments(ctx, op, kind, ids, count, False)  # negative ids drop their rows, as TF does


for _kind in _SEGMENT:
    _register_sorted(_kind)
for _kind in ("Sum", "Max", "Min", "Prod"):
    _register_unsorted(_kind)


@tf_op("Bincount", "DenseBincount")
def bincount(ctx: Context, op: Any) -> None:
    """out[..., i] = how many values equal i (the sum of their weights; with binary_output, whether any
    does). Values outside [0, size) count nowhere."""
    low = Lowering(ctx, op)
    size = int(np.asarray(ctx.const(op.inputs[1])).reshape(()))
    dtype = op.outputs[0].dtype.name
    x = ctx.tf_order(op.inputs[0])
    shape = low.shape(x)
    batched = op.type == "DenseBincount" and len(shape) == 2
    lead = (shape[0],) if batched else ()
    n = int(np.prod(shape[1:] if batched else shape))
    x = low.reshape("column", x, lead + (n, 1))
    hits = low.compare("equal", "hits", x, low.const("bins", np.arange(size), low.dtype(x)))
    if op.type == "DenseBincount" and bool(op.get_attr("binary_output")):
        ctx.set(op.outputs[0], low.cast("", low.reduce("reduce_any", "any", hits, [-2]), dtype))
        return
    weights = op.inputs[2]
    if int(np.prod(ctx.shape(weights))) == 0:
        terms = low.cast("ones", hits, dtype)
    else:
        w = low.reshape("weights", ctx.tf_order(weights), lead + (n, 1))
        terms = low.select("weighted", hits, w, low.const("zero", 0, dtype))
    ctx.set(op.outputs[0], low.reduce("reduce_sum", "", terms, [-2]))
