"""The Caffe handlers of the nn family: per-channel affine, layer norm, linear and matmul."""

from __future__ import annotations

import numpy as np

from tf_convert.emitters.base import NodeContext

from .contract import TABLE, Ctx, positive_axis


@TABLE.register("channel_affine")
def _channel_affine(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    axis = positive_axis(node.attrs.get("axis", 1), len(b.shape(x)))
    top = b.unique(f"{node.name}/scale")
    blobs = [node.params["scale"], node.params["shift"]]
    b.add("Scale", top, [x], [top], [b.shape(x)], blobs, scale_param={"axis": axis, "num_axes": 1, "bias_term": True})
    return top


def _layer_norm_limits(ctx: NodeContext) -> str | None:
    g, node = ctx.graph, ctx.node
    rank = len(g.shape(node.inputs[0]))
    axes = tuple(positive_axis(a, rank) for a in node.attrs["axes"])
    if axes != (1,) or rank not in (2, 4):
        return "only normalisation over the channel axis (IR axis 1) of a 2-D or 4-D tensor"
    return None


@TABLE.register("layer_norm", limit=_layer_norm_limits)
def _layer_norm(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    # mean/var over channels, replicated on every channel by a 1x1 conv (or InnerProduct) whose
    # weights are all 1/C; Caffe's MVN layer adds eps to the std, not the variance (inexact).
    x = node.inputs[0]
    shape = b.shape(x)
    c = shape[1]
    avg = np.full((c, c), 1.0 / c, np.float32)

    def mean(name: str, src: str) -> str:
        top = b.unique(name)
        if len(shape) == 4:
            b.add("Convolution", name, [src], [top], [shape], [avg[:, :, None, None]],
                  convolution_param={"num_output": c, "bias_term": False, "kernel_h": 1, "kernel_w": 1})
        else:
            b.add("InnerProduct", name, [src], [top], [shape], [avg],
                  inner_product_param={"num_output": c, "bias_term": False})
        return top

    mu = mean(f"{node.name}/mean", x)
    centred = b.eltwise(f"{node.name}/centre", [x, mu], "SUM", [1.0, -1.0])
    sq = b.power(f"{node.name}/square", centred, power=2.0)
    var = mean(f"{node.name}/var", sq)
    inv = b.power(f"{node.name}/rstd", var, power=-0.5, shift=float(node.attrs["epsilon"]))
    y = b.eltwise(f"{node.name}/norm", [centred, inv], "PROD")
    gamma, beta = node.params.get("gamma"), node.params.get("beta")
    if gamma is not None or beta is not None:
        y = b.scale_const(f"{node.name}/affine", y, gamma, beta)
    return y


@TABLE.register("linear")
def _linear(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    weight, bias = node.params["weight"], node.params.get("bias")
    top = b.unique(f"{node.name}/fc")
    blobs = [weight] + ([bias] if bias is not None else [])
    shape = tuple(b.shape(x))
    # InnerProduct keeps the axes before `axis`: a Dense on (N, L, C) tokens acts on the last one
    axis = {} if len(shape) == 2 else {"axis": len(shape) - 1}
    b.add("InnerProduct", top, [x], [top], [(*shape[:-1], weight.shape[0])], blobs,
          inner_product_param={"num_output": weight.shape[0], "bias_term": bias is not None, **axis})
    return top


# ---- local response normalization --------------------------------------------------------------
@TABLE.register("lrn")
def lrn(ctx: Ctx) -> str:
    """Caffe's LRN (ACROSS_CHANNELS) scales the window sum by alpha / local_size. OpenCV DNN ignores
    its `k`, so k is kept at 1 and TF's bias factored out: (b + a*s)^beta = b^beta * (1 + (a/b)*s)^beta."""
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    size = 2 * int(node.attrs["radius"]) + 1
    bias, beta = float(np.float32(node.attrs["bias"])), float(np.float32(node.attrs["beta"]))
    alpha = float(np.float32(node.attrs["alpha"])) * size / bias
    top = b.unique(f"{node.name}/lrn")
    b.add("LRN", top, [x], [top], [b.shape(x)],
          lrn_param={"local_size": size, "alpha": alpha, "beta": beta, "k": 1.0})
    return top if bias == 1.0 else b.power(f"{node.name}/unbias", top, scale=bias ** -beta)
