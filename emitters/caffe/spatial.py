"""The Caffe handlers of the spatial family: convolutions, pooling and pad."""

from __future__ import annotations

import math

from tf_convert.convert.padding import Plan, output_hw, with_kernel_taps
from tf_convert.convert.padding.caffe import (
    caffe_pool_out_1d,  # Caffe's own (ceil-rounded) pooling size
)
from tf_convert.convert.padding.targets import caffe_transposed_kernel
from tf_convert.emitters.base import NodeContext

from .builder import POOL
from .contract import TABLE, Ctx


def _pad_group(ctx: Ctx, plan: Plan, x: str) -> str:
    """The plan's pad layer group in front of the layer (if any), recorded in `pad_layers`."""
    if plan.pad_layer is None:
        return x
    ctx.builder.pad_layers += [r.entry(ctx.node.name) for r in plan.records]
    return ctx.builder.pad_group(f"{ctx.node.name}/pad", x, plan.pad_layer.pads, plan.pad_layer.value)


@TABLE.register("conv2d")
def _conv2d(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    a = node.attrs
    x = node.inputs[0]
    plan = ctx.plan()
    x = _pad_group(ctx, plan, x)
    weight = with_kernel_taps(node.params["weight"], plan.kernel_taps)
    out_c, _, kh, kw = weight.shape
    (dh, dw), (sh, sw), pads = a["dilation"], a["stride"], plan.layer_pads
    n, _, h, w = b.shape(x)
    oh, ow = output_hw((h, w), (kh, kw), (sh, sw), (dh, dw), pads)
    bias = node.params.get("bias")
    conv = {
        "num_output": out_c, "bias_term": bias is not None, "kernel_h": kh, "kernel_w": kw,
        "stride_h": sh, "stride_w": sw, "group": a["groups"],
    }
    if pads.symmetric:
        conv.update(pad_h=pads.top, pad_w=pads.left)
    else:  # --caffe-pad opencv: OpenCV DNN's four pads (begin h, begin w, end h, end w)
        conv["pad"] = [pads.top, pads.left, pads.bottom, pads.right]
        b.uses_opencv("four-sided conv pads")
        b.warn_once("deploy.prototxt writes asymmetric conv pads as four `pad` values (--caffe-pad opencv): "
                    "OpenCV DNN loads it, BVLC Caffe does not")
    if (dh, dw) != (1, 1):
        conv["dilation"] = [dh, dw]
    blobs = [weight] + ([bias] if bias is not None else [])
    top = b.unique(f"{node.name}/conv")
    b.add("Convolution", f"{node.name}/conv", [x], [top], [(n, out_c, oh, ow)], blobs, convolution_param=conv)
    if not plan.crop.zero:
        ctx.builder.pad_layers += [r.entry(node.name) for r in plan.records]
    return b.trim(f"{node.name}/trim", top, plan.crop)


@TABLE.register("conv_transpose2d")
def _conv_transpose2d(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    a = node.attrs
    x = node.inputs[0]
    plan = ctx.plan()
    weight = caffe_transposed_kernel(node)
    x = _pad_group(ctx, plan, x)
    weight = with_kernel_taps(weight, plan.kernel_taps)
    _, out_per_group, kh, kw = weight.shape
    groups = a["groups"]
    (sh, sw), (ph, pw) = a["stride"], (plan.layer_pads.top, plan.layer_pads.left)
    n, _, h, w = b.shape(x)
    oh, ow = (h - 1) * sh + kh - 2 * ph, (w - 1) * sw + kw - 2 * pw
    bias = node.params.get("bias")
    conv = {
        "num_output": out_per_group * groups, "bias_term": bias is not None, "kernel_h": kh, "kernel_w": kw,
        "stride_h": sh, "stride_w": sw, "pad_h": ph, "pad_w": pw, "group": groups,
    }
    blobs = [weight] + ([bias] if bias is not None else [])
    top = b.unique(f"{node.name}/deconv")
    b.add("Deconvolution", f"{node.name}/deconv", [x], [top], [(n, out_per_group * groups, oh, ow)], blobs,
          convolution_param=conv)
    return b.trim(f"{node.name}/crop", top, plan.crop)


@TABLE.register("max_pool2d", "avg_pool2d")
def _pool(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    a = node.attrs
    x = node.inputs[0]
    plan = ctx.plan()
    x = _pad_group(ctx, plan, x)
    (kh, kw), (sh, sw), (ph, pw) = a["kernel"], a["stride"], (plan.layer_pads.top, plan.layer_pads.left)
    n, c, h, w = b.shape(x)
    shape = (n, c, caffe_pool_out_1d(h, kh, sh, ph), caffe_pool_out_1d(w, kw, sw, pw))
    pool = {
        "pool": POOL["MAX" if node.op == "max_pool2d" else "AVE"], "kernel_h": kh, "kernel_w": kw,
        "stride_h": sh, "stride_w": sw, "pad_h": ph, "pad_w": pw,
    }
    top = b.unique(f"{node.name}/pool")
    b.add("Pooling", f"{node.name}/pool", [x], [top], [shape], pooling_param=pool)
    top = b.trim(f"{node.name}/trim", top, plan.crop)
    if plan.divisor_map is not None:
        out = b.unique(f"{node.name}/divisor")
        b.add("Scale", f"{node.name}/divisor", [top], [out], [b.shape(top)], [plan.divisor_map],
              scale_param={"axis": 2, "num_axes": 2, "bias_term": False})
        top = out
    return top


def _pad_limits(ctx: NodeContext) -> str | None:
    node = ctx.node
    if node.attrs["mode"] not in ("constant", "reflect", "symmetric"):
        return f"pad mode {node.attrs['mode']!r}"
    if any(p < 0 for pair in node.attrs["pads"] for p in pair):
        return "negative pads"
    if node.attrs["mode"] == "constant" and not math.isfinite(float(node.attrs.get("value", 0.0))):
        # the pad rows are built as 0 * x + value (builder.rows): nan where a row meets an infinite one
        return f"constant pad value {node.attrs['value']} (Caffe builds pad rows as 0 * x + value: nan for inf)"
    return None


@TABLE.register("pad", limit=_pad_limits)
def _pad(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    mode, value = node.attrs["mode"], float(node.attrs.get("value", 0.0))
    pads = [tuple(p) for p in node.attrs["pads"]]
    b.pad_layers += [r.entry(node.name) for r in ctx.plan().records]  # a 4-D pad: one pad layer group
    for axis, (before, after) in enumerate(pads):
        x = b.pad_axis(f"{node.name}/pad{axis}", x, axis, before, after, mode, value)
    return x
