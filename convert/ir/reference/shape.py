"""Shape ops: reshape, transpose, concat, slices and crops, and constants."""

from __future__ import annotations

import numpy as np

from ..graph import Node
from .table import reference_op


@reference_op("reshape")
def reshape(node: Node, x: np.ndarray) -> np.ndarray:
    return x.reshape(node.attrs["shape"])


@reference_op("transpose")
def transpose(node: Node, x: np.ndarray) -> np.ndarray:
    return np.transpose(x, node.attrs["perm"])


@reference_op("concat")
def concat(node: Node, *xs: np.ndarray) -> np.ndarray:
    return np.concatenate(xs, axis=node.attrs["axis"])


@reference_op("slice")
def slice_(node: Node, x: np.ndarray) -> np.ndarray:
    return x[tuple(slice(b, e) for b, e in zip(node.attrs["begin"], node.attrs["end"]))]


@reference_op("const")
def const(node: Node) -> np.ndarray:
    return np.asarray(node.params["value"])


@reference_op("crop")
def crop(node: Node, x: np.ndarray) -> np.ndarray:
    return x[tuple(slice(int(b), n - int(e)) for n, (b, e) in zip(x.shape, node.attrs["crops"]))]
