"""Reducing TF ops: Mean, Max, Sum, Prod, Min, All, Any, EuclideanNorm, ArgMax, ArgMin, Cumsum, Cumprod,
Softmax, LogSoftmax and TopKV2."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..context import Context, NotConvertible, Perm, Val, ir_axis, permute_shape
from ..lengths import mark
from ..table import tf_op


def _reduce(ctx: Context, op: Any, ir_op: str, name: str, v: Val | None = None,
            out_dtype: str | None = None) -> tuple[str, Perm]:
    """The IR reduction of TF reduce `op` (named `name`) and the perm of its result; `v` reduces
    another IR value of the input's shape (EuclideanNorm's squares), `out_dtype` overrides the input's."""
    v = ctx.val(op.inputs[0]) if v is None else v
    rank = len(ctx.shape(op.inputs[0]))
    axes = sorted({ir_axis(int(a), rank, v.perm) for a in np.atleast_1d(ctx.const(op.inputs[1]))})
    keep = bool(op.get_attr("keep_dims"))
    out_shape = ctx.shape(op.outputs[0])
    if not axes:  # TF's empty list reduces nothing; torch's, ONNX's and MXNet's empty axes reduce every axis
        return ctx.emit("identity", name, [v.ir], ctx.graph.shape(v.ir), source_op=op.type), v.perm
    if keep:
        out = ctx.emit(ir_op, name, [v.ir], permute_shape(out_shape, v.perm),
                       {"axes": tuple(axes), "keepdims": True}, source_op=op.type, out_dtype=out_dtype)
        return out, v.perm
    # the kept IR axes stay in IR order; that is TF order when perm keeps them sorted
    kept = [a for a in range(rank) if a not in axes]
    tf_kept = [(v.perm or tuple(range(rank)))[a] for a in kept]
    if tf_kept == sorted(tf_kept):
        out = ctx.emit(ir_op, name, [v.ir], out_shape, {"axes": tuple(axes), "keepdims": False},
                       source_op=op.type, out_dtype=out_dtype)
        return out, None
    # reduce keeping dims, go back to TF order, then drop the reduced axes like TF does
    kept_shape = [1 if i in axes else d for i, d in enumerate(ctx.graph.shape(v.ir))]
    r = ctx.emit(ir_op, f"{name}/keep", [v.ir], kept_shape, {"axes": tuple(axes), "keepdims": True},
                 source_op=op.type, out_dtype=out_dtype)
    inv = tuple(int(i) for i in np.argsort(v.perm))
    t = ctx.emit("transpose", f"{name}/tf_order", [r], permute_shape(kept_shape, inv), {"perm": inv},
                 source_op="(layout)")
    out = ctx.emit("reshape", name, [t], out_shape, {"shape": tuple(out_shape)}, source_op=op.type)
    return out, None


@tf_op("Mean")
def mean(ctx: Context, op: Any) -> None:
    ctx.set(op.outputs[0], *_reduce(ctx, op, "reduce_mean", op.name))


@tf_op("Max")
def reduce_max(ctx: Context, op: Any) -> None:
    ctx.set(op.outputs[0], *_reduce(ctx, op, "reduce_max", op.name))


@tf_op("Softmax")
def softmax(ctx: Context, op: Any) -> None:
    v = ctx.val(op.inputs[0])
    rank = len(ctx.shape(op.inputs[0]))
    axis = ir_axis(rank - 1, rank, v.perm)
    out = ctx.emit("softmax", op.name, [v.ir], ctx.graph.shape(v.ir), {"axis": axis}, source_op=op.type)
    ctx.set(op.outputs[0], out, v.perm)


@tf_op("ArgMax")
def arg_max(ctx: Context, op: Any) -> None:
    x = op.inputs[0]
    rank = len(ctx.shape(x))
    v = ctx.val(x)
    tf_axis = int(ctx.const(op.inputs[1]).reshape(())) % rank
    axis = ir_axis(tf_axis, rank, v.perm)
    have = list(v.perm) if v.perm is not None else list(range(rank))
    # the IR keeps the remaining axes in their IR order; say where each came from in TF's order
    rest = [p - (p > tf_axis) for p in have if p != tf_axis]
    shape = tuple(d for i, d in enumerate(ctx.graph.shape(v.ir)) if i != axis)
    dtype = "int32" if op.get_attr("output_type").name == "int32" else "int64"
    out = ctx.graph.add_node("argmax", ctx.name(op.name), [v.ir], shape, {"axis": axis, "keepdims": False},
                             source_op=op.type, out_dtype=dtype)
    ctx.set(op.outputs[0], out, tuple(rest))


# ---- the reductions beyond Mean/Max -- each in the input's dtype unless TF says otherwise ----

REDUCTIONS = {"Sum": "reduce_sum", "Prod": "reduce_prod", "Min": "reduce_min", "All": "reduce_all",
              "Any": "reduce_any"}


def _register(tf_name: str, ir_op: str) -> None:
    @tf_op(tf_name)
    def handler(ctx: Context, op: Any) -> None:
        ctx.set(op.outputs[0], *_reduce(ctx, op, ir_op, op.name))


for _name, _ir_op in REDUCTIONS.items():
    _register(_name, _ir_op)


@tf_op("EuclideanNorm")
def euclidean_norm(ctx: Context, op: Any) -> None:
    """sqrt(sum(x * x)), TF's own formula."""
    v = ctx.val(op.inputs[0])
    sq = ctx.emit("square", f"{op.name}/square", [v.ir], ctx.graph.shape(v.ir), source_op=op.type)
    total, perm = _reduce(ctx, op, "reduce_sum", f"{op.name}/sum", Val(sq, v.perm))
    out = ctx.emit("sqrt", op.name, [total], ctx.graph.shape(total), source_op=op.type)
    ctx.set(op.outputs[0], out, perm)


@tf_op("ArgMin")
def arg_min(ctx: Context, op: Any) -> None:
    x = op.inputs[0]
    rank = len(ctx.shape(x))
    v = ctx.val(x)
    tf_axis = int(ctx.const(op.inputs[1]).reshape(())) % rank
    axis = ir_axis(tf_axis, rank, v.perm)
    have = list(v.perm) if v.perm is not None else list(range(rank))
    rest = [p - (p > tf_axis) for p in have if p != tf_axis]  # the remaining axes keep their IR order
    shape = tuple(d for i, d in enumerate(ctx.graph.shape(v.ir)) if i != axis)
    out = ctx.emit("argmin", op.name, [v.ir], shape, {"axis": axis, "keepdims": False}, source_op=op.type,
                   out_dtype=op.outputs[0].dtype.name)
    ctx.set(op.outputs[0], out, tuple(rest))


RUNNING = {"Cumsum": "cumsum", "Cumprod": "cumprod"}


@tf_op(*RUNNING)
def cumulative(ctx: Context, op: Any) -> None:
    v = ctx.val(op.inputs[0])
    rank = len(ctx.shape(op.inputs[0]))
    axis = ir_axis(int(ctx.const(op.inputs[1]).reshape(())), rank, v.perm)
    attrs = {"axis": axis, "exclusive": bool(op.get_attr("exclusive")), "reverse": bool(op.get_attr("reverse"))}
    out = ctx.emit(RUNNING[op.type], op.name, [v.ir], ctx.graph.shape(v.ir), attrs, source_op=op.type)
    ctx.set(op.outputs[0], out, v.perm)


@tf_op("LogSoftmax")
def log_softmax(ctx: Context, op: Any) -> None:
    v = ctx.val(op.inputs[0])
    rank = len(ctx.shape(op.inputs[0]))
    out = ctx.emit("log_softmax", op.name, [v.ir], ctx.graph.shape(v.ir), {"axis": ir_axis(rank - 1, rank, v.perm)},
                   source_op=op.type)
    ctx.set(op.outputs[0], out, v.perm)


@tf_op("TopKV2", "TopK")
def top_k(ctx: Context, op: Any) -> None:
    """Values and indices along TF's last axis, largest first (TF sorts them whatever `sorted` says)."""
    if op.type == "TopKV2" and not ctx.is_const(op.inputs[1]):
        _top_k_of_runtime_k(ctx, op)
        return
    k = int(np.asarray(ctx.const(op.inputs[1])).reshape(())) if op.type == "TopKV2" else int(op.get_attr("k"))
    x = ctx.tf_order(op.inputs[0])
    shape = ctx.shape(op.outputs[0])
    if k < 1:
        raise NotConvertible(f"k = {k}: an empty result")
    values = ctx.emit("top_k_values", op.name, [x], shape, {"k": k}, source_op=op.type)
    indices = ctx.emit("top_k_indices", f"{op.name}:1", [x], shape, {"k": k}, source_op=op.type, out_dtype="int32")
    ctx.set(op.outputs[0], values)
    ctx.set(op.outputs[1], indices)


def _top_k_of_runtime_k(ctx: Context, op: Any) -> None:
    """k computed from the data: the whole axis sorted (k = n), its first k rows valid. The result's length
    depends on the data (parsers/tensorflow/lengths.py), which holds along axis 0: a 1-D input only."""
    shape = ctx.shape(op.inputs[0])
    if len(shape) != 1 or shape[0] is None or shape[0] < 1:
        raise NotConvertible(f"TopKV2 with k computed from the data ({op.inputs[1].name}) of a {len(shape)}-D "
                             "input: its length along the last axis depends on the data, which converts for a 1-D "
                             "input of known length only; make k a constant")
    n = shape[0]
    x = ctx.tf_order(op.inputs[0])
    k = ctx.tf_order(op.inputs[1])
    if ctx.graph.tensors[k].dtype != "int32":
        k = ctx.emit("cast", f"{op.name}/k", [k], (), {"dtype": "int32"}, source_op=op.type, out_dtype="int32")
    values = ctx.emit("top_k_values", op.name, [x], (n,), {"k": n}, source_op=op.type)
    indices = ctx.emit("top_k_indices", f"{op.name}:1", [x], (n,), {"k": n}, source_op=op.type, out_dtype="int32")
    ctx.set(op.outputs[0], values)
    ctx.set(op.outputs[1], indices)
    for t in op.outputs:
        mark(ctx, t, k, n, f"TopKV2 '{op.name}' (k computed from the data)")


@tf_op("L2Loss")
def l2_loss(ctx: Context, op: Any) -> None:
    """sum(x * x) * 0.5 over every axis, TF's own formula."""
    v = ctx.val(op.inputs[0])
    shape = ctx.graph.shape(v.ir)
    sq = ctx.emit("square", f"{op.name}/square", [v.ir], shape, source_op=op.type)
    total = ctx.emit("reduce_sum", f"{op.name}/sum", [sq], (), {"axes": tuple(range(len(shape))), "keepdims": False},
                     source_op=op.type)
    half = ctx.emit("const", f"{op.name}/half", [], (), params={"value": np.float32(0.5)}, source_op=op.type)
    ctx.set(op.outputs[0], ctx.emit("mul", op.name, [total, half], (), source_op=op.type))
