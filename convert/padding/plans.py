"""Lowering recipes shared by the targets whose layers pad like torch/ONNX/MXNet: how to reproduce an
IR node's explicit pads exactly. targets.py turns them into each target's `Plan`; emitters never
call these directly. A plan is one of:
fold the pads into the layer, put a separate pad layer in front and run the layer unpadded,
and/or the target-specific exact extras (divisor map for average pooling, crop after the layer).
Targets whose layers only pad symmetrically describe that in their `TargetCaps`; targets with
stranger rules (Caffe's ceil-rounded pooling) add their own plan functions next to this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..ir.ops import AVERAGING_OPS, OPS
from .plan_type import PadLayer
from .rules import NO_PADS, Pads, avg_pool_real_counts, output_hw, output_size_1d, transposed_full_size


@dataclass(frozen=True)
class TargetCaps:
    name: str
    asymmetric: bool  # layers take four different pads (ONNX)
    pool_pad_at_most_half_kernel: bool  # torch: pooling pad must be <= kernel // 2
    avg_excludes_pad: bool  # the layer can divide by the real element count


TORCH = TargetCaps("torch", asymmetric=False, pool_pad_at_most_half_kernel=True, avg_excludes_pad=True)
ONNX = TargetCaps("onnx", asymmetric=True, pool_pad_at_most_half_kernel=False, avg_excludes_pad=True)
MXNET = TargetCaps("mxnet", asymmetric=False, pool_pad_at_most_half_kernel=False, avg_excludes_pad=True)


@dataclass(frozen=True)
class WindowPlan:
    """How to lower conv2d / max_pool2d / avg_pool2d.

    Run `pad_layer` (if any), then the layer with `layer_pads` (symmetric unless the target is
    asymmetric) and `count_include_pad`, then multiply by `divisor_map` (if any, shape (Ho, Wo)).
    """

    pad_layer: PadLayer | None
    layer_pads: Pads
    count_include_pad: bool = False
    divisor_map: np.ndarray | None = None
    reason: str = ""


def _fits(pads: Pads, kernel: Sequence[int], op: str, caps: TargetCaps) -> bool:
    if not caps.asymmetric and not pads.symmetric:
        return False
    if op != "conv2d" and caps.pool_pad_at_most_half_kernel:
        return pads.top <= kernel[0] // 2 and pads.left <= kernel[1] // 2
    return True


def kernel_taps_1d(before: int, after: int, d: int) -> tuple[int, int, int] | None:
    """(taps_before, taps_after, layer_pad) of the kernel-extension lowering of a conv's pads along
    one axis, or None where it is not exact.

    A leading zero tap moves the window's start back by d: pad = after on both sides with
    (after - before) / d zero taps in front (or pad = before, taps behind when before > after)
    reads exactly the rows TF's pads give, with no extra layer.
    """
    diff = after - before
    if diff % d:
        return None
    if diff >= 0:
        return diff // d, 0, after
    return 0, -diff // d, before


def kernel_extension(pads: Pads, dilation: Sequence[int]) -> tuple[Pads, Pads] | None:
    """(zero taps (t, b, l, r) added to the kernel, symmetric layer pads) reproducing a conv's
    asymmetric `pads`, or None when a side cannot be matched (a difference not a multiple of the
    dilation)."""
    h = kernel_taps_1d(pads.top, pads.bottom, dilation[0])
    w = kernel_taps_1d(pads.left, pads.right, dilation[1])
    if h is None or w is None:
        return None
    return Pads(h[0], h[1], w[0], w[1]), Pads(h[2], h[2], w[2], w[2])


def window_shift_1d(n: int, k: int, s: int, d: int, before: int, after: int) -> tuple[int, int, int]:
    """(layer_pad, outputs sliced before, outputs sliced after) of the window-shift lowering of a
    conv's pads along one axis.

    A symmetric pad p starts window i at i*s - p; TF's start at i*s - before. With p = before + m*s
    (m the fewest whole strides covering `after`) the layer's window i + m is TF's window i, so
    slicing away the m leading outputs (and any surplus at the end) leaves exactly TF's. It costs a
    slice of the output instead of a padded copy of the input: cheaper where the output is smaller.
    """
    m = -(-max(0, after - before) // s)
    p = before + m * s
    got = output_size_1d(n, k, s, d, p, p)
    return p, m, got - m - output_size_1d(n, k, s, d, before, after)


def window_shift(
    in_hw: Sequence[int], kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int], pads: Pads
) -> tuple[Pads, Pads]:
    """(symmetric layer pads, output rows/cols (t, b, l, r) to slice away) reproducing `pads`."""
    h = window_shift_1d(in_hw[0], kernel[0], stride[0], dilation[0], pads.top, pads.bottom)
    w = window_shift_1d(in_hw[1], kernel[1], stride[1], dilation[1], pads.left, pads.right)
    return Pads(h[0], h[0], w[0], w[0]), Pads(h[1], h[2], w[1], w[2])


def with_kernel_taps(weight: np.ndarray, taps: Pads) -> np.ndarray:
    """A conv weight (O, I, kh, kw) with the plan's zero `taps` (t, b, l, r) added (a no-op for none)."""
    if taps.zero:
        return weight
    return np.pad(weight, ((0, 0), (0, 0), taps.h, taps.w))


def plan_window(
    op: str,
    in_hw: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    pads: Sequence[int],
    caps: TargetCaps,
    count_include_pad: bool = False,
) -> WindowPlan:
    """Plan for `op` in {'conv2d', 'max_pool2d', 'avg_pool2d'} with IR pads (t, b, l, r)."""
    pads = Pads(*pads)
    if pads.zero:
        return WindowPlan(None, NO_PADS, count_include_pad)
    if _fits(pads, kernel, op, caps) and (op not in AVERAGING_OPS or count_include_pad or caps.avg_excludes_pad):
        return WindowPlan(None, pads, count_include_pad)

    why = "asymmetric pads" if not pads.symmetric else "pad larger than the layer allows"
    if OPS[op].pad_fill:
        return WindowPlan(PadLayer(pads, OPS[op].pad_fill), NO_PADS, reason=f"{why}; padded with {OPS[op].pad_fill}")
    if op in AVERAGING_OPS and not count_include_pad:
        # Zero-pad, average over the full window, then rescale each output to divide by the
        # number of real elements instead: exact at every border pixel.
        real = avg_pool_real_counts(in_hw, kernel, stride, pads)
        divisor = (kernel[0] * kernel[1]) / real
        return WindowPlan(
            PadLayer(pads, 0.0),
            NO_PADS,
            count_include_pad=True,
            divisor_map=divisor.astype(np.float32),
            reason=f"{why}; zero pad + divisor map (TF divides by real elements)",
        )
    return WindowPlan(PadLayer(pads, 0.0), NO_PADS, count_include_pad, reason=why)


@dataclass(frozen=True)
class TransposedPlan:
    """How to lower conv_transpose2d.

    Run the layer with symmetric `layer_pad` (rows removed from both ends of the full output)
    and `output_padding` (rows added at the end, zeros plus bias), then trim `crop` (t, b, l, r).
    """

    layer_pad: tuple[int, int]
    output_padding: tuple[int, int]
    crop: Pads
    reason: str = ""


def _transposed_axis(n: int, k: int, s: int, d: int, begin: int, out: int) -> tuple[int, int, int, int]:
    full = transposed_full_size(n, k, s, d)
    end = begin + out
    # Symmetric layer padding `begin` + output_padding reproduces rows [begin, end) directly
    # when the trailing adjustment is a legal output_padding.
    op = end - (full - begin)
    if 0 <= op < max(s, d):
        return begin, op, 0, 0
    # Otherwise run unpadded, extend the tail with output_padding (always < s), and trim.
    op = max(0, end - full)
    return 0, op, begin, full + op - end


def plan_transposed(
    in_hw: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
    crop: Sequence[int],
    output_size: Sequence[int],
) -> TransposedPlan:
    ph, oph, ct, cb = _transposed_axis(in_hw[0], kernel[0], stride[0], dilation[0], crop[0], output_size[0])
    pw, opw, cl, cr = _transposed_axis(in_hw[1], kernel[1], stride[1], dilation[1], crop[1], output_size[1])
    trim = Pads(ct, cb, cl, cr)
    reason = "" if trim.zero else "TF keeps an off-centre window of the transposed output; sliced"
    return TransposedPlan((ph, pw), (oph, opw), trim, reason)


def window_output_hw(
    in_hw: Sequence[int], kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int], pads: Sequence[int]
) -> tuple[int, int]:
    return output_hw(in_hw, kernel, stride, dilation, Pads(*pads))
