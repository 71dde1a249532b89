"""TF's generic Conv op (data_format CHANNELS_LAST/FIRST, one batch axis) on a 4-D
input, as Conv2D's IR conv2d."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..context import Context, NotConvertible, attr, fmt_perm
from ..table import tf_op
from .spatial import conv_pads, emit_conv, hw, nchw_out

_CHANNELS = {"CHANNELS_LAST": "NHWC", "CHANNELS_FIRST": "NCHW"}


@tf_op("Conv")
def generic_conv(ctx: Context, op: Any) -> None:
    if len(ctx.shape(op.inputs[0])) != 4 or int(op.get_attr("batch_dims")) != 1:
        raise NotConvertible("Conv of a tensor that is not 4-D with one batch axis (2-D convolutions only)")
    fmt = _CHANNELS[op.get_attr("data_format").decode()]
    x = ctx.nchw(op.inputs[0], fmt)
    filt = np.asarray(ctx.const(op.inputs[1]))  # HWIO
    weight, groups = filt.transpose(3, 2, 0, 1), ctx.graph.shape(x)[1] // filt.shape[2]
    stride, dilation = hw(list(op.get_attr("strides")), fmt), hw(list(op.get_attr("dilations")) or [1] * 4, fmt)
    pads = conv_pads(op, ctx.graph.shape(x)[2:], tuple(filt.shape[:2]), stride, dilation, fmt)
    out = emit_conv(ctx, op.name, x, weight, groups, stride, dilation, pads, nchw_out(ctx, op, fmt), op.type,
                    attr(op, "padding", "VALID"))
    ctx.set(op.outputs[0], out, fmt_perm(fmt))
