"""Shape rules: each op's output shape from its input shapes, attributes and parameter shapes.

A rule is `rule(inputs, attrs, params) -> shape` (`inputs`: the input shapes in order; `params`: name
-> shape of each parameter present). The catalog (`ops.OPS`) names each op's rule; `check.problems`
compares every node's declared output shape with it, so a parser that mis-sizes an output is caught
before an emitter writes it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Callable

import numpy as np

Shape = tuple[int, ...]
RUN_TIME = -1  # a size only the run knows (convert.ir.runtime_dims); a static graph never holds one
ShapeRule = Callable[[Sequence[Shape], Mapping[str, Any], Mapping[str, Shape]], Shape]


def _window_axis(n: int, k: int, s: int, d: int, before: int, after: int) -> int:
    return (n + before + after - ((k - 1) * d + 1)) // s + 1


def window(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """conv and pooling, 2-D or 3-D: floor((n + before + after - e) / s) + 1 per spatial axis; pads are
    (before, after) per spatial axis, flat."""
    n, c, *spatial = inputs[0]
    dilation = attrs.get("dilation", (1,) * len(spatial))
    pads = attrs["pads"]
    out_c = params["weight"][0] if "weight" in params else c
    return (n, out_c, *(_window_axis(size, k, s, d, pads[2 * i], pads[2 * i + 1]) for i, (size, k, s, d)
                        in enumerate(zip(spatial, attrs["kernel"], attrs["stride"], dilation))))


def integer_window(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """The integer conv and pooling of TFLite's quantized kernels: window's rule, their pads named `edges`."""
    return window(inputs, {**attrs, "pads": attrs["edges"]}, params)


def conv_transpose(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """(N, out_channels, *output_size); weight IO... holds out_channels / groups (2-D and 3-D)."""
    return (inputs[0][0], params["weight"][1] * int(attrs["groups"]), *map(int, attrs["output_size"]))


def pad(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    return tuple(n + int(before) + int(after) for n, (before, after) in zip(inputs[0], attrs["pads"]))


def resize(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    return (*inputs[0][:2], *map(int, attrs["size"]))


def depth_to_space(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    n, c, h, w = inputs[0]
    b = int(attrs["block_size"])
    return (n, c // (b * b), h * b, w * b)


def space_to_depth(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    n, c, h, w = inputs[0]
    b = int(attrs["block_size"])
    return (n, c * b * b, h // b, w // b)


def same(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """The first input's shape (elementwise, per-channel, normalisation, softmax)."""
    return tuple(inputs[0])


def broadcast(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """numpy broadcasting of all inputs."""
    if any(RUN_TIME in s for s in inputs):
        return _broadcast_run_time(inputs)
    return tuple(np.broadcast_shapes(*map(tuple, inputs)))


def _broadcast_run_time(inputs: Sequence[Shape]) -> Shape:
    """Broadcasting with run-time sizes: a known size other than 1 wins (a run-time one can only be 1 or
    equal to it in a valid model); 1s and run-time sizes alone stay run-time."""
    rank = max(len(s) for s in inputs)
    out = []
    for axis in range(rank):
        sizes = {s[axis - rank + len(s)] for s in inputs if axis - rank + len(s) >= 0}
        known = sizes - {1, RUN_TIME}
        if len(known) > 1:
            raise ValueError(f"shapes {list(inputs)} do not broadcast")
        out.append(known.pop() if known else RUN_TIME if RUN_TIME in sizes else 1)
    return tuple(out)


def linear(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    return (*inputs[0][:-1], params["weight"][0])


def matmul(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    a, b = inputs
    return (*np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2])), a[-2], b[-1])


def reshape(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """`shape`, a -1 resolved as numpy does."""
    shape = [int(d) for d in attrs["shape"]]
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        shape[shape.index(-1)] = math.prod(inputs[0]) // known if known else 0
    return tuple(shape)


def transpose(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    return tuple(inputs[0][int(p)] for p in attrs["perm"])


def concat(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    first = list(inputs[0])
    axis = int(attrs["axis"]) % len(first)
    first[axis] = sum(s[axis] for s in inputs)
    return tuple(first)


def slice_(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    return tuple(len(range(n)[int(b):int(e)]) for n, b, e in zip(inputs[0], attrs["begin"], attrs["end"]))


def reduce(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """argmax (`axis`) and reduce_* (`axes`): the reduced axes dropped, or kept as 1 with keepdims."""
    shape = inputs[0]
    axes = attrs["axes"] if "axes" in attrs else (attrs["axis"],)
    axes = {int(a) % len(shape) for a in axes}
    if attrs.get("keepdims", False):
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def source(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """const: the shape of its value."""
    return tuple(params["value"])


# ---- top-k --------------------------------------------------------------------------------------------

def top_k(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """top_k_values / top_k_indices: the last axis cut to k."""
    return (*inputs[0][:-1], int(attrs["k"]))


# ---- token inputs -------------------------------------------------------------------


def matrix_determinant(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """One value per square matrix of the last two axes."""
    return tuple(inputs[0][:-2])


def gather(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """data.shape[:axis] + indices.shape + data.shape[axis+1:] (inputs: data, indices)."""
    data, indices = inputs
    axis = int(attrs["axis"]) % len(data)
    return (*data[:axis], *indices, *data[axis + 1:])


def one_hot(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """The indices' shape with `depth` inserted at `axis`."""
    indices = tuple(inputs[0])
    axis = int(attrs["axis"]) % (len(indices) + 1)
    return (*indices[:axis], int(attrs["depth"]), *indices[axis:])


def recurrent(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """lstm / gru / rnn on (N, T, F): (N, T, units) for the sequence, (N, units) for a last state."""
    n, length = inputs[0][:2]
    units = int(attrs["units"])
    return (n, length, units) if attrs["output"] == "sequence" else (n, units)


def repeat(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """Each axis times its repeat count."""
    return tuple(n * int(r) for n, r in zip(inputs[0], attrs["repeats"]))


def crop(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """Each axis less what is cropped off both ends."""
    return tuple(n - int(b) - int(e) for n, (b, e) in zip(inputs[0], attrs["crops"]))


# ---- detection heads --------------------------------------------------------------------------------


def non_max_suppression(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """(max_output_size,) for the indices and scores, () for the count."""
    return () if attrs["output"] == "count" else (int(attrs["max_output_size"]),)


def combined_non_max_suppression(inputs: Sequence[Shape], attrs: Mapping[str, Any],
                                 params: Mapping[str, Shape]) -> Shape:
    """(B, per_batch, 4) boxes, (B, per_batch) scores and classes, (B,) counts."""
    batch, length = inputs[1][0], int(attrs["per_batch"])
    return {"boxes": (batch, length, 4), "count": (batch,)}.get(attrs["output"], (batch, length))


def nonzero(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """(x.size, x.ndim) for the coordinates (the most there can be), () for the count."""
    return () if attrs["output"] == "count" else (math.prod(inputs[0]), len(inputs[0]))


def crop_and_resize(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """(boxes, crop height, crop width, channels)."""
    ch, cw = (int(v) for v in attrs["size"])
    return (inputs[1][0], ch, cw, inputs[0][3])


def first(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """The first input's shape (prefix: the longest its data-dependent length can be)."""
    return tuple(inputs[0])


# ---- sizes that follow run-time values (convert.ir.runtime_dims) ----------------------------------------


def to_run_time_vector(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """reshape_to / broadcast_to: one run-time size per element of the shape vector (inputs[1])."""
    return (RUN_TIME,) * int(inputs[1][0])


def run_time_same_rank(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """tile_by / pad_by / slice_to: the input's rank, every size run-time."""
    return (RUN_TIME,) * len(inputs[0])


def resize_to(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """resize_to: (N, C) kept, H and W run-time."""
    return (*inputs[0][:2], RUN_TIME, RUN_TIME)


def one_hot_by(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """The indices' shape with a run-time size inserted at `axis`."""
    indices = tuple(inputs[0])
    axis = int(attrs["axis"]) % (len(indices) + 1)
    return (*indices[:axis], RUN_TIME, *indices[axis:])


def run_time_length(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """range: one axis, its length run-time."""
    return (RUN_TIME,)


def unique(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """unique: the values are x with `axis` run-time long; one index per slice of x; one count per value."""
    x = tuple(inputs[0])
    axis = int(attrs["axis"]) % max(len(x), 1)
    output = attrs["output"]
    if output == "indices":
        return (x[axis],)
    if output == "counts":
        return (RUN_TIME,)
    return (*x[:axis], RUN_TIME, *x[axis + 1:])


def ragged_range(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """ragged_range: n + 1 row splits; a run-time number of values."""
    return (int(inputs[0][0]) + 1,) if attrs["output"] == "row_splits" else (RUN_TIME,)


def ctc_greedy_decoder(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """ctc_greedy_decoder: a run-time number of kept classes; the dense shape; one log probability per batch."""
    batch = int(inputs[0][1])
    return {"indices": (RUN_TIME, 2), "values": (RUN_TIME,), "shape": (2,), "log_probability": (batch, 1)}[
        attrs["output"]]


def bincount_by(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """bincount_by: a run-time number of bins, per row of a rank-2 input."""
    values = tuple(inputs[0])
    return (values[0], RUN_TIME) if len(values) == 2 else (RUN_TIME,)


def expand_dims_by(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """One more axis than the input, where a run-time value says: every size run-time."""
    return (RUN_TIME,) * (len(inputs[0]) + 1)
