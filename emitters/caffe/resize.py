"""resize. BVLC Caffe has no resize layer; where TF's resize is repetition by integer factors
(nearest upscaling, convert.sampling.plan_resize) a grouped Deconvolution with kernel = stride =
factor and unit weights is exactly that. Everything else is refused with the plan's reason."""

from __future__ import annotations

import numpy as np

from convert import ir
from convert.sampling import plan_resize
from emitters.base import EmitOptions

from .builder import NetBuilder
from .ops import LIMITS, TABLE


def _plan(g: ir.Graph, node: ir.Node):
    a = node.attrs
    return plan_resize("caffe", a["mode"], a["coordinate"], g.shape(node.inputs[0])[2:], g.shape(node.output)[2:])


@LIMITS.register("resize")
def _resize_limits(g: ir.Graph, node: ir.Node) -> str | None:
    plan = _plan(g, node)
    return None if plan.kind == "repeat" else plan.reason


@TABLE.register("resize")
def _resize(b: NetBuilder, g: ir.Graph, node: ir.Node, options: EmitOptions) -> str:
    (fh, fw), x = _plan(g, node).factors, node.inputs[0]
    if (fh, fw) == (1, 1):
        return x
    n, c, h, w = b.shape(x)
    conv = {"num_output": c, "bias_term": False, "kernel_h": fh, "kernel_w": fw, "stride_h": fh, "stride_w": fw,
            "pad_h": 0, "pad_w": 0, "group": c}
    top = b.unique(f"{node.name}/repeat")
    b.add("Deconvolution", f"{node.name}/repeat", [x], [top], [(n, c, h * fh, w * fw)],
          [np.ones((c, 1, fh, fw), np.float32)], convolution_param=conv)
    return top
