"""The common form both sides are matched in: a small graph of layers (`Layer`), one per parametric layer,
pooling, activation or merge, with the shape-only steps (flatten, view, permute, dropout, identity, casts,
arithmetic with a constant) read through; a constant factor is kept as the layer's `scale` (the attention
scale is compared).

`ir_layers(graph)` builds it from the IR; trace.py builds it from the user's traced module. Kinds:
conv, conv_transpose, linear, bn, embedding, layer_norm, act, max_pool, avg_pool, global_avg, add, mul, sub,
concat, softmax, pad, input, const (a table added as a constant: positions), and `other:<op>` (matched only by
an identical kind: a product of two activations is `other:matmul` on both sides)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tf_convert.convert.ir import Graph, Node, lazy
from tf_convert.convert.ir.index import GraphIndex

COMMUTATIVE = frozenset({"add", "mul"})

# IR activations -> (variant, arguments) as the semantics check compares them
_IR_ACTIVATIONS = {"relu", "clip", "leaky_relu", "elu", "sigmoid", "hard_sigmoid", "tanh", "swish", "hard_swish",
                   "gelu"}
# a layout change (the module has its own), a cast, one_hot (its matmul is the embedding lookup)
_IR_TRANSPARENT = {"identity", "reshape", "transpose", "cast", "one_hot"}
_ARITHMETIC = {"add", "mul", "sub", "div"}  # with a constant operand: transparent (an attention scale, a mask)


@dataclass
class Layer:
    id: str  # module path or call name (torch), node name (IR)
    kind: str
    inputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    shape: tuple[int, ...] = ()  # output shape at the conversion size (NCHW)
    node: Any = None  # the IR Node, or the torch module (None for a functional call)
    where: str = ""  # how messages name it, when not by its id (a functional call in forward)
    scale: float = 1.0  # constant factors applied to its output before the next layer (an attention scale)
    pre_pad: tuple[int, int, int, int] | None = None  # IR max pool: TF's zero Pad before it (top, bottom, left, right)
    # per-channel factors applied to its output (ConvNeXt's layer scale): the module's parameter keys, or the
    # IR's constant nodes; paired in order, each module parameter gets its TF constant
    factors: list[Any] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.where or self.id

    def describe(self) -> str:
        details = ", ".join(f"{k}={v}" for k, v in self.attrs.items() if k in _SHOWN)
        return f"{self.kind}({details})" if details else self.kind


_SHOWN = ("weight", "groups", "stride", "kernel", "features", "axis", "variant")


def module_path(layer_id: str) -> str:
    """The module path of a module-side layer: a module called again is `path#k` (trace.py), its parameters the
    same."""
    return layer_id.partition("#")[0]


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


def _ir_layer(graph: Graph, node: Node, inputs: list[str], consts: dict[str, Node], one_hots: set[str]) -> Layer:
    op, a = node.op, node.attrs
    if op == "gather" and node.inputs[0] in consts and int(a.get("axis", 0)) == 0:  # an embedding lookup
        table = consts[node.inputs[0]]
        return Layer(node.name, "embedding", inputs, {"weight": tuple(table.params["value"].shape), "table": table},
                     tuple(graph.shape(node.output)), node)
    if op == "linear" and node.inputs[0] in one_hots:  # one_hot @ table: a lookup too
        weight = node.params["weight"]  # (out, in) = table transposed
        return Layer(node.name, "embedding", inputs, {"weight": (weight.shape[1], weight.shape[0])},
                     tuple(graph.shape(node.output)), node)
    if op == "layer_norm" and _per_channel_norm(node, graph.shape(node.output)):
        width = int(np.prod(node.params["gamma"].shape))
        return Layer(node.name, "channel_norm", inputs, {"features": width}, tuple(graph.shape(node.output)), node)
    if op == "layer_norm":
        out = graph.shape(node.output)  # the normalized axes' size (channels of an NCHW tensor: axis 1)
        features = int(np.prod([out[int(x) % len(out)] for x in a.get("axes", [-1])]))
        return Layer(node.name, "layer_norm", inputs, {"features": features}, tuple(out), node)
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
    matrix = _constant_matrix(node, consts) if op == "matmul" and len(inputs) == 1 else None
    if matrix is not None:  # x @ a constant matrix (GPT-2's head: the embedding's transpose): a linear, no bias
        return Layer(node.name, "linear", inputs, {"weight": matrix[1].shape[::-1], "bias": False, "matrix": matrix},
                     shape, node)
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
    if op == "reduce_mean" and len(a["axes"]) == 1:  # a mean over the tokens (Swin's pooler)
        axis = int(a["axes"][0]) % len(graph.shape(node.inputs[0]))
        return Layer(node.name, "mean_1d", inputs, {"reduced": graph.shape(node.inputs[0])[axis],
                                                    "from_end": axis - len(graph.shape(node.inputs[0]))}, shape, node)
    if op in ("add", "mul", "sub"):
        return Layer(node.name, op, inputs, {}, shape, node)
    if op == "concat":  # constant parts (a CLS token) kept with their position
        parts = [(k, consts[name]) for k, name in enumerate(node.inputs) if name in consts]
        return Layer(node.name, op, inputs, {"axis": int(a["axis"]) % len(shape), "const_parts": parts}, shape, node)
    if op == "softmax":
        return Layer(node.name, op, inputs, {"axis": int(a["axis"]) % len(shape)}, shape, node)
    if op == "resize":  # MobileViT's resize to whole patches and back
        return Layer(node.name, op, inputs, {"sampling": (a["mode"], a["coordinate"])}, shape, node)
    if op == "slice":  # along one axis: which part (GPT-2's q, k or v of its fused c_attn)
        full = graph.shape(node.inputs[0])
        cut = [(k, b, e) for k, (b, e, n) in enumerate(zip(a["begin"], a["end"], full)) if (b, e) != (0, n)]
        part = {"range": (cut[0][0] - len(full), cut[0][1], cut[0][2])} if len(cut) == 1 else {}
        return Layer(node.name, "other:slice", inputs, part, shape, node)
    if op == "pad" and a.get("mode", "constant") == "constant":  # Swin's pad to whole windows (zero at its size)
        return Layer(node.name, op, inputs, {"fill": float(a.get("value", 0.0))}, shape, node)
    return Layer(node.name, f"other:{op}", inputs, {}, shape, node)


def _per_channel_norm(node: Node, shape: tuple[int, ...]) -> bool:
    """A layer norm that normalizes every axis but the batch and the one its gamma runs along: each channel over
    the rest (TF's group norm with a group per channel, Wav2Vec2's first conv layer), nn.GroupNorm(C, C)."""
    gamma = node.params.get("gamma")
    if gamma is None or len(shape) < 3 or gamma.ndim != len(shape):
        return False
    along = [k for k, d in enumerate(gamma.shape) if d > 1]
    normalized = {int(a) % len(shape) for a in node.attrs.get("axes", [-1])}
    return len(along) == 1 and normalized == set(range(1, len(shape))) - set(along)


def ir_layers(graph: Graph) -> LayerGraph:
    """The IR graph as layers: constants and shape-only nodes left out (their readers read through them)."""
    alias: dict[str, str] = {name: name for name in graph.inputs}
    layers = {name: Layer(name, "input", [], {}, tuple(graph.shape(name))) for name in graph.inputs}
    consts = {node.output: node for node in graph.nodes if node.op == "const"}
    one_hots = {node.output for node in graph.nodes if node.op == "one_hot"}
    by_name = {node.name: node for node in graph.nodes}
    pool_pads = _pads_before_max_pools(graph)
    conv_pads = _pads_before_convs(graph)
    rolls, roll_parts = _rolls(graph)
    for node in graph.nodes:
        if node.op == "const" or node.name in roll_parts:
            continue
        if node.name in rolls:  # TF's Roll: the tail, then the head, per axis; one roll layer for all its axes
            source, size, shift, alone = rolls[node.name]
            before = layers.get(alias.get(source, ""))
            if before is not None and before.kind == "roll" and alone:  # the same roll along another axis
                before.attrs["shifts"] = tuple(sorted((*before.attrs["shifts"], (size, shift))))
                alias[node.output] = before.id
                continue
            layers[node.name] = Layer(node.name, "roll", [alias[source]], {"shifts": ((size, shift),)},
                                      tuple(graph.shape(node.output)), node)
            alias[node.output] = node.name
            continue
        if node.op == "add":  # a table added as a constant: TF1 BERT's position embeddings, sliced and folded
            for name in node.inputs:
                if name in consts and _is_table(consts[name]) and name not in alias:
                    value = np.asarray(lazy.materialize(consts[name].params["value"]))
                    rows = value.reshape(-1, value.shape[-1])
                    layers[name] = Layer(name, "const", [], {"shape": tuple(value.shape),
                                                             "uniform": bool(np.all(rows == rows[:1]))},
                                         tuple(graph.shape(name)), consts[name])
                    alias[name] = name
        inputs = [alias[i] for i in node.inputs if i in alias]
        if len(set(inputs)) == 1 and graph.tensors[node.output].dtype[:3] in ("int", "boo", "uin"):
            alias[node.output] = inputs[0]  # ids and masks: indexing, casts, comparisons, positions from the ids
            continue
        if node.op == "select" and len(set(inputs)) == 1 and layers[inputs[0]].kind == "input":
            alias[node.output] = inputs[0]  # a mask picked from the mask input alone (where(mask, 0, min): Mistral)
            continue
        if _more_of_a_selection(node, inputs, layers, consts):
            layers[inputs[0]].attrs.pop("range", None)  # no longer one part along one axis
            alias[node.output] = inputs[0]
            continue
        if node.op == "slice" and len(inputs) == 1 and graph.shape(node.output) == graph.shape(node.inputs[0]):
            alias[node.output] = inputs[0]  # the whole tensor (TF's AdaptiveAveragePooling1D splits it in one)
            continue
        if node.op == "concat" and len(node.inputs) > 1 and len(set(node.inputs)) == 1 and len(set(inputs)) == 1:
            alias[node.output] = inputs[0]  # copies of one tensor: TF's Tile (BART's mask), the module's expand
            continue
        if node.name in pool_pads and len(inputs) == 1:
            alias[node.output] = inputs[0]
            continue
        if node.name in conv_pads and len(inputs) == 1:  # joins its conv (below), as nn.Conv1d's padding
            alias[node.output] = inputs[0]
            continue
        if (node.op in _IR_TRANSPARENT or node.op in _ARITHMETIC) and len(inputs) == 1:
            alias[node.output] = inputs[0]
            bias = _late_bias(node, layers[inputs[0]], consts)
            if bias is not None:  # a Dense as Tensordot: MatMul, reshape back, then its bias
                layers[inputs[0]].attrs["bias_const"] = bias
                continue
            offset = _scalar_offset(node, consts)
            if offset is not None and layers[inputs[0]].kind == "mean_1d":  # an RMS norm's epsilon
                layers[inputs[0]].attrs["offset"] = offset
            layers[inputs[0]].scale *= _scalar_factor(node, consts)
            vector = _vector_factor(node, consts)
            if vector is not None:
                layers[inputs[0]].factors.append(vector)
            continue
        if _layer_scale(node) and len(inputs) == 1 and layers[inputs[0]].kind != "input":
            alias[node.output] = inputs[0]
            layers[inputs[0]].factors.append((node.name, node.params["scale"]))
            continue
        layers[node.name] = _ir_layer(graph, node, inputs, consts, one_hots)
        if node.inputs and node.inputs[0] in pool_pads.values():
            pad = next(k for k, v in pool_pads.items() if v == node.inputs[0])
            layers[node.name].pre_pad = _zero_spatial_pads(by_name[pad])
        alias[node.output] = node.name
    for convs, pads in conv_pads.values():
        for conv in convs:
            layers[conv].pre_pad = pads
    return LayerGraph(layers, [alias[o] for o in graph.outputs], list(graph.inputs))


_SELECTION = {"slice", "reshape", "transpose", "concat", "identity"}


def _more_of_a_selection(node: Node, inputs: list[str], layers: dict[str, Layer], consts: dict[str, Node]) -> bool:
    """A slice, reshape or concat of parts of one slice only: the same selection, one layer. TF's strided slice
    (Swin's patch merging, `x[:, 0::2, 1::2]`) reaches the IR as slices, reshapes and concats of its parts."""
    return (node.op in _SELECTION and len(inputs) == len(node.inputs) and len(set(inputs)) == 1
            and layers[inputs[0]].kind == "other:slice" and not any(i in consts for i in node.inputs))


def has_bias(layer: Layer) -> bool:
    """Whether TF adds a bias to this IR layer's output: its own, or one added after a reshape (`bias_const`)."""
    return "bias" in layer.node.params or "bias_const" in layer.attrs


def bias_value(layer: Layer) -> tuple[str, Any]:
    """(TF name, value) of the bias of IR layer `layer` (has_bias)."""
    if "bias_const" in layer.attrs:
        return layer.attrs["bias_const"]
    return "", layer.node.params["bias"]


def _late_bias(node: Node, layer: Layer, consts: dict[str, Node]) -> tuple[str, Any] | None:
    """(name, value) of the constant vector an add puts on the output of a linear without a bias of its own
    (Keras' Dense on a 3-D input: Tensordot's MatMul, a reshape, then BiasAdd), or None."""
    if node.op != "add" or layer.kind not in ("linear", "conv") or "bias" in layer.node.params or \
            "bias_const" in layer.attrs:
        return None
    conv1d_bias = layer.kind == "conv" and layer.shape[2:3] == (1,)
    found = [consts[i] for i in node.inputs if i in consts]
    value = found[0].params.get("value") if len(found) == 1 else None
    if value is None or value.dtype.kind != "f" or value.size != layer.attrs["weight"][0] or \
            sum(1 for d in value.shape if d > 1) > 1:
        return None
    if layer.kind == "conv" and not (conv1d_bias and value.ndim == 3):
        return None  # a conv's: only Conv1D's, added to its (N, T, C) result (channels last) after the squeeze
    return found[0].name, value


def _constant_matrix(node: Node, consts: dict[str, Node]) -> tuple[str, np.ndarray] | None:
    """(name, the (in, out) matrix) of a matmul's constant right operand: a 2-D constant, or copies of one over
    leading batch axes (TF broadcasts the embedding's transpose over the batch); None otherwise."""
    const = consts.get(node.inputs[1])
    if const is None or node.inputs[0] in consts or const.params.get("value") is None:
        return None
    value = np.asarray(lazy.materialize(const.params["value"]))
    if value.ndim < 2 or value.dtype.kind != "f":
        return None
    copies = value.reshape(-1, *value.shape[-2:])
    if not np.array_equal(copies, np.broadcast_to(copies[:1], copies.shape)):
        return None
    return const.name, copies[0]


def _is_table(const: Node) -> bool:
    """A float constant with two axes longer than 1 (rows of a table, not a per-channel vector), and not an
    additive mask (0 where attended, a large negative number elsewhere: Whisper's causal mask, decided at the
    conversion's sequence length, which the module computes for itself; or 0 and one negative value elsewhere)."""
    value = const.params.get("value")
    if value is None or value.dtype.kind != "f" or sum(1 for d in value.shape if d > 1) < 2:
        return False
    values = np.asarray(lazy.materialize(value))
    if np.all((values == 0) | (values <= -1e4)):
        return False
    levels = np.unique(values)  # Swin's shift mask: 0 within a region, -100 across two
    return not (len(levels) == 2 and levels[1] == 0 and levels[0] < 0)


def _scalar_factor(node: Node, consts: dict[str, Node]) -> float:
    """The constant a mul/div by one scalar multiplies by (1.0 for any other transparent node)."""
    import numpy as np

    if node.op not in ("mul", "div") or len(node.inputs) != 2:
        return 1.0
    value = [consts[i].params["value"] for i in node.inputs if i in consts]
    if len(value) != 1 or np.size(value[0]) != 1 or (node.op == "div" and node.inputs[1] not in consts):
        return 1.0
    factor = float(np.asarray(value[0]).reshape(()))
    return factor if node.op == "mul" else 1.0 / factor


def _scalar_offset(node: Node, consts: dict[str, Node]) -> float | None:
    """The constant an add of one scalar adds (an RMS norm's epsilon), or None."""
    if node.op != "add" or len(node.inputs) != 2:
        return None
    value = [consts[i].params.get("value") for i in node.inputs if i in consts]
    if len(value) != 1 or value[0] is None or np.size(value[0]) != 1:
        return None
    return float(np.asarray(lazy.materialize(value[0])).reshape(()))


def _vector_factor(node: Node, consts: dict[str, Node]) -> tuple[str, Any] | None:
    """(name, value) of the constant of a mul by a per-channel vector (Keras' LayerScale gamma), or None."""
    if node.op != "mul" or len(node.inputs) != 2:
        return None
    found = [consts[i] for i in node.inputs if i in consts]
    value = found[0].params.get("value") if len(found) == 1 else None
    if value is None or value.dtype.kind != "f" or sum(1 for d in value.shape if d > 1) != 1:
        return None
    return found[0].name, value


def _layer_scale(node: Node) -> bool:
    """A channel affine that only scales (no shift, no batch-norm statistics): a mul by a per-channel vector
    as the passes write it (Keras' LayerScale), kept as a factor of the layer before it."""
    if node.op != "channel_affine" or any(k in node.params for k in ("mean", "gamma", "variance", "beta")):
        return False
    shift = node.params.get("shift")
    return shift is None or not np.any(np.asarray(lazy.materialize(shift)))


_NON_NEGATIVE = {"relu"}  # a zero pad before a max pool of these pads as -inf does: max(window) >= 0 already


def _zero_spatial_pads(node: Node) -> tuple[int, int, int, int] | None:
    """(top, bottom, left, right) of a constant-zero pad of H and W only (NCHW), or None."""
    pads = node.attrs.get("pads")
    if node.op != "pad" or node.attrs.get("mode", "constant") != "constant" or node.attrs.get("value", 0.0) != 0.0 \
            or pads is None or len(pads) != 4 or any(tuple(p) != (0, 0) for p in pads[:2]):
        return None
    return (int(pads[2][0]), int(pads[2][1]), int(pads[3][0]), int(pads[3][1]))


def _pads_before_convs(graph: Graph) -> dict[str, tuple[list[str], tuple[int, int, int, int]]]:
    """{pad node: (the conv2d nodes it feeds, (0, 0, left, right))} for TF's zero Pad of the time axis of a
    (N, T, C) sequence read only by Conv1D (a VALID conv2d of height 1 behind ExpandDims and a transpose:
    Whisper's encoder): the conv's own padding, as nn.Conv1d writes it."""
    index, found = GraphIndex(graph), {}
    for node in graph.nodes:
        pads = node.attrs.get("pads")
        if node.op != "pad" or node.attrs.get("mode", "constant") != "constant" or \
                node.attrs.get("value", 0.0) != 0.0 or pads is None or len(pads) != 3 or \
                tuple(pads[0]) != (0, 0) or tuple(pads[2]) != (0, 0):
            continue
        n, steps, channels = graph.shape(node.output)
        convs, pending, ok = [], list(index.readers(node.output)), True
        while pending and ok:
            reader = pending.pop()
            if reader.op in ("reshape", "transpose"):
                pending.extend(index.readers(reader.output))
            elif reader.op == "conv2d" and tuple(reader.attrs["pads"]) == (0, 0, 0, 0) and \
                    tuple(graph.shape(reader.inputs[0])) == (n, channels, 1, steps) and \
                    reader.attrs["kernel"][0] == 1:
                convs.append(reader.name)
            else:
                ok = False
        if ok and convs:
            found[node.name] = (convs, (0, 0, int(pads[1][0]), int(pads[1][1])))
    return found


def _rolls(graph: Graph) -> tuple[dict[str, tuple[str, int, int, bool]], set[str]]:
    """({concat node: (the tensor rolled, the axis' size, the shift, whether only this roll reads that tensor)},
    the slices it joins) for TF's Roll as the
    parser writes it: along one axis of size n, `x[n-s:]` then `x[:n-s]`, each slice read by that concat only.
    Axes are kept as sizes: the IR may hold a 4-D tensor in another layout than the module."""
    index, by_output = GraphIndex(graph), {node.output: node for node in graph.nodes}
    found, parts = {}, set()
    for node in graph.nodes:
        if node.op != "concat" or len(node.inputs) != 2:
            continue
        tail, head = (by_output.get(i) for i in node.inputs)
        if tail is None or head is None or tail.op != "slice" or head.op != "slice" or \
                tail.inputs[0] != head.inputs[0] or any(len(index.readers(p.output)) != 1 for p in (tail, head)):
            continue
        shape, axis = graph.shape(tail.inputs[0]), int(node.attrs["axis"]) % len(graph.shape(node.output))
        cuts = [[(k, int(b), int(e)) for k, (b, e, n) in enumerate(zip(p.attrs["begin"], p.attrs["end"], shape))
                 if (int(b), int(e)) != (0, n)] for p in (tail, head)]
        if len(cuts[0]) != 1 or len(cuts[1]) != 1 or cuts[0][0][0] != axis or cuts[1][0][0] != axis:
            continue
        n, (_, start, stop), (_, head_start, head_stop) = shape[axis], cuts[0][0], cuts[1][0]
        if stop == n and head_start == 0 and head_stop == start and 0 < start < n:
            found[node.name] = (tail.inputs[0], n, n - start, len(index.readers(tail.inputs[0])) == 2)
            parts.update((tail.name, head.name))
    return found, parts


def _pads_before_max_pools(graph: Graph) -> dict[str, str]:
    """{pad node: its output} for TF's ZeroPadding2D + VALID max pool on a ReLU's output (Keras ResNet's stem):
    the same window maximum as a max pool with those pads, which is how a PyTorch module writes it."""

    index, found = GraphIndex(graph), {}
    for node in graph.nodes:
        if _zero_spatial_pads(node) is None:
            continue
        producer = index.producer(node.inputs[0])
        readers = [n for n in graph.nodes if node.output in n.inputs]
        if producer is not None and producer.op in _NON_NEGATIVE and readers and all(
                n.op == "max_pool2d" and tuple(n.attrs["pads"]) == (0, 0, 0, 0) for n in readers):
            found[node.name] = node.output
    return found


def canonical(graph: LayerGraph) -> LayerGraph:
    """The form both sides are matched in: masks added (masked_sums), sums flattened (flatten_sums), the tanh GELU
    spelled out as one activation (fused_gelu)."""
    return fused_rms_norm(fused_gelu(flatten_sums(masked_sums(graph))))


_GELU_TANH = {"half": 0.5, "outer": math.sqrt(2 / math.pi), "cubic": 0.044715}


def _near(value: float, want: float) -> bool:
    return abs(value - want) <= 1e-6 * abs(want)


def _cube(layer: Layer, x: str, layers: dict[str, Layer]) -> list[str] | None:
    """The layers that make x³ from `x` (`layer` last): torch's pow(x, 3), TF's x * square(x); None otherwise."""
    if layer.kind == "other:pow" and layer.inputs == [x] and layer.attrs.get("exponent") in (3, 3.0):
        return [layer.id]
    if layer.kind == "mul" and len(layer.inputs) == 2 and x in layer.inputs:
        square = layers.get(layer.inputs[1] if layer.inputs[0] == x else layer.inputs[0])
        if square is not None and square.kind == "other:square" and square.inputs == [x] and square.scale == 1.0:
            return [square.id, layer.id]
    return None


def fused_gelu(graph: LayerGraph) -> LayerGraph:
    """0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) (GPT-2's GELU, written out in TF and in the module) as one
    act ('gelu', 'tanh'): it pairs with its spelled-out self and with nn.GELU(approximate='tanh') or TF's Gelu.
    The constants are read from the layers' scales (the 1 + is read through); any other spelling stays as is."""
    layers = dict(graph.layers)
    readers: dict[str, int] = {}
    for layer in layers.values():
        for name in set(layer.inputs):
            readers[name] = readers.get(name, 0) + 1
    for name in graph.outputs:
        readers[name] = readers.get(name, 0) + 1
    for outer in list(layers.values()):
        if outer.id not in layers or outer.kind != "mul" or len(outer.inputs) != 2:
            continue
        for x_id, tanh_id in (outer.inputs, outer.inputs[::-1]):
            x, tanh = layers.get(x_id), layers.get(tanh_id)
            if tanh is None or tanh.kind != "act" or tanh.attrs.get("variant") != ("tanh",) or len(tanh.inputs) != 1:
                continue
            inner = layers.get(tanh.inputs[0])
            if inner is None or inner.kind != "add" or len(inner.inputs) != 2 or inner.inputs.count(x_id) != 1:
                continue
            cube_id = inner.inputs[1] if inner.inputs[0] == x_id else inner.inputs[0]
            cube = _cube(layers[cube_id], x_id, layers) if cube_id in layers else None
            inside = [tanh_id, inner.id, *(cube or [])]
            if cube is None or any(readers.get(name) != 1 for name in inside) or tanh.scale != 1.0:
                continue
            if not (_near(inner.scale, _GELU_TANH["outer"]) and _near(layers[cube_id].scale, _GELU_TANH["cubic"])):
                continue
            if _near(outer.scale, _GELU_TANH["half"]):
                outer.scale = 1.0
            elif _near(x.scale, _GELU_TANH["half"]):
                x.scale = 1.0
            else:
                continue
            for name in inside:
                del layers[name]
            layers[outer.id] = Layer(outer.id, "act", [x_id], {"variant": ("gelu", "tanh")}, outer.shape, outer.node,
                                     outer.where, outer.scale, factors=outer.factors)
            break
    return LayerGraph(layers, graph.outputs, graph.inputs)


def _reader_counts(graph: LayerGraph) -> dict[str, int]:
    readers: dict[str, int] = {}
    for layer in graph.layers.values():
        for name in set(layer.inputs):
            readers[name] = readers.get(name, 0) + 1
    for name in graph.outputs:
        readers[name] = readers.get(name, 0) + 1
    return readers


def _rms_parts(outer: Layer, layers: dict[str, Layer]) -> tuple[str, Layer] | None:
    """(x, the mean layer) of `x * rsqrt(mean(x²) + eps)` or `x / sqrt(mean(x²) + eps)` ending at `outer`, or None.
    x² is torch's pow(x, 2) or TF's square(x)."""
    if outer.kind == "mul" and len(outer.inputs) == 2:
        orders, root = (outer.inputs, outer.inputs[::-1]), "other:rsqrt"
    elif outer.kind == "other:div" and len(outer.inputs) == 2:
        orders, root = (outer.inputs,), "other:sqrt"
    else:
        return None
    for x_id, root_id in orders:
        r = layers.get(root_id)
        m = layers.get(r.inputs[0]) if r is not None and r.kind == root and len(r.inputs) == 1 else None
        s = layers.get(m.inputs[0]) if m is not None and m.kind == "mean_1d" and len(m.inputs) == 1 else None
        if s is None or s.inputs != [x_id] or not (
                s.kind == "other:square" or (s.kind == "other:pow" and s.attrs.get("exponent") in (2, 2.0))):
            continue
        if m.attrs.get("from_end") != -1:
            continue  # a mean over the last axis only
        return x_id, m
    return None


def fused_rms_norm(graph: LayerGraph) -> LayerGraph:
    """`x * rsqrt(mean(x², -1) + eps)` (T5's, in both frameworks) and `x / sqrt(mean(x², -1) + eps)` (TF Mistral's)
    as one rms_norm layer (features, epsilon); its weight stays the per-channel factor after it, so the module's
    `weight` gets TF's vector. The module side is named by the module owning that weight."""
    layers = dict(graph.layers)
    readers = _reader_counts(graph)
    for outer in list(layers.values()):
        found = _rms_parts(outer, layers) if outer.id in layers else None
        if found is None:
            continue
        x_id, mean = found
        root = next(n for n in outer.inputs if n != x_id)
        inside = [root, mean.id, mean.inputs[0]]
        if any(readers.get(n) != 1 or layers[n].scale != 1.0 or layers[n].factors for n in inside):
            continue
        for name in inside:
            del layers[name]
        where = outer.where
        if outer.factors and isinstance(outer.factors[0][0], str) and outer.node is None:
            where = module_path(outer.factors[0][0].rpartition(".")[0]) or where  # the module's RMS norm
        layers[outer.id] = Layer(outer.id, "rms_norm", [x_id], {"features": mean.attrs["reduced"],
                                                                "epsilon": float(mean.attrs.get("offset", 0.0))},
                                 outer.shape, outer.node, where, outer.scale, factors=outer.factors)
    return LayerGraph(layers, graph.outputs, graph.inputs)


def masked_sums(graph: LayerGraph) -> LayerGraph:
    """`scores - c * (1 - mask)` (DistilBERT's TF code) as `scores + mask'`: the mask's arithmetic is read through
    on both sides, its sign with it, so a sub of a mask input is the add of one."""
    for layer in graph.layers.values():
        if layer.kind == "sub" and len(layer.inputs) == 2 and graph.layers[layer.inputs[1]].kind == "input" and \
                graph.layers[layer.inputs[0]].kind != "input":
            layer.kind = "add"
    return graph


def flatten_sums(graph: LayerGraph) -> LayerGraph:
    """Nested adds as one sum of all their terms: `(word + position) + token_type` (TF's Hugging Face BERT)
    and `(word + token_type) + position` (PyTorch's) are the same sum. An add is merged into the add that
    reads it when that is its only reader, it is no output, and it carries no scale or factor."""
    readers: dict[str, int] = {}
    for layer in graph.layers.values():
        for name in layer.inputs:
            readers[name] = readers.get(name, 0) + 1
    for name in graph.outputs:
        readers[name] = readers.get(name, 0) + 2
    layers = dict(graph.layers)

    def mergeable(name: str) -> bool:
        layer = layers.get(name)
        return (layer is not None and layer.kind == "add" and readers.get(name) == 1 and layer.scale == 1.0
                and not layer.factors)

    for layer in list(layers.values()):
        if layer.kind != "add" or not any(mergeable(n) for n in layer.inputs):
            continue
        terms: list[str] = []
        pending = list(layer.inputs)
        while pending:
            name = pending.pop(0)
            if mergeable(name):
                pending[:0] = layers.pop(name).inputs
            else:
                terms.append(name)
        layer.inputs = terms
    return LayerGraph(layers, graph.outputs, graph.inputs)
