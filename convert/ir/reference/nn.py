"""Per-channel, normalisation and dense ops: channel affine, layer norm, LRN, linear, matmul, softmax."""

from __future__ import annotations

import numpy as np

from ..graph import Node
from .table import reference_op


@reference_op("channel_affine")
def channel_affine(node: Node, x: np.ndarray) -> np.ndarray:
    shape = [1] * x.ndim
    shape[node.attrs["axis"]] = -1
    scale, shift = (np.asarray(node.params[k]).reshape(shape) for k in ("scale", "shift"))
    return x * scale + shift


@reference_op("layer_norm")
def layer_norm(node: Node, x: np.ndarray) -> np.ndarray:
    axes = tuple(node.attrs["axes"])
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + x.dtype.type(node.attrs["epsilon"]))
    if "gamma" in node.params:
        y = y * np.asarray(node.params["gamma"])
    if "beta" in node.params:
        y = y + np.asarray(node.params["beta"])
    return y


@reference_op("linear")
def linear(node: Node, x: np.ndarray) -> np.ndarray:
    y = x @ np.asarray(node.params["weight"]).T
    return y + np.asarray(node.params["bias"]) if "bias" in node.params else y


@reference_op("matmul")
def matmul(node: Node, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a, b)


@reference_op("softmax")
def softmax(node: Node, x: np.ndarray) -> np.ndarray:
    axis = node.attrs["axis"]
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@reference_op("lrn")
def lrn(node: Node, x: np.ndarray) -> np.ndarray:
    r, channels = int(node.attrs["radius"]), x.shape[1]
    padded = np.pad(np.square(x), ((0, 0), (r, r)) + ((0, 0),) * (x.ndim - 2))
    window = sum(padded[:, k:k + channels] for k in range(2 * r + 1))
    scale = x.dtype.type(node.attrs["bias"]) + x.dtype.type(node.attrs["alpha"]) * window
    return x / scale ** x.dtype.type(node.attrs["beta"])
