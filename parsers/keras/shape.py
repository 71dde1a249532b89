"""Reshape / Flatten in TF element order, Concatenate, and the layers that are identities at inference."""

from __future__ import annotations

import numpy as np

from ..common import layout
from ..common.layout import nhwc_reshape
from .call import Call
from .table import TABLE


@TABLE.register("Concatenate")
def concatenate(call: Call) -> list[str]:
    rank = len(call.shape())
    axis = layout.ir_axis(int(call.cfg("axis", -1)), rank)
    shape = list(call.shape())
    shape[axis] = sum(call.shape(t)[axis] for t in call.inputs)
    return [call.add("concat", list(call.inputs), shape, {"axis": axis})]


@TABLE.register("Reshape")
def reshape(call: Call) -> list[str]:
    kshape = call.kshape()
    target = [int(d) for d in call.config["target_shape"]]
    total = int(np.prod(kshape[1:]))
    if -1 in target:
        known = int(np.prod([d for d in target if d != -1]))
        target[target.index(-1)] = total // known
    return [nhwc_reshape(call, call.x, (kshape[0], *target))]


@TABLE.register("Flatten")
def flatten(call: Call) -> list[str]:
    call.require_channels_last()
    kshape = call.kshape()
    return [nhwc_reshape(call, call.x, (kshape[0], int(np.prod(kshape[1:]))))]


@TABLE.register(
    "Dropout",
    "SpatialDropout2D",
    "GaussianNoise",
    "GaussianDropout",
    "AlphaDropout",
    "ActivityRegularization",
    "Identity",
    "StochasticDepth",
)
def identity(call: Call) -> list[str]:
    """Inference-time identities: the layer's output is its input."""
    return [call.x]


@TABLE.register("Permute")
def permute(call: Call) -> list[str]:
    """Keras permutes its own (NHWC) axes; compose that with the layout change into one transpose."""
    rank = len(call.shape())
    keras_perm = (0, *(int(d) for d in call.config["dims"]))
    to_keras = layout.TO_NHWC if rank == 4 else tuple(range(rank))
    from_keras = layout.TO_NCHW if rank == 4 else tuple(range(rank))
    ir_of_keras_out = [to_keras[p] for p in keras_perm]  # out (keras axis j) reads IR input axis
    perm = tuple(ir_of_keras_out[m] for m in from_keras)
    shape = tuple(call.shape()[p] for p in perm)
    return [call.add("transpose", [call.x], shape, {"perm": perm})]
