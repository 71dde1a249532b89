"""TF ops whose outputs' length the data decides: Unique, UniqueV2 (along an axis) and UniqueWithCounts(V2) (the
distinct values in the order of their first occurrence, the index of each input value among them, how often each
occurs), RaggedRange (integer ranges as a ragged tensor's row splits and values) and CTCGreedyDecoder (the kept
classes as a SparseTensor). The IR's `unique`, `ragged_range` and `ctc_greedy_decoder` hold that length as a
run-time size (convert.ir.runtime_dims), which PyTorch and ONNX follow and MXNet and Caffe refuse."""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.ir import shapes
from tf_convert.convert.ir.shapes import RUN_TIME

from ..context import Context, NotConvertible
from ..lowering import Lowering
from ..table import tf_op

_OUTPUTS = ("values", "indices", "counts")  # TF's y, idx, count


def _axis(ctx: Context, op: Any, rank: int) -> int:
    """The axis the slices are taken along: UniqueV2's one-element axis, else the one axis of a vector."""
    if op.type.endswith("V2"):
        if not ctx.is_const(op.inputs[1]):
            raise NotConvertible(f"{op.type} '{op.name}': its axis '{ctx.shown(op.inputs[1])}' is computed at run "
                                 "time; make it a constant")
        axes = [int(a) for a in np.asarray(ctx.const(op.inputs[1])).reshape(-1)]
        if len(axes) > 1:
            raise NotConvertible(f"{op.type} '{op.name}' along {len(axes)} axes: TF takes one")
        if axes:
            if not -rank <= axes[0] < rank:
                raise NotConvertible(f"{op.type} '{op.name}': axis {axes[0]} is out of range for rank {rank}")
            return axes[0] % rank
    if rank != 1:
        raise NotConvertible(f"{op.type} '{op.name}' of a rank-{rank} input: TF takes a vector (or UniqueV2 with "
                             "an axis)")
    return 0


@tf_op("Unique", "UniqueV2", "UniqueWithCounts", "UniqueWithCountsV2")
def unique(ctx: Context, op: Any) -> None:
    x = ctx.tf_order(op.inputs[0])
    shape = ctx.graph.shape(x)
    axis = _axis(ctx, op, len(shape))
    index_dtype = op.get_attr("out_idx").name
    for t, output in zip(op.outputs, _OUTPUTS):
        attrs = {"axis": axis, "output": output, "index_dtype": index_dtype}
        out = ctx.emit("unique", f"{op.name}/{output}", [x], shapes.unique([shape], attrs, {}), attrs,
                       source_op=op.type, out_dtype=t.dtype.name)
        ctx.set(t, out)


@tf_op("RaggedRange")
def ragged_range(ctx: Context, op: Any) -> None:
    """Integer ranges, one per row, as a ragged tensor's (row_splits, values): starts, limits and deltas
    broadcast to one row each."""
    dtype = op.outputs[1].dtype.name
    if dtype not in ("int32", "int64"):
        raise NotConvertible(f"RaggedRange '{op.name}' of {dtype} values: integer ranges are converted (a float "
                             "range's length rounds in TF's own way)")
    low = Lowering(ctx, op)
    parts = [ctx.tf_order(t) for t in op.inputs]
    shapes_ = [low.shape(p) for p in parts]
    if any(len(s) > 1 or RUN_TIME in s for s in shapes_):
        raise NotConvertible(f"RaggedRange '{op.name}' of inputs {[list(s) for s in shapes_]}: scalars or vectors "
                             "of a fixed length are converted")
    rows = max([s[0] for s in shapes_ if s] or [1])
    parts = [low.repeat(f"{name}_rows", low.reshape(name, p, (1,)), 0, rows) if not s or s[0] != rows else p
             for name, p, s in zip(("starts", "limits", "deltas"), parts, shapes_)]
    splits_dtype = op.outputs[0].dtype.name
    for t, output in zip(op.outputs, ("row_splits", "values")):
        attrs = {"output": output, "splits_dtype": splits_dtype}
        out = ctx.emit("ragged_range", f"{op.name}/{output}", parts, shapes.ragged_range([(rows,)], attrs, {}), attrs,
                       source_op=op.type, out_dtype=t.dtype.name)
        ctx.set(t, out)


_CTC_OUTPUTS = ("indices", "values", "shape", "log_probability")  # decoded_indices, _values, _shape, log_probability


@tf_op("CTCGreedyDecoder")
def ctc_greedy_decoder(ctx: Context, op: Any) -> None:
    """The best class of each step, blanks and (merge_repeated) repeats dropped: a SparseTensor of as many
    classes as the data keeps, and the log probability."""
    logits, lengths = (ctx.tf_order(t) for t in op.inputs)
    if ctx.graph.tensors[logits].dtype != "float32" or RUN_TIME in ctx.graph.shape(logits):
        raise NotConvertible(f"CTCGreedyDecoder '{op.name}' of {op.inputs[0].dtype.name} logits "
                             f"{list(ctx.graph.shape(logits))}: float32 logits of a fixed shape are converted")
    attrs = {"blank": int(op.get_attr("blank_index")) if "blank_index" in op.node_def.attr else -1,
             "merge_repeated": bool(op.get_attr("merge_repeated"))}
    for t, output in zip(op.outputs, _CTC_OUTPUTS):
        node_attrs = {**attrs, "output": output}
        out = ctx.emit("ctc_greedy_decoder", f"{op.name}/{output}", [logits, lengths],
                       shapes.ctc_greedy_decoder([ctx.graph.shape(logits)], node_attrs, {}), node_attrs,
                       source_op=op.type, out_dtype=t.dtype.name)
        ctx.set(t, out)
