"""TensorFlow's sampling grid for ResizeBilinear / ResizeNearestNeighbor, per axis, in float32.

TF computes every source coordinate in float32 (tensorflow/core/kernels/image_resizer_state.h,
resize_bilinear_op.cc, resize_nearest_neighbor_op.cc); doing the same arithmetic here gives the
exact indices (nearest) and the exact lerp weights (bilinear) TF uses:

    scale  = (in - 1) / (out - 1)          align_corners and out > 1
           = in / out                      otherwise
    coordinate 'asymmetric'  (legacy):     src = dst * scale
               'half_pixel'  bilinear:     src = (dst + 0.5) * scale - 0.5
               'half_pixel'  nearest:      src = (dst + 0.5) * scale        (no -0.5 for nearest)
               'align_corners':            src = dst * scale
    nearest:  index = min(floor(src), in - 1)   (round half away from zero with align_corners),
              then max(index, 0)
    bilinear: lo = max(floor(src), 0), hi = min(ceil(src), in - 1), weight = src - floor(src);
              out = top + (bottom - top) * wy with top/bottom lerped along x first.

align_corners and half_pixel_centers together is an error in TF itself.
"""

from __future__ import annotations

import numpy as np

MODES = ("nearest", "bilinear")
COORDINATES = ("asymmetric", "half_pixel", "align_corners")

_F = np.float32


class SamplingError(ValueError):
    """A resize TF itself rejects, or attributes outside the rules."""


def tf_coordinate(align_corners: bool, half_pixel_centers: bool) -> str:
    """The IR coordinate rule for TF's two flags."""
    if align_corners and half_pixel_centers:
        raise SamplingError("align_corners and half_pixel_centers cannot both be true (TF rejects it too)")
    return "align_corners" if align_corners else "half_pixel" if half_pixel_centers else "asymmetric"


def tf_scale(in_size: int, out_size: int, coordinate: str) -> np.float32:
    if coordinate == "align_corners" and out_size > 1:
        return _F(in_size - 1) / _F(out_size - 1)
    return _F(in_size) / _F(out_size)


def source_coords(in_size: int, out_size: int, coordinate: str, mode: str) -> np.ndarray:
    """The float32 source coordinate TF computes for each output index along one axis."""
    if coordinate not in COORDINATES or mode not in MODES:
        raise SamplingError(f"unknown resize {mode}/{coordinate}")
    dst = np.arange(out_size, dtype=_F)
    scale = tf_scale(in_size, out_size, coordinate)
    if coordinate != "half_pixel":
        return dst * scale
    src = (dst + _F(0.5)) * scale
    return src if mode == "nearest" else src - _F(0.5)


def nearest_indices(in_size: int, out_size: int, coordinate: str) -> np.ndarray:
    """The input index TF's nearest-neighbour resize reads for each output index (int64)."""
    src = source_coords(in_size, out_size, coordinate, "nearest")
    floor = np.floor(src)
    if coordinate == "align_corners":  # roundf: half away from zero (src >= 0 here)
        floor = floor + (src - floor >= _F(0.5))
    return np.clip(floor.astype(np.int64), 0, in_size - 1)


def linear_taps(in_size: int, out_size: int, coordinate: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, weight) per output index: TF's bilinear reads in[lo] + (in[hi] - in[lo]) * weight."""
    src = source_coords(in_size, out_size, coordinate, "bilinear")
    floor = np.floor(src)
    lo = np.maximum(floor.astype(np.int64), 0)
    hi = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    return lo, hi, (src - floor).astype(_F)


def integer_factor(in_size: int, out_size: int, mode: str, coordinate: str) -> int | None:
    """f when TF's resize along this axis is plain repetition (out[i] = in[i // f]), else None.

    Same size is the identity in every mode; nearest upscaling by an integer factor is repetition
    with 'asymmetric' and 'half_pixel' (floor((i + 0.5) / f) == i // f); bilinear never is."""
    if out_size == in_size:
        return 1
    if out_size % in_size or mode != "nearest":
        return None
    f = out_size // in_size
    return f if np.array_equal(nearest_indices(in_size, out_size, coordinate), np.arange(out_size) // f) else None


def onnxruntime_nearest_indices(in_size: int, out_size: int, coordinate: str) -> np.ndarray:
    """The indices onnxruntime's Resize (nearest, sizes given) reads for the matching ONNX
    coordinate mode: it divides by the float32 scale out/in where TF multiplies by in/out, so the
    two disagree at some sizes (e.g. 2 -> 41); where they do, the ONNX emitter gathers instead."""
    dst = np.arange(out_size, dtype=_F)
    scale = _F(out_size) / _F(in_size)
    if coordinate == "asymmetric":
        src = np.floor(dst / scale)
    elif coordinate == "half_pixel":  # half_pixel + round_prefer_ceil (tf_half_pixel_for_nn is deprecated)
        src = (dst + _F(0.5)) / scale - _F(0.5)
        src = np.floor(src) + (src - np.floor(src) >= _F(0.5))
    elif out_size == 1:
        src = np.zeros(1, _F)
    else:  # align_corners, round_prefer_ceil
        src = np.floor(dst * _F(in_size - 1) / _F(out_size - 1) + _F(0.5))
    return np.clip(src.astype(np.int64), 0, in_size - 1)


def torch_nearest_indices(in_size: int, out_size: int, coordinate: str) -> np.ndarray:
    """The indices torch's F.interpolate(size=...) reads: 'nearest' floor(dst * in/out) for
    'asymmetric', 'nearest-exact' floor((dst + 0.5) * in/out) for 'half_pixel' (float32, as TF)."""
    if coordinate == "align_corners":
        raise SamplingError("torch's nearest modes have no align_corners")
    dst = np.arange(out_size, dtype=_F)
    scale = _F(in_size) / _F(out_size)
    src = dst * scale if coordinate == "asymmetric" else (dst + _F(0.5)) * scale
    return np.minimum(np.floor(src).astype(np.int64), in_size - 1)
