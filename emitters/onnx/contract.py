"""The ONNX handler contract: the table (TABLE), what a handler sees (Ctx) and what it gives back (Emitted).

Handlers are pure: `handler(ctx)` builds its nodes and initializers in a local `Builder` and returns them;
the caller (model.py) collects everything into one GraphProto.

Naming: IR tensor names are sanitised (characters outside [A-Za-z0-9_./-] become '_', clashes get
a numeric suffix). Names a handler invents are `<node>::<suffix>`; ':' never survives
sanitising, and `<node>` is the node's (unique) output name, so invented names cannot collide with
IR tensors or with another node's names.

Padding follows `convert.padding` plans; ONNX takes per-side pads ``[t, l, b, r]`` natively, so
the plans fold everything into the layer and no pad layer appears unless a plan asks for one.
Opset differences handled by the family modules: ReduceMean/ReduceMax take `axes` as an input from opset 18,
LayerNormalization exists from 17, HardSwish from 14, Gelu from 20 (older: exact decompositions).

A handler's optional limit check `check(ctx) -> hint | None` (nodes it cannot express, at
`ctx.options.opset`) is registered with it; `unsupported()` in __init__.py runs them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.ir.lazy import is_lazy
from tf_convert.emitters.base import HandlerTable, NodeContext

_UNSAFE = re.compile(r"[^A-Za-z0-9_./\-]")


def sanitize(name: str) -> str:
    return _UNSAFE.sub("_", name) or "_"


def tensor_names(graph: ir.Graph) -> dict[str, str]:
    """IR tensor name -> ONNX name, deterministic and collision-free."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    ordered = list(graph.inputs) + [o for n in graph.nodes for o in n.outputs]
    for t in ordered:
        if t in names:
            continue
        base = sanitize(t)
        name, i = base, 1
        while name in taken:
            name, i = f"{base}_{i}", i + 1
        names[t] = name
        taken.add(name)
    return names


@dataclass(frozen=True)
class Ctx(NodeContext):
    """One node's context: node, graph, OnnxOptions, plus the IR -> ONNX tensor names."""

    names: Mapping[str, str]
    # a size-free model's tensors -> their axes that follow the runtime size (convert.padding.sizes.size_flow)
    free_axes: Mapping[str, frozenset[int]] = field(default_factory=dict)

    @property
    def opset(self) -> int:
        return int(self.options.opset)

    def shape(self, tensor: str) -> tuple[int, ...]:
        return self.graph.shape(tensor)

    def dtype(self, tensor: str) -> np.dtype:
        return np.dtype(self.graph.tensors[tensor].dtype)


DEFERRED_BYTES = 1024  # initializers this big are written straight to the file, not held in the ModelProto


@dataclass
class Emitted:
    nodes: list[Any] = field(default_factory=list)  # onnx.NodeProto
    initializers: list[Any] = field(default_factory=list)  # onnx.TensorProto
    # initializer name -> its lazy value: the TensorProto holds name, type and dims only until written
    deferred: dict[str, Any] = field(default_factory=dict)
    pad_layers: list[dict[str, Any]] = field(default_factory=list)


class Builder:
    """Accumulates one IR node's ONNX nodes; `done()` hands them over."""

    def __init__(self, ctx: Ctx, node: ir.Node):
        from onnx import helper, numpy_helper  # lazily: `import emitters` stays light

        self._helper, self._numpy_helper = helper, numpy_helper
        self.ctx = ctx
        self.node = node
        self.out = ctx.names[node.output]
        # the output's ONNX name is unique among all tensors (sanitised node names might clash)
        self.prefix = self.out
        self._emitted = Emitted()
        self._count = 0
        self._consts: set[str] = set()

    # ---- names -------------------------------------------------------------------------------
    def x(self, index: int = 0) -> str:
        """ONNX name of the IR node's index-th input."""
        return self.ctx.names[self.node.inputs[index]]

    def fresh(self, suffix: str) -> str:
        self._count += 1
        return f"{self.prefix}::{suffix}{self._count}"

    # ---- building ----------------------------------------------------------------------------
    def const(
        self, suffix: str, value: np.ndarray | float | int | list, dtype: Any = None, name: str | None = None
    ) -> str:
        """An initializer named `<node>::<suffix>` (made unique within the node) or `name`. A value of
        1 KB or more is kept aside (`deferred`) and streamed into the file when the model is written
        (model.py's save_checked); a lazy one (a checkpoint weight) is read only then."""
        if name is None:
            name = f"{self.prefix}::{suffix}"
            if name in self._consts:
                name = self.fresh(suffix)
        self._consts.add(name)
        if is_lazy(value) and value.nbytes >= DEFERRED_BYTES:
            value = value.astype(dtype if dtype is not None else np.float32)
        else:  # (a small lazy value is read now: it stays inline, as an eager one)
            value = np.array(np.asarray(value, dtype=dtype if dtype is not None else np.float32), order="C")
        if value.nbytes >= DEFERRED_BYTES:
            from onnx import TensorProto

            self._emitted.deferred[name] = value
            self._emitted.initializers.append(TensorProto(
                name=name, data_type=self._helper.np_dtype_to_tensor_dtype(value.dtype), dims=value.shape))
            return name
        arr = value
        # np.array keeps 0-d scalars 0-d (Clip/Pad want true scalars); ascontiguousarray would not
        self._emitted.initializers.append(self._numpy_helper.from_array(np.array(arr, order="C"), name))
        return name

    def ints(self, suffix: str, values: Any) -> str:
        return self.const(suffix, np.asarray(list(values), dtype=np.int64), np.int64)

    def op(self, op_type: str, inputs: list[str], out: str | None = None, **attrs: Any) -> str:
        """Append one node; returns its (single) output name. `out=None` invents one."""
        out = out or self.fresh(op_type)
        name = self.prefix if out == self.out else f"{self.prefix}::{op_type}{self._count}"
        self._emitted.nodes.append(self._helper.make_node(op_type, inputs, [out], name=name, **attrs))
        return out

    def op_outputs(self, op_type: str, inputs: list[str], outs: list[str], **attrs: Any) -> None:
        """Append one node with several outputs ('' for an output left unused)."""
        name = self.prefix if self.out in outs else self.fresh(op_type)
        self._emitted.nodes.append(self._helper.make_node(op_type, inputs, outs, name=name, **attrs))

    def pad_layers(self, records: Any) -> None:
        """Record the plan's separate layers (convert.padding.PadRecord) in `pad_layers`."""
        self._emitted.pad_layers += [r.entry(self.node.name) for r in records]

    def done(self) -> Emitted:
        return self._emitted


TABLE = HandlerTable("onnx", "no ONNX lowering for this IR op")

Handler = Callable[[Ctx], Emitted]


def positive_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def reduce_op(b: Builder, op_type: str, x: str, axes: list[int], keepdims: bool, out: str | None = None) -> str:
    """ReduceMean/ReduceMax: `axes` is an attribute before opset 18 and an input from 18. No axes (a rank-0
    input, or TF's empty list) reduce nothing: an Identity (ONNX's empty axes would reduce every axis)."""
    if not axes:
        return b.op("Identity", [x], out)
    if b.ctx.opset >= 18:
        return b.op(op_type, [x, b.ints("axes", axes)], out, keepdims=int(keepdims))
    return b.op(op_type, [x], out, axes=list(axes), keepdims=int(keepdims))


def multi_output(builder: Builder, op_type: str, inputs: list[str], outputs: list[str], **attrs: Any) -> list[str]:
    """Append one node with several outputs (TopK's values and indices) to `builder`'s nodes."""
    name = f"{builder.prefix}::{op_type}{builder._count}"
    builder.done().nodes.append(builder._helper.make_node(op_type, inputs, outputs, name=name, **attrs))
    return outputs
