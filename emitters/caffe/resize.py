"""The Caffe handlers of the resize family: resize, repeat.

BVLC: integer nearest upscaling repeats (a Deconvolution of ones); other integer-factor upscalings whose
TF weights repeat exactly copy the edge rows (TF clamps its taps there), run a fixed-weight Deconvolution
and crop (convert/sampling/deconv.py). The OpenCV dialect also writes OpenCV DNN's Resize layer where it
samples TF's grid (convert/sampling/plans.py says where)."""

from __future__ import annotations

import numpy as np

from tf_convert.convert.padding import Pads
from tf_convert.convert.sampling import ResizePlan, plan_resize
from tf_convert.convert.sampling.plans import CAFFE_OPENCV
from tf_convert.emitters.base import NodeContext

from .contract import TABLE, Ctx, opencv_dialect


def _plan(ctx: NodeContext) -> ResizePlan:
    a, g, node = ctx.attrs, ctx.graph, ctx.node
    target = CAFFE_OPENCV if opencv_dialect(ctx) else "caffe"
    return plan_resize(target, a["mode"], a["coordinate"], g.shape(node.inputs[0])[2:], g.shape(node.output)[2:])


def _resize_limits(ctx: NodeContext) -> str | None:
    plan = _plan(ctx)
    return None if plan.kind != "unsupported" else plan.reason


@TABLE.register("resize", limit=_resize_limits)
def _resize(ctx: Ctx) -> str:
    plan = _plan(ctx)
    if plan.kind == "deconv":
        return _deconv(ctx, plan)
    if plan.kind == "native":
        return _opencv_resize(ctx, plan)
    b, node = ctx.builder, ctx.node
    (fh, fw), x = plan.factors, node.inputs[0]
    if (fh, fw) == (1, 1):
        return x
    n, c, h, w = b.shape(x)
    conv = {"num_output": c, "bias_term": False, "kernel_h": fh, "kernel_w": fw, "stride_h": fh, "stride_w": fw,
            "pad_h": 0, "pad_w": 0, "group": c}
    top = b.unique(f"{node.name}/repeat")
    b.add("Deconvolution", f"{node.name}/repeat", [x], [top], [(n, c, h * fh, w * fw)],
          [np.ones((c, 1, fh, fw), np.float32)], convolution_param=conv)
    return top


def _edge_rows(ctx: Ctx, x: str, axis: int, lead: int, tail: int) -> str:
    """x with its first row copied `lead` times in front and its last `tail` times behind (TF's clamping)."""
    if not lead and not tail:
        return x
    b, name = ctx.builder, f"{ctx.node.name}/edge{axis}"
    size = b.shape(x)[axis]
    first = b.take(f"{name}_first", x, axis, 0, 1) if lead else None
    last = b.take(f"{name}_last", x, axis, size - 1, size) if tail else None
    return b.concat(name, [first] * lead + [x] + [last] * tail, axis)


def _deconv(ctx: Ctx, plan: ResizePlan) -> str:
    b, g, node = ctx.builder, ctx.graph, ctx.node
    ah, aw = plan.settings["axes"]
    x = _edge_rows(ctx, node.inputs[0], 2, ah.lead, ah.tail)
    x = _edge_rows(ctx, x, 3, aw.lead, aw.tail)
    n, c, h, w = b.shape(x)
    kh, kw = np.asarray(ah.kernel, np.float32), np.asarray(aw.kernel, np.float32)
    ph, pw = min(ah.begin, ah.end), min(aw.begin, aw.end)  # the symmetric part of the crop: the layer's pad
    oh, ow = (h - 1) * ah.factor + kh.size - 2 * ph, (w - 1) * aw.factor + kw.size - 2 * pw
    conv = {"num_output": c, "bias_term": False, "kernel_h": kh.size, "kernel_w": kw.size, "stride_h": ah.factor,
            "stride_w": aw.factor, "pad_h": ph, "pad_w": pw, "group": c}
    weights = np.broadcast_to(np.outer(kh, kw).astype(np.float32), (c, 1, kh.size, kw.size))
    top = b.unique(f"{node.name}/upsample")
    b.add("Deconvolution", f"{node.name}/upsample", [x], [top], [(n, c, oh, ow)], [weights], convolution_param=conv)
    top = b.trim(f"{node.name}/crop", top, Pads(ah.begin - ph, ah.end - ph, aw.begin - pw, aw.end - pw))
    assert b.shape(top) == tuple(g.shape(node.output)), (b.shape(top), g.shape(node.output))
    return top


def _opencv_resize(ctx: Ctx, plan: ResizePlan) -> str:
    b, g, node = ctx.builder, ctx.graph, ctx.node
    b.uses_opencv("Resize")
    s, x = plan.settings, node.inputs[0]
    (oh, ow), interpolation = g.shape(node.output)[2:], b.P["ResizeParameter"].Interpolation.Value(s["interpolation"])
    params = {"interpolation": interpolation, "height": int(oh), "width": int(ow)}
    params.update({flag: 1 for flag in ("align_corners", "half_pixel_centers") if s[flag]})
    top = b.unique(f"{node.name}/resize")
    b.add("Resize", f"{node.name}/resize", [x], [top], [(*b.shape(x)[:2], oh, ow)], resize_param=params)
    return top


@TABLE.register("repeat")
def _repeat(ctx: Ctx) -> str:
    """numpy.repeat per axis as copies: one Slice into single rows, a Concat taking each row `r` times."""
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    for axis, times in enumerate(ctx.attrs["repeats"]):
        if times == 1:
            continue
        size = b.shape(x)[axis]
        rows = b.slice(f"{node.name}/rows{axis}", x, axis, list(range(1, size))) if size > 1 else [x]
        x = b.concat(f"{node.name}/repeat{axis}", [row for row in rows for _ in range(times)], axis)
    return x

