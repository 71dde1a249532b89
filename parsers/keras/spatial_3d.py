"""3-D layers: Conv3D, Conv3DTranspose, 3-D pooling, padding, cropping and UpSampling3D.

A Keras volume (N, D, H, W, C) stays (N, D, H, W, C) in the IR (only rank-4 tensors change layout);
the windowed layers run on NCDHW between two transposes, which cancel between consecutive layers in
the layout passes. TF's per-side pads come from convert.padding.nd.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.padding import PaddingError
from tf_convert.convert.padding.nd import output_size_nd, tf_pads_nd, transposed_crop_nd, transposed_full_size_nd

from .call import Call
from .elementwise import apply_activation
from .table import TABLE

TO_NCDHW = (0, 4, 1, 2, 3)
TO_NDHWC = (0, 2, 3, 4, 1)


def triple(value: Any) -> tuple[int, int, int]:
    if isinstance(value, (list, tuple)):
        return tuple(int(v) for v in value) if len(value) == 3 else (int(value[0]),) * 3
    return (int(value),) * 3


def _check(call: Call) -> None:
    call.require_channels_last()
    if len(call.shape()) != 5:
        raise call.unsupported(f"expects a (batch, depth, height, width, channels) input, got {call.kshape()}")


def _padding(call: Call) -> str:
    padding = str(call.cfg("padding", "valid")).upper()
    if padding not in ("SAME", "VALID"):
        raise call.unsupported(f"padding={padding.lower()!r} is not supported")
    return padding


def to_ncdhw(call: Call, x: str) -> str:
    shape = tuple(call.shape(x)[p] for p in TO_NCDHW)
    return call.add("transpose", [x], shape, {"perm": TO_NCDHW}, suffix="/ncdhw")


def to_ndhwc(call: Call, y: str) -> str:
    shape = tuple(call.shape(y)[p] for p in TO_NDHWC)
    return call.add("transpose", [y], shape, {"perm": TO_NDHWC}, suffix="/ndhwc")


def _params(weight: np.ndarray, bias) -> dict[str, np.ndarray]:
    params = {"weight": np.ascontiguousarray(weight, dtype=np.float32)}
    if bias is not None:
        params["bias"] = np.asarray(bias, dtype=np.float32)
    return params


@TABLE.register("Conv3D", "Convolution3D")
def conv3d(call: Call) -> list[str]:
    _check(call)
    kernel = call.weights[0]  # (kd, kh, kw, in / groups, out)
    bias = call.weights[1] if call.cfg("use_bias", True) else None
    weight = kernel.transpose(4, 3, 0, 1, 2)  # OIDHW
    k, s, d = weight.shape[2:], triple(call.cfg("strides", 1)), triple(call.cfg("dilation_rate", 1))
    padding = _padding(call)
    x = to_ncdhw(call, call.x)
    n, _, *size = call.shape(x)
    pads = tf_pads_nd(size, k, s, d, padding)
    attrs = {"kernel": tuple(k), "stride": s, "dilation": d, "groups": int(call.cfg("groups", 1)), "pads": pads}
    if padding == "SAME":
        attrs["padding"] = "SAME"
    y = call.add("conv3d", [x], (n, weight.shape[0], *output_size_nd(size, k, s, d, pads)), attrs,
                 _params(weight, bias), suffix="/conv")
    return [apply_activation(call, to_ndhwc(call, y), call.config.get("activation"))]


@TABLE.register("Conv3DTranspose", "Convolution3DTranspose")
def conv3d_transpose(call: Call) -> list[str]:
    _check(call)
    kernel = call.weights[0]  # (kd, kh, kw, out, in)
    bias = call.weights[1] if call.cfg("use_bias", True) else None
    weight = kernel.transpose(4, 3, 0, 1, 2)  # IODHW
    k, s, d = weight.shape[2:], triple(call.cfg("strides", 1)), triple(call.cfg("dilation_rate", 1))
    padding = _padding(call)
    x = to_ncdhw(call, call.x)
    n, _, *size = call.shape(x)
    output_padding = call.config.get("output_padding")
    if output_padding is None:
        out = tuple(v * si for v, si in zip(size, s)) if padding == "SAME" else transposed_full_size_nd(size, k, s, d)
    else:  # Keras' deconv_output_length; TF then crops the full output by the backprop rule
        out = tuple((v - 1) * si + (ki - 1) * di + 1 - 2 * (((ki - 1) * di + 1) // 2 if padding == "SAME" else 0) + op
                    for v, ki, si, di, op in zip(size, k, s, d, triple(output_padding)))
    try:
        crop = transposed_crop_nd(out, k, s, d, padding)
    except PaddingError as e:
        raise call.unsupported(f"output_padding={output_padding}: {e}") from None
    attrs = {"kernel": tuple(k), "stride": s, "dilation": d, "groups": 1, "crop": crop, "output_size": out}
    if output_padding is None:
        attrs["padding"] = padding  # the output size follows the input size (convert.padding.sizes)
    y = call.add("conv_transpose3d", [x], (n, weight.shape[1], *out), attrs, _params(weight, bias), suffix="/conv")
    return [apply_activation(call, to_ndhwc(call, y), call.config.get("activation"))]


def _pool(call: Call, op: str) -> list[str]:
    _check(call)
    k = triple(call.cfg("pool_size", 2))
    s = triple(call.cfg("strides", k))
    padding = _padding(call)
    x = to_ncdhw(call, call.x)
    n, c, *size = call.shape(x)
    pads = tf_pads_nd(size, k, s, (1, 1, 1), padding)
    attrs: dict[str, Any] = {"kernel": k, "stride": s, "pads": pads}
    if padding == "SAME":
        attrs["padding"] = "SAME"
    if op == "avg_pool3d":
        attrs["count_include_pad"] = False  # TF divides by the real elements only
    y = call.add(op, [x], (n, c, *output_size_nd(size, k, s, (1, 1, 1), pads)), attrs, suffix="/pool")
    return [to_ndhwc(call, y)]


@TABLE.register("MaxPooling3D", "MaxPool3D")
def max_pooling3d(call: Call) -> list[str]:
    return _pool(call, "max_pool3d")


@TABLE.register("AveragePooling3D", "AvgPool3D")
def average_pooling3d(call: Call) -> list[str]:
    return _pool(call, "avg_pool3d")


def _global(call: Call, op: str) -> list[str]:
    _check(call)
    n, *_, c = call.shape()
    keep = bool(call.cfg("keepdims", False))
    shape = (n, 1, 1, 1, c) if keep else (n, c)
    return [call.add(op, [call.x], shape, {"axes": (1, 2, 3), "keepdims": keep})]


@TABLE.register("GlobalAveragePooling3D", "GlobalAvgPool3D")
def global_average_pooling3d(call: Call) -> list[str]:
    return _global(call, "reduce_mean")


@TABLE.register("GlobalMaxPooling3D", "GlobalMaxPool3D")
def global_max_pooling3d(call: Call) -> list[str]:
    return _global(call, "reduce_max")


def _three_sides(value: Any) -> list[tuple[int, int]]:
    """Keras accepts n, (d, h, w) or ((d0, d1), (h0, h1), (w0, w1))."""
    if isinstance(value, int):
        return [(value, value)] * 3
    return [(int(v[0]), int(v[1])) if isinstance(v, (list, tuple)) else (int(v), int(v)) for v in value]


@TABLE.register("ZeroPadding3D")
def zero_padding3d(call: Call) -> list[str]:
    _check(call)
    sides = _three_sides(call.cfg("padding", 1))
    n, *size, c = call.shape()
    out = (n, *(v + b + e for v, (b, e) in zip(size, sides)), c)
    attrs = {"pads": ((0, 0), *sides, (0, 0)), "mode": "constant", "value": 0.0}
    return [call.add("pad", [call.x], out, attrs)]


@TABLE.register("Cropping3D")
def cropping3d(call: Call) -> list[str]:
    _check(call)
    sides = _three_sides(call.cfg("cropping", 1))
    n, *size, c = call.shape()
    out = (n, *(v - b - e for v, (b, e) in zip(size, sides)), c)
    return [call.add("crop", [call.x], out, {"crops": ((0, 0), *sides, (0, 0))})]  # follows any size


@TABLE.register("UpSampling3D")
def up_sampling3d(call: Call) -> list[str]:
    """Keras repeats each voxel (fd, fh, fw) times: the IR's repeat on (N, D, H, W, C), exact at every size."""
    _check(call)
    factors = triple(call.cfg("size", 2))
    n, *size, c = call.shape()
    shape = (n, *(v * f for v, f in zip(size, factors)), c)
    return [call.add("repeat", [call.x], shape, {"repeats": (1, *factors, 1)})]
