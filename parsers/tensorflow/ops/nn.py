"""Per-channel and dense TF ops: BiasAdd, FusedBatchNorm, MatMul (a constant right operand is a linear
layer) and MatMul / BatchMatMul of two activations (an IR matmul in TF's axis order)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.ir.lazy import contiguous

from ..context import Context, NotConvertible, attr, fmt_perm, ir_axis
from ..table import tf_op
from .elementwise import binary
from .shape import broadcast_ir


def _channel_const(ctx: Context, base: str, values: np.ndarray, axis: int, rank: int) -> str:
    shape = [1] * rank
    shape[axis] = values.size
    value = contiguous(values.reshape(shape), np.float32)
    return ctx.emit("const", base, [], value.shape, params={"value": value}, source_op="Const")


@tf_op("BiasAdd", "BiasAddV1")
def bias_add(ctx: Context, op: Any) -> None:
    x = op.inputs[0]
    rank = len(ctx.shape(x))
    fmt = attr(op, "data_format", "NHWC")
    if not ctx.is_const(op.inputs[1]) and not (rank >= 3 and fmt.startswith("NC")):
        # a computed bias (a traced Keras RNN step adds h @ U so): an add broadcast on the last axis
        return binary(ctx, op, "add")
    bias = ctx.const(op.inputs[1])
    x_ir = ctx.nchw(x, fmt) if rank in (4, 5) else ctx.tf_order(x)  # NCHW / NCDHW
    perm = fmt_perm(fmt, rank)
    tf_axis = 1 if (rank >= 3 and fmt.startswith("NC")) else rank - 1
    axis = ir_axis(tf_axis, rank, perm)
    b = _channel_const(ctx, f"{op.name}/bias", bias, axis, rank)
    out = ctx.emit("add", op.name, [x_ir, b], ctx.graph.shape(x_ir), source_op=op.type)
    ctx.set(op.outputs[0], out, perm)


@tf_op("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def fused_batch_norm(ctx: Context, op: Any) -> None:
    fmt = attr(op, "data_format", "NHWC")
    if attr(op, "is_training", True):  # TF's default: a SavedModel leaves the attr out
        if not all(ctx.is_const(t) and np.size(ctx.const(t)) == 0 for t in op.inputs[3:5]):
            raise NotConvertible("batch norm in training mode (is_training=True); export the inference graph")
        return _batch_statistics_norm(ctx, op, fmt)
    gamma, beta, mean, var = (np.asarray(ctx.const(t), np.float64) for t in op.inputs[1:5])  # small
    eps = float(attr(op, "epsilon", 1e-3))
    scale = gamma / np.sqrt(var + eps)
    shift = beta - mean * scale
    x_ir = ctx.nchw(op.inputs[0], fmt)
    stats = {"gamma": gamma, "beta": beta, "mean": mean, "variance": var}  # kept for --into
    out = ctx.emit("channel_affine", op.name, [x_ir], ctx.graph.shape(x_ir), {"axis": 1, "epsilon": eps},
                   {"scale": scale.astype(np.float32), "shift": shift.astype(np.float32),
                    **{k: v.astype(np.float32) for k, v in stats.items()}}, op.type)
    ctx.set(op.outputs[0], out, fmt_perm(fmt, len(ctx.graph.shape(x_ir))))  # NHWC or NDHWC


def _batch_statistics_norm(ctx: Context, op: Any, fmt: str) -> None:
    """A fused batch norm given no mean/variance normalises by its input's own statistics per channel,
    at inference too (tf_keras's LayerNormalization computes with one): (x - mean) / sqrt(var + eps)
    * scale + offset, mean and (biased) variance over every axis but the channels."""
    x = ctx.nchw(op.inputs[0], fmt)
    shape = ctx.graph.shape(x)
    axes = tuple(a for a in range(len(shape)) if a != 1)
    kept = tuple(1 if a in axes else d for a, d in enumerate(shape))
    eps = float(attr(op, "epsilon", 1e-4))
    mean = ctx.emit("reduce_mean", f"{op.name}/mean", [x], kept, {"axes": axes, "keepdims": True}, source_op=op.type)
    centred = ctx.emit("sub", f"{op.name}/centred", [x, mean], shape, source_op=op.type)
    square = ctx.emit("square", f"{op.name}/square", [centred], shape, source_op=op.type)
    var = ctx.emit("reduce_mean", f"{op.name}/variance", [square], kept, {"axes": axes, "keepdims": True},
                   source_op=op.type)
    eps_c = ctx.emit("const", f"{op.name}/epsilon", [], (1,) * len(shape),
                     params={"value": np.full((1,) * len(shape), eps, np.float32)}, source_op=op.type)
    shifted = ctx.emit("add", f"{op.name}/var_eps", [var, eps_c], kept, source_op=op.type)
    inv = ctx.emit("rsqrt", f"{op.name}/rsqrt", [shifted], kept, source_op=op.type)
    normed = ctx.emit("mul", f"{op.name}/normed", [centred, inv], shape, source_op=op.type)
    gamma, beta = (np.asarray(ctx.const(t), np.float32) for t in op.inputs[1:3])
    scale = ctx.emit("const", f"{op.name}/scale", [], kept, params={"value": gamma.reshape(kept)}, source_op=op.type)
    offset = ctx.emit("const", f"{op.name}/offset", [], kept, params={"value": beta.reshape(kept)}, source_op=op.type)
    scaled = ctx.emit("mul", f"{op.name}/scaled", [normed, scale], shape, source_op=op.type)
    out = ctx.emit("add", op.name, [scaled, offset], shape, source_op=op.type)
    ctx.set(op.outputs[0], out, fmt_perm(fmt, len(shape)))


def _operand(ctx: Context, op: Any, index: int, adjoint: bool) -> str:
    t = ctx.tf_order(op.inputs[index])
    if not adjoint:
        return t
    shape = ctx.graph.shape(t)
    perm = tuple(range(len(shape) - 2)) + (len(shape) - 1, len(shape) - 2)
    return ctx.emit("transpose", f"{op.name}/adjoint_{'ab'[index]}", [t], tuple(shape[p] for p in perm),
                    {"perm": perm}, source_op=op.type)


def activation_matmul(ctx: Context, op: Any, adjoint_a: bool, adjoint_b: bool) -> None:
    """IR matmul of the op's two inputs, in TF's axis order; real dtypes only, so adjoint == transpose."""
    a, b = _operand(ctx, op, 0, adjoint_a), _operand(ctx, op, 1, adjoint_b)
    batch = tuple(ctx.shape(op.outputs[0]))[:-2]
    if tuple(ctx.graph.shape(a))[:-2] != batch or tuple(ctx.graph.shape(b))[:-2] != batch:
        # broadcast batch axes made explicit: a matmul over equal batch axes runs in every target
        a = broadcast_ir(ctx, f"{op.name}/a_batch", a, batch + tuple(ctx.graph.shape(a))[-2:], op.type)
        b = broadcast_ir(ctx, f"{op.name}/b_batch", b, batch + tuple(ctx.graph.shape(b))[-2:], op.type)
    dtype = op.outputs[0].dtype.name
    if np.dtype(dtype).kind in "iu":  # integers accumulate in TF's output type (BatchMatMulV3's Tout)
        a, b = (_as_dtype(ctx, op, x, dtype, side) for x, side in ((a, "a"), (b, "b")))
    out = ctx.emit("matmul", op.name, [a, b], ctx.shape(op.outputs[0]), source_op=op.type, out_dtype=dtype)
    ctx.set(op.outputs[0], out)


def _as_dtype(ctx: Context, op: Any, x: str, dtype: str, side: str) -> str:
    """Operand `x` cast to `dtype`, unless it has it."""
    if ctx.graph.tensors[x].dtype == dtype:
        return x
    return ctx.emit("cast", f"{op.name}/{side}_to_{dtype}", [x], ctx.graph.shape(x), {"dtype": dtype},
                    source_op=op.type, out_dtype=dtype)


@tf_op("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def batch_matmul(ctx: Context, op: Any) -> None:
    activation_matmul(ctx, op, bool(op.get_attr("adj_x")), bool(op.get_attr("adj_y")))


@tf_op("MatMul")
def matmul(ctx: Context, op: Any) -> None:
    a, b = op.inputs[0], op.inputs[1]
    if not ctx.is_const(b) or ctx.is_const(a):  # two activations (or a constant left operand)
        return activation_matmul(ctx, op, bool(op.get_attr("transpose_a")), bool(op.get_attr("transpose_b")))
    x = ctx.tf_order(a)
    if op.get_attr("transpose_a"):
        rows, cols = ctx.graph.shape(x)
        x = ctx.emit("transpose", f"{op.name}/transpose_a", [x], (cols, rows), {"perm": (1, 0)},
                     source_op=op.type)
    w = ctx.const(b)
    weight = w if op.get_attr("transpose_b") else w.T  # IR wants (out, in)
    out = ctx.emit("linear", op.name, [x], ctx.shape(op.outputs[0]), {},
                   {"weight": contiguous(weight, np.float32)}, source_op=op.type)
    ctx.set(op.outputs[0], out)


# ---- LRN ---------------------------------------------------------------
@tf_op("LRN")
def lrn(ctx: Context, op: Any) -> None:
    """TF's LRN (NHWC, across the last axis) is the IR lrn on NCHW: every target has it natively."""
    if len(ctx.shape(op.inputs[0])) != 4:
        raise NotConvertible("LRN of a tensor that is not 4-D")
    x = ctx.nchw(op.inputs[0], "NHWC")
    attrs = {"radius": int(op.get_attr("depth_radius")), "bias": float(op.get_attr("bias")),
             "alpha": float(op.get_attr("alpha")), "beta": float(op.get_attr("beta"))}
    out = ctx.emit("lrn", op.name, [x], ctx.graph.shape(x), attrs, source_op=op.type)
    ctx.set(op.outputs[0], out, fmt_perm("NHWC"))
