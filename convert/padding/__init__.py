"""All padding decisions: TF's rules (rules.py) and how each target reproduces them.

`plan(node, graph, options) -> Plan` (targets.py, one function per target) is the only entry the
emitters and `convert inspect` use; plan_type.py defines `Plan`; plans.py, mxnet.py and caffe.py hold
the per-target recipes it is built from."""

from .caffe import CaffePlan, caffe_plan_conv, caffe_plan_pool, caffe_plan_transposed
from .costs import conv_lowering
from .mxnet import AvgPoolPlan as MXNetAvgPoolPlan
from .mxnet import plan_avg_pool as mxnet_plan_avg_pool
from .mxnet import pool_full_hw as mxnet_pool_full_hw
from .plan_type import PadLayer, PadRecord, Plan, PlanOptions
from .plans import (
    MXNET,
    ONNX,
    TORCH,
    TargetCaps,
    TransposedPlan,
    WindowPlan,
    kernel_extension,
    plan_transposed,
    plan_window,
    window_output_hw,
    with_kernel_taps,
)
from .rules import (
    NO_PADS,
    PaddingError,
    Pads,
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
from .targets import PADDED_OPS, lowerings, plan

__all__ = [name for name in dir() if not name.startswith("_")]
