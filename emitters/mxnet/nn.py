"""The MXNet handlers of the nn family: per-channel affine, layer norm, linear and matmul."""

from __future__ import annotations

import numpy as np

from tf_convert.convert.ir.lazy import contiguous
from tf_convert.emitters.base import NodeContext

from .contract import TABLE, Ctx, Fragment

# BatchNorm as an exact affine map: moving_var + eps == 1 exactly in float32, so y = x * gamma + beta
BN_EPS = 2.0**-10


def _axis_shape(rank: int, axis: int, size: int) -> tuple[int, ...]:
    shape = [1] * rank
    shape[axis] = size
    return tuple(shape)


@TABLE.register("channel_affine")
def channel_affine(ctx: Ctx) -> Fragment:
    f, shape = Fragment(), ctx.in_shape()
    axis = ctx.attrs.get("axis", 1) % len(shape)
    scale = np.asarray(ctx.node.params["scale"], np.float32).reshape(-1)
    shift = np.asarray(ctx.node.params["shift"], np.float32).reshape(-1)
    style = ctx.options.extra.get("mxnet_affine", "batchnorm")
    if style == "batchnorm" and len(shape) == 4 and axis == 1:
        ins = [ctx.inputs[0], f.var(f"{ctx.name}_gamma", scale), f.var(f"{ctx.name}_beta", shift),
               f.var(f"{ctx.name}_moving_mean", np.zeros_like(scale), aux=True),
               f.var(f"{ctx.name}_moving_var", np.full_like(scale, 1.0 - BN_EPS), aux=True)]
        f.op("BatchNorm", ctx.name, ins, eps=BN_EPS, fix_gamma=False, use_global_stats=True, axis=1)
        return f
    bshape = _axis_shape(len(shape), axis, scale.size)
    y = f.op("broadcast_mul", f"{ctx.name}_scale", [ctx.inputs[0], f.var(f"{ctx.name}_gamma", scale.reshape(bshape))])
    f.op("broadcast_add", ctx.name, [y, f.var(f"{ctx.name}_beta", shift.reshape(bshape))])
    return f


@TABLE.register("layer_norm")
def layer_norm(ctx: Ctx) -> Fragment:
    f, shape = Fragment(), ctx.in_shape()
    rank = len(shape)
    axes = tuple(sorted(int(ax) % rank for ax in ctx.attrs["axes"]))
    eps = float(ctx.attrs["epsilon"])
    gamma, beta = ctx.node.params.get("gamma"), ctx.node.params.get("beta")
    x = ctx.inputs[0]
    if len(axes) == 1 and all(_along(v, shape, axes[0]) for v in (gamma, beta)):
        c = shape[axes[0]]
        g = np.ones(c, np.float32) if gamma is None else np.asarray(gamma, np.float32).reshape(c)
        b = np.zeros(c, np.float32) if beta is None else np.asarray(beta, np.float32).reshape(c)
        f.op("LayerNorm", ctx.name, [x, f.var(f"{ctx.name}_gamma", g), f.var(f"{ctx.name}_beta", b)],
             axis=axes[0], eps=eps)
        return f
    # several axes (or gamma spanning more than one axis): spell the formula out
    n = ctx.name
    mean = f.op("mean", f"{n}_mean", [x], axis=axes, keepdims=True)
    d = f.op("broadcast_sub", f"{n}_centered", [x, mean])
    var = f.op("mean", f"{n}_var", [f.op("square", f"{n}_sq", [d])], axis=axes, keepdims=True)
    inv = f.op("rsqrt", f"{n}_rstd", [f.op("_plus_scalar", f"{n}_var_eps", [var], scalar=eps)])
    y = f.op("broadcast_mul", f"{n}_norm" if gamma is not None or beta is not None else n, [d, inv])
    if gamma is not None:
        g = np.asarray(gamma, np.float32)
        g = g.reshape((1,) * (rank - g.ndim) + g.shape)
        y = f.op("broadcast_mul", f"{n}_scaled" if beta is not None else n, [y, f.var(f"{n}_gamma", g)])
    if beta is not None:
        b = np.asarray(beta, np.float32)
        f.op("broadcast_add", n, [y, f.var(f"{n}_beta", b.reshape((1,) * (rank - b.ndim) + b.shape))])
    return f


def _along(value: np.ndarray | None, shape: tuple[int, ...], axis: int) -> bool:
    """True when `value` (broadcast against `shape`) varies along `axis` only."""
    if value is None:
        return True
    v = np.asarray(value)
    full = (1,) * (len(shape) - v.ndim) + v.shape
    return (all(d == 1 for i, d in enumerate(full) if i != axis)
            and full[axis] in (1, shape[axis]) and v.size == shape[axis])


@TABLE.register("linear")
def linear(ctx: Ctx) -> Fragment:
    f, p = Fragment(), ctx.node.params
    weight = contiguous(p["weight"], np.float32)
    ins = [ctx.inputs[0], f.var(f"{ctx.name}_weight", weight)]
    if p.get("bias") is not None:
        ins.append(f.var(f"{ctx.name}_bias", p["bias"]))
    # flatten=False: apply to the last axis whatever the rank (IR linear never flattens)
    f.op("FullyConnected", ctx.name, ins, num_hidden=weight.shape[0], no_bias=len(ins) == 2, flatten=False)
    return f


def _matmul_limits(ctx: NodeContext) -> str | None:
    a, b = ctx.graph.shape(ctx.node.inputs[0]), ctx.graph.shape(ctx.node.inputs[1])
    dtype = ctx.graph.tensors[ctx.node.output].dtype
    if dtype != "float32":
        return f"matmul giving {dtype}: MXNet's dot and batch_dot compute in float only"
    if len(b) == 2:  # (..., K) x (K, N): `dot` contracts a's last axis with b's first
        return None
    if len(a) != len(b) or tuple(a[:-2]) != tuple(b[:-2]):
        return f"matmul of shapes {tuple(a)} x {tuple(b)}: MXNet's batch_dot needs the same batch axes"
    return None


@TABLE.register("matmul", limit=_matmul_limits)
def matmul(ctx: Ctx) -> Fragment:
    f = Fragment()
    a, b, out = ctx.in_shape(0), ctx.in_shape(1), ctx.out_shape
    if len(b) == 2:  # also (..., K) x (K, N) (tokens times a table: one_hot embeddings)
        f.op("dot", ctx.name, ctx.inputs)
        return f
    if len(a) == 3:
        f.op("batch_dot", ctx.name, ctx.inputs)
        return f
    # fold the batch axes into one for batch_dot, then restore them
    x = f.op("Reshape", f"{ctx.name}_a3", [ctx.inputs[0]], shape=(-1, *a[-2:]))
    y = f.op("Reshape", f"{ctx.name}_b3", [ctx.inputs[1]], shape=(-1, *b[-2:]))
    z = f.op("batch_dot", f"{ctx.name}_dot", [x, y])
    f.op("Reshape", ctx.name, [z], shape=tuple(out))
    return f


# ---- local response normalization --------------------------------------------------------------
@TABLE.register("lrn")
def lrn(ctx: Ctx) -> Fragment:
    """MXNet's LRN scales the window sum by alpha / nsize: alpha * nsize gives TF's alpha."""
    f = Fragment()
    size = 2 * int(ctx.attrs["radius"]) + 1
    f.op("LRN", ctx.name, ctx.inputs, nsize=size, alpha=float(np.float32(ctx.attrs["alpha"]) * size),
         beta=float(ctx.attrs["beta"]), knorm=float(ctx.attrs["bias"]))
    return f
