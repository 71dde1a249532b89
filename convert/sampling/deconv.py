"""A resize along one axis as a fixed-weight transposed convolution (what a Caffe `Deconvolution` with
constant weights computes), where one reproduces TF's sampling exactly.

TF reads at most two input rows per output row (rules.py) and clamps a tap that falls outside the input to
the edge row. So: copy the edge row in front (`lead`) and behind (`tail`) -- exactly TF's clamping --, run a
stride-f transposed convolution with one kernel, and drop `begin` / `end` outputs. That is exact when every
output row reads its taps with one and the same kernel, i.e. TF's float32 weights repeat with period f: the
integer-factor upscalings (out = f * in; out - 1 = f * (in - 1) with align_corners) whose weights are exact
binary fractions (power-of-two factors), and nearest upscalings whichever rounding TF uses. The check is the
whole interpolation matrix, compared entry by entry with the one the kernel makes (float32, no tolerance).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .rules import nearest_indices, source_coords

_F = np.float32


@dataclass(frozen=True)
class DeconvAxis:
    factor: int  # the transposed convolution's stride
    kernel: tuple[float, ...]  # its weights along this axis (float32 values)
    lead: int  # copies of the first input row put in front
    tail: int  # copies of the last input row put behind
    begin: int  # outputs of the transposed convolution dropped in front
    end: int  # ... and behind


def _taps(n: int, out: int, mode: str, coordinate: str) -> list[list[tuple[int, np.float32]]]:
    """Per output row, TF's (input row, weight) taps before clamping (an index outside [0, n) reads the edge)."""
    if mode == "nearest":
        return [[(int(i), _F(1))] for i in nearest_indices(n, out, coordinate)]
    src = source_coords(n, out, coordinate, "bilinear")
    floor = np.floor(src)
    weight = (src - floor).astype(_F)
    return [[(int(lo), _F(1) - w), (int(lo) + 1, w)] for lo, w in zip(floor.astype(np.int64), weight)]


def _factors(n: int, out: int, coordinate: str) -> list[int]:
    found = []
    if out % n == 0:
        found.append(out // n)
    if coordinate == "align_corners" and n > 1 and (out - 1) % (n - 1) == 0:
        found.append((out - 1) // (n - 1))
    return [f for f in dict.fromkeys(found) if f >= 1]


def deconv_axis(n: int, out: int, mode: str, coordinate: str) -> DeconvAxis | None:
    """The exact transposed-convolution form of TF's resize of `n` rows to `out`, or None."""
    taps = [[(j, w) for j, w in row if w != 0 or 0 <= j < n] for row in _taps(n, out, mode, coordinate)]
    used = [j for row in taps for j, w in row if w != 0]
    lead, tail = max(0, -min(used)), max(0, max(used) - (n - 1))
    taps = [[(j + lead, w) for j, w in row if -lead <= j < n + tail] for row in taps]
    size = n + lead + tail
    wanted = np.zeros((out, size), _F)
    for i, row in enumerate(taps):
        for j, w in row:
            wanted[i, j] += w
    for f in _factors(n, out, coordinate):
        found = _kernel(wanted, taps, f)
        if found is None:
            continue
        kernel, begin = found
        end = (size - 1) * f + len(kernel) - begin - out
        if end >= 0:
            return DeconvAxis(f, tuple(float(k) for k in kernel), lead, tail, begin, end)
    return None


def _kernel(wanted: np.ndarray, taps: list, f: int) -> tuple[np.ndarray, int] | None:
    """(kernel, begin) of the stride-f transposed convolution whose matrix is `wanted`, or None."""
    offsets = [i - j * f for i, row in enumerate(taps) for j, _ in row]
    begin = -min(offsets)
    kernel = np.zeros(max(offsets) + begin + 1, _F)
    seen = np.zeros(kernel.size, bool)
    for i, row in enumerate(taps):
        for j, w in row:
            k = i + begin - j * f
            if seen[k] and kernel[k] != w:
                return None
            kernel[k], seen[k] = w, True
    out, size = wanted.shape
    k = np.arange(out)[:, None] + begin - np.arange(size)[None, :] * f
    inside = (k >= 0) & (k < kernel.size)
    made = np.where(inside, kernel[np.clip(k, 0, kernel.size - 1)], _F(0))
    if not np.array_equal(made, wanted):
        return None
    first, last = np.flatnonzero(kernel)[[0, -1]]  # zero taps at the ends: a shorter kernel, the same outputs
    return kernel[first:last + 1], begin - int(first)
