"""Issue 22 part B (opsb): the other spellings of a convolution. DepthwiseConv2dNativeBackpropInput, a
transposed depthwise conv, as the IR conv_transpose2d with one group per input channel (SAME's crop like
Conv2DBackpropInput's); FusedPadConv2D and FusedResizeAndPadConv2D as the
IR [resize,] pad and conv2d. (Conv2DBackpropInputV2 would be
Conv2DBackpropInput's call, but TF has no CPU kernel to check it against.)"""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.ir.lazy import contiguous
from tf_convert.convert.sampling import tf_coordinate

from ..context import Context, NotConvertible, fmt_perm
from ..table import tf_op
from .spatial import conv_pads, emit_conv, emit_conv_transpose, hw, nchw_out


@tf_op("DepthwiseConv2dNativeBackpropInput")
def depthwise_conv_transpose(ctx: Context, op: Any) -> None:
    """Filter (kh, kw, C, M): input channel c*M + m of the transposed conv feeds group c's one output."""
    filt = np.asarray(ctx.const(op.inputs[1]))
    kh, kw, c, m = filt.shape
    weight = filt.transpose(2, 3, 0, 1).reshape(c * m, 1, kh, kw)  # IOHW, O per group
    emit_conv_transpose(ctx, op, contiguous(weight, np.float32), c)


@tf_op("FusedPadConv2D", "FusedResizeAndPadConv2D")
def fused_pad_conv(ctx: Context, op: Any) -> None:
    """TF's fused [ResizeBilinear +] MirrorPad + Conv2D (NHWC): the IR resize (TF's grid, align_corners as
    the op says), the IR pad (reflect or symmetric), then the conv with its own SAME/VALID pads on the
    padded size."""
    resized = op.type == "FusedResizeAndPadConv2D"
    paddings = np.asarray(ctx.const(op.inputs[2 if resized else 1])).astype(int).reshape(4, 2)
    if paddings[0].any() or paddings[3].any():
        raise NotConvertible(f"{op.type} padding the batch or channel axis")
    x = ctx.nchw(op.inputs[0], "NHWC")
    n, c, h, w = ctx.graph.shape(x)
    if resized:
        h, w = (int(v) for v in np.asarray(ctx.const(op.inputs[1])).reshape(-1))
        coordinate = tf_coordinate(bool(op.get_attr("resize_align_corners")), False)
        x = ctx.emit("resize", f"{op.name}/resize", [x], (n, c, h, w),
                     {"mode": "bilinear", "coordinate": coordinate, "size": (h, w)}, source_op=op.type)
    (top, bottom), (left, right) = paddings[1].tolist(), paddings[2].tolist()
    if top or bottom or left or right:
        h, w = h + top + bottom, w + left + right
        x = ctx.emit("pad", f"{op.name}/pad", [x], (n, c, h, w),
                     {"pads": ((0, 0), (0, 0), (top, bottom), (left, right)),
                      "mode": op.get_attr("mode").decode().lower(), "value": 0.0}, source_op=op.type)
    filt = np.asarray(ctx.const(op.inputs[3 if resized else 2]))  # HWIO
    weight, groups = filt.transpose(3, 2, 0, 1), c // filt.shape[2]
    stride = hw(list(op.get_attr("strides")), "NHWC")
    pads = conv_pads(op, (h, w), tuple(filt.shape[:2]), stride, (1, 1), "NHWC")
    out = emit_conv(ctx, op.name, x, weight, groups, stride, (1, 1), pads, nchw_out(ctx, op, "NHWC"), op.type)
    ctx.set(op.outputs[0], out, fmt_perm("NHWC"))


_CHANNELS = {"CHANNELS_LAST": "NHWC", "CHANNELS_FIRST": "NCHW"}


@tf_op("Conv")
def generic_conv(ctx: Context, op: Any) -> None:
    """TF's generic Conv op (data_format CHANNELS_LAST/FIRST) on a 4-D input: Conv2D's IR conv2d."""
    if len(ctx.shape(op.inputs[0])) != 4 or int(op.get_attr("batch_dims")) != 1:
        raise NotConvertible("Conv of a tensor that is not 4-D with one batch axis (2-D convolutions only)")
    fmt = _CHANNELS[op.get_attr("data_format").decode()]
    x = ctx.nchw(op.inputs[0], fmt)
    filt = np.asarray(ctx.const(op.inputs[1]))  # HWIO
    weight, groups = filt.transpose(3, 2, 0, 1), ctx.graph.shape(x)[1] // filt.shape[2]
    stride, dilation = hw(list(op.get_attr("strides")), fmt), hw(list(op.get_attr("dilations")) or [1] * 4, fmt)
    pads = conv_pads(op, ctx.graph.shape(x)[2:], tuple(filt.shape[:2]), stride, dilation, fmt)
    out = emit_conv(ctx, op.name, x, weight, groups, stride, dilation, pads, nchw_out(ctx, op, fmt), op.type)
    ctx.set(op.outputs[0], out, fmt_perm(fmt))
