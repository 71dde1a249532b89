"""Caffe lowering plans: TF's explicit pads reproduced with BVLC layers (measured in OpenCV DNN 4.x).

Caffe's rules, unlike TF's:
* `Convolution`/`Pooling`/`Deconvolution` pad symmetrically (`pad_h`, `pad_w`) and BVLC checks
  `pad < kernel` for pooling.
* Pooling rounds the output size up, then drops a last window that would start in the padding:
  ``out = ceil((n + 2p - k) / s) + 1``; ``if p and (out - 1) * s >= n + p: out -= 1``.
* Average pooling divides by ``min(start + k, n + p) - start`` per axis (start = i*s - p): the
  padding is counted, and so is any window overhanging the trailing pad only up to ``n + p``.
* There is no pad layer. A constant pad is a *pad layer group* of standard layers: a depthwise 1x1
  Convolution with zero weights, bias v and a stride the size of the axis makes a row (column) of v,
  Concat puts it in front/behind (NetBuilder.spatial_row; a Slice would cost a copy of the input in
  OpenCV, which computes every part of a Slice).
* OpenCV DNN also reads a conv's `pad` as four values (t, l, b, r) -- exact and free there, but
  BVLC Caffe rejects it, so it is written only when asked for (`--caffe-pad opencv`).

A plan per node says: pad layer group (rows/cols to add on each side, and the value), the layer's
symmetric pad (or OpenCV's four), zero taps to add to the kernel (the 'kernel' lowering), output
rows/cols to Slice away (pooling's ceil rounding, the 'shift' lowering), and for average pooling a
(Ho, Wo) map to multiply by (Scale layer, axis 2, num_axes 2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..ir.ops import AVERAGING_OPS, OPS
from .plans import kernel_extension, window_shift
from .rules import NO_PADS, Pads, effective_kernel, output_size_1d, transposed_full_size, window_counts_1d

FLT_MAX = float(np.finfo(np.float32).max)


@dataclass(frozen=True)
class CaffePlan:
    """Lowering of one conv2d / conv_transpose2d / max_pool2d / avg_pool2d node for Caffe.

    Emit in this order: pad layer group adding `pad_group` (t, b, l, r) rows/cols of `pad_value`
    (None: no group), the layer with symmetric `layer_pad` (h, w) and its kernel grown by
    `kernel_taps` (t, b, l, r) zero taps, Slice away `trim` (t, b, l, r) output rows/cols, then
    multiply by `scale_map` (Ho, Wo) if given.
    """

    pad_group: Pads | None
    pad_value: float
    layer_pad: tuple[int, int]
    kernel_taps: Pads = NO_PADS
    trim: Pads = NO_PADS
    scale_map: np.ndarray | None = None
    reason: str = ""
    four_sided: Pads | None = None  # the layer's pads (t, b, l, r) as OpenCV DNN's four `pad` values

    @property
    def layer_pads(self) -> Pads:
        if self.four_sided is not None:
            return self.four_sided
        (ph, pw) = self.layer_pad
        return Pads(ph, ph, pw, pw)


def caffe_pool_out_1d(n: int, k: int, s: int, p: int) -> int:
    """Caffe's (and OpenCV's Caffe-mode) pooling output size: ceil, then clip a padding-only window."""
    out = int(math.ceil((n + 2 * p - k) / s)) + 1
    if p and (out - 1) * s >= n + p:
        out -= 1
    return out


def caffe_avg_divisor_1d(n: int, k: int, s: int, p: int, count: int) -> np.ndarray:
    """Caffe's average-pooling divisor per output position (first `count` outputs)."""
    start = np.arange(count) * s - p
    return (np.minimum(start + k, n + p) - start).astype(np.float64)


# ---- convolution ---------------------------------------------------------------------------


def _conv_axis_layer(before: int, after: int) -> tuple[int, int, int]:
    """(group_before, group_after, layer_pad): pad group holds the asymmetric part."""
    p = min(before, after)
    return before - p, after - p, p


def _opencv_dw_quirk(plan: CaffePlan, kernel: Sequence[int], dilation: Sequence[int]) -> bool:
    """OpenCV 4.14's depthwise (multiplier 1) 3-wide kernel path ignores dilation_w when pad_w == 1
    (measured: relative error ~1); pad_w 0 or 2 is fine."""
    width = kernel[1] + plan.kernel_taps.left + plan.kernel_taps.right
    return width == 3 and dilation[1] > 1 and plan.layer_pad[1] == 1


def caffe_plan_conv(
    pads: Sequence[int],
    dilation: Sequence[int] = (1, 1),
    mode: str = "layer",
    kernel: Sequence[int] = (1, 1),
    depthwise: bool = False,
    in_hw: Sequence[int] = (0, 0),
    stride: Sequence[int] = (1, 1),
) -> CaffePlan:
    """conv2d (incl. depthwise/grouped) with IR pads (t, b, l, r). mode: 'layer' (pad layer group),
    'kernel' (zero taps) or 'shift' (a larger symmetric pad, leading outputs sliced; needs `in_hw`).

    'opencv' writes the pads as four `pad` values: exact and free in OpenCV DNN, but BVLC Caffe
    accepts one value per axis only, so that prototxt loads in OpenCV alone.

    `depthwise` (groups == in == out channels) avoids a layer padding OpenCV computes wrongly.
    """
    plan = _caffe_plan_conv(Pads(*pads), dilation, mode, kernel, in_hw, stride)
    if depthwise and _opencv_dw_quirk(plan, kernel, dilation):
        pads = Pads(*pads)
        return CaffePlan(pads, 0.0, (0, 0), reason="OpenCV's dilated depthwise 3x3 path mishandles pad 1; "
                         "zero pad layer group")
    return plan


def _within_half_window(pads: Pads, kernel: Sequence[int], dilation: Sequence[int]) -> bool:
    """No side pads more than half the (dilated) window, as TF SAME never does: OpenCV's 3x3
    depthwise path reads past the input for a larger one (measured: pads (1, 2) give garbage)."""
    half_h, half_w = (effective_kernel(k, d) // 2 for k, d in zip(kernel, dilation))
    return max(pads.top, pads.bottom) <= half_h and max(pads.left, pads.right) <= half_w


def _caffe_plan_conv(pads: Pads, dilation: Sequence[int], mode: str, kernel: Sequence[int],
                     in_hw: Sequence[int], stride: Sequence[int]) -> CaffePlan:
    if pads.symmetric:
        return CaffePlan(None, 0.0, (pads.top, pads.left))
    if mode == "opencv" and _within_half_window(pads, kernel, dilation):
        return CaffePlan(None, 0.0, (pads.top, pads.left), four_sided=pads,
                         reason="asymmetric pads as four `pad` values (OpenCV DNN reads them; BVLC Caffe does not)")
    if mode == "shift":
        layer, trim = window_shift(in_hw, kernel, stride, dilation, pads)
        return CaffePlan(None, 0.0, (layer.top, layer.left), trim=trim,
                         reason="asymmetric pads; a larger symmetric pad shifts the windows, extra outputs sliced")
    if mode == "kernel":
        extended = kernel_extension(pads, dilation)
        if extended is not None:
            taps, layer = extended
            return CaffePlan(None, 0.0, (layer.top, layer.left), kernel_taps=taps,
                             reason="asymmetric pads; zero taps added to the kernel")
    gt, gb, ph = _conv_axis_layer(pads.top, pads.bottom)
    gl, gr, pw = _conv_axis_layer(pads.left, pads.right)
    return CaffePlan(
        Pads(gt, gb, gl, gr), 0.0, (ph, pw),
        reason="asymmetric pads (Caffe pads symmetrically); zero pad layer group",
    )


# ---- pooling -------------------------------------------------------------------------------


def caffe_plan_pool(
    op: str,
    in_hw: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    pads: Sequence[int],
    count_include_pad: bool = False,
) -> CaffePlan:
    """max_pool2d / avg_pool2d with IR pads (t, b, l, r) and TF's floor-rounded output size."""
    pads = Pads(*pads)
    group: list[int] = []
    layer_pad: list[int] = []
    trim: list[int] = []
    divisors: list[np.ndarray] = []
    for axis in (0, 1):
        n, k, s = in_hw[axis], kernel[axis], stride[axis]
        before, after = pads[2 * axis], pads[2 * axis + 1]
        want = output_size_1d(n, k, s, 1, before, after)
        # Caffe windows start at i*s - p: p = before keeps TF's alignment; BVLC needs p < k.
        p = min(before, k - 1)
        lead = before - p
        tail = 0
        while caffe_pool_out_1d(n + lead + tail, k, s, p) < want:
            tail += 1  # more trailing room until Caffe produces every output TF does
        got = caffe_pool_out_1d(n + lead + tail, k, s, p)
        group += [lead, tail]
        layer_pad.append(p)
        trim += [0, got - want]
        if op in AVERAGING_OPS:
            caffe_div = caffe_avg_divisor_1d(n + lead + tail, k, s, p, want)
            real = window_counts_1d(n, k, s, before, after, count_include_pad).astype(np.float64)
            divisors.append((caffe_div, real))
    grp = Pads(*group)
    value = max(OPS[op].pad_fill, -FLT_MAX)  # Caffe's blobs hold no -inf: its lowest float does the same
    scale_map = None
    if divisors:
        (dh, rh), (dw, rw) = divisors
        ratio = np.outer(dh, dw) / np.outer(rh, rw)
        if not np.all(ratio == 1.0):
            scale_map = ratio.astype(np.float32)
    reasons = []
    if not grp.zero:
        reasons.append("Caffe pads symmetrically; pad layer group" + (" of -FLT_MAX" if value else ""))
    if not Pads(*trim).zero:
        reasons.append("Caffe rounds pooling output up; extra rows sliced")
    if scale_map is not None:
        reasons.append("Caffe counts padding in the average; divisor corrected by a Scale map")
    return CaffePlan(
        None if grp.zero else grp, value, (layer_pad[0], layer_pad[1]),
        trim=Pads(*trim), scale_map=scale_map, reason="; ".join(reasons),
    )


# ---- transposed convolution ----------------------------------------------------------------


def _transposed_axis_layer(n: int, k: int, s: int, d: int, begin: int, out: int) -> tuple[int, int, int, int]:
    """(zero input rows appended, layer pad, trim before, trim after)."""
    full = transposed_full_size(n, k, s, d)
    extra = 0
    if begin + out > full:
        # Rows past the full output are zeros + bias in TF: an appended zero input row adds s
        # such rows (Caffe's Deconvolution has no output_padding).
        extra = -(-(begin + out - full) // s)
        full += extra * s
    p = min(begin, full - begin - out)
    length = full - 2 * p
    return extra, p, begin - p, length - (begin - p) - out


def _transposed_axis_kernel(n: int, k: int, s: int, d: int, begin: int, out: int) -> tuple[int, int, int] | None:
    """(taps before, taps after, layer pad): zero taps grow the full output so pad == crop exactly."""
    full = transposed_full_size(n, k, s, d)
    diff = out + 2 * begin - full
    if diff % d:
        return None
    if diff >= 0:
        return 0, diff // d, begin
    return -diff // d, 0, begin - diff


def caffe_plan_transposed(
    in_hw: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
    crop: Sequence[int],
    output_size: Sequence[int],
    mode: str = "layer",
) -> CaffePlan:
    """conv_transpose2d: keep rows [crop, crop + output_size) of the full transposed output."""
    args = [(in_hw[a], kernel[a], stride[a], dilation[a], crop[a], output_size[a]) for a in (0, 1)]
    if mode == "kernel":
        h, w = (_transposed_axis_kernel(*a) for a in args)
        if h is not None and w is not None:
            taps = Pads(h[0], h[1], w[0], w[1])
            reason = "" if taps.zero else "TF keeps an off-centre window; zero taps added to the kernel"
            return CaffePlan(None, 0.0, (h[2], w[2]), kernel_taps=taps, reason=reason)
    (eh, ph, th, bh), (ew, pw, tl, br) = (_transposed_axis_layer(*a) for a in args)
    group = Pads(0, eh, 0, ew)
    trim = Pads(th, bh, tl, br)
    reasons = []
    if not group.zero:
        reasons.append("TF's output extends past the full transposed output; zero input rows appended")
    if not trim.zero:
        reasons.append("TF keeps an off-centre window of the transposed output; sliced")
    return CaffePlan(None if group.zero else group, 0.0, (ph, pw), trim=trim, reason="; ".join(reasons))
