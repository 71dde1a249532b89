"""3-D TF ops: Conv3D, MaxPool3D, AvgPool3D and Conv3DBackpropInputV2 (conv3d_transpose)
into the IR's conv3d / max_pool3d / avg_pool3d / conv_transpose3d on NCDHW.

An NDHWC tensor is kept NCDHW in the IR (perm (0, 4, 1, 2, 3), context.fmt_perm), so consecutive 3-D
ops need no transposes between them. TF's per-side pads come from convert.padding.nd, the same rule the
Keras 3-D layers use; every output size is checked against TF's static shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.ir.lazy import contiguous
from tf_convert.convert.padding import PaddingError
from tf_convert.convert.padding.nd import output_size_nd, tf_pads_nd, transposed_crop_nd

from ..context import Context, NotConvertible, attr, fmt_perm, permute_shape
from ..table import tf_op

_DEFAULT_FORMAT = "NDHWC"


def _format(op: Any) -> str:
    return attr(op, "data_format", _DEFAULT_FORMAT)


def _dhw(values: list[int], data_format: str) -> tuple[int, int, int]:
    """The (D, H, W) entries of a per-axis attribute given in `data_format` order."""
    start = 2 if data_format.upper().startswith("NC") else 1
    return tuple(int(v) for v in values[start : start + 3])


def _channel(values: list[int], data_format: str) -> int:
    return int(values[1 if data_format.upper().startswith("NC") else 4])


def _ncdhw_out(ctx: Context, op: Any, data_format: str) -> tuple[int, ...]:
    return permute_shape(ctx.shape(op.outputs[0]), fmt_perm(data_format, 5))


def _pads(op: Any, size, kernel, stride, dilation) -> tuple[int, ...]:
    try:
        return tf_pads_nd(size, kernel, stride, dilation, attr(op, "padding", "VALID"))
    except PaddingError as e:
        raise NotConvertible(str(e)) from None


def _check_size(size, kernel, stride, dilation, pads, out_shape) -> None:
    got = output_size_nd(size, kernel, stride, dilation, pads)
    if tuple(got) != tuple(out_shape[2:]):
        raise NotConvertible(f"padding rule gives output {got}, TF says {tuple(out_shape[2:])}")


def _windowed(ctx: Context, op: Any) -> tuple[str, str, tuple[int, ...]]:
    """(data format, NCDHW input, NCDHW output shape); unknown sizes ask for --input-shape here."""
    fmt = _format(op)
    ctx.shape(op.outputs[0]), ctx.shape(op.inputs[0])
    return fmt, ctx.nchw(op.inputs[0], fmt), _ncdhw_out(ctx, op, fmt)


def _finish(ctx: Context, op: Any, ir_op: str, x_ir: str, out_shape, attrs: dict, params: dict | None,
            fmt: str) -> None:
    if attr(op, "padding", "VALID") == "SAME":
        attrs["padding"] = "SAME"  # pads derived from the input size (convert.padding.sizes)
    out = ctx.emit(ir_op, op.name, [x_ir], out_shape, attrs, params, op.type)
    ctx.set(op.outputs[0], out, fmt_perm(fmt, 5))


@tf_op("Conv3D")
def conv3d(ctx: Context, op: Any) -> None:
    fmt, x_ir, out_shape = _windowed(ctx, op)
    filt = ctx.const(op.inputs[1])  # (kd, kh, kw, in / groups, out)
    in_c = ctx.graph.shape(x_ir)[1]
    weight = contiguous(filt.transpose(4, 3, 0, 1, 2), np.float32)  # OIDHW
    kernel = tuple(int(k) for k in filt.shape[:3])
    stride = _dhw(attr(op, "strides"), fmt)
    dilation = _dhw(attr(op, "dilations", [1] * 5), fmt)
    size = ctx.graph.shape(x_ir)[2:]
    pads = _pads(op, size, kernel, stride, dilation)
    _check_size(size, kernel, stride, dilation, pads, out_shape)
    attrs = {"kernel": kernel, "stride": stride, "dilation": dilation, "groups": in_c // int(filt.shape[3]),
             "pads": pads}
    _finish(ctx, op, "conv3d", x_ir, out_shape, attrs, {"weight": weight}, fmt)


def _pool(ctx: Context, op: Any, ir_op: str, extra: dict) -> None:
    fmt, x_ir, out_shape = _windowed(ctx, op)
    ksize, strides = attr(op, "ksize"), attr(op, "strides")
    if ksize[0] != 1 or strides[0] != 1 or _channel(ksize, fmt) != 1 or _channel(strides, fmt) != 1:
        raise NotConvertible("pooling over the batch or channel axis is not supported")
    kernel, stride = _dhw(ksize, fmt), _dhw(strides, fmt)
    size = ctx.graph.shape(x_ir)[2:]
    pads = _pads(op, size, kernel, stride, (1, 1, 1))
    _check_size(size, kernel, stride, (1, 1, 1), pads, out_shape)
    _finish(ctx, op, ir_op, x_ir, out_shape, {"kernel": kernel, "stride": stride, "pads": pads, **extra}, None, fmt)


@tf_op("MaxPool3D")
def max_pool3d(ctx: Context, op: Any) -> None:
    _pool(ctx, op, "max_pool3d", {})


@tf_op("AvgPool3D")
def avg_pool3d(ctx: Context, op: Any) -> None:
    _pool(ctx, op, "avg_pool3d", {"count_include_pad": False})  # TF divides by the real elements only


@tf_op("Conv3DBackpropInputV2")
def conv_transpose3d(ctx: Context, op: Any) -> None:
    fmt = _format(op)
    ctx.shape(op.outputs[0])  # input_sizes must be known: it is TF's output size
    filt = ctx.const(op.inputs[1])  # (kd, kh, kw, out, in)
    x_ir = ctx.nchw(op.inputs[2], fmt)
    out_shape = _ncdhw_out(ctx, op, fmt)
    kernel = tuple(int(k) for k in filt.shape[:3])
    stride = _dhw(attr(op, "strides"), fmt)
    dilation = _dhw(attr(op, "dilations", [1] * 5), fmt)
    if dilation != (1, 1, 1):
        raise NotConvertible("dilated transposed 3-D convolution is not supported")
    try:
        crop = transposed_crop_nd(out_shape[2:], kernel, stride, dilation, attr(op, "padding", "VALID"))
    except PaddingError as e:
        raise NotConvertible(str(e)) from None
    # the input must be what the forward conv gives at TF's output size, or TF's window is not this one
    _check_size(out_shape[2:], kernel, stride, dilation, _pads(op, out_shape[2:], kernel, stride, dilation),
                ctx.graph.shape(x_ir))
    attrs = {"kernel": kernel, "stride": stride, "dilation": dilation, "groups": 1, "crop": tuple(crop),
             "output_size": tuple(out_shape[2:])}
    weight = contiguous(filt.transpose(4, 3, 0, 1, 2), np.float32)  # IODHW
    out = ctx.emit("conv_transpose3d", op.name, [x_ir], out_shape, attrs, {"weight": weight}, op.type)
    ctx.set(op.outputs[0], out, fmt_perm(fmt, 5))
