"""Elementwise operators: activations, arithmetic with broadcasting (constants in IR layout), PRELU."""

from __future__ import annotations

from typing import Callable

import numpy as np

from tf_convert.convert.ir.ops import OPS, TFLITE_BUILTINS
from tf_convert.parsers.common.layout import nhwc_reshape

from . import layout
from .op import Op
from .table import TABLE

# the builtins with a fused_activation_function option apply it after the op
_FUSED_OPTION = ("ADD", "SUB", "MUL", "DIV")


def _unary(ir_op: str, attrs: dict) -> Callable[[Op], list[str]]:
    def handler(op: Op) -> list[str]:
        x = op.x()
        return [op.add(ir_op, [x], op.shape(x), dict(attrs))]

    return handler


@TABLE.register("LEAKY_RELU")
def leaky_relu(op: Op) -> list[str]:
    x = op.x()
    return [op.add("leaky_relu", [x], op.shape(x), {"alpha": float(np.float32(op.options.Alpha()))})]


@TABLE.register("GELU")
def gelu(op: Op) -> list[str]:
    x = op.x()
    approximate = "tanh" if op.options is not None and op.options.Approximate() else "none"
    return [op.add("gelu", [x], op.shape(x), {"approximate": approximate})]


def operand(op: Op, k: int, rank: int) -> str:
    """Input k with the rank `rank` numpy broadcasting gives it, in IR layout (a constant is reshaped
    and transposed as a value; an activation by reshape nodes in TFLite's element order)."""
    value = op.value(k)
    if value is not None:
        value = np.asarray(value)
        if value.dtype.kind == "f":
            value = value.astype(np.float32)
        value = value.reshape((1,) * (rank - value.ndim) + value.shape)
        if rank == 4:
            value = value.transpose(layout.TO_NCHW)
        value = np.ascontiguousarray(value).reshape(value.shape)  # a 0-d value stays 0-d
        return op.add("const", [], value.shape, params={"value": value}, suffix=f"/c{k}",
                      out_dtype=str(value.dtype))
    x = op.x(k)
    shape = op.source_shape(k)
    if len(shape) >= rank:
        return x
    return nhwc_reshape(op, x, (1,) * (rank - len(shape)) + tuple(shape))


def binary(op: Op, ir_op: str, out_dtype: str | None = None) -> str:
    rank = max(len(op.source_shape(k)) for k in (0, 1))
    a, b = operand(op, 0, rank), operand(op, 1, rank)
    shape = tuple(np.broadcast_shapes(op.shape(a), op.shape(b)))
    return op.add(ir_op, [a, b], shape, out_dtype=out_dtype)


def _binary(name: str, ir_op: str) -> Callable[[Op], list[str]]:
    def handler(op: Op) -> list[str]:
        # a comparison or logical builtin gives the bool tensor its output is typed as in the file
        boolean = op.tensors[op.op.outputs[0]].type == "BOOL"
        y = binary(op, ir_op, out_dtype="bool" if boolean else None)
        return [op.activation(y) if name in _FUSED_OPTION and op.options is not None else y]

    return handler


# the builtins that are one catalog op (its rows' `tflite`)
for _name, (_ir_op, _attrs) in TFLITE_BUILTINS.items():
    TABLE.register(_name)(_binary(_name, _ir_op) if OPS[_ir_op].kind == "binary" else _unary(_ir_op, _attrs))


@TABLE.register("SQUARED_DIFFERENCE")
def squared_difference(op: Op) -> list[str]:
    d = binary(op, "sub")
    return [op.add("square", [d], op.shape(d), suffix="/square")]


@TABLE.register("PRELU")
def prelu(op: Op) -> list[str]:
    """relu(x) + alpha * min(x, 0): exactly x where x >= 0 and alpha * x elsewhere."""
    x = op.x()
    shape = op.shape(x)
    rank = len(shape)
    alpha = operand(op, 1, rank)
    pos = op.add("relu", [x], shape, suffix="/pos")
    zero = op.add("const", [], (1,) * rank, params={"value": np.zeros((1,) * rank, np.float32)}, suffix="/zero")
    neg = op.add("minimum", [x, zero], shape, suffix="/neg")
    scaled = op.add("mul", [alpha, neg], shape, suffix="/scaled")
    return [op.add("add", [pos, scaled], shape)]
