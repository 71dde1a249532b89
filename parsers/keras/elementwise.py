"""Activations (the `Activation`/`ReLU`/... layers and every layer's fused `activation=`), merge layers
(Add, Multiply, Average, ...) and keras.ops arithmetic (`x + 3.0`)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tf_convert.convert.ir.ops import KERAS_ACTIVATIONS

from ..common import layout
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


# Keras 3 L2-normalises as x * min(rsqrt(sum x^2), 1 / 1e-7); tf_keras as x * rsqrt(max(sum x^2, 1e-12))
_DOT_EPS_SQUARED = {False: 1e-14, True: 1e-12}  # keyed by call.legacy


def _l2_normalize(call: Call, x: str, axis: int, suffix: str) -> str:
    """x / its L2 norm along `axis`, as the library that wrote the file computes it."""
    shape = call.shape(x)
    kept = tuple(1 if i == axis else d for i, d in enumerate(shape))
    sq = call.add("square", [x], shape, suffix=f"{suffix}/square")
    total = call.add("reduce_sum", [sq], kept, {"axes": (axis,), "keepdims": True}, suffix=f"{suffix}/sum")
    eps = call.const(np.full((1,) * len(shape), _DOT_EPS_SQUARED[call.legacy], np.float32), f"{suffix}/eps")
    floor = call.add("maximum", [total, eps], kept, suffix=f"{suffix}/floor")
    inv = call.add("rsqrt", [floor], kept, suffix=f"{suffix}/inv_norm")
    return call.add("mul", [x, inv], shape, suffix=suffix)


@TABLE.register("Dot")
def dot(call: Call) -> list[str]:
    """keras.layers.Dot: batch_dot over one axis of each input (rank 2 or 3), after an optional L2
    normalisation along that axis."""
    if len(call.inputs) != 2:
        raise call.unsupported(f"Dot of {len(call.inputs)} inputs; Keras takes exactly 2")
    x1, x2 = call.inputs
    ranks = (len(call.shape(x1)), len(call.shape(x2)))
    if ranks not in ((2, 2), (3, 3)):
        raise call.unsupported(f"Dot of rank {ranks[0]} and {ranks[1]} inputs; only rank 2 or 3 pairs convert")
    axes = call.config.get("axes")
    axes = [axes, axes] if isinstance(axes, int) else axes
    if not (isinstance(axes, list) and len(axes) == 2 and all(isinstance(a, int) for a in axes)):
        raise call.unsupported(f"Dot axes={axes!r}; expected an integer or two")
    a1, a2 = (a % r for a, r in zip(axes, ranks))
    if 0 in (a1, a2):
        raise call.unsupported("Dot over the batch axis")
    if call.shape(x1)[a1] != call.shape(x2)[a2]:
        raise call.unsupported(f"Dot axes {a1} and {a2} differ in size")
    if call.config.get("normalize"):
        x1 = _l2_normalize(call, x1, a1, "/normalize0")
        x2 = _l2_normalize(call, x2, a2, "/normalize1")
    if ranks == (2, 2):  # (B, F) . (B, F) -> (B, 1)
        prod = call.add("mul", [x1, x2], call.shape(x1), suffix="/mul")
        return [call.add("reduce_sum", [prod], (call.shape(x1)[0], 1), {"axes": (1,), "keepdims": True})]
    # rank 3: contract x1's axis a1 with x2's axis a2 -> (B, x1's free axis, x2's free axis)
    if a1 == 1:
        b, n, m = call.shape(x1)
        x1 = call.add("transpose", [x1], (b, m, n), {"perm": (0, 2, 1)}, suffix="/transpose0")
    if a2 == 2:
        b, n, m = call.shape(x2)
        x2 = call.add("transpose", [x2], (b, m, n), {"perm": (0, 2, 1)}, suffix="/transpose1")
    out = (call.shape(x1)[0], call.shape(x1)[1], call.shape(x2)[2])
    return [call.add("matmul", [x1, x2], out)]


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
