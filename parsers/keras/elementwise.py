"""Activations (the `Activation`/`ReLU`/... layers and every layer's fused `activation=`), merge layers
(Add, Multiply, Average, ...) and keras.ops arithmetic (`x + 3.0`)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tf_convert.convert.ir.ops import KERAS_ACTIVATIONS

from . import layout
from .call import Call, TensorRef
from .table import TABLE

# activation name -> (call, x) -> tensor
ACTIVATIONS: dict[str, Callable[[Call, str, str], str]] = {}


def _simple(op: str, **attrs: Any) -> Callable[[Call, str, str], str]:
    def apply(call: Call, x: str, suffix: str) -> str:
        return call.add(op, [x], call.shape(x), dict(attrs), suffix=suffix)

    return apply


def _softmax(call: Call, x: str, suffix: str) -> str:
    rank = len(call.shape(x))
    return call.add("softmax", [x], call.shape(x), {"axis": layout.ir_axis(-1, rank)}, suffix=suffix)


# every activation the catalog names (a row's `keras`), and softmax (its axis depends on the rank)
ACTIVATIONS.update({name: _simple(op, **attrs) for name, (op, attrs) in KERAS_ACTIVATIONS.items()})
ACTIVATIONS["softmax"] = _softmax


# where Keras 1/2 (tf_keras) defined an activation otherwise than Keras 3
KERAS2_ACTIVATIONS = {"hard_sigmoid": _simple("hard_sigmoid", alpha=0.2, beta=0.5)}


def activation_name(spec: Any) -> str:
    """Keras serialises activations as a string or as {'class_name': 'function', 'config': name}."""
    if spec is None:
        return "linear"
    if isinstance(spec, dict):
        spec = spec.get("config", spec.get("class_name"))
        if isinstance(spec, dict):
            spec = spec.get("name", "")
    return str(spec).lower()


def apply_activation(call: Call, x: str, spec: Any, suffix: str | None = None) -> str:
    """Apply `spec` to x; the node is named after the call plus `suffix` (default '/<name>')."""
    name = activation_name(spec)
    if name == "linear":
        return x
    fn = KERAS2_ACTIVATIONS.get(name) if call.legacy else None
    fn = fn or ACTIVATIONS.get(name)
    if fn is None:
        raise call.unsupported(f"activation {name!r} is not supported")
    return fn(call, x, f"/{name}" if suffix is None else suffix)


@TABLE.register("Activation")
def activation_layer(call: Call) -> list[str]:
    out = apply_activation(call, call.x, call.config.get("activation"), suffix="")
    if out == call.x:  # 'linear'
        out = call.add("identity", [call.x], call.shape())
    return [out]


@TABLE.register("ReLU")
def relu_layer(call: Call) -> list[str]:
    max_value = call.config.get("max_value")
    slope = float(call.cfg("negative_slope", 0.0))
    threshold = float(call.cfg("threshold", 0.0))
    if threshold != 0.0:
        # x if x >= t else slope * (x - t): a step at t, which no IR op expresses exactly
        raise call.unsupported(f"ReLU threshold={threshold} (a discontinuity) is not supported")
    shape = call.shape()
    if slope == 0.0 and max_value is None:
        return [call.add("relu", [call.x], shape)]
    if slope == 0.0:
        return [call.add("clip", [call.x], shape, {"min": 0.0, "max": float(max_value)})]
    suffix = "" if max_value is None else "/leaky"
    y = call.add("leaky_relu", [call.x], shape, {"alpha": slope}, suffix=suffix)
    if max_value is not None:
        y = call.add("minimum", [y, call.const(layout.ir_array(max_value, len(shape)), "/max")], shape)
    return [y]


@TABLE.register("LeakyReLU")
def leaky_relu_layer(call: Call) -> list[str]:
    alpha = call.config.get("negative_slope", call.config.get("alpha", 0.3))
    return [call.add("leaky_relu", [call.x], call.shape(), {"alpha": float(alpha)})]


@TABLE.register("ELU")
def elu_layer(call: Call) -> list[str]:
    return [call.add("elu", [call.x], call.shape(), {"alpha": float(call.cfg("alpha", 1.0))})]


@TABLE.register("Softmax")
def softmax_layer(call: Call) -> list[str]:
    axis = call.cfg("axis", -1)
    axis = axis[0] if isinstance(axis, (list, tuple)) and len(axis) == 1 else axis
    if not isinstance(axis, int):
        raise call.unsupported(f"softmax over several axes {axis}")
    rank = len(call.shape())
    return [call.add("softmax", [call.x], call.shape(), {"axis": layout.ir_axis(axis, rank)})]


@TABLE.register("PReLU")
def prelu_layer(call: Call) -> list[str]:
    """relu(x) + alpha * min(x, 0): exactly TF's relu(x) - alpha * relu(-x)."""
    shape = call.shape()
    rank = len(shape)
    alpha = np.asarray(call.weights[0], np.float32)  # keras shape: input shape without batch
    alpha = layout.ir_array(alpha.reshape((1,) + alpha.shape), rank)
    pos = call.add("relu", [call.x], shape, suffix="/pos")
    zero = call.const(np.zeros((1,) * rank, np.float32), "/zero")
    neg = call.add("minimum", [call.x, zero], shape, suffix="/neg")
    scaled = call.add("mul", [call.const(alpha, "/alpha"), neg], shape, suffix="/scaled")
    return [call.add("add", [pos, scaled], shape)]


def _broadcast(*shapes) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*shapes))


def to_rank(call: Call, x: str, rank: int, suffix: str) -> str:
    """Give x the rank of its partner the way numpy (Keras) broadcasting does, in IR layout."""
    shape = call.shape(x)
    if len(shape) >= rank:
        return x
    kshape = (1,) * (rank - len(shape)) + layout.keras_shape(shape)
    target = layout.ir_shape(kshape)
    return call.add("reshape", [x], target, {"shape": target}, suffix=suffix)


def merge_rank(call: Call, x: str, rank: int, suffix: str) -> str:
    """Give x the rank of its partner the way Keras's merge layers do: new axes after the first
    (keras.layers.Add of (N, 4, 5) and a (4, 5) constant adds a (4, 1, 5))."""
    shape = call.shape(x)
    if len(shape) >= rank or not shape:
        return x
    kshape = layout.keras_shape(shape)
    target = layout.ir_shape(kshape[:1] + (1,) * (rank - len(shape)) + kshape[1:])
    return call.add("reshape", [x], target, {"shape": target}, suffix=suffix)


def _binary_chain(call: Call, op: str, inputs: list[str], last_suffix: str = "") -> str:
    rank = max(len(call.shape(t)) for t in inputs)
    inputs = [merge_rank(call, t, rank, f"/in{i}") for i, t in enumerate(inputs)]
    acc = inputs[0]
    for i, t in enumerate(inputs[1:], start=1):
        shape = _broadcast(call.shape(acc), call.shape(t))
        suffix = last_suffix if i == len(inputs) - 1 else f"/{op}{i}"
        acc = call.add(op, [acc, t], shape, suffix=suffix)
    return acc


def _merge(op: str):
    def handler(call: Call) -> list[str]:
        return [_binary_chain(call, op, list(call.inputs))]

    return handler


TABLE.register("Add")(_merge("add"))


TABLE.register("Subtract")(_merge("sub"))


TABLE.register("Multiply")(_merge("mul"))


TABLE.register("Maximum")(_merge("maximum"))


TABLE.register("Minimum")(_merge("minimum"))


@TABLE.register("Average")
def average(call: Call) -> list[str]:
    total = _binary_chain(call, "add", list(call.inputs), last_suffix="/sum")
    rank = len(call.shape(total))
    k = call.const(layout.ir_array(1.0 / len(call.inputs), rank), "/inv_n")
    return [call.add("mul", [total, k], call.shape(total))]


def _ops_binary(op: str):
    """keras.ops.<op>(a, b) with tensors and/or Python constants."""

    def handler(call: Call) -> list[str]:
        args = call.args[:2]
        rank = max(len(call.shape(a.name)) for a in args if isinstance(a, TensorRef))
        names = []
        for i, a in enumerate(args):
            if isinstance(a, TensorRef):
                names.append(a.name)
            else:
                names.append(call.const(layout.ir_array(a, rank), f"/c{i}"))
        names = [to_rank(call, t, rank, f"/in{i}") for i, t in enumerate(names)]
        shape = _broadcast(*(call.shape(t) for t in names))
        return [call.add(op, names, shape)]

    return handler


TABLE.register("ops.Add")(_ops_binary("add"))


TABLE.register("ops.Subtract")(_ops_binary("sub"))


TABLE.register("ops.Multiply")(_ops_binary("mul"))


TABLE.register("ops.Divide", "ops.TrueDivide")(_ops_binary("div"))


TABLE.register("ops.Maximum")(_ops_binary("maximum"))


TABLE.register("ops.Minimum")(_ops_binary("minimum"))


def with_activation(call: Call, y: str) -> list[str]:
    return [apply_activation(call, y, call.config.get("activation"))]
