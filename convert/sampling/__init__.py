"""All resampling decisions: where TF samples each output pixel of a resize (rules.py) and which
mode of each target reproduces it exactly, or that none does (plans.py)."""

from .plans import ResizePlan, plan_resize
from .rules import (
    COORDINATES,
    MODES,
    SamplingError,
    integer_factor,
    linear_taps,
    nearest_indices,
    onnxruntime_nearest_indices,
    source_coords,
    tf_coordinate,
    tf_scale,
    torch_nearest_indices,
)

__all__ = [name for name in dir() if not name.startswith("_")]
