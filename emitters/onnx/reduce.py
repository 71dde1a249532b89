"""The ONNX handlers of the reduce family: reductions, argmax and softmax."""

from __future__ import annotations

import numpy as np

from tf_convert.emitters.base import NodeContext

from .contract import TABLE, Builder, Ctx, Emitted, Handler, multi_output, positive_axis, reduce_op


def _reduction(op_type: str) -> Handler:
    def handler(ctx: Ctx) -> Emitted:
        node = ctx.node
        b = Builder(ctx, node)
        rank = len(ctx.shape(node.inputs[0]))
        axes = [positive_axis(int(a), rank) for a in node.attrs["axes"]]
        reduce_op(b, op_type, b.x(), axes, bool(node.attrs.get("keepdims", False)), b.out)
        return b.done()

    return handler


@TABLE.register("reduce_mean")
def reduce_mean(ctx: Ctx) -> Emitted:
    """ReduceMean; of integers TF's: the sum in int64 (no wrap, no ReduceMean of int8) divided by the count,
    truncated toward zero as ONNX's integer Div is, cast back."""
    from onnx import TensorProto, helper

    if ctx.dtype(ctx.node.output).kind == "f":
        return _reduction("ReduceMean")(ctx)
    b = Builder(ctx, ctx.node)
    shape, axes = ctx.shape(ctx.node.inputs[0]), _axes(ctx)
    wide = b.op("Cast", [b.x()], to=TensorProto.INT64)
    total = _axes_reduce(b, "ReduceSum", wide, None)
    count = int(np.prod([shape[a] for a in axes])) if axes else 1
    mean = b.op("Div", [total, b.const("count", np.asarray(count, np.int64), np.int64)])
    b.op("Cast", [mean], b.out, to=helper.np_dtype_to_tensor_dtype(ctx.dtype(ctx.node.output)))
    return b.done()


TABLE.register("reduce_max")(_reduction("ReduceMax"))


@TABLE.register("softmax")
def softmax(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    b.op("Softmax", [b.x()], b.out, axis=int(node.attrs["axis"]))  # single-axis semantics from opset 13
    return b.done()


@TABLE.register("argmax")
def argmax(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    keep = int(bool(node.attrs.get("keepdims")))
    if ctx.dtype(node.output) == np.int64:
        b.op("ArgMax", [b.x()], b.out, axis=int(node.attrs["axis"]), keepdims=keep)
    else:  # int32 (TF's output_type)
        y = b.op("ArgMax", [b.x()], axis=int(node.attrs["axis"]), keepdims=keep)
        b.op("Cast", [y], b.out, to=6)  # TensorProto.INT32
    return b.done()


# ---- sum/prod/min/all/any, argmin, cumsum, cumprod (a running Mul), log-softmax, top-k ----

def _axes(ctx: Ctx) -> list[int]:
    rank = len(ctx.shape(ctx.node.inputs[0]))
    return sorted(int(a) % rank for a in ctx.attrs["axes"])


def _axes_reduce(b: Builder, op_type: str, x: str, out: str | None) -> str:
    """ReduceSum takes `axes` as an input from opset 13, the others from 18. No axes reduce nothing (reduce_op)."""
    ctx, keep = b.ctx, int(bool(b.ctx.attrs.get("keepdims")))
    if not _axes(ctx):
        return b.op("Identity", [x], out)
    if ctx.opset >= (13 if op_type == "ReduceSum" else 18):
        return b.op(op_type, [x, b.ints("axes", _axes(ctx))], out, keepdims=keep)
    return b.op(op_type, [x], out, axes=_axes(ctx), keepdims=keep)


# an integer product is a chain of Mul along each reduced axis: at most this many factors
MAX_INTEGER_FACTORS = 256


def _product_limits(ctx: NodeContext) -> str | None:
    if ctx.graph.tensors[ctx.node.output].dtype.startswith("float"):
        return None
    shape = ctx.graph.shape(ctx.node.inputs[0])
    factors = sum(shape[int(a) % len(shape)] for a in ctx.node.attrs["axes"])
    if factors <= MAX_INTEGER_FACTORS:
        return None
    return (f"an integer product over {factors} elements: onnxruntime's ReduceProd saturates where TF's wraps, "
            f"and a chain of Mul stops at {MAX_INTEGER_FACTORS}")


@TABLE.register("reduce_prod", limit=_product_limits)
def reduce_prod(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    if ctx.dtype(ctx.node.output).kind in "iu":
        return _wrapping_reduce(b, "Mul")
    _axes_reduce(b, "ReduceProd", b.x(), b.out)
    return b.done()


@TABLE.register("reduce_sum", "reduce_min")
def reduce_arith(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    if ctx.node.op == "reduce_sum" and ctx.dtype(ctx.node.output).kind in "iu":
        return _wrapping_reduce(b, "CumSum")
    op_type = {"reduce_sum": "ReduceSum", "reduce_min": "ReduceMin"}[ctx.node.op]
    _axes_reduce(b, op_type, b.x(), b.out)
    return b.done()


def _wrapping_reduce(b: Builder, how: str) -> Emitted:
    """An integer sum or product that wraps around as TF's does (onnxruntime's ReduceSum and ReduceProd
    saturate at the type's bounds), in int64 and cast back (the low bits of a sum or product are those of
    the low bits'): along each axis a running sum (`how` "CumSum", which wraps) and its last element, or
    ("Mul") a chain of Mul over the axis' slices."""
    from onnx import TensorProto, helper

    ctx = b.ctx
    x, shape = b.x(), ctx.shape(ctx.node.inputs[0])
    if ctx.dtype(ctx.node.inputs[0]) != np.int64:
        x = b.op("Cast", [x], to=TensorProto.INT64)
    axes = _axes(ctx)
    for axis in axes:
        at = b.ints("at", [axis])
        if how == "CumSum":
            x = b.op("Slice", [b.op("CumSum", [x, b.const("axis", np.int64(axis), np.int64)]), b.ints("last", [-1]),
                               b.ints("end", [np.iinfo(np.int64).max]), at])
            continue
        slices = [b.op("Slice", [x, b.ints("from", [k]), b.ints("to", [k + 1]), at]) for k in range(shape[axis])]
        x = slices[0]
        for factor in slices[1:]:
            x = b.op("Mul", [x, factor])
    if not ctx.attrs.get("keepdims") and axes:
        x = b.op("Squeeze", [x, b.ints("axes", axes)])
    b.op("Cast", [x], b.out, to=helper.np_dtype_to_tensor_dtype(ctx.dtype(ctx.node.output)))
    return b.done()


@TABLE.register("reduce_all", "reduce_any")
def reduce_logical(ctx: Ctx) -> Emitted:
    """all = min, any = max over the mask as int32 (ONNX reductions take no bool)."""
    from onnx import TensorProto

    b = Builder(ctx, ctx.node)
    as_int = b.op("Cast", [b.x()], to=TensorProto.INT32)
    reduced = _axes_reduce(b, "ReduceMin" if ctx.node.op == "reduce_all" else "ReduceMax", as_int, None)
    b.op("Cast", [reduced], b.out, to=TensorProto.BOOL)
    return b.done()


@TABLE.register("argmin")
def argmin(ctx: Ctx) -> Emitted:
    from onnx import TensorProto

    b = Builder(ctx, ctx.node)
    axis = int(ctx.attrs["axis"]) % len(ctx.shape(ctx.node.inputs[0]))
    keep = int(bool(ctx.attrs.get("keepdims")))
    if ctx.dtype(ctx.node.output) == np.int64:
        b.op("ArgMin", [b.x()], b.out, axis=axis, keepdims=keep)
    else:
        b.op("Cast", [b.op("ArgMin", [b.x()], axis=axis, keepdims=keep)], b.out, to=TensorProto.INT32)
    return b.done()


@TABLE.register("cumsum")
def cumsum(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    axis = int(ctx.attrs["axis"]) % len(ctx.shape(ctx.node.inputs[0]))
    b.op("CumSum", [b.x(), b.const("axis", np.asarray(axis, np.int64), np.int64)], b.out,
         exclusive=int(bool(ctx.attrs.get("exclusive"))), reverse=int(bool(ctx.attrs.get("reverse"))))
    return b.done()


MAX_CUMPROD_STEPS = 256


def _cumprod_limit(ctx: NodeContext) -> str | None:
    n = ctx.graph.shape(ctx.node.inputs[0])[int(ctx.attrs["axis"])]
    return None if n <= MAX_CUMPROD_STEPS else f"cumprod over {n} > {MAX_CUMPROD_STEPS} steps (ONNX has no CumProd)"


@TABLE.register("cumprod", limit=_cumprod_limit)
def cumprod(ctx: Ctx) -> Emitted:
    """ONNX has no CumProd: one Mul per step along the axis, in TF's order (the same roundings)."""
    b = Builder(ctx, ctx.node)
    shape = ctx.shape(ctx.node.inputs[0])
    axis = int(ctx.attrs["axis"]) % len(shape)
    n = shape[axis]
    steps = [b.op("Slice", [b.x(), b.ints("start", [i]), b.ints("end", [i + 1]), b.ints("axes", [axis])])
             for i in range(n)]
    if ctx.attrs.get("reverse"):
        steps.reverse()
    running, acc = [], None
    if ctx.attrs.get("exclusive"):
        dtype = ctx.dtype(ctx.node.output)
        ones = np.ones(shape[:axis] + (1,) + shape[axis + 1:], dtype)
        steps = [b.const("ones", ones, dtype)] + steps[:-1]
    for step in steps:
        acc = step if acc is None else b.op("Mul", [acc, step])
        running.append(acc)
    if ctx.attrs.get("reverse"):
        running.reverse()
    b.op("Concat", running, b.out, axis=axis)
    return b.done()


@TABLE.register("log_softmax")
def log_softmax(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    b.op("LogSoftmax", [b.x()], b.out, axis=int(ctx.attrs["axis"]))  # single-axis semantics from opset 13
    return b.done()


@TABLE.register("top_k_values", "top_k_indices")
def top_k(ctx: Ctx) -> Emitted:
    from onnx import TensorProto

    b = Builder(ctx, ctx.node)
    k = b.ints("k", [int(ctx.attrs["k"])])
    if ctx.node.op == "top_k_values":
        multi_output(b, "TopK", [b.x(), k], [b.out, b.fresh("indices")], axis=-1, largest=1, sorted=1)
    else:
        indices = multi_output(b, "TopK", [b.x(), k], [b.fresh("values"), b.fresh("indices")], axis=-1,
                               largest=1, sorted=1)[1]
        b.op("Cast", [indices], b.out, to=TensorProto.INT32)
    return b.done()
