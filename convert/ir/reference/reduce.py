"""Reductions: along axes (sum, mean, max...), to an index (argmax, argmin), running (cumsum, cumprod),
log-softmax and top-k."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..graph import Node
from .table import OpFunction, reference_op

# IR op -> the numpy reduction it is, over attrs["axes"], keeping them when attrs["keepdims"]
REDUCTIONS: dict[str, Callable[..., np.ndarray]] = {
    "reduce_mean": np.mean, "reduce_max": np.max, "reduce_sum": np.sum, "reduce_prod": np.prod,
    "reduce_min": np.min, "reduce_all": np.all, "reduce_any": np.any,
}


def _integer(fn: Callable[..., np.ndarray], name: str) -> OpFunction:
    """An integer x's sum and product in x's dtype, wrapping as TF's (numpy would widen them to int64), and its
    mean as TF's: the sum without wrapping, divided by the count, truncated toward zero, in x's dtype."""
    def reduce(node: Node, x: np.ndarray) -> np.ndarray:
        axes, keepdims = tuple(node.attrs["axes"]), bool(node.attrs["keepdims"])
        if x.dtype.kind not in "iu":
            return fn(x, axis=axes, keepdims=keepdims)
        if name != "reduce_mean":
            return np.asarray(fn(x, axis=axes, keepdims=keepdims, dtype=x.dtype))
        total = np.sum(x, axis=axes, keepdims=keepdims, dtype=np.int64)
        count = max(int(np.prod([x.shape[a] for a in axes], dtype=np.int64)), 1)
        return np.asarray(np.sign(total) * (np.abs(total) // count)).astype(x.dtype)

    return reduce


for _name, _fn in REDUCTIONS.items():
    if _name in ("reduce_sum", "reduce_prod", "reduce_mean"):
        reference_op(_name)(_integer(_fn, _name))
    else:
        reference_op(_name)(lambda node, x, _fn=_fn: _fn(x, axis=tuple(node.attrs["axes"]),
                                                          keepdims=bool(node.attrs["keepdims"])))


def _index_of(fn: Callable[..., np.ndarray]) -> OpFunction:
    def index(node: Node, x: np.ndarray) -> np.ndarray:
        axis = node.attrs["axis"]
        y = fn(x, axis=axis).astype(np.int64)
        return np.expand_dims(y, axis) if node.attrs.get("keepdims") else y

    return index


reference_op("argmax")(_index_of(np.argmax))
reference_op("argmin")(_index_of(np.argmin))


def _running(fn: Callable[..., np.ndarray], identity_value: int) -> OpFunction:
    def running(node: Node, x: np.ndarray) -> np.ndarray:
        axis = node.attrs["axis"]
        y = np.flip(x, axis) if node.attrs.get("reverse") else x
        y = fn(y, axis=axis, dtype=x.dtype)
        if node.attrs.get("exclusive"):  # shift by one: the first is the identity
            first = np.full_like(np.take(y, [0], axis=axis), identity_value)
            y = np.concatenate([first, np.delete(y, -1, axis=axis)], axis=axis)
        return np.flip(y, axis) if node.attrs.get("reverse") else y

    return running


reference_op("cumsum")(_running(np.cumsum, 0))
reference_op("cumprod")(_running(np.cumprod, 1))


@reference_op("log_softmax")
def log_softmax(node: Node, x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(axis=node.attrs["axis"], keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=node.attrs["axis"], keepdims=True))


def _top_k_order(node: Node, x: np.ndarray) -> np.ndarray:
    return np.argsort(-x, axis=-1, kind="stable")[..., : int(node.attrs["k"])]


@reference_op("top_k_values")
def top_k_values(node: Node, x: np.ndarray) -> np.ndarray:
    return np.take_along_axis(x, _top_k_order(node, x), axis=-1)


@reference_op("top_k_indices")
def top_k_indices(node: Node, x: np.ndarray) -> np.ndarray:
    return _top_k_order(node, x).astype(np.int32)
