"""Dense, normalisation and per-channel scaling layers (folded to channel_affine where they are affine)."""

from __future__ import annotations

import numpy as np

from ..common import layout
from .call import Call
from .elementwise import with_activation
from .table import TABLE


@TABLE.register("Dense")
def dense(call: Call) -> list[str]:
    kernel = call.weights[0]  # (in, out)
    bias = call.weights[1] if call.cfg("use_bias", True) else None
    shape = call.shape()
    params = {}
    if bias is not None:
        params["bias"] = np.asarray(bias, dtype=np.float32)
    units = kernel.shape[1]
    if len(shape) == 4:
        # Dense on NHWC acts on channels: a 1x1 conv in NCHW (ConvNeXt's pointwise layers)
        params["weight"] = np.ascontiguousarray(kernel.T[:, :, None, None], dtype=np.float32)
        attrs = {"kernel": (1, 1), "stride": (1, 1), "dilation": (1, 1), "groups": 1, "pads": (0, 0, 0, 0),
                 "padding": "VALID"}
        y = call.add("conv2d", [call.x], (shape[0], units, shape[2], shape[3]), attrs, params)
        return with_activation(call, y)
    params["weight"] = np.ascontiguousarray(kernel.T, dtype=np.float32)
    if len(shape) == 2:
        return with_activation(call, call.add("linear", [call.x], (shape[0], units), {}, params))
    if len(shape) == 3:  # tokens (N, L, C): the linear acts on the last axis, L stays free
        return with_activation(call, call.add("linear", [call.x], (*shape[:-1], units), {}, params))
    # rank 4+ (rare): flatten the leading axes, apply, restore
    lead = int(np.prod(shape[:-1]))
    flat = call.add("reshape", [call.x], (lead, shape[-1]), {"shape": (lead, shape[-1])}, suffix="/flat")
    y = call.add("linear", [flat], (lead, units), {}, params, suffix="/linear")
    out_shape = (*shape[:-1], units)
    return with_activation(call, call.add("reshape", [y], out_shape, {"shape": out_shape}))


KERAS_EPSILON = 1e-7  # keras.backend.epsilon(), used by Normalization


def _single_axis(call: Call, default: int = -1) -> int:
    axis = call.cfg("axis", default)
    if isinstance(axis, (list, tuple)):
        if len(axis) != 1:
            raise call.unsupported(f"normalising over several axes {axis}")
        axis = axis[0]
    return layout.ir_axis(int(axis), len(call.shape()))


def _affine(call: Call, scale: np.ndarray, shift: np.ndarray, axis: int, suffix: str = "") -> str:
    params = {"scale": np.asarray(scale, np.float32), "shift": np.asarray(shift, np.float32)}
    return call.add("channel_affine", [call.x], call.shape(), {"axis": axis}, params, suffix=suffix)


@TABLE.register("BatchNormalization")
def batch_normalization(call: Call) -> list[str]:
    axis = _single_axis(call)
    weights = list(call.weights)
    gamma = weights.pop(0) if call.cfg("scale", True) else None
    beta = weights.pop(0) if call.cfg("center", True) else None
    mean, var = weights[0], weights[1]
    eps = float(call.cfg("epsilon", 1e-3))
    # inference batch norm, as TF computes it: x * (gamma * rsqrt(var + eps)) + (beta - mean * that)
    inv = (1.0 / np.sqrt(var.astype(np.float32) + np.float32(eps))).astype(np.float32)
    scale = inv * gamma if gamma is not None else inv
    shift = (beta if beta is not None else 0.0) - mean * scale
    y = _affine(call, scale, shift, axis)
    call.graph.node(y).attrs["epsilon"] = eps  # the statistics, for --into (ops.py: channel_affine)
    call.graph.node(y).params.update(batch_norm_stats(gamma, beta, mean, var))
    return [y]


def batch_norm_stats(gamma, beta, mean, var) -> dict[str, np.ndarray]:
    """A batch norm's own parameters as channel_affine keeps them (gamma/beta only where present)."""
    stats = {"gamma": gamma, "beta": beta, "mean": mean, "variance": var}
    return {k: np.asarray(v, np.float32) for k, v in stats.items() if v is not None}


@TABLE.register("LayerNormalization")
def layer_normalization(call: Call) -> list[str]:
    if call.cfg("rms_scaling", False):
        raise call.unsupported("rms_scaling=True is not supported")
    rank = len(call.shape())
    axes = call.cfg("axis", -1)
    axes = [axes] if isinstance(axes, int) else list(axes)
    kshape = call.kshape()
    keep = [a % rank for a in axes]
    bshape = [kshape[a] if a in keep else 1 for a in range(rank)]  # keras broadcast shape

    def shaped(value: np.ndarray) -> np.ndarray:
        value = np.asarray(value, np.float32).reshape(bshape)
        return value.transpose(layout.TO_NCHW) if rank == 4 else value

    weights = list(call.weights)
    params = {}
    if call.cfg("scale", True):
        params["gamma"] = shaped(weights.pop(0))
    if call.cfg("center", True):
        params["beta"] = shaped(weights.pop(0))
    attrs = {
        "axes": tuple(sorted(layout.ir_axis(a, rank) for a in keep)),
        "epsilon": float(call.cfg("epsilon", 1e-3)),
    }
    return [call.add("layer_norm", [call.x], call.shape(), attrs, params)]


def _channels(call: Call) -> int:
    return call.shape()[1]


def _per_channel(call: Call, value, channels: int) -> np.ndarray:
    value = np.asarray(value, np.float32).reshape(-1)
    if value.size == 1:
        return np.full(channels, value[0], np.float32)
    if value.size != channels:
        raise call.unsupported(f"a per-channel constant of size {value.size} for {channels} channels")
    return value


def _config_array(value):
    """Keras serialises numpy constants as {'class_name': '__numpy__', 'config': {'value': ...}}."""
    if isinstance(value, dict):
        value = value.get("config", {}).get("value", value.get("value"))
    return np.asarray(value, np.float32)


@TABLE.register("Rescaling")
def rescaling(call: Call) -> list[str]:
    c = _channels(call)
    scale = _per_channel(call, _config_array(call.cfg("scale", 1.0)), c)
    offset = _per_channel(call, _config_array(call.cfg("offset", 0.0)), c)
    return [_affine(call, scale, offset, 1)]


@TABLE.register("Normalization")
def normalization(call: Call) -> list[str]:
    axis = _single_axis(call)
    if axis != 1:
        raise call.unsupported("Normalization over an axis other than channels")
    c = _channels(call)
    if call.config.get("mean") is not None:
        mean, var = _config_array(call.config["mean"]), _config_array(call.config["variance"])
    else:
        mean, var = call.weights[0], call.weights[1]
    mean, var = _per_channel(call, mean, c), _per_channel(call, var, c)
    std = np.maximum(np.sqrt(var), np.float32(KERAS_EPSILON)).astype(np.float32)
    if call.cfg("invert", False):
        return [_affine(call, std, mean, 1)]
    scale = (1.0 / std).astype(np.float32)
    return [_affine(call, scale, -mean * scale, 1)]


@TABLE.register("LayerScale")
def layer_scale(call: Call) -> list[str]:
    """ConvNeXt: x * gamma over the last (channel) axis."""
    gamma = np.asarray(call.weights[0], np.float32)
    axis = layout.ir_axis(-1, len(call.shape()))
    return [_affine(call, gamma, np.zeros_like(gamma), axis)]


@TABLE.register("CustomScaleLayer")
def custom_scale_layer(call: Call) -> list[str]:
    """InceptionResNetV2: inputs[0] + inputs[1] * scale."""
    a, b = call.inputs
    c = call.shape(b)[1]
    scale = np.full(c, float(call.cfg("scale", 1.0)), np.float32)
    params = {"scale": scale, "shift": np.zeros(c, np.float32)}
    scaled = call.add("channel_affine", [b], call.shape(b), {"axis": 1}, params, suffix="/scaled")
    return [call.add("add", [a, scaled], call.shape(a))]
