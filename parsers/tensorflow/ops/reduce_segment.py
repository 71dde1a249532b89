"""Segment reductions over segment ids (constants, or computed at run time with a constant segment count)
and counts of runtime integers.

Segment*/UnsortedSegment*: each output row reduces the data rows of its segment (their slices, joined);
an empty segment is TF's value for it (Segment*: 0; UnsortedSegment: 0 for a sum, 1 for a product, the
dtype's lowest for a max and highest for a min). Bincount/DenseBincount: an equality mask of the values
against each bin, summed (of ones or the weights)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import runtime_shapes
from ..context import Context, NotConvertible
from ..lowering import Lowering
from ..table import tf_op

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
    plan = [np.flatnonzero(flat_ids == k) for k in range(count)]
    ctx.set(op.outputs[0], reduce_segments(low, data, plan, kind, _empty(kind, dtype, sorted_ids)))


def reduce_segments(low: Lowering, data: str, plan: list[np.ndarray], kind: str, empty: Any,
                     counts_divide: str = "") -> str:
    """Row k of the result reduces the rows plan[k] of `data` (n, *rest) (the value `empty` where there are
    none); counts_divide "count" or "sqrt" divides each sum by its row count or that count's square root."""
    rest, dtype = low.shape(data)[1:], low.dtype(data)
    runs = [_runs(rows) if len(rows) else [] for rows in plan]
    if sum(len(r) for r in runs) > _MAX_PIECES:
        raise NotConvertible(f"{sum(len(r) for r in runs)} runs of segment rows (one slice each, at most "
                             f"{_MAX_PIECES})")
    out = []
    for k, segment in enumerate(runs):
        if not segment:
            out.append(low.const(f"empty{k}", np.full((1,) + rest, empty, dtype)))
            continue
        rows = low.concat(f"segment{k}", [low.slice(f"segment{k}_{a}", data, 0, a, b) for a, b in segment], 0)
        one = low.shape(rows)[0] == 1
        row = rows if one else low.reduce(_SEGMENT[kind], f"reduce{k}", rows, [0], True)
        if counts_divide and not one:
            n = len(plan[k])
            by = low.const(f"count{k}", np.sqrt(np.float64(n)) if counts_divide == "sqrt" else n, dtype)
            row = low.binary("div", f"scaled{k}", row, by)
        out.append(row)
    return low.concat("", out, 0)


_MAX_MASKED = 1 << 24  # elements of the (segments, rows, ...) masked copy a run-time reduction makes


def reduce_run_time_segments(low: Lowering, data: str, ids: str, count: int, kind: str, empty: Any,
                             counts_divide: str = "") -> str:
    """Row k of the result reduces the rows j of `data` (n, *rest) with ids[j] == k, the ids (n,) a tensor the
    graph computes: every row masked per segment (the reduction's neutral `empty` where it is not in it), then
    reduced over the rows; ids outside [0, count) fall in no segment. counts_divide as `reduce_segments`."""
    n, rest, dtype = low.shape(data)[0], low.shape(data)[1:], low.dtype(data)
    if count * max(n, 1) * int(np.prod(rest)) > _MAX_MASKED:
        raise NotConvertible(f"{count} segments of {n} rows of {int(np.prod(rest))} elements with segment ids "
                             f"computed at run time (each row is masked per segment: at most {_MAX_MASKED} "
                             "elements); make the ids a constant")
    ones = (1,) * len(rest)
    bins = low.const("segments", np.arange(count).reshape((count, 1) + ones), low.dtype(ids))
    hits = low.compare("equal", "hits", low.reshape("ids_column", ids, (1, n) + ones), bins)
    rows = low.reshape("rows_one", data, (1, n) + tuple(rest))
    masked = low.select("masked", hits, rows, low.const("empty", empty, dtype))
    out = low.reduce(_SEGMENT[kind], "reduce" if counts_divide else "", masked, [1])
    if not counts_divide:
        return out
    counts = low.reduce("reduce_sum", "counts", low.cast("hit_ones", hits, dtype), [1])
    counts = low.binary("maximum", "counts_or_one", counts, low.const("one", 1, dtype))  # an empty sum stays 0
    if counts_divide == "sqrt":
        counts = low.node("sqrt", "counts_sqrt", [counts], low.shape(counts))
    return low.binary("div", "", out, counts)


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
        count = int(np.asarray(ctx.const(op.inputs[2])).reshape(()))
        if not ctx.is_const(op.inputs[1]):
            low = Lowering(ctx, op)
            rest = ctx.shape(op.inputs[0])[len(ctx.shape(op.inputs[1])):]
            n = int(np.prod(ctx.shape(op.inputs[1])))
            data = low.reshape("rows", ctx.tf_order(op.inputs[0]), (n,) + tuple(rest))
            ids = low.reshape("ids", ctx.tf_order(op.inputs[1]), (n,))
            empty = _empty(kind, low.dtype(data), False)
            ctx.set(op.outputs[0], reduce_run_time_segments(low, data, ids, count, kind, empty))
            return
        ids = np.asarray(ctx.const(op.inputs[1]))
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
    if runtime_shapes.follows(ctx, op, 1):  # tf.math.bincount's size: the largest value + 1
        runtime_shapes.bincount(ctx, op)
        return
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


_SPARSE = {"SparseSegmentSum": "", "SparseSegmentMean": "count", "SparseSegmentSqrtN": "sqrt"}


def _register_sparse(tf_name: str, divide: str) -> None:
    @tf_op(tf_name, f"{tf_name}WithNumSegments")
    def handler(ctx: Context, op: Any) -> None:
        """Segment k sums the data rows indices[j] of the j with segment_ids[j] == k (constants); Mean and
        SqrtN divide by their count or its square root (after the sum, as TF's kernel)."""
        low = Lowering(ctx, op)
        shape = ctx.shape(op.inputs[0])
        if not all(ctx.is_const(t) for t in op.inputs[1:3]) and op.type.endswith("WithNumSegments"):
            count = int(np.asarray(ctx.const(op.inputs[3])).reshape(()))
            data = low.reshape("rows", ctx.tf_order(op.inputs[0]), (shape[0],) + (tuple(shape[1:]) or (1,)))
            picked, ids = (low.reshape(f"{part}_flat", ctx.tf_order(t), (int(np.prod(ctx.shape(t))),))
                           for part, t in zip(("indices", "ids"), op.inputs[1:3]))
            picked = low.node("gather", "picked", [data, picked], (low.shape(picked)[0],) + low.shape(data)[1:],
                              {"axis": 0})
            out = reduce_run_time_segments(low, picked, ids, count, "Sum", 0, divide)
            ctx.set(op.outputs[0], low.reshape("out", out, ctx.shape(op.outputs[0])))
            return
        rows, ids = (np.asarray(ctx.const(t)).reshape(-1).astype(np.int64) for t in op.inputs[1:3])
        if np.any(np.diff(ids) < 0) or (ids.size and ids[0] < 0) or np.any((rows < 0) | (rows >= shape[0])):
            raise NotConvertible(f"{op.type} needs sorted, non-negative segment ids and indices in range")
        count = ctx.shape(op.outputs[0])[0]
        data = low.reshape("rows", ctx.tf_order(op.inputs[0]), (shape[0],) + (tuple(shape[1:]) or (1,)))
        out = reduce_segments(low, data, [rows[ids == k] for k in range(count)], "Sum", 0, divide)
        ctx.set(op.outputs[0], low.reshape("out", out, ctx.shape(op.outputs[0])))


for _name, _divide in _SPARSE.items():
    _register_sparse(_name, _divide)


def _bin_edges(lo: np.float32, hi: np.float32, nbins: int) -> np.ndarray:
    """TF's kernel bins d = max(x, lo) - lo (float32) as min(int(double(d) / step), nbins - 1) with
    step = double(hi - lo) / nbins: edge b is the least float32 d that lands in bin b or later."""
    step = np.float64(np.float32(hi - lo)) / nbins
    edges = []
    for b in range(1, nbins):
        d = np.float32(b * step)
        while d > 0 and np.float64(np.nextafter(d, np.float32(-np.inf))) / step >= b:
            d = np.nextafter(d, np.float32(-np.inf))
        while np.float64(d) / step < b:
            d = np.nextafter(d, np.float32(np.inf))
        edges.append(d)
    return np.asarray(edges, np.float32)


@tf_op("HistogramFixedWidth")
def histogram_fixed_width(ctx: Context, op: Any) -> None:
    """Counts per bin of a constant value range: each value's bin is the number of (exact float32) bin
    edges it reaches, so the float32 comparisons give TF's double-precision binning exactly."""
    low = Lowering(ctx, op)
    if op.inputs[0].dtype.name != "float32":
        raise NotConvertible(f"HistogramFixedWidth of {op.inputs[0].dtype.name} values (float32 only)")
    lo, hi = (np.float32(v) for v in np.asarray(ctx.const(op.inputs[1])).reshape(-1)[:2])
    nbins = int(np.asarray(ctx.const(op.inputs[2])).reshape(()))
    if not hi > lo or nbins < 1:
        raise NotConvertible(f"HistogramFixedWidth of the range [{lo}, {hi}] in {nbins} bins")
    x = ctx.tf_order(op.inputs[0])
    n = int(np.prod(low.shape(x)))
    x = low.reshape("column", x, (n, 1))
    start = low.const("lo", np.float32(lo))
    d = low.binary("sub", "offset", low.binary("maximum", "clamped", x, start), start)
    if nbins > 1:
        reached = low.compare("greater_equal", "reached", d, low.const("edges", _bin_edges(lo, hi, nbins)[None]))
        index = low.reduce("reduce_sum", "bin", low.cast("reached_i", reached, "int32"), [1], True)
    else:
        index = low.const("bin", np.zeros((n, 1)), "int32")
    hits = low.compare("equal", "hits", index, low.const("bins", np.arange(nbins)[None], "int32"))
    counts = low.cast("ones", hits, op.outputs[0].dtype.name)
    ctx.set(op.outputs[0], low.reduce("reduce_sum", "", counts, [0]))
