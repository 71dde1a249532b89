"""Handlers for the 3-D ops: conv3d, conv_transpose3d, max_pool3d, avg_pool3d.

MXNet's Convolution/Pooling/Deconvolution take 3-D kernels but pad symmetrically, so unequal pads
become a 5-D constant `Pad` in front (-inf before max pooling); average pooling over such a pad
counts the padded zeros and is rescaled by a constant map of window size / real elements; a
transposed conv runs unpadded and is sliced (and zero-extended past its full output) to TF's window,
the bias added after.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tf_convert.convert.ir.lazy import contiguous
from tf_convert.convert.padding import PadRecord, window_counts_1d

from .contract import TABLE, Ctx
from .spatial import _crop
from .symbol import Fragment, Ref


def _symmetric(pads: Sequence[int]) -> bool:
    return all(pads[i] == pads[i + 1] for i in (0, 2, 4))


def _pad_in_front(f: Fragment, ctx: Ctx, value: float, reason: str) -> Ref:
    name = f"{ctx.name}_pad"
    pads = tuple(int(p) for p in ctx.attrs["pads"])
    f.pad_layers.append(PadRecord(pads, reason).entry(ctx.node.name, f"Pad operator {name}"))
    return f.op("Pad", name, [ctx.inputs[0]], mode="constant", pad_width=(0, 0, 0, 0, *pads), constant_value=value)


def _layer(ctx: Ctx, f: Fragment, value: float, reason: str) -> tuple[Ref, tuple[int, int, int]]:
    """The layer's input and its symmetric pads (a pad operator in front when they differ per side)."""
    pads = ctx.attrs["pads"]
    if _symmetric(pads):
        return ctx.inputs[0], tuple(int(p) for p in pads[0::2])
    return _pad_in_front(f, ctx, value, reason), (0, 0, 0)


@TABLE.register("conv3d")
def conv3d(ctx: Ctx) -> Fragment:
    a, p, f = ctx.attrs, ctx.node.params, Fragment()
    x, pad = _layer(ctx, f, 0.0, "asymmetric pads")
    weight = contiguous(p["weight"], np.float32)
    ins = [x, f.var(f"{ctx.name}_weight", weight)]
    if p.get("bias") is not None:
        ins.append(f.var(f"{ctx.name}_bias", p["bias"]))
    f.op("Convolution", ctx.name, ins, kernel=weight.shape[2:], stride=a["stride"], dilate=a["dilation"], pad=pad,
         num_filter=weight.shape[0], num_group=a["groups"], no_bias=len(ins) == 2)
    return f


@TABLE.register("max_pool3d")
def max_pool3d(ctx: Ctx) -> Fragment:
    a, f = ctx.attrs, Fragment()
    x, pad = _layer(ctx, f, float("-inf"), "asymmetric pads; padded with -inf")
    f.op("Pooling", ctx.name, [x], pool_type="max", kernel=a["kernel"], stride=a["stride"], pad=pad,
         pooling_convention="valid")
    return f


@TABLE.register("avg_pool3d")
def avg_pool3d(ctx: Ctx) -> Fragment:
    a, f = ctx.attrs, Fragment()
    include = bool(a.get("count_include_pad"))
    if _symmetric(a["pads"]):
        f.op("Pooling", ctx.name, [ctx.inputs[0]], pool_type="avg", kernel=a["kernel"], stride=a["stride"],
             pad=tuple(a["pads"][0::2]), pooling_convention="valid", count_include_pad=include)
        return f
    x = _pad_in_front(f, ctx, 0.0, "asymmetric pads; zero pad + divisor map (TF divides by real elements)")
    y = f.op("Pooling", ctx.name if include else f"{ctx.name}_full", [x], pool_type="avg", kernel=a["kernel"],
             stride=a["stride"], pad=(0, 0, 0), pooling_convention="valid", count_include_pad=True)
    if include:  # the padded zeros count, as the layer counts them
        return f
    size, pads = ctx.in_shape()[2:], a["pads"]
    counts = [window_counts_1d(n, k, s, pads[2 * i], pads[2 * i + 1])
              for i, (n, k, s) in enumerate(zip(size, a["kernel"], a["stride"]))]
    divisor = math.prod(a["kernel"]) / np.einsum("i,j,k->ijk", *counts)
    f.op("broadcast_mul", ctx.name, [y, f.var(f"{ctx.name}_divisor", divisor.astype(np.float32)[None, None])])
    return f


@TABLE.register("conv_transpose3d")
def conv_transpose3d(ctx: Ctx) -> Fragment:
    a, p, f = ctx.attrs, ctx.node.params, Fragment()
    weight = contiguous(p["weight"], np.float32)  # IODHW == MXNet's Deconvolution layout
    full = [(n - 1) * s + (k - 1) * d + 1
            for n, k, s, d in zip(ctx.in_shape()[2:], a["kernel"], a["stride"], a["dilation"])]
    crop, size = list(a["crop"]), list(a["output_size"])
    tail = [max(0, c + o - n) for c, o, n in zip(crop, size, full)]  # zero rows past the full output
    window = any(crop) or [c + o for c, o in zip(crop, size)] != full
    bias = p.get("bias")
    in_layer_bias = bias is not None and not any(tail)
    ins = [ctx.inputs[0], f.var(f"{ctx.name}_weight", weight)]
    if in_layer_bias:
        ins.append(f.var(f"{ctx.name}_bias", bias))
    # no_bias is always explicit: Deconvolution defaults to no_bias=True
    y = f.op("Deconvolution", f"{ctx.name}_full" if window else ctx.name, ins, kernel=a["kernel"],
             stride=a["stride"], dilate=a["dilation"], pad=(0, 0, 0), num_filter=weight.shape[1],
             num_group=1, no_bias=not in_layer_bias)
    if not window:
        return f
    last = bias is None or in_layer_bias
    if any(tail):
        y = f.op("Pad", f"{ctx.name}_tail", [y], mode="constant", constant_value=0.0,
                 pad_width=(0, 0, 0, 0, *(p for t in tail for p in (0, t))))
        full = [n + t for n, t in zip(full, tail)]
    y = _crop(f, ctx.name if last else f"{ctx.name}_window", y, (*ctx.out_shape[:2], *full), crop, size)
    if not last:
        bias_var = f.var(f"{ctx.name}_bias", np.asarray(bias, np.float32).reshape(1, -1, 1, 1, 1))
        f.op("broadcast_add", ctx.name, [y, bias_var])
    record = PadRecord(tuple(crop), "TF keeps an off-centre window of the transposed output; sliced", "crop")
    f.pad_layers.append(record.entry(ctx.node.name, f"slice {ctx.name} after Deconvolution {ctx.name}_full"))
    return f
