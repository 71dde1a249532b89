"""Sequence ops: embeddings (gather, one-hot) and the recurrent layers (LSTM, GRU, simple RNN)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..graph import Node
from .elementwise import sigmoid
from .table import reference_op


@reference_op("gather")
def gather(node: Node, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    return np.take(data, np.asarray(indices).astype(np.int64), axis=int(node.attrs["axis"]))


@reference_op("one_hot")
def one_hot(node: Node, indices: np.ndarray) -> np.ndarray:
    depth, axis = int(node.attrs["depth"]), int(node.attrs["axis"])
    hit = np.expand_dims(np.asarray(indices), axis) == np.arange(depth).reshape(
        (depth,) + (1,) * (np.ndim(indices) - axis))
    return np.where(hit, np.float32(node.attrs["on"]), np.float32(node.attrs["off"]))


RECURRENT_ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "tanh": np.tanh,
    "sigmoid": sigmoid,
    "hard_sigmoid": lambda x: np.clip(x / 6 + 0.5, 0, 1),
    "relu": lambda x: np.maximum(x, 0),
    "linear": lambda x: x,
}


def _recurrence(node: Node, x: np.ndarray, step: Callable, mask: np.ndarray | None = None) -> np.ndarray:
    """Run `step(x_t, h, c) -> (h, c)` over axis 1 of x as the node's attrs say; its chosen output.
    With a step mask, a masked step keeps h and c and writes the previous row or zeros (masked_output)."""
    n, length = x.shape[0], x.shape[1]
    units = int(node.attrs["units"])
    h = np.zeros((n, units), x.dtype)
    c = np.zeros((n, units), x.dtype)
    order = range(length - 1, -1, -1) if node.attrs["go_backwards"] else range(length)
    steps = []
    zero_rows = node.attrs.get("masked_output", "previous") == "zero"
    for t in order:
        new_h, new_c = step(x[:, t], h, c)
        if mask is None:
            h, c = new_h, new_c
            steps.append(h)
            continue
        keep = mask[:, t, None] != 0
        h, c = np.where(keep, new_h, h), np.where(keep, new_c, c)
        steps.append(np.where(keep, h, np.zeros_like(h)) if zero_rows else h)
    output = node.attrs["output"]
    if output == "last_h":
        return h
    if output == "last_c":
        return c
    seq = np.stack(steps, axis=1)
    if node.attrs["go_backwards"] and node.attrs["sequence_order"] == "input":
        seq = seq[:, ::-1]
    return np.ascontiguousarray(seq)


def _gates(node: Node, x: np.ndarray, count: int):
    """The node's weights cast to x's dtype, split per gate: (w_ih, w_hh, b_ih, b_hh) lists."""
    parts = []
    for key in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        parts.append(np.split(np.asarray(node.params[key], x.dtype), count, axis=0))
    return parts


@reference_op("lstm")
def lstm(node: Node, x: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    act = RECURRENT_ACTIVATIONS[node.attrs["activation"]]
    rec = RECURRENT_ACTIVATIONS[node.attrs["recurrent_activation"]]
    w_ih, w_hh, b_ih, b_hh = _gates(node, x, 4)

    def step(xt, h, c):
        z = [xt @ w_ih[g].T + b_ih[g] + h @ w_hh[g].T + b_hh[g] for g in range(4)]
        c = rec(z[1]) * c + rec(z[0]) * act(z[2])
        return rec(z[3]) * act(c), c

    return _recurrence(node, x, step, mask)


@reference_op("gru")
def gru(node: Node, x: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    act = RECURRENT_ACTIVATIONS[node.attrs["activation"]]
    rec = RECURRENT_ACTIVATIONS[node.attrs["recurrent_activation"]]
    w_ih, w_hh, b_ih, b_hh = _gates(node, x, 3)
    reset_after = bool(node.attrs["reset_after"])

    def step(xt, h, c):
        gx = [xt @ w_ih[g].T + b_ih[g] for g in range(3)]
        gh = [h @ w_hh[g].T + b_hh[g] for g in range(2)]
        z, r = rec(gx[0] + gh[0]), rec(gx[1] + gh[1])
        if reset_after:
            candidate = act(gx[2] + r * (h @ w_hh[2].T + b_hh[2]))
        else:
            candidate = act(gx[2] + (r * h) @ w_hh[2].T + b_hh[2])
        return z * h + (1 - z) * candidate, c

    return _recurrence(node, x, step, mask)


@reference_op("rnn")
def rnn(node: Node, x: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    act = RECURRENT_ACTIVATIONS[node.attrs["activation"]]
    w_ih, w_hh = (np.asarray(node.params[k], x.dtype) for k in ("weight_ih", "weight_hh"))
    bias = np.asarray(node.params["bias_ih"], x.dtype) + np.asarray(node.params["bias_hh"], x.dtype)

    def step(xt, h, c):
        return act(xt @ w_ih.T + h @ w_hh.T + bias), c

    return _recurrence(node, x, step, mask)
