"""FULLY_CONNECTED (with keep_num_dims), SOFTMAX and LOG_SOFTMAX."""

from __future__ import annotations

import numpy as np

from tf_convert.parsers.common.layout import nhwc_reshape

from . import layout
from .op import Op
from .pieces import from_source, source_ordered
from .table import TABLE
from .weights import float_weight


@TABLE.register("FULLY_CONNECTED")
def fully_connected(op: Op) -> list[str]:
    if int(op.options.WeightsFormat()) != 0:
        raise op.unsupported("shuffled (non-default) weights format")
    weight = float_weight(op, 1, "weights")  # (out, in)
    params = {"weight": weight}
    if op.has(2):
        params["bias"] = float_weight(op, 2, "bias").reshape(-1)
    x = op.x()
    shape = op.source_shape(0)
    units, depth = weight.shape
    if shape[-1] != depth:
        if int(np.prod(shape)) % depth:
            raise op.unsupported(f"weights of {depth} inputs for an input of shape {shape}")
        if op.options.KeepNumDims():
            raise op.unsupported(f"keep_num_dims with weights of {depth} inputs for an input of shape {shape}")
    keep = bool(op.options.KeepNumDims()) and len(shape) > 2
    if keep and len(shape) == 4:  # over the channels of an image: in TFLite's layout, then back
        nhwc = op.add("transpose", [x], shape, {"perm": layout.TO_NHWC}, suffix="/nhwc")
        y = op.add("linear", [nhwc], (*shape[:-1], units), params=params, suffix="/linear")
        y = op.add("transpose", [y], layout.ir_shape((*shape[:-1], units)), {"perm": layout.TO_NCHW},
                   suffix="/nchw")
        return [op.activation(y)]
    if not keep and (len(shape) != 2 or shape[-1] != depth):  # TFLite flattens to (-1, in) in its order
        x = nhwc_reshape(op, x, (int(np.prod(shape)) // depth, depth))
        shape = op.shape(x)
    y = op.add("linear", [x], (*shape[:-1], units), params=params)
    return [op.activation(y)]


def _softmax(op: Op, ir_op: str) -> list[str]:
    x = op.x()
    rank = len(op.shape(x))
    if ir_op == "softmax" and float(op.options.Beta()) != 1.0:
        raise op.unsupported(f"beta={float(op.options.Beta())} (only 1.0 is exact in every target)")
    return [op.add(ir_op, [x], op.shape(x), {"axis": layout.ir_axis(-1, rank)})]


@TABLE.register("SOFTMAX")
def softmax(op: Op) -> list[str]:
    return _softmax(op, "softmax")


@TABLE.register("LOG_SOFTMAX")
def log_softmax(op: Op) -> list[str]:
    return _softmax(op, "log_softmax")


@TABLE.register("BATCH_MATMUL")
def batch_matmul(op: Op) -> list[str]:
    """x @ y over the last two axes of TFLite's own layout (adj_x / adj_y: that operand's last two axes
    swapped first), leading axes broadcast; a constant y shared by every batch is a linear layer."""
    adjoint = [bool(op.options.AdjX()), bool(op.options.AdjY())] if op.options is not None else [False, False]
    a_shape, b_shape = op.source_shape(0), op.source_shape(1)
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise op.unsupported(f"operands of shapes {a_shape} and {b_shape} (rank 2 or more)")
    a_rows, a_cols = a_shape[-2:][::-1] if adjoint[0] else a_shape[-2:]
    b_rows, b_cols = b_shape[-2:][::-1] if adjoint[1] else b_shape[-2:]
    if a_cols != b_rows:
        raise op.unsupported(f"operands of shapes {a_shape} and {b_shape} (adj_x={adjoint[0]}, adj_y={adjoint[1]})")
    out = (*np.broadcast_shapes(a_shape[:-2], b_shape[:-2]), a_rows, b_cols)
    weight = op.value(1)
    if weight is not None and weight.dtype.kind == "f" and int(np.prod(weight.shape[:-2])) == 1 \
            and len(out) == len(a_shape) and len(a_shape) != 4 and not adjoint[0]:
        matrix = weight.reshape(weight.shape[-2:])
        w = np.ascontiguousarray(matrix if adjoint[1] else matrix.T, dtype=np.float32)  # linear: x @ w.T
        return [op.add("linear", [op.x()], out, params={"weight": w})]
    a, b = (_matrix_operand(op, k, adjoint[k]) for k in (0, 1))
    return [from_source(op, op.add("matmul", [a, b], out, suffix="/matmul" if len(out) == 4 else ""))]


def _matrix_operand(op: Op, k: int, adjoint: bool) -> str:
    """Operand k in TFLite's element order, its last two axes swapped for an adjoint."""
    x = source_ordered(op, k)
    if not adjoint:
        return x
    shape = op.shape(x)
    perm = (*range(len(shape) - 2), len(shape) - 1, len(shape) - 2)
    return op.add("transpose", [x], tuple(shape[p] for p in perm), {"perm": perm}, suffix=f"/adjoint{k}")
