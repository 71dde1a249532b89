"""Convolutions, pooling, ZeroPadding2D and Cropping2D. Keras kernels are HWIO (depthwise: HW,in,mult;
transposed: HW,out,in)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.padding import PaddingError, output_hw, tf_pads, transposed_conv_crop, transposed_full_size

from .call import Call
from .elementwise import with_activation
from .table import TABLE


def pair(value: Any) -> tuple[int, int]:
    if isinstance(value, (list, tuple)):
        return (int(value[0]), int(value[-1]))
    return (int(value), int(value))


def _padding(call: Call) -> str:
    padding = str(call.cfg("padding", "valid")).upper()
    if padding not in ("SAME", "VALID"):
        raise call.unsupported(f"padding={padding.lower()!r} is not supported")
    return padding


def _conv(call: Call, x: str, weight: np.ndarray, bias, groups: int, suffix: str = "") -> str:
    """A conv2d node with the call's kernel/stride/dilation/padding config (weight OIHW)."""
    n, _, h, w = call.shape(x)
    kernel = weight.shape[2:]
    stride = pair(call.cfg("strides", 1))
    dilation = pair(call.cfg("dilation_rate", 1))
    padding = _padding(call)
    pads = tf_pads((h, w), kernel, stride, dilation, padding)
    oh, ow = output_hw((h, w), kernel, stride, dilation, pads)
    params = {"weight": np.ascontiguousarray(weight, dtype=np.float32)}
    if bias is not None:
        params["bias"] = np.asarray(bias, dtype=np.float32)
    attrs = {
        "kernel": tuple(kernel),
        "stride": stride,
        "dilation": dilation,
        "groups": groups,
        "pads": tuple(pads),
        "padding": padding,  # SAME: the pads follow the input size (convert.padding.sizes)
    }
    return call.add("conv2d", [x], (n, weight.shape[0], oh, ow), attrs, params, suffix=suffix)


@TABLE.register("Conv2D")
def conv2d(call: Call) -> list[str]:
    call.require_channels_last()
    kernel = call.weights[0]  # (kh, kw, in / groups, out)
    bias = call.weights[1] if call.cfg("use_bias", True) else None
    groups = int(call.cfg("groups", 1))
    return with_activation(call, _conv(call, call.x, kernel.transpose(3, 2, 0, 1), bias, groups))


def _depthwise_weight(kernel: np.ndarray) -> np.ndarray:
    """(kh, kw, in, mult) -> OIHW (in * mult, 1, kh, kw); TF's output channel is c * mult + m."""
    kh, kw, cin, mult = kernel.shape
    return kernel.reshape(kh, kw, cin * mult).transpose(2, 0, 1)[:, None]


@TABLE.register("DepthwiseConv2D")
def depthwise_conv2d(call: Call) -> list[str]:
    call.require_channels_last()
    kernel = call.weights[0]
    bias = call.weights[1] if call.cfg("use_bias", True) else None
    cin = kernel.shape[2]
    return with_activation(call, _conv(call, call.x, _depthwise_weight(kernel), bias, cin))


@TABLE.register("SeparableConv2D")
def separable_conv2d(call: Call) -> list[str]:
    call.require_channels_last()
    depthwise, pointwise = call.weights[0], call.weights[1]
    bias = call.weights[2] if call.cfg("use_bias", True) else None
    dw = _conv(call, call.x, _depthwise_weight(depthwise), None, depthwise.shape[2], suffix="/depthwise")
    pw = pointwise.transpose(3, 2, 0, 1)  # (1, 1, in*mult, out) -> OIHW
    n, _, h, w = call.shape(dw)
    params = {"weight": np.ascontiguousarray(pw, dtype=np.float32)}
    if bias is not None:
        params["bias"] = np.asarray(bias, dtype=np.float32)
    attrs = {"kernel": (1, 1), "stride": (1, 1), "dilation": (1, 1), "groups": 1, "pads": (0, 0, 0, 0),
             "padding": "VALID"}
    y = call.add("conv2d", [dw], (n, pw.shape[0], h, w), attrs, params)
    return with_activation(call, y)


def _transposed_out_hw(in_hw, k, s, d, padding: str, output_padding) -> tuple[int, int]:
    """Keras' output size (deconv_output_length); TF then crops the full output to it by the
    Conv2DBackpropInput rule, so output_padding only changes the requested size."""
    if output_padding is None:
        if padding == "SAME":
            return (in_hw[0] * s[0], in_hw[1] * s[1])
        return tuple(transposed_full_size(n, ki, si, di) for n, ki, si, di in zip(in_hw, k, s, d))
    extra = pair(output_padding)
    sizes = []
    for n, ki, si, di, op in zip(in_hw, k, s, d, extra):
        e = (ki - 1) * di + 1
        pad = e // 2 if padding == "SAME" else 0
        sizes.append((n - 1) * si + e - 2 * pad + op)
    return tuple(sizes)


@TABLE.register("Conv2DTranspose")
def conv2d_transpose(call: Call) -> list[str]:
    call.require_channels_last()
    kernel = call.weights[0]  # (kh, kw, out, in)
    bias = call.weights[1] if call.cfg("use_bias", True) else None
    weight = kernel.transpose(3, 2, 0, 1)  # IOHW
    k = weight.shape[2:]
    s = pair(call.cfg("strides", 1))
    d = pair(call.cfg("dilation_rate", 1))
    padding = _padding(call)
    n, _, h, w = call.shape()
    out_hw = _transposed_out_hw((h, w), k, s, d, padding, call.config.get("output_padding"))
    try:
        crop = transposed_conv_crop(out_hw, k, s, d, padding)
    except PaddingError as e:
        raise call.unsupported(f"output_padding={call.config.get('output_padding')}: {e}") from None
    params = {"weight": np.ascontiguousarray(weight, dtype=np.float32)}
    if bias is not None:
        params["bias"] = np.asarray(bias, dtype=np.float32)
    attrs = {
        "kernel": tuple(k),
        "stride": s,
        "dilation": d,
        "groups": 1,
        "crop": tuple(crop),
        "output_size": out_hw,
    }
    if call.config.get("output_padding") is None:
        attrs["padding"] = padding  # the output size follows the input size (convert.padding.sizes)
    y = call.add("conv_transpose2d", [call.x], (n, weight.shape[1], *out_hw), attrs, params)
    return with_activation(call, y)


def _pool(call: Call, op: str) -> list[str]:
    call.require_channels_last()
    kernel = pair(call.cfg("pool_size", 2))
    stride = pair(call.cfg("strides", kernel))
    padding = str(call.cfg("padding", "valid")).upper()
    n, c, h, w = call.shape()
    pads = tf_pads((h, w), kernel, stride, (1, 1), padding)
    oh, ow = output_hw((h, w), kernel, stride, (1, 1), pads)
    # SAME: the pads follow the input size (convert.padding.sizes)
    attrs = {"kernel": kernel, "stride": stride, "pads": tuple(pads), "padding": padding}
    if op == "avg_pool2d":
        attrs["count_include_pad"] = False  # TF divides by the real elements only
    return [call.add(op, [call.x], (n, c, oh, ow), attrs)]


@TABLE.register("MaxPooling2D", "MaxPool2D")
def max_pooling2d(call: Call) -> list[str]:
    return _pool(call, "max_pool2d")


@TABLE.register("AveragePooling2D", "AvgPool2D")
def average_pooling2d(call: Call) -> list[str]:
    return _pool(call, "avg_pool2d")


def _global(call: Call, op: str) -> list[str]:
    call.require_channels_last()
    n, c = call.shape()[:2]
    keep = bool(call.cfg("keepdims", False))
    shape = (n, c, 1, 1) if keep else (n, c)
    return [call.add(op, [call.x], shape, {"axes": (2, 3), "keepdims": keep})]


@TABLE.register("GlobalAveragePooling2D", "GlobalAvgPool2D")
def global_average_pooling2d(call: Call) -> list[str]:
    return _global(call, "reduce_mean")


@TABLE.register("GlobalMaxPooling2D", "GlobalMaxPool2D")
def global_max_pooling2d(call: Call) -> list[str]:
    return _global(call, "reduce_max")


def _two_sides(value) -> tuple[tuple[int, int], tuple[int, int]]:
    """Keras accepts n, (h, w) or ((top, bottom), (left, right))."""
    if isinstance(value, int):
        return (value, value), (value, value)
    h, w = value
    h = tuple(h) if isinstance(h, (list, tuple)) else (h, h)
    w = tuple(w) if isinstance(w, (list, tuple)) else (w, w)
    return (int(h[0]), int(h[1])), (int(w[0]), int(w[1]))


@TABLE.register("ZeroPadding2D")
def zero_padding2d(call: Call) -> list[str]:
    call.require_channels_last()
    (t, b), (l, r) = _two_sides(call.cfg("padding", 1))  # noqa: E741 - pad sides t, b, l, r
    n, c, h, w = call.shape()
    attrs = {"pads": ((0, 0), (0, 0), (t, b), (l, r)), "mode": "constant", "value": 0.0}
    return [call.add("pad", [call.x], (n, c, h + t + b, w + l + r), attrs)]


@TABLE.register("Cropping2D")
def cropping2d(call: Call) -> list[str]:
    call.require_channels_last()
    (t, b), (l, r) = _two_sides(call.cfg("cropping", 0))  # noqa: E741 - pad sides t, b, l, r
    n, c, h, w = call.shape()
    attrs = {"begin": (0, 0, t, l), "end": (n, c, h - b, w - r)}
    return [call.add("slice", [call.x], (n, c, h - t - b, w - l - r), attrs)]
