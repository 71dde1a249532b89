"""Handlers for the 3-D ops: conv3d, conv_transpose3d, max_pool3d, avg_pool3d.

ONNX's Conv/MaxPool/AveragePool take per-side pads on any number of axes, and AveragePool's
count_include_pad=0 is TF's divisor, so the IR's pads go straight into the layer; in a size-free model
whose SAME pads follow the size, auto_pad SAME_UPPER (TF's rule, as for 2-D) computes them from the
runtime D/H/W. A transposed conv runs unpadded; one Pad with negative (crop) and positive (zero rows
past the full output) amounts cuts TF's window from it (the same amounts at every size under TF's
rule), and the bias is added after, as TF adds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tf_convert.convert.padding import PadRecord
from tf_convert.convert.padding.sizes import needs_runtime_pads
from tf_convert.emitters.base import NodeContext

from .contract import TABLE, Builder, Ctx, Emitted


def onnx_pads_nd(pads: Sequence[int]) -> list[int]:
    """IR flat (b0, e0, b1, e1, ...) -> ONNX [b0, b1, ..., e0, e1, ...]."""
    return [int(p) for p in pads[0::2]] + [int(p) for p in pads[1::2]]


def _pads(ctx: Ctx) -> dict[str, Any]:
    """The layer's padding attribute: TF's SAME from the runtime size (auto_pad) in a size-free model
    where the pads follow the size, else the IR's pads."""
    a = ctx.node.attrs
    if ctx.free_axes and needs_runtime_pads(ctx.node):
        return {"auto_pad": "SAME_UPPER"}  # in the layer, as the 2-D plan's runtime pads (no pad layer)
    return {"pads": onnx_pads_nd(a["pads"])}


def pool3d_limits(ctx: NodeContext) -> str | None:
    a = ctx.node.attrs  # onnxruntime refuses a pad >= kernel (a window of padding only; TF never makes one)
    if any(max(a["pads"][2 * i], a["pads"][2 * i + 1]) >= k for i, k in enumerate(a["kernel"])):
        return f"pool pads {tuple(a['pads'])} not smaller than the kernel {tuple(a['kernel'])}"
    return None


@TABLE.register("conv3d")
def conv3d(ctx: Ctx) -> Emitted:
    node, b = ctx.node, Builder(ctx, ctx.node)
    a = node.attrs
    inputs = [b.x(), b.const("weight", node.params["weight"])]
    if node.params.get("bias") is not None:
        inputs.append(b.const("bias", node.params["bias"]))
    b.op("Conv", inputs, b.out, kernel_shape=list(a["kernel"]), strides=list(a["stride"]),
         dilations=list(a["dilation"]), group=int(a["groups"]), **_pads(ctx))
    return b.done()


@TABLE.register("max_pool3d", limit=pool3d_limits)
def max_pool3d(ctx: Ctx) -> Emitted:
    b, a = Builder(ctx, ctx.node), ctx.node.attrs
    b.op("MaxPool", [b.x()], b.out, kernel_shape=list(a["kernel"]), strides=list(a["stride"]), **_pads(ctx))
    return b.done()


@TABLE.register("avg_pool3d", limit=pool3d_limits)
def avg_pool3d(ctx: Ctx) -> Emitted:
    b, a = Builder(ctx, ctx.node), ctx.node.attrs
    b.op("AveragePool", [b.x()], b.out, kernel_shape=list(a["kernel"]), strides=list(a["stride"]),
         count_include_pad=int(bool(a.get("count_include_pad"))), **_pads(ctx))
    return b.done()


@TABLE.register("conv_transpose3d")
def conv_transpose3d(ctx: Ctx) -> Emitted:
    node, b = ctx.node, Builder(ctx, ctx.node)
    a, bias = node.attrs, node.params.get("bias")
    full = [(n - 1) * s + (k - 1) * d + 1 for n, k, s, d in
            zip(ctx.shape(node.inputs[0])[2:], a["kernel"], a["stride"], a["dilation"])]
    crop, size = list(a["crop"]), list(a["output_size"])
    ends = [f - c - o for f, c, o in zip(full, crop, size)]  # < 0: zero rows past the full output
    window = any(crop) or any(ends)
    in_layer_bias = bias is not None and all(e >= 0 for e in ends)
    inputs = [b.x(), b.const("weight", node.params["weight"])]  # IODHW is ONNX's layout too
    if in_layer_bias:
        inputs.append(b.const("bias", bias))
    y = b.op("ConvTranspose", inputs, None if window else b.out, kernel_shape=list(a["kernel"]),
             strides=list(a["stride"]), dilations=list(a["dilation"]), group=int(a["groups"]))
    if not window:
        return b.done()
    pads = [0, 0, *(-c for c in crop), 0, 0, *(-e for e in ends)]
    last = bias is None or in_layer_bias
    y = b.op("Pad", [y, b.ints("pads", pads)], b.out if last else None, mode="constant")
    if not last:
        b.op("Add", [y, b.const("bias", np.asarray(bias, np.float32).reshape(1, -1, 1, 1, 1))], b.out)
    b.pad_layers([PadRecord(tuple(pads), "TF keeps an off-centre window of the transposed output; sliced", "crop")])
    return b.done()
