"""Shape functions: sources, pass-through, shape-of and elementwise ops."""

from __future__ import annotations

from tf_convert.convert.ir.ops import OPS, TF_OPS

from ..static import ShapeError, TensorShape
from .base import Node, broadcast, merge, shape_fn

# ---- sources and pass-through ------------------------------------------------------------------

@shape_fn("Const")
def _const(node: Node) -> list:
    op = node.op
    if op.name in node.weights:
        return [list(node.weights[op.name].shape)]
    return [[d.size for d in op.node_def.attr["value"].tensor.tensor_shape.dim]]


@shape_fn("Placeholder", "PlaceholderWithDefault")
def _placeholder(node: Node) -> list:
    shape = node.attr("shape")
    dims = TensorShape.from_proto(shape).dims if shape is not None else None
    if node.op.type == "PlaceholderWithDefault" and shape is None:
        dims = node.dims(0)
    return [dims]  # a PlaceholderWithDefault is as open as its attr says: it may be fed


# the catalog's one-to-one TF ops (a row's `tf`): a unary op keeps its input's shape, a binary one broadcasts
_CATALOG_SAME = tuple(tf for tf, (ir_op, _) in TF_OPS.items() if OPS[ir_op].kind == "unary")
_CATALOG_BROADCASTING = tuple(tf for tf, (ir_op, _) in TF_OPS.items() if OPS[ir_op].kind == "binary")
_SAME_SHAPE = ("Identity", "StopGradient", "Snapshot", "PreventGradient", "CheckNumerics", "Erf", "Erfc",
               "LeakyRelu", "Softmax", "LogSoftmax", "Cast", "ZerosLike", "OnesLike", "Cumsum", "Cumprod",
               "ClipByValue")


@shape_fn(*_SAME_SHAPE, *_CATALOG_SAME)
def _same(node: Node) -> list:
    return [node.dims(0)]


@shape_fn("EnsureShape")
def _ensure_shape(node: Node) -> list:
    return [merge(node.dims(0), TensorShape.from_proto(node.attr("shape")).dims, "EnsureShape: ")]


@shape_fn("IdentityN")
def _identity_n(node: Node) -> list:
    return [node.dims(i) for i in range(len(node.op.inputs))]


@shape_fn("Shape")
def _shape(node: Node) -> list:
    d = node.dims(0)
    return [[None if d is None else len(d)]]


@shape_fn("ShapeN")
def _shape_n(node: Node) -> list:
    return [[None if node.dims(i) is None else len(node.dims(i))] for i in range(len(node.op.inputs))]


@shape_fn("Size", "Rank")
def _scalar(node: Node) -> list:
    return [[]]


# ---- elementwise -------------------------------------------------------------------------------

_BROADCASTING = ("Mul", "Div", "Pow", "SquaredDifference", "SelectV2", "Xlogy", "Xlog1py", "Xdivy", "MulNoNan")


@shape_fn(*_BROADCASTING, *_CATALOG_BROADCASTING)
def _broadcasting(node: Node) -> list:
    out = node.dims(0)
    for i in range(1, len(node.op.inputs)):
        out = broadcast(out, node.dims(i))
    return [out]


@shape_fn("AddN")
def _add_n(node: Node) -> list:
    out = node.dims(0)
    for i in range(1, len(node.op.inputs)):
        out = merge(out, node.dims(i), "AddN: ")
    return [out]


@shape_fn("Select")
def _select(node: Node) -> list:
    return [merge(node.dims(1), node.dims(2), "Select: ")]


@shape_fn("BiasAdd", "BiasAddV1")
def _bias_add(node: Node) -> list:
    x, b = node.dims(0), node.dims(1)
    if x is not None and b is not None and b and len(x) >= 2:
        c = x[1] if node.attr("data_format", "NHWC").startswith("NC") and len(x) >= 3 else x[-1]
        if c is not None and b[0] is not None and c != b[0]:
            raise ShapeError(f"BiasAdd: bias of size {b[0]} for {c} channels")
    return [x]


# ---- TopK, AccumulateN, ApproximateEqual, Bucketize, L2Loss ------------------------------------------

@shape_fn("TopKV2", "TopK")
def _top_k(node: Node) -> list:
    x = node.dims(0)
    k = node.ints(1) if node.op.type == "TopKV2" else [int(node.attr("k"))]
    if x is None or not x:
        return [None, None]
    dims = list(x[:-1]) + [k[0] if k is not None else None]
    return [dims, list(dims)]


@shape_fn("AccumulateNV2")
def _accumulate_n(node: Node) -> list:
    return _add_n(node)


@shape_fn("ApproximateEqual", "Bucketize")
def _first_input_shape(node: Node) -> list:
    return [node.dims(0)]  # TF's own rule for both: x's shape (ApproximateEqual does not merge y's)


@shape_fn("L2Loss")
def _l2_loss(node: Node) -> list:
    return [[]]
