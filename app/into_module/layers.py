"""The common form both sides are matched in: a small graph of layers (`Layer`), one per parametric layer,
pooling, activation or merge, with the shape-only steps (flatten, view, dropout, identity) left out.

`ir_layers(graph)` builds it from the IR; trace.py builds it from the user's traced module. Kinds:
conv, conv_transpose, linear, bn, act, max_pool, avg_pool, global_avg, add, mul, sub, concat, softmax, pad, input,
and `other:<op>` (matched only by an identical kind)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tf_convert.convert.ir import Graph, Node

COMMUTATIVE = frozenset({"add", "mul"})

# IR activations -> (variant, arguments) as the semantics check compares them
_IR_ACTIVATIONS = {"relu", "clip", "leaky_relu", "elu", "sigmoid", "hard_sigmoid", "tanh", "swish", "hard_swish",
                   "gelu"}
_IR_TRANSPARENT = {"identity", "reshape", "transpose"}  # a layout change: the module has its own


@dataclass
class Layer:
    id: str  # module path or call name (torch), node name (IR)
    kind: str
    inputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    shape: tuple[int, ...] = ()  # output shape at the conversion size (NCHW)
    node: Any = None  # the IR Node, or the torch module (None for a functional call)
    where: str = ""  # how messages name it, when not by its id (a functional call in forward)

    @property
    def label(self) -> str:
        return self.where or self.id

    def describe(self) -> str:
        details = ", ".join(f"{k}={v}" for k, v in self.attrs.items() if k in _SHOWN)
        return f"{self.kind}({details})" if details else self.kind


_SHOWN = ("weight", "groups", "stride", "kernel", "features", "axis", "variant")


def named(label: str) -> str:
    """How a message names a module-side layer: "module path 'a.b'", or a functional call as it is."""
    return label if label.startswith("forward's ") else f"module path '{label}'"


@dataclass
class LayerGraph:
    layers: dict[str, Layer]
    outputs: list[str]
    inputs: list[str]


def activation_variant(op: str, attrs: dict[str, Any]) -> tuple:
    """The comparable form of an activation: ('relu',), ('clip', 0.0, 6.0), ('gelu', 'tanh'), ..."""
    if op == "clip":
        return ("clip", float(attrs["min"]), float(attrs["max"]))
    if op in ("leaky_relu", "elu"):
        return (op, round(float(attrs["alpha"]), 6))
    if op == "gelu":
        return ("gelu", attrs.get("approximate", "none"))
    if op == "hard_sigmoid":
        return ("hard_sigmoid", round(float(attrs["alpha"]), 6), round(float(attrs["beta"]), 6))
    return (op,)


def _ir_layer(graph: Graph, node: Node, inputs: list[str]) -> Layer:
    op, a = node.op, node.attrs
    shape = tuple(graph.shape(node.output))
    if op == "conv2d":
        attrs = {"weight": tuple(node.params["weight"].shape), "groups": int(a["groups"]), "stride": tuple(a["stride"]),
                 "dilation": tuple(a["dilation"]), "kernel": tuple(a["kernel"]), "bias": "bias" in node.params}
        return Layer(node.name, "conv", inputs, attrs, shape, node)
    if op in ("conv_transpose2d", "conv_transpose3d"):
        attrs = {"weight": tuple(node.params["weight"].shape), "groups": int(a.get("groups", 1)),
                 "stride": tuple(a["stride"]), "dilation": tuple(a.get("dilation", (1,) * len(a["stride"]))),
                 "kernel": tuple(a["kernel"]), "bias": "bias" in node.params}
        return Layer(node.name, "conv_transpose", inputs, attrs, shape, node)
    if op == "linear":
        return Layer(node.name, "linear", inputs, {"weight": tuple(node.params["weight"].shape),
                                                   "bias": "bias" in node.params}, shape, node)
    if op == "channel_affine" and int(a.get("axis", 1)) == 1:
        return Layer(node.name, "bn", inputs, {"features": shape[1]}, shape, node)
    if op in ("max_pool2d", "avg_pool2d"):
        window = {"kernel": tuple(a["kernel"]), "stride": tuple(a["stride"])}
        return Layer(node.name, op[:-2], inputs, window, shape, node)
    if op in _IR_ACTIVATIONS:
        return Layer(node.name, "act", inputs, {"variant": activation_variant(op, a)}, shape, node)
    if op == "reduce_mean" and {int(x) % 4 for x in a["axes"]} == {2, 3} and len(graph.shape(node.inputs[0])) == 4:
        return Layer(node.name, "global_avg", inputs, {}, shape, node)
    if op in ("add", "mul", "sub"):
        return Layer(node.name, op, inputs, {}, shape, node)
    if op in ("concat", "softmax"):
        return Layer(node.name, op, inputs, {"axis": int(a["axis"]) % len(shape)}, shape, node)
    return Layer(node.name, f"other:{op}", inputs, {}, shape, node)


def ir_layers(graph: Graph) -> LayerGraph:
    """The IR graph as layers: constants and shape-only nodes left out (their readers read through them)."""
    alias: dict[str, str] = {name: name for name in graph.inputs}
    layers = {name: Layer(name, "input", [], {}, tuple(graph.shape(name))) for name in graph.inputs}
    for node in graph.nodes:
        if node.op == "const":
            continue
        inputs = [alias[i] for i in node.inputs if i in alias]
        if node.op in _IR_TRANSPARENT and len(inputs) == 1:
            alias[node.output] = inputs[0]
            continue
        layers[node.name] = _ir_layer(graph, node, inputs)
        alias[node.output] = node.name
    return LayerGraph(layers, [alias[o] for o in graph.outputs], list(graph.inputs))
