"""Graph rewrites on the IR. Each pass is a function `graph -> bool` (changed?) that rewrites the
graph in place, touches nothing else, and keeps the numbers (up to float rounding of folded
constants), the graph outputs' names and the graph's validity.

run_default_passes(graph) runs them to a fixed point:
  fold_constants        nodes whose inputs are all constants become constants
  drop_identities       identity nodes go (a graph output keeps its name)
  merge_duplicates      nodes with the same op, inputs, attrs and params are computed once
  drop_neutral_arith    x * 1, x + 0 (Keras swish's beta, say) go
  fuse_swish            x * sigmoid(x) -> swish
  fuse_hard_sigmoid     relu6(x + 3) / 6 -> hard_sigmoid; x * hard_sigmoid(x) -> hard_swish
  fuse_layer_norm       mean / squared difference / rsqrt / mul / add spelling -> layer_norm
  fold_pad_into_conv    constant-zero spatial pad -> conv2d pads (TF ResNet conv2d_fixed_padding)
  fold_affine_into_conv channel_affine / per-channel const mul/add after conv2d, conv_transpose2d
                        (groups 1) or linear -> weight and bias
  arith_to_affine       x * s + b with per-channel constants (not after a conv) -> channel_affine
  dense_on_nhwc_as_conv Dense over every pixel (Tensordot) -> 1x1 conv2d
  sink_transposes       transposes move below elementwise ops; transpose pairs merge or cancel
  transpose_to_reshape  transposes that move only size-1 axes are reshapes
  merge_reshapes        reshape of a reshape is one reshape; no-op reshapes go
  keepdims_reduce       reduce(keepdims=False) -> reshape back to rank 4 is reduce(keepdims=True)
  fold_flatten_into_linear  transpose -> reshape(N, -1) -> linear: permute the linear's weight instead
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .ir import Graph, Node

Pass = Callable[[Graph], bool]


# ---- helpers ------------------------------------------------------------------------------------


def _single_consumer(graph: Graph, tensor: str) -> Node | None:
    """The only node reading `tensor`, if exactly one does and it is not a graph output."""
    if tensor in graph.outputs:
        return None
    users = graph.consumers().get(tensor, [])
    return users[0] if len(users) == 1 else None


def _remove_after(graph: Graph, keep: Node, gone: Node) -> None:
    """Drop `gone` (the only consumer of `keep`'s output). `keep` keeps its name (the layer name)
    unless `gone` produced a graph output: then `keep` takes over that name, so outputs keep theirs."""
    if gone.output in graph.outputs:
        old = keep.output
        keep.outputs = [gone.output]
        keep.name = gone.name
        graph.tensors.pop(old, None)
        graph.nodes.remove(gone)
        return
    graph.nodes.remove(gone)
    graph.rename_tensor(gone.output, keep.output)
    graph.tensors.pop(gone.output, None)


def _bypass(graph: Graph, node: Node, source: str) -> None:
    """Remove `node`; its readers read `source` instead."""
    graph.nodes.remove(node)
    graph.rename_tensor(node.output, source)
    graph.tensors.pop(node.output, None)


# ---- constant folding ---------------------------------------------------------------------------

_NUMPY: dict[str, Callable] = {
    "add": lambda n, a, b: a + b,
    "sub": lambda n, a, b: a - b,
    "mul": lambda n, a, b: a * b,
    "div": lambda n, a, b: a / b,
    "maximum": lambda n, a, b: np.maximum(a, b),
    "minimum": lambda n, a, b: np.minimum(a, b),
    "relu": lambda n, a: np.maximum(a, 0),
    "clip": lambda n, a: np.clip(a, n.attrs["min"], n.attrs["max"]),
    "sigmoid": lambda n, a: 1 / (1 + np.exp(-a)),
    "tanh": lambda n, a: np.tanh(a),
    "exp": lambda n, a: np.exp(a),
    "sqrt": lambda n, a: np.sqrt(a),
    "rsqrt": lambda n, a: 1 / np.sqrt(a),
    "square": lambda n, a: a * a,
    "neg": lambda n, a: -a,
    "identity": lambda n, a: a,
    "transpose": lambda n, a: np.transpose(a, n.attrs["perm"]),
    "reshape": lambda n, a: a.reshape(n.attrs["shape"]),
    "concat": lambda n, *xs: np.concatenate(xs, axis=n.attrs["axis"]),
}


def fold_constants(graph: Graph) -> bool:
    changed = False
    values = {n.output: n.params["value"] for n in graph.nodes if n.op == "const"}
    for node in graph.nodes:
        if node.op == "const" or node.op not in _NUMPY or not node.inputs:
            continue
        if not all(i in values for i in node.inputs):
            continue
        dtype = graph.tensors[node.output].dtype
        value = np.asarray(_NUMPY[node.op](node, *(values[i] for i in node.inputs))).astype(dtype)
        node.op, node.inputs, node.attrs, node.params = "const", [], {}, {"value": value}
        values[node.output] = value
        changed = True
    return changed


# ---- identity -----------------------------------------------------------------------------------


def drop_identities(graph: Graph) -> bool:
    changed = False
    producers = graph.producers()
    for node in list(graph.nodes):
        if node.op != "identity":
            continue
        src = node.inputs[0]
        if node.output not in graph.outputs:
            _bypass(graph, node, src)
            changed = True
            continue
        # keep the output's name: the producer takes it over, if nothing else needs the old one
        producer = producers.get(src)
        if producer is not None and _single_consumer(graph, src) is node and src not in graph.inputs:
            _remove_after(graph, producer, node)
            changed = True
    return changed


# ---- common subexpressions ---------------------------------------------------------------------


def _same_value(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _same_node(a: Node, b: Node) -> bool:
    """Same attrs and params (op, inputs and output shapes are the caller's key)."""
    return (
        a.attrs.keys() == b.attrs.keys()
        and all(_same_value(a.attrs[k], b.attrs[k]) for k in a.attrs)
        and a.params.keys() == b.params.keys()
        and all(_same_value(np.asarray(a.params[k]), np.asarray(b.params[k])) for k in a.params)
    )


def merge_duplicates(graph: Graph) -> bool:
    """Nodes computing the same thing (same op, inputs, attrs and params) become one: the first
    stays, later ones' readers read it (Keras NASNet graphs repeat a Relu per reader). A node that
    produces a graph output is never merged away, so outputs keep their names."""
    alias: dict[str, str] = {}
    seen: dict[tuple, list[Node]] = {}
    gone: list[Node] = []
    outputs = set(graph.outputs)
    for node in graph.nodes:
        node.inputs = [alias.get(i, i) for i in node.inputs]  # topological order: sources first
        out = tuple((graph.tensors[o].shape, graph.tensors[o].dtype) for o in node.outputs)
        key = (node.op, tuple(node.inputs), out)
        twin = next((k for k in seen.get(key, []) if _same_node(k, node)), None)
        if twin is None or outputs.intersection(node.outputs):
            seen.setdefault(key, []).append(node)
            continue
        alias.update(zip(node.outputs, twin.outputs))
        gone.append(node)
    if not gone:
        return False
    dropped = {id(n) for n in gone}
    graph.nodes = [n for n in graph.nodes if id(n) not in dropped]
    for n in gone:
        for o in n.outputs:
            graph.tensors.pop(o, None)
    return True


# ---- pad -> conv --------------------------------------------------------------------------------


def fold_pad_into_conv(graph: Graph) -> bool:
    changed = False
    for pad in list(graph.nodes):
        if pad.op != "pad" or pad.attrs.get("mode") != "constant" or float(pad.attrs.get("value", 0)) != 0:
            continue
        pads = [tuple(p) for p in pad.attrs["pads"]]
        if len(pads) != 4 or pads[0] != (0, 0) or pads[1] != (0, 0) or min(min(p) for p in pads) < 0:
            continue  # spatial axes (IR 2, 3) only
        conv = _single_consumer(graph, pad.output)
        if conv is None or conv.op != "conv2d":
            continue
        t, b, l, r = conv.attrs["pads"]
        conv.attrs["pads"] = (t + pads[2][0], b + pads[2][1], l + pads[3][0], r + pads[3][1])
        conv.source_op = f"{pad.source_op}+{conv.source_op}".strip("+")
        _bypass(graph, pad, pad.inputs[0])
        changed = True
    return changed


# ---- per-channel affine -> conv / linear --------------------------------------------------------


def _per_channel(graph: Graph, node: Node, x: str, channels: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(scale, shift) if `node` is x * s + b per channel (axis 1) on `x`, else None."""
    if node.op == "channel_affine":
        if node.attrs.get("axis") != 1:
            return None
        return node.params["scale"], node.params["shift"]
    if node.op not in ("add", "mul", "sub") or len(node.inputs) != 2:
        return None
    other = node.inputs[1] if node.inputs[0] == x else node.inputs[0]
    if node.inputs.count(x) != 1:
        return None
    value = graph.const_value(other)
    if value is None:
        return None
    rank = len(graph.shape(x))
    shape = value.shape
    # broadcastable per channel: every axis but 1 is size 1, and it does not grow x's rank
    if len(shape) > rank or any(d != 1 for i, d in enumerate((1,) * (rank - len(shape)) + shape) if i != 1):
        return None
    vec = np.broadcast_to(value.reshape(-1), (channels,)).astype(np.float64)
    if node.op == "mul":
        return vec, np.zeros(channels)
    if node.op == "add":
        return np.ones(channels), vec
    if node.inputs[0] == x:  # x - c
        return np.ones(channels), -vec
    return None  # c - x is not a per-channel affine of the conv's bias form; leave it


# where each layer's weight keeps its output channels (transposed conv: IOHW)
_OUT_AXIS = {"conv2d": 0, "linear": 0, "conv_transpose2d": 1}


def fold_affine_into_conv(graph: Graph) -> bool:
    changed = False
    for conv in list(graph.nodes):
        if conv.op not in _OUT_AXIS or (conv.op == "conv_transpose2d" and conv.attrs.get("groups", 1) != 1):
            continue
        nxt = _single_consumer(graph, conv.output)
        if nxt is None:
            continue
        channels = graph.shape(conv.output)[1]
        affine = _per_channel(graph, nxt, conv.output, channels)
        if affine is None:
            continue
        scale, shift = (np.asarray(a, np.float64) for a in affine)
        weight = conv.params["weight"].astype(np.float64)
        bias = conv.params.get("bias", np.zeros(channels)).astype(np.float64)
        shape = [1] * weight.ndim
        shape[_OUT_AXIS[conv.op]] = -1
        conv.params["weight"] = (weight * scale.reshape(shape)).astype(np.float32)
        conv.params["bias"] = (bias * scale + shift).astype(np.float32)
        conv.source_op = f"{conv.source_op}+{nxt.source_op}".strip("+")
        _remove_after(graph, conv, nxt)
        changed = True
    return changed


def arith_to_affine(graph: Graph) -> bool:
    """x * s + b with per-channel constants (batch norm not after a conv, e.g. DenseNet's
    pre-activation BN as Keras 3 spells it) -> one channel_affine."""
    changed = False
    for mul in list(graph.nodes):
        if mul.op != "mul" or len(graph.shape(mul.output)) not in (2, 4):
            continue
        x = next((i for i in mul.inputs if graph.const_value(i) is None), None)
        if x is None or graph.shape(x) != graph.shape(mul.output):
            continue
        channels = graph.shape(x)[1]
        first = _per_channel(graph, mul, x, channels)
        add = _single_consumer(graph, mul.output)
        second = _per_channel(graph, add, mul.output, channels) if add is not None else None
        if first is None or second is None or add.op not in ("add", "sub"):
            continue
        scale = np.asarray(first[0], np.float64) * second[0]
        shift = np.asarray(second[1], np.float64)
        mul.op, mul.inputs, mul.attrs = "channel_affine", [x], {"axis": 1}
        mul.params = {"scale": scale.astype(np.float32), "shift": shift.astype(np.float32)}
        mul.source_op = f"{mul.source_op}+{add.source_op}"
        _remove_after(graph, mul, add)
        changed = True
    return changed


# ---- transposes and reshapes --------------------------------------------------------------------


def transpose_to_reshape(graph: Graph) -> bool:
    changed = False
    for node in graph.nodes:
        if node.op != "transpose":
            continue
        shape = graph.shape(node.inputs[0])
        moved = [p for p in node.attrs["perm"] if shape[p] != 1]
        if moved == sorted(moved):
            node.op = "reshape"
            node.attrs = {"shape": tuple(graph.shape(node.output))}
            changed = True
    return changed


def merge_reshapes(graph: Graph) -> bool:
    changed = False
    producers = graph.producers()
    for node in list(graph.nodes):
        if node.op != "reshape":
            continue
        if tuple(graph.shape(node.inputs[0])) == tuple(graph.shape(node.output)) and (
            node.output not in graph.outputs
        ):
            _bypass(graph, node, node.inputs[0])  # a no-op reshape
            changed = True
            continue
        first = producers.get(node.inputs[0])
        if first is None or first.op != "reshape":
            continue
        node.inputs = [first.inputs[0]]
        if tuple(graph.shape(first.inputs[0])) == tuple(graph.shape(node.output)) and node.output not in graph.outputs:
            _bypass(graph, node, first.inputs[0])
        changed = True
    return changed


def fold_flatten_into_linear(graph: Graph) -> bool:
    """transpose(perm, perm[0] == 0) -> reshape to (N, -1) -> linear: reshape the untransposed tensor
    and permute the linear weight's input columns to match, so targets need no Permute layer."""
    changed = False
    producers = graph.producers()
    for lin in list(graph.nodes):
        if lin.op != "linear":
            continue
        flat = producers.get(lin.inputs[0])
        if flat is None or flat.op != "reshape" or _single_consumer(graph, flat.output) is not lin:
            continue
        tr = producers.get(flat.inputs[0])
        if tr is None or tr.op != "transpose" or _single_consumer(graph, tr.output) is not flat:
            continue
        perm = tuple(tr.attrs["perm"])
        x_shape = graph.shape(tr.inputs[0])
        if perm[0] != 0 or len(graph.shape(flat.output)) != 2 or graph.shape(flat.output)[0] != x_shape[0]:
            continue
        weight = lin.params["weight"]
        out = weight.shape[0]
        moved = [x_shape[p] for p in perm[1:]]
        # weight column order follows the transposed axes; reorder to the original axes
        order = (0,) + tuple(1 + list(perm[1:]).index(k) for k in range(1, len(perm)))
        lin.params["weight"] = np.ascontiguousarray(
            weight.reshape((out, *moved)).transpose(order).reshape(out, -1)
        )
        flat.inputs = [tr.inputs[0]]
        graph.nodes.remove(tr)
        graph.tensors.pop(tr.output, None)
        changed = True
    return changed


def drop_neutral_arith(graph: Graph) -> bool:
    """x * 1, x / 1, x + 0, x - 0 with a constant that does not broadcast x to a bigger shape."""
    changed = False
    neutral = {"mul": 1.0, "div": 1.0, "add": 0.0, "sub": 0.0}
    for node in list(graph.nodes):
        if node.op not in neutral or len(node.inputs) != 2:
            continue
        x, c = node.inputs
        value = graph.const_value(c)
        if value is None and node.op in ("mul", "add"):
            x, c = c, x
            value = graph.const_value(c)
        if value is None or not np.all(value == neutral[node.op]):
            continue
        if graph.shape(x) != graph.shape(node.output) or x in graph.inputs and node.output in graph.outputs:
            continue
        if node.output in graph.outputs:
            producer = graph.producer(x)
            if producer is None or _single_consumer(graph, x) is not node:
                continue
            _remove_after(graph, producer, node)
        else:
            _bypass(graph, node, x)
        changed = True
    return changed


def fuse_swish(graph: Graph) -> bool:
    """mul(x, sigmoid(x)) -> swish(x), when the sigmoid feeds only that mul."""
    changed = False
    producers = graph.producers()
    for node in list(graph.nodes):
        if node.op != "mul" or len(node.inputs) != 2:
            continue
        for x, s in (node.inputs, node.inputs[::-1]):
            sig = producers.get(s)
            if sig is not None and sig.op == "sigmoid" and sig.inputs[0] == x and (
                _single_consumer(graph, s) is node
            ):
                node.op, node.inputs, node.attrs = "swish", [x], {}
                node.source_op = f"{sig.source_op}+{node.source_op}".strip("+")
                graph.nodes.remove(sig)
                graph.tensors.pop(s, None)
                changed = True
                break
    return changed


def keepdims_reduce(graph: Graph) -> bool:
    """reduce(keepdims=False) -> reshape to the keepdims shape (TF SE blocks: Mean then Reshape to
    (N, 1, 1, C)) is one reduce with keepdims=True."""
    changed = False
    for node in list(graph.nodes):
        if node.op not in ("reduce_mean", "reduce_max") or node.attrs.get("keepdims"):
            continue
        reshape = _single_consumer(graph, node.output)
        if reshape is None or reshape.op != "reshape":
            continue
        axes = set(node.attrs["axes"])
        kept = tuple(1 if i in axes else d for i, d in enumerate(graph.shape(node.inputs[0])))
        if tuple(graph.shape(reshape.output)) != kept:
            continue
        node.attrs["keepdims"] = True
        graph.tensors[node.output].shape = kept
        _remove_after(graph, node, reshape)
        changed = True
    return changed


def _scalar_operand(graph: Graph, node: Node) -> tuple[str, float] | None:
    """(other input, c) when one input of a binary node is a single-valued constant c."""
    if len(node.inputs) != 2:
        return None
    for x, c in (node.inputs, node.inputs[::-1]):
        value = graph.const_value(c)
        if value is not None and graph.const_value(x) is None and value.size >= 1 and np.all(value == value.flat[0]):
            if graph.shape(x) == graph.shape(node.output):
                return x, float(value.flat[0])
    return None


def fuse_hard_sigmoid(graph: Graph) -> bool:
    """relu6(x + 3) / 6 (or * 1/6), as Keras/TF graphs spell it -> hard_sigmoid(1/6, 0.5);
    then x * hard_sigmoid(x) -> hard_swish(x)."""
    changed = False
    producers = graph.producers()
    for node in list(graph.nodes):
        scaled = _scalar_operand(graph, node)
        if node.op not in ("div", "mul") or scaled is None or node.inputs[0] != scaled[0] and node.op == "div":
            continue
        factor = scaled[1] if node.op == "mul" else 1.0 / scaled[1]
        clip = producers.get(scaled[0])
        if abs(factor - 1 / 6) > 1e-7 or clip is None or clip.op != "clip" or (
            (clip.attrs["min"], clip.attrs["max"]) != (0.0, 6.0) or _single_consumer(graph, clip.output) is not node
        ):
            continue
        add = producers.get(clip.inputs[0])
        shifted = _scalar_operand(graph, add) if add is not None and add.op == "add" else None
        if shifted is None or shifted[1] != 3.0 or _single_consumer(graph, add.output) is not clip:
            continue
        node.op, node.inputs = "hard_sigmoid", [shifted[0]]
        node.attrs = {"alpha": 1.0 / 6.0, "beta": 0.5}
        node.source_op = "+".join(filter(None, (add.source_op, clip.source_op, node.source_op)))
        for gone in (clip, add):
            graph.nodes.remove(gone)
            graph.tensors.pop(gone.output, None)
        producers = graph.producers()
        changed = True
    for node in list(graph.nodes):  # x * hard_sigmoid(x) -> hard_swish
        if node.op != "mul" or len(node.inputs) != 2:
            continue
        for x, h in (node.inputs, node.inputs[::-1]):
            hs = producers.get(h)
            if hs is not None and hs.op == "hard_sigmoid" and hs.inputs[0] == x and (
                abs(hs.attrs["alpha"] - 1 / 6) < 1e-9 and hs.attrs["beta"] == 0.5
                and _single_consumer(graph, h) is node
            ):
                node.op, node.inputs, node.attrs = "hard_swish", [x], {}
                node.source_op = f"{hs.source_op}+{node.source_op}"
                graph.nodes.remove(hs)
                graph.tensors.pop(hs.output, None)
                changed = True
                break
    return changed


def dense_on_nhwc_as_conv(graph: Graph) -> bool:
    """transpose(0,2,3,1) -> reshape(N*H*W, C) -> linear -> reshape(N, H, W, O): a Dense applied to
    every pixel (Keras Dense on a 4-D tensor, Tensordot in TF) is a 1x1 conv2d on the NCHW
    tensor, followed by one transpose to the NHWC order the rest of that chain expects."""
    changed = False
    producers = graph.producers()
    for lin in list(graph.nodes):
        if lin.op != "linear":
            continue
        flat = producers.get(lin.inputs[0])
        tr = producers.get(flat.inputs[0]) if flat is not None and flat.op == "reshape" else None
        out = _single_consumer(graph, lin.output)
        if tr is None or tr.op != "transpose" or tuple(tr.attrs["perm"]) != (0, 2, 3, 1) or out is None:
            continue
        n, c, h, w = graph.shape(tr.inputs[0])
        o = graph.shape(lin.output)[1]
        if out.op != "reshape" or tuple(graph.shape(out.output)) != (n, h, w, o):
            continue
        if _single_consumer(graph, flat.output) is not lin or _single_consumer(graph, tr.output) is not flat:
            continue
        params = {"weight": np.ascontiguousarray(lin.params["weight"][:, :, None, None])}
        if "bias" in lin.params:
            params["bias"] = lin.params["bias"]
        # the conv replaces tr/flat/lin (named after the linear); the final reshape becomes the transpose
        for gone in (tr, flat):
            graph.nodes.remove(gone)
            graph.tensors.pop(gone.output, None)
        lin.op, lin.inputs, lin.params = "conv2d", [tr.inputs[0]], params
        lin.attrs = {"kernel": (1, 1), "stride": (1, 1), "dilation": (1, 1), "groups": 1, "pads": (0, 0, 0, 0)}
        graph.tensors[lin.output].shape = (n, o, h, w)
        out.op, out.attrs = "transpose", {"perm": (0, 2, 3, 1)}
        producers = graph.producers()
        changed = True
    return changed


_UNARY = {"relu", "clip", "leaky_relu", "elu", "sigmoid", "hard_sigmoid", "tanh", "swish", "hard_swish",
          "gelu", "exp", "sqrt", "rsqrt", "square", "neg"}


def _reaches_transpose(graph: Graph, node: Node) -> bool:
    """Whether a single-consumer chain of elementwise ops from `node` ends in a transpose (only
    then does sinking a transpose make it meet its partner)."""
    while node is not None and node.op in _UNARY:
        node = _single_consumer(graph, node.output)
    return node is not None and node.op == "transpose"


def sink_transposes(graph: Graph) -> bool:
    """Move a transpose below the elementwise op that consumes it, and merge transpose pairs;
    a pair that cancels disappears. Layout round trips (NHWC <-> NCHW) left by the parser go."""
    changed = False
    for t in list(graph.nodes):
        if t.op != "transpose" or t not in graph.nodes:
            continue
        nxt = _single_consumer(graph, t.output)
        if nxt is not None and nxt.op in _UNARY and _reaches_transpose(graph, nxt):
            # x -> T -> U  becomes  x -> U -> T; the transpose takes over U's output (and name)
            pre = graph.unique_name(f"{nxt.name}/pre")
            graph.add_tensor(pre, graph.shape(t.inputs[0]), graph.tensors[nxt.output].dtype)
            graph.tensors.pop(t.output, None)
            nxt.inputs, t.inputs = [t.inputs[0]], [pre]
            t.outputs, t.name = [nxt.output], nxt.name
            nxt.outputs, nxt.name = [pre], pre
            graph.nodes.remove(t)
            graph.nodes.insert(graph.nodes.index(nxt) + 1, t)
            changed = True
            continue
        if nxt is not None and nxt.op == "transpose":
            p, q = tuple(t.attrs["perm"]), tuple(nxt.attrs["perm"])
            composed = tuple(p[i] for i in q)
            nxt.inputs, nxt.attrs = [t.inputs[0]], {"perm": composed}
            graph.nodes.remove(t)
            graph.tensors.pop(t.output, None)
            if composed == tuple(range(len(composed))):
                if nxt.output in graph.outputs:
                    nxt.op, nxt.attrs = "identity", {}  # drop_identities hands its name over
                else:
                    _bypass(graph, nxt, nxt.inputs[0])
            changed = True
    return changed


def _other(node: Node, tensor: str) -> str | None:
    """The other input of a binary node that reads `tensor`."""
    if len(node.inputs) != 2 or tensor not in node.inputs:
        return None
    return node.inputs[1] if node.inputs[0] == tensor else node.inputs[0]


def _layer_norm_at(graph: Graph, rsqrt: Node, producers: dict, consumers: dict) -> tuple | None:
    """Match TF's layer norm around `rsqrt` (Keras 3 spelling):
        mean = reduce_mean(x, A, keepdims); var = reduce_mean(square(x - mean), A, keepdims)
        m = rsqrt(var + eps) [* gamma];  out = x * m + (beta + (-mean) * m)
    Returns (out node, x, axes, eps, gamma, beta) or None."""
    add_eps = producers.get(rsqrt.inputs[0])
    if add_eps is None or add_eps.op != "add":
        return None
    eps = _scalar_operand(graph, add_eps)
    var = producers.get(eps[0]) if eps else None
    if var is None or var.op != "reduce_mean" or not var.attrs.get("keepdims"):
        return None
    sq = producers.get(var.inputs[0])
    diff = producers.get(sq.inputs[0]) if sq is not None and sq.op == "square" else None
    if diff is None or diff.op != "sub":
        return None
    x, mean_t = diff.inputs
    mean = producers.get(mean_t)
    if mean is None or mean.op != "reduce_mean" or mean.inputs[0] != x or (
        tuple(mean.attrs["axes"]) != tuple(var.attrs["axes"]) or not mean.attrs.get("keepdims")
    ):
        return None
    m, gamma = rsqrt, None
    users = consumers.get(rsqrt.output, [])
    if len(users) == 1 and users[0].op == "mul":
        g = graph.const_value(_other(users[0], rsqrt.output) or "")
        if g is not None:
            m, gamma = users[0], g
    m_users = consumers.get(m.output, [])
    if len(m_users) != 2 or any(u.op != "mul" for u in m_users):
        return None
    scaled = next((u for u in m_users if _other(u, m.output) == x), None)
    centred = next((u for u in m_users if u is not scaled), None)
    neg = producers.get(_other(centred, m.output) or "") if centred is not None else None
    if scaled is None or neg is None or neg.op != "neg" or neg.inputs[0] != mean.output:
        return None
    shift, beta = centred, None
    c_users = consumers.get(centred.output, [])
    if len(c_users) == 1 and c_users[0].op == "add":
        b = graph.const_value(_other(c_users[0], centred.output) or "")
        if b is not None:
            shift, beta = c_users[0], b
    outs = consumers.get(scaled.output, [])
    if len(outs) != 1 or outs[0].op != "add" or _other(outs[0], scaled.output) != shift.output:
        return None
    return outs[0], x, tuple(mean.attrs["axes"]), eps[1], gamma, beta


def fuse_layer_norm(graph: Graph) -> bool:
    """The primitive layer norm TF graphs carry (see _layer_norm_at) -> one IR layer_norm."""
    changed = False
    for rsqrt in [n for n in graph.nodes if n.op == "rsqrt"]:
        match = _layer_norm_at(graph, rsqrt, graph.producers(), graph.consumers())
        if match is None:
            continue
        out, x, axes, eps, gamma, beta = match
        out.op, out.inputs, out.attrs = "layer_norm", [x], {"axes": axes, "epsilon": float(eps)}
        out.params = {k: np.asarray(v, np.float32) for k, v in (("gamma", gamma), ("beta", beta)) if v is not None}
        out.source_op = "LayerNorm(Mean+SquaredDifference+Rsqrt+Mul+AddV2)"
        graph.prune()  # the primitive ops are dead now (unless something else reads them)
        changed = True
    return changed


DEFAULT_PASSES: list[Pass] = [
    fold_constants,
    drop_identities,
    merge_duplicates,
    drop_neutral_arith,
    fuse_swish,
    fuse_hard_sigmoid,
    fuse_layer_norm,
    fold_pad_into_conv,
    fold_affine_into_conv,
    arith_to_affine,
    dense_on_nhwc_as_conv,
    sink_transposes,
    transpose_to_reshape,
    merge_reshapes,
    keepdims_reduce,
    fold_flatten_into_linear,
]


def run_passes(graph: Graph, passes: list[Pass], max_rounds: int = 20) -> Graph:
    for _ in range(max_rounds):
        changed = False
        for p in passes:
            changed = p(graph) or changed
        graph.prune()
        if not changed:
            break
    graph.validate()
    return graph


def run_default_passes(graph: Graph) -> Graph:
    """The standard clean-up between parser and emitter; returns the (modified) graph."""
    return run_passes(graph, DEFAULT_PASSES)
