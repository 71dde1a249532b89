"""The targets, and what a target's options change in the ground floor's padding plans. A leaf that imports
nothing heavy: the CLI builds its flags from it without loading numpy."""

from __future__ import annotations

from dataclasses import dataclass

TARGETS = ("torch", "onnx", "mxnet", "caffe")


@dataclass(frozen=True)
class PlanOptions:
    """What a target's options change in its padding plans (emitters.options: `TargetOptions.plan_options()`)."""

    target: str  # torch, onnx, mxnet or caffe
    static_shapes: bool = True  # pads baked for the conversion size (False: they follow the runtime size)
    caffe_pad: str = "auto"  # Caffe's lowering of an asymmetric conv pad (--caffe-pad)
    conv_lowering: str | None = None  # 'pad' or 'kernel' forces one (bench/lowering.py); None: the measured cheaper
