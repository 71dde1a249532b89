"""All padding decisions: TF's rules (rules.py) and how each target reproduces them (plans.py,
plus a plan module per target whose layers have rules of their own, e.g. caffe.py)."""

from .caffe import CaffePlan, caffe_plan_conv, caffe_plan_pool, caffe_plan_transposed
from .mxnet import AvgPoolPlan as MXNetAvgPoolPlan, plan_avg_pool as mxnet_plan_avg_pool, pool_full_hw as mxnet_pool_full_hw
from .plans import (
    MXNET,
    ONNX,
    TORCH,
    PadLayer,
    TargetCaps,
    TransposedPlan,
    WindowPlan,
    plan_transposed,
    plan_window,
    window_output_hw,
)
from .rules import (
    NO_PADS,
    Pads,
    PaddingError,
    avg_pool_real_counts,
    effective_kernel,
    output_hw,
    output_size_1d,
    same_pads_1d,
    tf_pads,
    transposed_conv_crop,
    transposed_full_size,
    window_counts_1d,
)
from .space_to_batch import SpaceToBatchConv, space_to_batch_conv

__all__ = [name for name in dir() if not name.startswith("_")]
