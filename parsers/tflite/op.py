"""What an operator handler receives: one TFLite operator, its inputs as IR tensors or known values, and
helpers to add IR nodes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.errors import InputError, Unsupported, UnsupportedError

from . import layout
from .schema import ACTIVATIONS, PADDINGS, Operator, Tensor


@dataclass
class Op:
    graph: ir.Graph
    op: Operator
    tensors: list[Tensor]  # the subgraph's tensors
    ir: dict[int, str]  # tensor index -> IR tensor (activations)
    values: dict[int, np.ndarray]  # tensor index -> known value (constants, folded shapes), TFLite layout
    # another subgraph of the file inlined on IR tensors (its index, its inputs): its outputs (IF, WHILE)
    call: Callable[..., list] | None = None
    # another subgraph as a nested IR graph of its own (its index, its inputs, a name): a run-time WHILE's
    # condition and body, an IF's branches
    nested: Callable[..., ir.Graph] | None = None

    # ---- queries ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The IR base name: the operator's first output's name in the file."""
        first = self.op.outputs[0] if self.op.outputs else -1
        return self.tensors[first].name if 0 <= first < len(self.tensors) else f"op_{self.op.index}"

    @property
    def options(self) -> Any:
        return self.op.options

    def tensor(self, k: int) -> Tensor:
        return self.tensors[self._input(k)]

    def _input(self, k: int) -> int:
        """Input k's tensor index; a one-line error when the file leaves out an input the operator needs."""
        if not self.has(k):
            given = f"leaves out input {k} (-1)" if k < len(self.op.inputs) else \
                f"gives it {len(self.op.inputs)} input(s), no input {k}"
            raise InputError(f"operator {self.op.index} {self.op.name} ('{self.name}'): the file {given}, which "
                             f"{self.op.name} needs; the file is corrupt")
        return self.op.inputs[k]

    def has(self, k: int) -> bool:
        return k < len(self.op.inputs) and self.op.inputs[k] >= 0

    def value(self, k: int) -> np.ndarray | None:
        """Input k's value when it is known (a constant), else None."""
        return self.values.get(self.op.inputs[k]) if self.has(k) else None

    def const(self, k: int, what: str) -> np.ndarray:
        """Input k's value; a refusal naming `what` when the file computes it at run time."""
        value = self.value(k)
        if value is None:
            raise self.unsupported(f"{what} (input {k}) is computed at run time; only a constant is supported")
        return value

    def x(self, k: int = 0) -> str:
        """Input k as an IR tensor (a constant becomes a const node, in IR layout)."""
        index = self._input(k)
        if index in self.ir:
            return self.ir[index]
        value = self.values[index]
        if value.dtype.kind == "f":
            value = value.astype(np.float32)
        if value.ndim == 4:
            value = value.transpose(layout.TO_NCHW)
        node = self.graph.unique_name(self.tensors[index].name)
        value = np.ascontiguousarray(value).reshape(value.shape)  # a 0-d value stays 0-d
        out = self.graph.add_node("const", node, [], value.shape, params={"value": value},
                                  source_op="constant", out_dtype=str(value.dtype))
        self.ir[index] = out
        return out

    def shape(self, tensor: str | None = None) -> tuple[int, ...]:
        return self.graph.shape(tensor or self.x())

    def source_shape(self, k: int = 0) -> tuple[int, ...]:
        """Input k's shape as TFLite sees it (NHWC for rank 4)."""
        value = self.value(k)
        return tuple(value.shape) if value is not None else layout.source_shape(self.shape(self.x(k)))

    def dtype(self, tensor: str) -> str:
        return self.graph.tensors[tensor].dtype

    def padding(self) -> str:
        return PADDINGS.get(int(self.options.Padding()), "?")

    def unsupported(self, hint: str) -> UnsupportedError:
        return UnsupportedError([Unsupported(self.op.name, self.name, hint)])

    # ---- building --------------------------------------------------------------------------
    def add(self, op: str, inputs: Sequence[str], shape: Sequence[int], attrs: dict[str, Any] | None = None,
            params: dict[str, np.ndarray] | None = None, suffix: str = "", out_dtype: str | None = None) -> str:
        name = self.graph.unique_name(self.name + suffix)
        return self.graph.add_node(op, name, list(inputs), shape, attrs, params, source_op=self.op.name,
                                   out_dtype=out_dtype)

    def activation(self, x: str) -> str:
        """The operator's fused activation applied to x (its `fused_activation_function` option)."""
        return fused(self, x, ACTIVATIONS.get(int(self.options.FusedActivationFunction()), "?"))


# fused_activation_function -> (IR op, attrs); SIGN_BIT is never written by the converter
_FUSED = {"RELU": ("relu", {}), "RELU6": ("clip", {"min": 0.0, "max": 6.0}),
          "RELU_N1_TO_1": ("clip", {"min": -1.0, "max": 1.0}), "TANH": ("tanh", {})}


def fused(op: Op, x: str, name: str) -> str:
    if name == "NONE":
        return x
    if name not in _FUSED:
        raise op.unsupported(f"fused activation {name} is not supported")
    ir_op, attrs = _FUSED[name]
    return op.add(ir_op, [x], op.shape(x), dict(attrs), suffix=f"/{name.lower()}")
