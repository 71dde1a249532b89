"""The ONNX handlers of the nn family: per-channel affine, layer norm, linear and matmul."""

from __future__ import annotations

import numpy as np

from .contract import TABLE, Builder, Ctx, Emitted, positive_axis, reduce_op


@TABLE.register("channel_affine")
def channel_affine(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    rank = len(ctx.shape(node.inputs[0]))
    axis = positive_axis(int(node.attrs.get("axis", 1)), rank)
    bshape = (-1,) + (1,) * (rank - axis - 1)  # numpy broadcasting aligns from the right
    scale = np.asarray(node.params["scale"], np.float32).reshape(bshape)
    shift = np.asarray(node.params["shift"], np.float32).reshape(bshape)
    has_shift = bool(np.any(shift != 0))
    y = b.op("Mul", [b.x(), b.const("scale", scale)], None if has_shift else b.out)
    if has_shift:
        b.op("Add", [y, b.const("shift", shift)], b.out)
    return b.done()


def _suffix_param(value: np.ndarray | None, shape: tuple[int, ...], axis: int) -> np.ndarray | None:
    """gamma/beta as LayerNormalization wants them (shape[axis:]), or None if they vary earlier."""
    if value is None:
        return None
    v = np.asarray(value, np.float32)
    v = v.reshape((1,) * (len(shape) - v.ndim) + v.shape)
    if any(d != 1 for d in v.shape[:axis]):
        raise ValueError("gamma/beta vary over non-normalised axes")
    return np.ascontiguousarray(np.broadcast_to(v, (1,) * axis + tuple(shape[axis:])).reshape(shape[axis:]))


@TABLE.register("layer_norm")
def layer_norm(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    shape = ctx.shape(node.inputs[0])
    rank = len(shape)
    axes = sorted(positive_axis(int(a), rank) for a in node.attrs["axes"])
    eps = float(node.attrs.get("epsilon", 1e-5))
    gamma, beta = node.params.get("gamma"), node.params.get("beta")
    if ctx.opset >= 17 and axes == list(range(axes[0], rank)):
        try:
            g = _suffix_param(gamma, shape, axes[0])
            bt = _suffix_param(beta, shape, axes[0])
        except ValueError:
            pass
        else:
            g = np.ones(shape[axes[0]:], np.float32) if g is None else g
            inputs = [b.x(), b.const("gamma", g)] + ([b.const("beta", bt)] if bt is not None else [])
            b.op("LayerNormalization", inputs, b.out, axis=axes[0], epsilon=eps)
            return b.done()
    # Decomposed exactly as TF computes it: mean, centred second moment, divide by sqrt(var + eps).
    x = b.x()
    mean = reduce_op(b, "ReduceMean", x, axes, True)
    d = b.op("Sub", [x, mean])
    var = reduce_op(b, "ReduceMean", b.op("Mul", [d, d]), axes, True)
    std = b.op("Sqrt", [b.op("Add", [var, b.const("epsilon", eps)])])
    rest = [("Mul", "gamma", gamma), ("Add", "beta", beta)]
    rest = [r for r in rest if r[2] is not None]
    y = b.op("Div", [d, std], None if rest else b.out)
    for i, (op_type, pname, value) in enumerate(rest):
        y = b.op(op_type, [y, b.const(pname, np.asarray(value, np.float32))], b.out if i == len(rest) - 1 else None)
    return b.done()


@TABLE.register("linear")
def linear(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    bias = node.params.get("bias")
    if len(ctx.shape(node.inputs[0])) > 2:  # tokens (N, L, C): MatMul on the last axis, no reshape
        weight_t = np.ascontiguousarray(np.asarray(node.params["weight"], np.float32).T)
        y = b.op("MatMul", [b.x(), b.const("weight_t", weight_t)], b.out if bias is None else None)
        if bias is not None:
            b.op("Add", [y, b.const("bias", bias)], b.out)
        return b.done()
    inputs = [b.x(), b.const("weight", node.params["weight"])]
    if bias is not None:
        inputs.append(b.const("bias", bias))
    b.op("Gemm", inputs, b.out, transB=1)
    return b.done()


@TABLE.register("matmul")
def matmul(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    b.op("MatMul", [b.x(0), b.x(1)], b.out)
    return b.done()


# ---- local response normalization --------------------------------------------------------------
@TABLE.register("lrn")
def lrn(ctx: Ctx) -> Emitted:
    """ONNX LRN scales the window sum by alpha / size: alpha * size gives TF's alpha."""
    node = ctx.node
    b = Builder(ctx, node)
    size = 2 * int(node.attrs["radius"]) + 1
    b.op("LRN", [b.x()], b.out, size=size, alpha=float(np.float32(node.attrs["alpha"]) * size),
         beta=float(node.attrs["beta"]), bias=float(node.attrs["bias"]))
    return b.done()
