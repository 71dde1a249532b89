"""Per target: which of its resize modes reproduces TF's sampling exactly (rules.py), or a
gather with precomputed indices and weights, or a clear refusal. One function, used by the
emitters and by the matrix tests alike.

    kind 'native'  the target's own resize; `settings` holds its mode arguments
         'repeat'  plain repetition by integer `factors` (h, w)
         'deconv'  a fixed-weight transposed convolution (Caffe); `settings["axes"]`: a DeconvAxis per axis
         'gather'  indices (nearest) or two taps + weight (bilinear) per axis from rules.py
         'unsupported'  no exact form; `reason` is the hint
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .deconv import deconv_axis
from .rules import (
    integer_factor,
    nearest_indices,
    onnxruntime_nearest_indices,
    tf_scale,
    torch_nearest_indices,
)

CAFFE_OPENCV = "caffe-opencv"  # Caffe's OpenCV dialect (--caffe-dialect opencv): OpenCV DNN's Resize layer too


@dataclass(frozen=True)
class ResizePlan:
    kind: str
    settings: dict[str, Any] = field(default_factory=dict)
    # 'repeat': the repetition factors; 'native': integer upscale factors to pass as scales (TF's
    # in/out exactly), so that the resize follows the runtime input size
    factors: tuple[int, int] | None = None
    reason: str = ""

    @property
    def size_bound(self) -> bool:
        """True when the lowering bakes the conversion size (fixed output size, precomputed indices)."""
        return self.kind != "native" or self.factors is None


def _factors(mode: str, coordinate: str, in_hw: Sequence[int], out_hw: Sequence[int]) -> tuple[int, int] | None:
    fh, fw = (integer_factor(int(i), int(o), mode, coordinate) for i, o in zip(in_hw, out_hw))
    return (fh, fw) if fh and fw else None


def _same_indices(fn, coordinate: str, in_hw: Sequence[int], out_hw: Sequence[int]) -> bool:
    return all(np.array_equal(fn(int(i), int(o), coordinate), nearest_indices(int(i), int(o), coordinate))
               for i, o in zip(in_hw, out_hw))


def _scales(coordinate: str, in_hw: Sequence[int], out_hw: Sequence[int]) -> tuple[int, int] | None:
    """Upscale factors a native resize may take instead of a fixed size: powers of two only, where
    the runtimes' 1/f (or x / f) is TF's in/out (x * in/out) to the last bit; not with align_corners,
    whose scale (in-1)/(out-1) is no constant factor."""
    if coordinate == "align_corners" or any(o % i for i, o in zip(in_hw, out_hw)):
        return None
    factors = (int(out_hw[0]) // int(in_hw[0]), int(out_hw[1]) // int(in_hw[1]))
    return factors if all(f & (f - 1) == 0 for f in factors) else None


_TORCH_NEAREST = {"asymmetric": "nearest", "half_pixel": "nearest-exact"}
_ONNX_NEAREST = {"asymmetric": ("asymmetric", "floor"), "half_pixel": ("half_pixel", "round_prefer_ceil"),
                 "align_corners": ("align_corners", "round_prefer_ceil")}


def _torch(mode, coordinate, in_hw, out_hw) -> ResizePlan:
    if mode == "bilinear":
        if coordinate == "asymmetric":
            return ResizePlan("gather", reason="torch has no bilinear mode without half-pixel centers")
        scales = _scales(coordinate, in_hw, out_hw)
        if coordinate == "half_pixel" and not scales:
            # torch's half-pixel source coordinate drifts from TF's with the image size (measured
            # 4e-6 relative at 100 -> 700); TF's own taps are exact
            return ResizePlan("gather", reason="torch's half-pixel grid is TF's only at power-of-two upscales")
        return ResizePlan("native", {"mode": "bilinear", "align_corners": coordinate == "align_corners"}, scales)
    if coordinate in _TORCH_NEAREST and _same_indices(torch_nearest_indices, coordinate, in_hw, out_hw):
        return ResizePlan("native", {"mode": _TORCH_NEAREST[coordinate]}, _scales(coordinate, in_hw, out_hw))
    return ResizePlan("gather", reason="torch's nearest modes have no align_corners")


def _onnx(mode, coordinate, in_hw, out_hw) -> ResizePlan:
    if mode == "bilinear":
        scales = _scales(coordinate, in_hw, out_hw)
        if scales:
            return ResizePlan("native", {"mode": "linear", "coordinate_transformation_mode": coordinate}, scales)
        # onnxruntime divides by out/in where TF multiplies by in/out: its source coordinate is off by
        # an ulp, which grows with the image (measured 1.5e-5 relative at 100 -> 700)
        return ResizePlan("gather", reason="onnxruntime's linear grid is TF's only at power-of-two upscales")
    if _same_indices(onnxruntime_nearest_indices, coordinate, in_hw, out_hw):
        ctm, rounding = _ONNX_NEAREST[coordinate]
        return ResizePlan("native", {"mode": "nearest", "coordinate_transformation_mode": ctm,
                                     "nearest_mode": rounding}, _scales(coordinate, in_hw, out_hw))
    return ResizePlan("gather", reason="onnxruntime's nearest rounds differently from TF at this size")


def _mxnet(mode, coordinate, in_hw, out_hw) -> ResizePlan:
    factors = _factors(mode, coordinate, in_hw, out_hw)
    if factors:
        return ResizePlan("repeat", factors=factors)
    return ResizePlan("gather", reason="MXNet's resize ops do not follow TF's sampling grid")


def _caffe(mode, coordinate, in_hw, out_hw) -> ResizePlan:
    factors = _factors(mode, coordinate, in_hw, out_hw)
    if factors:  # a grouped Deconvolution with kernel = stride = factor and unit weights repeats
        return ResizePlan("repeat", factors=factors)
    axes = tuple(deconv_axis(int(i), int(o), mode, coordinate) for i, o in zip(in_hw, out_hw))
    if all(axes):  # edge rows copied, a fixed-weight Deconvolution, a crop
        return ResizePlan("deconv", {"axes": axes})
    opencv = _caffe_opencv_native(mode, coordinate, in_hw, out_hw) is not None
    also = ("; --caffe-dialect opencv writes it as OpenCV DNN's Resize layer (BVLC Caffe cannot read that file)"
            if opencv else "")
    if mode == "nearest":
        return ResizePlan("unsupported", reason="BVLC Caffe has no resize layer; only nearest upscaling by "
                                                "an integer factor converts" + also)
    return ResizePlan("unsupported", reason="no BVLC Caffe layer resizes bilinearly on TF's grid; only "
                                            "upscaling by a power-of-two factor converts (a fixed-weight "
                                            "Deconvolution)" + (also or " (tf2torch/tf2onnx/tf2mxnet convert it)"))


def _opencv_nearest_indices(in_size: int, out_size: int, coordinate: str) -> np.ndarray | None:
    """The rows OpenCV DNN 4.x's Resize layer (nearest) reads, as measured against TF: half-pixel
    floor(dst * s + 0.5 * s) and align_corners round(dst * s), float32 (s: TF's scale). Its
    asymmetric rounding differs from TF's at some sizes (6 -> 34 reads row 2 for TF's 3): None."""
    if coordinate == "asymmetric":
        return None
    if coordinate == "align_corners":
        return nearest_indices(in_size, out_size, coordinate)  # the same float32 expression as TF's
    scale = tf_scale(in_size, out_size, coordinate)
    src = np.arange(out_size, dtype=np.float32) * scale + np.float32(0.5) * scale
    return np.minimum(np.floor(src).astype(np.int64), in_size - 1)


def _caffe_opencv_native(mode, coordinate, in_hw, out_hw) -> ResizePlan | None:
    """OpenCV DNN's Resize layer where it samples TF's grid: nearest where its rows are TF's; bilinear
    asymmetric and align_corners (its float32 source coordinate is TF's); bilinear half-pixel only at
    power-of-two upscales (elsewhere its coordinate drifts from TF's with the size: 8e-5 at 1000 -> 333)."""
    settings = {"interpolation": mode, "align_corners": coordinate == "align_corners",
                "half_pixel_centers": coordinate == "half_pixel"}
    if mode == "nearest":
        same = all(np.array_equal(_opencv_nearest_indices(int(i), int(o), coordinate),
                                  nearest_indices(int(i), int(o), coordinate)) if coordinate != "asymmetric"
                   else False for i, o in zip(in_hw, out_hw))
        return ResizePlan("native", settings) if same else None
    if coordinate == "half_pixel" and not _scales(coordinate, in_hw, out_hw):
        return None
    return ResizePlan("native", settings)


def _caffe_opencv(mode, coordinate, in_hw, out_hw) -> ResizePlan:
    bvlc = _caffe(mode, coordinate, in_hw, out_hw)
    if bvlc.kind == "repeat":  # BVLC's form, as before
        return bvlc
    native = _caffe_opencv_native(mode, coordinate, in_hw, out_hw)
    if native is not None:
        return native
    if bvlc.kind == "deconv":
        return bvlc
    reason = ("OpenCV DNN's Resize layer (nearest, asymmetric) rounds differently from TF at this size, and no "
              "integer-factor Deconvolution reproduces it" if mode == "nearest" else
              "OpenCV DNN's half-pixel bilinear grid is TF's only at power-of-two upscales, and no integer-factor "
              "Deconvolution reproduces this one (tf2torch/tf2onnx/tf2mxnet convert it)")
    return ResizePlan("unsupported", reason=reason)


_PLANNERS = {"torch": _torch, "onnx": _onnx, "mxnet": _mxnet, "caffe": _caffe, CAFFE_OPENCV: _caffe_opencv}


def plan_resize(target: str, mode: str, coordinate: str, in_hw: Sequence[int], out_hw: Sequence[int]) -> ResizePlan:
    """How `target` reproduces TF's resize of an (h, w) plane `in_hw` to `out_hw` (`target` is one of the
    catalog's TARGETS, or CAFFE_OPENCV)."""
    return _PLANNERS[target](mode, coordinate, tuple(in_hw), tuple(out_hw))
