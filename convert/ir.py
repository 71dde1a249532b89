"""The neutral intermediate representation every parser produces and every emitter consumes.

Conventions (the contract between parsers/ and emitters/):

* Nodes are kept in topological order. Every tensor has a static shape and a dtype.
* Rank-4 activations are NCHW, whatever the source layout; conv weights are OIHW
  (``(out, in / groups, kh, kw)``); transposed-conv weights are IOHW (PyTorch's
  ``ConvTranspose2d`` layout: ``(in, out / groups, kh, kw)``); dense weights are ``(out, in)``.
* Spatial pads are explicit integers ``pads = (top, bottom, left, right)``; see ``convert.padding``.
* Constants that feed binary ops are ``const`` nodes whose value is already laid out for NCHW
  broadcasting (numpy rules against the other operand).

The op catalog (``OPS``) documents every op: its attributes, its parameters (weights) and meaning.
Emitters register one handler per op name; ``check_graph`` rejects anything outside the catalog.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

IR_VERSION = 1


@dataclass(frozen=True)
class OpSpec:
    attrs: tuple[str, ...]
    params: tuple[str, ...]
    doc: str


# name -> spec. attrs marked with '?' are optional.
OPS: dict[str, OpSpec] = {
    # ---- spatial ------------------------------------------------------------------------------
    "conv2d": OpSpec(
        ("kernel", "stride", "dilation", "groups", "pads"),
        ("weight", "bias?"),
        "2-D cross-correlation. weight OIHW. pads=(t,b,l,r) zero padding. "
        "Depthwise is groups == in_channels (channel multiplier = out / in).",
    ),
    "conv_transpose2d": OpSpec(
        ("kernel", "stride", "dilation", "groups", "crop", "output_size"),
        ("weight", "bias?"),
        "Transposed conv. weight IOHW. Compute the full output (n-1)*s + e per axis with no padding, "
        "then keep rows [crop_top, crop_top + out_h) and cols [crop_left, crop_left + out_w) where "
        "crop=(top, left) and output_size=(out_h, out_w). Rows past the full output are zeros "
        "(before the bias is added). See padding.transposed_conv_crop.",
    ),
    "max_pool2d": OpSpec(
        ("kernel", "stride", "pads"),
        (),
        "Max pooling; padded elements are ignored (as if -inf). Output size floor((n+pt+pb-k)/s)+1.",
    ),
    "avg_pool2d": OpSpec(
        ("kernel", "stride", "pads", "count_include_pad"),
        (),
        "Average pooling. count_include_pad=False (TF): divide by the number of real (unpadded) "
        "elements in each window. Output size floor((n+pt+pb-k)/s)+1.",
    ),
    "pad": OpSpec(
        ("pads", "mode", "value"),
        (),
        "Pad. pads is a list of (before, after) per axis, in IR axis order. "
        "mode in {'constant', 'reflect', 'symmetric'}; value is used by 'constant'.",
    ),
    # ---- per-channel / normalisation ---------------------------------------------------------
    "channel_affine": OpSpec(
        ("axis",),
        ("scale", "shift"),
        "y = x * scale + shift, scale and shift 1-D over `axis` (1 for NCHW; last for 2-D). "
        "Inference batch norm folds into this.",
    ),
    "layer_norm": OpSpec(
        ("axes", "epsilon"),
        ("gamma?", "beta?"),
        "Normalise over `axes` (IR axes): (x-mean)/sqrt(var+eps)*gamma+beta; gamma/beta shaped for "
        "broadcasting against x.",
    ),
    # ---- dense / shape -----------------------------------------------------------------------
    "linear": OpSpec((), ("weight", "bias?"), "y = x @ weight.T + bias, weight (out, in); x 2-D."),
    "reshape": OpSpec(("shape",), (), "Row-major reshape to `shape` (IR layout, full static shape)."),
    "transpose": OpSpec(("perm",), (), "numpy.transpose(x, perm)."),
    "concat": OpSpec(("axis",), (), "Concatenate inputs along IR axis."),
    "slice": OpSpec(("begin", "end"), (), "x[begin[i]:end[i]] on every axis (static, step 1)."),
    "reduce_mean": OpSpec(("axes", "keepdims"), (), "Mean over IR axes."),
    "reduce_max": OpSpec(("axes", "keepdims"), (), "Max over IR axes."),
    "softmax": OpSpec(("axis",), (), "Softmax over IR axis."),
    # ---- elementwise -------------------------------------------------------------------------
    "add": OpSpec((), (), "a + b, numpy broadcasting."),
    "sub": OpSpec((), (), "a - b, numpy broadcasting."),
    "mul": OpSpec((), (), "a * b, numpy broadcasting."),
    "div": OpSpec((), (), "a / b, numpy broadcasting."),
    "maximum": OpSpec((), (), "max(a, b), numpy broadcasting."),
    "minimum": OpSpec((), (), "min(a, b), numpy broadcasting."),
    "relu": OpSpec((), (), "max(x, 0)."),
    "clip": OpSpec(("min", "max"), (), "min(max(x, min), max). ReLU6 is clip(0, 6)."),
    "leaky_relu": OpSpec(("alpha",), (), "x if x >= 0 else alpha * x."),
    "elu": OpSpec(("alpha",), (), "x if x > 0 else alpha * (exp(x) - 1)."),
    "sigmoid": OpSpec((), (), "1 / (1 + exp(-x))."),
    "hard_sigmoid": OpSpec(
        ("alpha", "beta"), (), "clip(alpha * x + beta, 0, 1) (Keras 3: alpha=1/6, beta=0.5)."
    ),
    "tanh": OpSpec((), (), "tanh(x)."),
    "swish": OpSpec((), (), "x * sigmoid(x)."),
    "hard_swish": OpSpec((), (), "x * relu6(x + 3) / 6."),
    "gelu": OpSpec(("approximate",), (), "GELU; approximate in {'none', 'tanh'}."),
    "exp": OpSpec((), (), "exp(x)."),
    "sqrt": OpSpec((), (), "sqrt(x)."),
    "rsqrt": OpSpec((), (), "1 / sqrt(x)."),
    "square": OpSpec((), (), "x * x."),
    "neg": OpSpec((), (), "-x."),
    "identity": OpSpec((), (), "y = x (kept only where a graph output needs its own name)."),
    "const": OpSpec((), ("value",), "A constant tensor; value already in IR layout."),
}


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"


@dataclass
class Node:
    name: str
    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    params: dict[str, np.ndarray] = field(default_factory=dict)
    source_op: str = ""  # the source framework's op type(s), for messages and `inspect`

    @property
    def output(self) -> str:
        return self.outputs[0]


@dataclass
class Graph:
    name: str
    nodes: list[Node] = field(default_factory=list)
    tensors: dict[str, Tensor] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    # IR tensor name -> the source framework's tensor name (e.g. "input:0")
    source_names: dict[str, str] = field(default_factory=dict)
    # IR tensor name -> layout of that tensor in the source ("NHWC", "NCHW" or "" for other ranks)
    source_layouts: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    # ---- queries ---------------------------------------------------------------------------
    def shape(self, tensor: str) -> tuple[int, ...]:
        return self.tensors[tensor].shape

    def producer(self, tensor: str) -> Node | None:
        for node in self.nodes:
            if tensor in node.outputs:
                return node
        return None

    def producers(self) -> dict[str, Node]:
        return {out: node for node in self.nodes for out in node.outputs}

    def consumers(self) -> dict[str, list[Node]]:
        result: dict[str, list[Node]] = {}
        for node in self.nodes:
            for name in node.inputs:
                result.setdefault(name, []).append(node)
        return result

    def const_value(self, tensor: str) -> np.ndarray | None:
        """The value of `tensor` if a `const` node produces it, else None."""
        node = self.producer(tensor)
        if node is not None and node.op == "const":
            return node.params["value"]
        return None

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    # ---- building --------------------------------------------------------------------------
    def add_tensor(self, name: str, shape: Iterable[int], dtype: str = "float32") -> str:
        self.tensors[name] = Tensor(name, tuple(int(d) for d in shape), dtype)
        return name

    def add_node(
        self,
        op: str,
        name: str,
        inputs: list[str],
        out_shape: Iterable[int],
        attrs: dict[str, Any] | None = None,
        params: dict[str, np.ndarray] | None = None,
        source_op: str = "",
        out_dtype: str = "float32",
    ) -> str:
        """Append a single-output node; its output tensor is named after the node."""
        if op not in OPS:
            raise ValueError(f"unknown IR op {op!r}")
        out = name
        self.add_tensor(out, out_shape, out_dtype)
        self.nodes.append(
            Node(name, op, list(inputs), [out], dict(attrs or {}), dict(params or {}), source_op)
        )
        return out

    def unique_name(self, base: str) -> str:
        taken = set(self.tensors) | {n.name for n in self.nodes}
        if base not in taken:
            return base
        i = 1
        while f"{base}_{i}" in taken:
            i += 1
        return f"{base}_{i}"

    def prune(self) -> None:
        """Drop nodes and tensors that no graph output depends on."""
        producers = self.producers()
        live: set[str] = set()
        stack = list(self.outputs)
        while stack:
            t = stack.pop()
            if t in live:
                continue
            live.add(t)
            node = producers.get(t)
            if node is not None:
                stack.extend(node.inputs)
        self.nodes = [n for n in self.nodes if any(o in live for o in n.outputs)]
        keep = live | set(self.inputs)
        self.tensors = {k: v for k, v in self.tensors.items() if k in keep}

    def rename_tensor(self, old: str, new: str) -> None:
        """Make every consumer (and the graph outputs) read `new` instead of `old`."""
        for node in self.nodes:
            node.inputs = [new if i == old else i for i in node.inputs]
        self.outputs = [new if o == old else o for o in self.outputs]

    def validate(self) -> None:
        """Topological order, known ops, every tensor declared."""
        known = set(self.inputs)
        for node in self.nodes:
            if node.op not in OPS:
                raise ValueError(f"node {node.name}: unknown IR op {node.op!r}")
            for i in node.inputs:
                if i not in known:
                    raise ValueError(f"node {node.name}: input {i!r} is not produced before it")
            for o in node.outputs:
                if o not in self.tensors:
                    raise ValueError(f"node {node.name}: output {o!r} has no tensor entry")
                known.add(o)
        for o in self.outputs:
            if o not in known:
                raise ValueError(f"graph output {o!r} is not produced")


# ---- save / load -------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)  # "inf" / "-inf" survive JSON this way
    return value


def save(graph: Graph, directory: str | Path) -> None:
    """Write `graph.json` (structure) and `weights.npz` (parameters) into `directory`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    nodes = []
    for index, node in enumerate(graph.nodes):
        keys = {}
        for pname, value in node.params.items():
            key = f"{index}/{pname}"
            arrays[key] = np.asarray(value)
            keys[pname] = key
        nodes.append(
            {
                "name": node.name,
                "op": node.op,
                "inputs": node.inputs,
                "outputs": node.outputs,
                "attrs": {k: _jsonable(v) for k, v in node.attrs.items()},
                "params": keys,
                "source_op": node.source_op,
            }
        )
    doc = {
        "ir_version": IR_VERSION,
        "name": graph.name,
        "inputs": graph.inputs,
        "outputs": graph.outputs,
        "tensors": {t.name: {"shape": list(t.shape), "dtype": t.dtype} for t in graph.tensors.values()},
        "source_names": graph.source_names,
        "source_layouts": graph.source_layouts,
        "metadata": _jsonable(graph.metadata),
        "nodes": nodes,
    }
    (directory / "graph.json").write_text(json.dumps(doc, indent=1))
    np.savez(directory / "weights.npz", **arrays)


def _restore(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_restore(v) for v in value)
    if value in ("inf", "-inf", "nan"):
        return float(value)
    return value


def load(directory: str | Path) -> Graph:
    directory = Path(directory)
    doc = json.loads((directory / "graph.json").read_text())
    with np.load(directory / "weights.npz") as weights:
        arrays = {k: weights[k] for k in weights.files}
    graph = Graph(
        name=doc["name"],
        inputs=list(doc["inputs"]),
        outputs=list(doc["outputs"]),
        source_names=dict(doc.get("source_names", {})),
        source_layouts=dict(doc.get("source_layouts", {})),
        metadata=dict(doc.get("metadata", {})),
    )
    for name, t in doc["tensors"].items():
        graph.tensors[name] = Tensor(name, tuple(t["shape"]), t["dtype"])
    for n in doc["nodes"]:
        graph.nodes.append(
            Node(
                n["name"],
                n["op"],
                list(n["inputs"]),
                list(n["outputs"]),
                {k: _restore(v) for k, v in n["attrs"].items()},
                {k: arrays[key] for k, key in n["params"].items()},
                n.get("source_op", ""),
            )
        )
    return graph
