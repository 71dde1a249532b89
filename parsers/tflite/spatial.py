"""Convolutions (CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV), pooling and the pads. TFLite filters are
OHWI (depthwise: 1, H, W, C*multiplier; transposed: O, H, W, I); SAME pads come from convert.padding."""

from __future__ import annotations

import numpy as np

from tf_convert.convert.padding import PaddingError, output_hw, tf_pads, transposed_conv_crop

from . import layout
from .op import Op
from .table import TABLE
from .weights import float_weight

_MIRROR_MODES = {0: "reflect", 1: "symmetric"}


def _padding(op: Op) -> str:
    padding = op.padding()
    if padding not in ("SAME", "VALID"):
        raise op.unsupported(f"padding {padding} is not supported")
    return padding


def _bias(op: Op, k: int, read_when_listed: bool = False) -> dict[str, np.ndarray]:
    """The bias input, when the operator has one. TFLite's CONV_2D and DEPTHWISE_CONV_2D kernels read a bias they
    list, so a -1 there is a file TFLite refuses (`read_when_listed`: one line naming it); TRANSPOSE_CONV's is
    optional."""
    if read_when_listed and k < len(op.op.inputs):
        op.tensor(k)
    return {"bias": float_weight(op, k, "bias").reshape(-1)} if op.has(k) else {}


def _conv(op: Op, weight: np.ndarray, params: dict, groups: int, dilation: tuple[int, int]) -> str:
    x = op.x()
    n, _, h, w = op.shape(x)
    kernel = tuple(weight.shape[2:])
    stride = (int(op.options.StrideH()), int(op.options.StrideW()))
    padding = _padding(op)
    pads = tf_pads((h, w), kernel, stride, dilation, padding)
    oh, ow = output_hw((h, w), kernel, stride, dilation, pads)
    attrs = {"kernel": kernel, "stride": stride, "dilation": dilation, "groups": groups, "pads": tuple(pads)}
    if padding == "SAME":
        attrs["padding"] = "SAME"  # the pads follow the input size (convert.padding.sizes)
    y = op.add("conv2d", [x], (n, weight.shape[0], oh, ow), attrs, {"weight": weight, **params})
    return op.activation(y)


def _dilation(op: Op) -> tuple[int, int]:
    return (int(op.options.DilationHFactor()), int(op.options.DilationWFactor()))


@TABLE.register("CONV_2D")
def conv_2d(op: Op) -> list[str]:
    filt = float_weight(op, 1, "filter")  # (O, H, W, I / groups)
    cin = op.shape()[1]
    if filt.shape[3] == 0 or cin % filt.shape[3]:
        raise op.unsupported(f"filter of {filt.shape[3]} input channels for an input of {cin}")
    weight = np.ascontiguousarray(filt.transpose(0, 3, 1, 2))
    return [_conv(op, weight, _bias(op, 2, read_when_listed=True), cin // filt.shape[3], _dilation(op))]


@TABLE.register("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(op: Op) -> list[str]:
    filt = float_weight(op, 1, "filter")  # (1, H, W, C * multiplier); output channel c * multiplier + m
    cin = op.shape()[1]
    if filt.shape[0] != 1 or filt.shape[3] % cin:
        raise op.unsupported(f"depthwise filter {filt.shape} for an input of {cin} channels")
    weight = np.ascontiguousarray(filt[0].transpose(2, 0, 1)[:, None])  # OIHW (C * multiplier, 1, H, W)
    return [_conv(op, weight, _bias(op, 2, read_when_listed=True), cin, _dilation(op))]


@TABLE.register("TRANSPOSE_CONV")
def transpose_conv(op: Op) -> list[str]:
    size = op.const(0, "output shape").astype(np.int64).reshape(-1)  # NHWC
    filt = float_weight(op, 1, "filter")  # (O, H, W, I)
    x = op.x(2)
    n, cin, h, w = op.shape(x)
    if filt.shape[3] != cin or len(size) != 4:
        raise op.unsupported(f"filter {filt.shape} for an input of {cin} channels")
    weight = np.ascontiguousarray(filt.transpose(3, 0, 1, 2))  # IOHW
    kernel = tuple(weight.shape[2:])
    stride = (int(op.options.StrideH()), int(op.options.StrideW()))
    padding = _padding(op)
    out_hw = (int(size[1]), int(size[2]))
    try:
        crop = transposed_conv_crop(out_hw, kernel, stride, (1, 1), padding)
    except PaddingError as e:
        raise op.unsupported(str(e)) from None
    attrs = {"kernel": kernel, "stride": stride, "dilation": (1, 1), "groups": 1, "crop": tuple(crop),
             "output_size": out_hw}
    y = op.add("conv_transpose2d", [x], (n, weight.shape[1], *out_hw), attrs, {"weight": weight, **_bias(op, 3)})
    return [op.activation(y)]


def _pool(op: Op, ir_op: str) -> list[str]:
    x = op.x()
    n, c, h, w = op.shape(x)
    kernel = (int(op.options.FilterHeight()), int(op.options.FilterWidth()))
    stride = (int(op.options.StrideH()), int(op.options.StrideW()))
    padding = _padding(op)
    pads = tf_pads((h, w), kernel, stride, (1, 1), padding)
    oh, ow = output_hw((h, w), kernel, stride, (1, 1), pads)
    attrs = {"kernel": kernel, "stride": stride, "pads": tuple(pads)}
    if padding == "SAME":
        attrs["padding"] = "SAME"
    if ir_op == "avg_pool2d":
        attrs["count_include_pad"] = False  # TFLite divides by the real elements only, as TF
    return [op.activation(op.add(ir_op, [x], (n, c, oh, ow), attrs))]


@TABLE.register("MAX_POOL_2D")
def max_pool_2d(op: Op) -> list[str]:
    return _pool(op, "max_pool2d")


@TABLE.register("AVERAGE_POOL_2D")
def average_pool_2d(op: Op) -> list[str]:
    return _pool(op, "avg_pool2d")


def _pad(op: Op, mode: str, value: float) -> list[str]:
    x = op.x()
    shape = op.shape(x)
    paddings = op.const(1, "paddings").astype(np.int64).reshape(len(shape), 2)  # TFLite axis order
    order = layout.TO_NCHW if len(shape) == 4 else tuple(range(len(shape)))
    pads = tuple((int(paddings[a][0]), int(paddings[a][1])) for a in order)
    out = tuple(d + b + e for d, (b, e) in zip(shape, pads))
    return [op.add("pad", [x], out, {"pads": pads, "mode": mode, "value": value})]


@TABLE.register("PAD")
def pad(op: Op) -> list[str]:
    return _pad(op, "constant", 0.0)


@TABLE.register("PADV2")
def pad_v2(op: Op) -> list[str]:
    value = op.const(2, "pad value") if op.has(2) else np.zeros(1, np.float32)
    return _pad(op, "constant", float(np.asarray(value).reshape(-1)[0]))


@TABLE.register("MIRROR_PAD")
def mirror_pad(op: Op) -> list[str]:
    return _pad(op, _MIRROR_MODES[int(op.options.Mode())], 0.0)


