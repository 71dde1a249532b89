"""Handlers for the 3-D ops: conv3d, conv_transpose3d, max_pool3d, avg_pool3d.

Static pads: symmetric pads go into the layer, others into `nn.functional.pad` in front (-inf before
max pooling); average pooling with pads the layer cannot take sums over the zero-padded input and
divides by a buffer of real-element counts; a transposed conv runs unpadded and is cropped (or
zero-extended) to TF's window by one pad call (the same amounts at every size under TF's rule).
A size-free model whose SAME pads follow the size (convert.padding.sizes.needs_runtime_pads) pads with
model.py's tf_same_pad, the 2-D helper, on D, H and W; its average pooling divides window sums by
the pooled padded ones (real elements per window at every size).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tf_convert.convert.padding import PadRecord, effective_kernel, window_counts_1d
from tf_convert.convert.padding.sizes import needs_runtime_pads
from tf_convert.convert.padding.targets import RUNTIME_REASON

from .contract import TABLE, Ctx, Lowered, call, lit


def _triple(values: Sequence[int]) -> str:
    a, b, c = (int(v) for v in values)
    return str(a) if a == b == c else f"({a}, {b}, {c})"


def _symmetric(pads: Sequence[int]) -> bool:
    return all(pads[i] == pads[i + 1] for i in (0, 2, 4))


def _torch_pad(pads: Sequence[int]) -> str:
    """Flat (d0, d1, h0, h1, w0, w1) in torch's last-axis-first order."""
    d0, d1, h0, h1, w0, w1 = (int(p) for p in pads)
    return f"({w0}, {w1}, {h0}, {h1}, {d0}, {d1})"


def _pad_in_front(ctx: Ctx, out: Lowered, value: float, reason: str) -> str:
    pad = ctx.aux("pad")
    fill = "" if value == 0.0 else f", value={lit(value)}"
    out.lines.append(f"{pad} = nn.functional.pad({ctx.args[0]}, {_torch_pad(ctx.attrs['pads'])}{fill})  # {reason}")
    out.pad_layers.append(PadRecord(tuple(ctx.attrs["pads"]), reason).entry(ctx.node.name))
    return pad


def _runtime_pad(ctx: Ctx, out: Lowered | None, value: float, x: str | None = None) -> str | None:
    """TF's SAME pads from the runtime D/H/W (model.py's tf_same_pad) as an expression, recorded in `out`;
    None where the pads are static (a size-bound model, or pads that do not follow the size)."""
    if not ctx.dynamic or not needs_runtime_pads(ctx.node):
        return None
    a = ctx.attrs
    window = [effective_kernel(k, d) for k, d in zip(a["kernel"], a.get("dilation", (1, 1, 1)))]
    if out is not None:
        out.pad_layers.append(PadRecord(tuple(a["pads"]), RUNTIME_REASON).entry(ctx.node.name))
    fill = "" if value == 0.0 else f", {lit(value)}"
    return f"tf_same_pad({ctx.args[0] if x is None else x}, {window}, {list(a['stride'])}{fill})"


def _fits_pool(pads: Sequence[int], kernel: Sequence[int]) -> bool:
    """torch pooling layers take symmetric pads of at most half the kernel."""
    return _symmetric(pads) and all(pads[2 * i] <= k // 2 for i, k in enumerate(kernel))


@TABLE.register("conv3d")
def conv3d(ctx: Ctx) -> Lowered:
    a, weight, bias = ctx.attrs, ctx.params["weight"], ctx.params.get("bias")
    out = Lowered()
    pads, padding = a["pads"], None
    x = _runtime_pad(ctx, out, 0.0)  # then the layer runs unpadded
    if x is None and _symmetric(pads):
        x, padding = ctx.args[0], None if not any(pads) else _triple(pads[0::2])
    elif x is None:
        x = _pad_in_front(ctx, out, 0.0, "asymmetric pads")
    groups = int(a.get("groups", 1))
    layer = call(
        "nn.Conv3d", str(ctx.in_shapes[0][1]), str(weight.shape[0]),
        kernel_size=_triple(weight.shape[2:]),
        stride=None if set(a["stride"]) == {1} else _triple(a["stride"]),
        padding=padding,
        dilation=None if set(a["dilation"]) == {1} else _triple(a["dilation"]),
        groups=None if groups == 1 else str(groups),
        bias=None if bias is not None else "False",
    )
    out.modules.append((ctx.var, layer))
    out.state[f"{ctx.var}.weight"] = weight
    if bias is not None:
        out.state[f"{ctx.var}.bias"] = bias
    out.lines.append(f"{ctx.var} = self.{ctx.var}({x})")
    return out


@TABLE.register("max_pool3d")
def max_pool3d(ctx: Ctx) -> Lowered:
    a = ctx.attrs
    out = Lowered()
    x, padding = _runtime_pad(ctx, out, float("-inf")), None  # then the layer runs unpadded
    if x is None and _fits_pool(a["pads"], a["kernel"]):
        x, padding = ctx.args[0], None if not any(a["pads"]) else _triple(a["pads"][0::2])
    elif x is None:
        x = _pad_in_front(ctx, out, float("-inf"), "pads the layer cannot take; padded with -inf")
    out.modules.append((ctx.var, call("nn.MaxPool3d", _triple(a["kernel"]), _triple(a["stride"]), padding=padding)))
    out.lines.append(f"{ctx.var} = self.{ctx.var}({x})")
    return out


@TABLE.register("avg_pool3d")
def avg_pool3d(ctx: Ctx) -> Lowered:
    a = ctx.attrs
    out = Lowered()
    pads, kernel, stride = a["pads"], a["kernel"], a["stride"]
    include = bool(a.get("count_include_pad"))
    pool = f"nn.functional.avg_pool3d({{}}, {_triple(kernel)}, {_triple(stride)}, divisor_override=1)"
    padded = None if include else _runtime_pad(ctx, out, 0.0)
    if padded is not None:
        # TF divides each window's sum by its real elements: pool the zero-padded input and a padded
        # mask of ones as sums, and divide (exact at every size)
        ones = _runtime_pad(ctx, None, 0.0, f"torch.ones_like({ctx.args[0]}[:1, :1])")
        count = ctx.aux("count")
        out.lines.append(f"{count} = {pool.format(ones)}  # real (unpadded) elements per window")
        out.lines.append(f"{ctx.var} = {pool.format(padded)} / {count}")
        return out
    if not any(pads) or _fits_pool(pads, kernel):
        padding = None if not any(pads) else _triple(pads[0::2])
        layer = call("nn.AvgPool3d", _triple(kernel), _triple(stride), padding=padding,
                     count_include_pad=None if padding is None or include else "False")
        out.modules.append((ctx.var, layer))
        out.lines.append(f"{ctx.var} = self.{ctx.var}({ctx.args[0]})")
        return out
    # sum over the zero-padded window, then divide by TF's count (real elements unless include)
    x = _pad_in_front(ctx, out, 0.0, "pads the layer cannot take; window sums / real-element counts")
    size = ctx.in_shapes[0][2:]
    counts = [window_counts_1d(n, k, s, pads[2 * i], pads[2 * i + 1], include)
              for i, (n, k, s) in enumerate(zip(size, kernel, stride))]
    count = ctx.aux("count")
    out.buffers.append((count, np.einsum("i,j,k->ijk", *counts).astype(np.float32)[None, None]))
    out.lines.append(f"{ctx.var} = {pool.format(x)} / self.{count}")
    return out


@TABLE.register("conv_transpose3d")
def conv_transpose3d(ctx: Ctx) -> Lowered:
    a, weight, bias = ctx.attrs, ctx.params["weight"], ctx.params.get("bias")
    full = [(n - 1) * s + (k - 1) * d + 1 for n, k, s, d in
            zip(ctx.in_shapes[0][2:], a["kernel"], a["stride"], a["dilation"])]
    crop, size = a["crop"], a["output_size"]
    ends = [f - c - o for f, c, o in zip(full, crop, size)]  # < 0: TF's window runs past the full output
    extends = any(e < 0 for e in ends)
    out = Lowered()
    in_layer_bias = bias is not None and not extends  # rows past the full output hold no bias
    layer = call(
        "nn.ConvTranspose3d", str(weight.shape[0]), str(weight.shape[1]),
        kernel_size=_triple(a["kernel"]),
        stride=None if set(a["stride"]) == {1} else _triple(a["stride"]),
        dilation=None if set(a["dilation"]) == {1} else _triple(a["dilation"]),
        bias=None if in_layer_bias else "False",
    )
    out.modules.append((ctx.var, layer))
    out.state[f"{ctx.var}.weight"] = weight
    if in_layer_bias:
        out.state[f"{ctx.var}.bias"] = bias
    if not any(crop) and not any(ends):
        out.lines.append(f"{ctx.var} = self.{ctx.var}({ctx.args[0]})")
        return out
    name = ctx.aux("full")
    out.lines.append(f"{name} = self.{ctx.var}({ctx.args[0]})")
    # negative pads crop: keep TF's window [crop, crop + size) of the full output on every axis
    sides = [p for c, e in zip(crop, ends) for p in (-c, -e)]
    y = f"nn.functional.pad({name}, {_torch_pad(sides)})"
    if bias is not None and not in_layer_bias:
        shift = ctx.aux("shift")
        out.buffers.append((shift, np.asarray(bias, np.float32).reshape(1, -1, 1, 1, 1)))
        y = f"{y} + self.{shift}"
    out.lines.append(f"{ctx.var} = {y}  # TF's window of the full transposed output")
    record = PadRecord(tuple(sides), "TF keeps an off-centre window of the transposed output; sliced", "crop")
    out.pad_layers.append(record.entry(ctx.node.name))
    return out
