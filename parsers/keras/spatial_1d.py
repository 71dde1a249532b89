"""1-D layers: Conv1D and friends, 1-D pooling, padding, cropping and up-sampling.

A Keras sequence tensor (N, L, C) stays (N, L, C) in the IR (only rank-4 tensors change layout). The
windowed 1-D layers run as their 2-D forms on an image with a unit height, (N, C, 1, L), exactly as
TensorFlow itself computes them (ExpandDims -> Conv2D -> Squeeze): the kernel is 1 x k, the stride
1 x s, and TF's per-side pads land on the width axis only, so every target's 2-D padding plan applies
unchanged. The layout round trips between two such layers cancel in the layout passes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from . import resize, sequence_masks, spatial
from .call import Call
from .table import TABLE

TO_CHANNELS_FIRST = (0, 2, 1)  # (N, L, C) <-> (N, C, L): the perm is its own inverse


def single(value: Any, default: int = 1) -> int:
    """Keras 1-D configs hold ints or 1-tuples."""
    if value is None:
        return default
    if isinstance(value, (list, tuple)):
        return int(value[0])
    return int(value)


def as_image(call: Call, x: str) -> str:
    """(N, L, C) -> (N, C, 1, L)."""
    n, length, c = call.shape(x)
    x = call.add("transpose", [x], (n, c, length), {"perm": TO_CHANNELS_FIRST}, suffix="/ncl")
    return call.add("reshape", [x], (n, c, 1, length), {"shape": (n, c, 1, length)}, suffix="/as_2d")


def as_sequence(call: Call, y: str) -> str:
    """(N, C, 1, L) -> (N, L, C)."""
    n, c, _, length = call.shape(y)
    y = call.add("reshape", [y], (n, c, length), {"shape": (n, c, length)}, suffix="/as_1d")
    return call.add("transpose", [y], (n, length, c), {"perm": TO_CHANNELS_FIRST}, suffix="/nlc")


def _as_2d_call(call: Call, config: dict[str, Any], weights: list) -> Call:
    """The same layer call seen as its 2-D form on the unit-height image of its input."""
    if call.cfg("data_format", "channels_last") != "channels_last":
        raise call.unsupported("data_format='channels_first' is not supported")
    if len(call.shape()) != 3:
        raise call.unsupported(f"expects a (batch, steps, channels) input, got shape {call.kshape()}")
    x = as_image(call, call.x)
    return replace(call, config=config, inputs=[x, *call.inputs[1:]], weights=weights)


def _windowed(handler_2d: Callable[[Call], list[str]], kernel_key: str | None = None):
    """A 1-D layer handler that runs `handler_2d` on the unit-height image (kernels gain an H axis)."""

    def handler(call: Call) -> list[str]:
        config = dict(call.config)
        for key in ("strides", "dilation_rate"):
            config[key] = (1, single(call.cfg(key, 1)))
        if kernel_key is not None:  # pooling: the window comes from the config
            size = single(call.cfg(kernel_key, 2))
            config[kernel_key] = (1, size)
            config["strides"] = (1, single(call.cfg("strides", size), size))
        if call.config.get("output_padding") is not None:
            config["output_padding"] = (0, single(call.config["output_padding"]))
        padding = str(call.cfg("padding", "valid")).lower()
        causal = padding == "causal"
        if causal:
            config["padding"] = "valid"
        weights = [w[None] if w.ndim == 3 else w for w in call.weights]  # (k, in, out) -> (1, k, in, out)
        call2d = _as_2d_call(call, config, weights)
        if causal:  # left pad by the effective kernel minus one, then a VALID conv (Keras' own recipe)
            call2d = _causal_padded(call2d)
        return [as_sequence(call, y) for y in handler_2d(call2d)]

    handler.__name__ = f"{handler_2d.__name__}_1d"
    return handler


def _causal_padded(call: Call) -> Call:
    kernel = call.weights[0].shape[1]
    dilation = call.config["dilation_rate"][1]
    left = (kernel - 1) * dilation
    n, c, h, w = call.shape()
    attrs = {"pads": ((0, 0), (0, 0), (0, 0), (left, 0)), "mode": "constant", "value": 0.0}
    x = call.add("pad", [call.x], (n, c, h, w + left), attrs, suffix="/causal_pad")
    return replace(call, inputs=[x, *call.inputs[1:]])


TABLE.register("Conv1D", "Convolution1D")(_windowed(spatial.conv2d))
TABLE.register("DepthwiseConv1D")(_windowed(spatial.depthwise_conv2d))
TABLE.register("SeparableConv1D", "SeparableConvolution1D")(_windowed(spatial.separable_conv2d))
TABLE.register("Conv1DTranspose", "Convolution1DTranspose")(_windowed(spatial.conv2d_transpose))
TABLE.register("MaxPooling1D", "MaxPool1D")(_windowed(spatial.max_pooling2d, "pool_size"))
TABLE.register("AveragePooling1D", "AvgPool1D")(_windowed(spatial.average_pooling2d, "pool_size"))


@TABLE.register("UpSampling1D")
def up_sampling1d(call: Call) -> list[str]:
    """Keras repeats each step `size` times: nearest resize of the unit-height image by (1, size)."""
    config = {"size": (1, single(call.cfg("size", 2))), "interpolation": "nearest"}
    return [as_sequence(call, y) for y in resize.up_sampling2d(_as_2d_call(call, config, []))]


def _global(call: Call, op: str) -> list[str]:
    if call.cfg("data_format", "channels_last") != "channels_last":
        raise call.unsupported("data_format='channels_first' is not supported")
    n, _, c = call.shape()
    keep = bool(call.cfg("keepdims", False))
    shape = (n, 1, c) if keep else (n, c)
    return [call.add(op, [call.x], shape, {"axes": (1,), "keepdims": keep})]


@TABLE.register("GlobalAveragePooling1D", "GlobalAvgPool1D")
def global_average_pooling1d(call: Call) -> list[str]:
    if call.inputs[1:]:
        raise call.unsupported("a mask input is not supported")
    mask = sequence_masks.step_mask(call)  # only the unmasked steps are averaged
    if mask is not None:
        call.require_channels_last()
        return [sequence_masks.masked_average(call, mask)]
    return _global(call, "reduce_mean")


@TABLE.register("GlobalMaxPooling1D", "GlobalMaxPool1D")
def global_max_pooling1d(call: Call) -> list[str]:
    return _global(call, "reduce_max")


def _two(value: Any) -> tuple[int, int]:
    """Keras accepts n or (before, after)."""
    if isinstance(value, (list, tuple)):
        return int(value[0]), int(value[-1])
    return int(value), int(value)


@TABLE.register("ZeroPadding1D")
def zero_padding1d(call: Call) -> list[str]:
    before, after = _two(call.cfg("padding", 1))
    n, length, c = call.shape()
    attrs = {"pads": ((0, 0), (before, after), (0, 0)), "mode": "constant", "value": 0.0}
    return [call.add("pad", [call.x], (n, length + before + after, c), attrs)]


@TABLE.register("Cropping1D")
def cropping1d(call: Call) -> list[str]:
    before, after = _two(call.cfg("cropping", (1, 1)))
    n, length, c = call.shape()
    attrs = {"begin": (0, before, 0), "end": (n, length - after, c)}
    return [call.add("slice", [call.x], (n, length - before - after, c), attrs)]
