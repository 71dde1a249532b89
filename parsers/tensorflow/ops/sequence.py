"""Embeddings and token inputs: GatherV2 (a TF1 embedding_lookup on a variable,
or a gather of an activation) and OneHot (BERT's use_one_hot_embeddings and token types); Einsum
(attention and EinsumDense as Keras and TF2 BERT write them) as transpose/reshape/matmul."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tf_convert.convert.ir.lazy import contiguous

from .. import runtime_shapes
from ..context import Context, NotConvertible
from ..lowering import Lowering
from ..table import tf_op

_INDEX_TYPES = ("int32", "int64")


def _dtype(t: Any) -> str:
    return t.dtype.name if t.dtype is not None else "float32"


def _indices(ctx: Context, op: Any, t: Any) -> str:
    dtype = _dtype(t)
    if dtype not in _INDEX_TYPES:
        raise NotConvertible(f"{op.type} indices of type {dtype}: only int32/int64 indices are supported")
    return ctx.tf_order(t)


def _gather(ctx: Context, op: Any, data: Any, indices: Any, axis: int, batch_dims: int) -> None:
    rank = len(ctx.shape(data))
    if batch_dims:
        _batched_gather(ctx, op, data, indices, axis % rank, batch_dims % max(len(ctx.shape(indices)), 1))
        return
    index, shape = _indices(ctx, op, indices), tuple(ctx.shape(op.outputs[0]))
    if not ctx.shape(indices):  # a scalar index (x[:, t] of an unrolled loop) drops the axis: the
        # emitters gather by a 1-D index, so gather one and drop the axis after
        index = ctx.emit("reshape", f"{op.name}/index", [index], (1,), {"shape": (1,)}, source_op=op.type)
        kept = shape[:axis % rank] + (1,) + shape[axis % rank:]
        one = ctx.emit("gather", f"{op.name}/one", [ctx.tf_order(data), index], kept, {"axis": axis % rank},
                       source_op=op.type, out_dtype=_dtype(data))
        out = ctx.emit("reshape", op.name, [one], shape, {"shape": shape}, source_op=op.type)
        return ctx.set(op.outputs[0], out)
    out = ctx.emit("gather", op.name, [ctx.tf_order(data), index], shape,
                   {"axis": axis % rank}, source_op=op.type, out_dtype=_dtype(data))
    ctx.set(op.outputs[0], out)


def _batched_gather(ctx: Context, op: Any, data: Any, indices: Any, axis: int, batch_dims: int) -> None:
    """batch_dims > 0: params (B, M, N, R) gathered along N by indices (B, I), each batch by its own row. N
    moved next to B and the two flattened into one axis, the indices shifted by the batch's offset into it,
    one gather (B, I, M, R), and M moved back in front of I. Copies only: exact."""
    shape, index_shape = tuple(ctx.shape(data)), tuple(ctx.shape(indices))
    if not batch_dims <= axis or index_shape[:batch_dims] != shape[:batch_dims]:
        raise NotConvertible(f"{op.type} with batch_dims={batch_dims} and axis={axis}: TF needs axis >= batch_dims "
                             "and the batch axes of params and indices equal")
    low = Lowering(ctx, op)
    batch, middle, n, rest = shape[:batch_dims], shape[batch_dims:axis], shape[axis], shape[axis + 1:]
    count = math.prod(batch)
    if count * n >= 2 ** 31:
        raise NotConvertible(f"{op.type} with batch_dims={batch_dims} over {count * n} rows: int32 row numbers only")
    x = ctx.tf_order(data)
    if middle:
        order = (*range(batch_dims), axis, *range(batch_dims, axis), *range(axis + 1, len(shape)))
        x = low.node("transpose", "n_first", [x], [shape[a] for a in order], {"perm": order})
    x = low.reshape("rows", x, (count * n, *middle, *rest))
    index = _indices(ctx, op, indices)
    offsets = (np.arange(count) * n).reshape(batch + (1,) * (len(index_shape) - batch_dims))
    index = low.node("add", "row", [index, low.const("offsets", offsets, low.dtype(index))], index_shape)
    got = index_shape + middle + rest
    out = low.node("gather", "" if not middle else "gathered", [x, index], got, {"axis": 0})
    if middle:
        k, i = len(index_shape) - batch_dims, len(middle)
        order = (*range(batch_dims), *range(batch_dims + k, batch_dims + k + i), *range(batch_dims, batch_dims + k),
                 *range(batch_dims + k + i, len(got)))
        out = low.node("transpose", "", [out], [got[a] for a in order], {"perm": order})
    ctx.set(op.outputs[0], out)


@tf_op("GatherV2")
def gather_v2(ctx: Context, op: Any) -> None:
    axis = int(ctx.const(op.inputs[2]).reshape(-1)[0])
    _gather(ctx, op, op.inputs[0], op.inputs[1], axis, int(op.get_attr("batch_dims")))


@tf_op("Gather")
def gather_v1(ctx: Context, op: Any) -> None:
    _gather(ctx, op, op.inputs[0], op.inputs[1], 0, 0)


@tf_op("OneHot")
def one_hot(ctx: Context, op: Any) -> None:
    """The IR's one_hot is float32; an integer or bool one-hot is that, cast (exact: on and off are whole
    numbers float32 holds)."""
    indices, depth, on, off = op.inputs
    out_t = op.outputs[0]
    dtype = _dtype(out_t)
    if dtype not in ("float32", *_EXACT_FROM_FLOAT):
        raise NotConvertible(f"OneHot to {dtype}: the converted graph holds float32, integer and bool one-hot "
                             f"tensors, not {dtype}")
    rank = out_t.shape.rank if out_t.shape.rank is not None else len(ctx.shape(out_t))
    values = [np.asarray(ctx.const(t)).astype(np.float64).item() for t in (on, off)]
    if dtype != "float32" and any(v != np.float32(v) for v in values):
        raise NotConvertible(f"OneHot to {dtype} with on/off {values}: made as float32 then cast, which holds "
                             "these values only up to 2**24")
    attrs = {"axis": int(op.get_attr("axis")) % rank, "on": values[0], "off": values[1]}
    if runtime_shapes.follows(ctx, op, 1):
        out = runtime_shapes.one_hot(ctx, op, _indices(ctx, op, indices), attrs)
        if dtype != "float32":
            out = ctx.emit("cast", op.name, [out], ctx.graph.shape(out), {"dtype": dtype}, source_op=op.type,
                           out_dtype=dtype)
        ctx.set(out_t, out)
        return
    attrs = {"depth": int(ctx.const(depth)), **attrs}
    out = ctx.emit("one_hot", op.name if dtype == "float32" else f"{op.name}/float", [_indices(ctx, op, indices)],
                   ctx.shape(out_t), attrs, source_op=op.type, out_dtype="float32")
    if dtype != "float32":
        out = ctx.emit("cast", op.name, [out], ctx.shape(out_t), {"dtype": dtype}, source_op=op.type,
                       out_dtype=dtype)
    ctx.set(out_t, out)


_EXACT_FROM_FLOAT = ("int32", "int64", "uint8", "int8", "bool")  # the IR's other dtypes


# ---- Einsum ------------------------------------------------------------------------------------------
# Two operands: each goes to (batch..., free, contracted) / (batch..., contracted, free) with one
# transpose and one reshape, one IR matmul (a linear layer when the right operand is a constant and
# nothing is batched, as in EinsumDense), then a reshape and a transpose to the output's label order.


def _labels(term: str, rank: int, ellipsis_rank: int) -> list[str]:
    """The term's labels, "..." spelled as digits aligned from the right (so operands broadcast)."""
    if "..." not in term:
        return list(term)
    head, tail = term.split("...")
    own = rank - len(head) - len(tail)
    return list(head) + [str(ellipsis_rank - own + i) for i in range(own)] + list(tail)


def _parse_equation(op: Any, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    equation = op.get_attr("equation").decode().replace(" ", "")
    if "->" not in equation:
        raise NotConvertible(f"Einsum '{equation}' without '->': only explicit output labels are supported")
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    ellipsis_rank = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t), default=0)
    inputs = [_labels(t, r, ellipsis_rank) for t, r in zip(terms, ranks)]
    output = _labels(out, len(out.replace("...", "")) + ellipsis_rank, ellipsis_rank)
    for labels in inputs:
        if len(set(labels)) != len(labels):
            raise NotConvertible(f"Einsum '{equation}' repeats a label in one operand (a diagonal): not supported")
    return inputs, output


def _arrange_steps(have: list[str], want: list[str], shape_have: tuple[int, ...],
                   shape: tuple[int, ...]) -> list[tuple[str, tuple[int, ...], dict]]:
    """(op, out shape, attrs) steps taking labels `have` to `want` and then shape `shape` (identities skipped)."""
    steps = []
    if have != want:
        perm = tuple(have.index(label) for label in want)
        shape_have = tuple(shape_have[p] for p in perm)
        steps.append(("transpose", shape_have, {"perm": perm}))
    if tuple(shape_have) != tuple(shape):
        steps.append(("reshape", tuple(shape), {"shape": tuple(shape)}))
    return steps


def _emit_steps(ctx: Context, op: Any, x: str, steps: list, base: str) -> str:
    for i, (kind, shape, attrs) in enumerate(steps):
        name = base if base == op.name and i == len(steps) - 1 else f"{base}/{kind}"
        x = ctx.emit(kind, name, [x], shape, attrs, source_op=op.type)
    return x


def _arrange(ctx: Context, op: Any, x: str, have: list[str], want: list[str], shape: tuple[int, ...],
             base: str) -> str:
    return _emit_steps(ctx, op, x, _arrange_steps(have, want, tuple(ctx.graph.shape(x)), shape), base)


def _static_shape(ctx: Context, t: Any) -> tuple[int, ...]:
    """A constant's shape from its value (a variable read has no static shape in a SavedModel's graph)."""
    return tuple(int(d) for d in ctx.consts[t.name].shape) if ctx.is_const(t) else ctx.shape(t)


@tf_op("Einsum")
def einsum(ctx: Context, op: Any) -> None:
    shapes = [_static_shape(ctx, t) for t in op.inputs]
    (terms, out), equation = _parse_equation(op, [len(s) for s in shapes]), op.get_attr("equation").decode()
    size: dict[str, int] = {}
    for labels, shape in zip(terms, shapes):
        for label, dim in zip(labels, shape):
            if size.setdefault(label, dim) != dim:
                raise NotConvertible(f"Einsum '{equation}': label {label} has sizes {size[label]} and {dim} "
                                     "(broadcasting is not supported)")
    if any(label not in size for label in out):
        raise NotConvertible(f"Einsum '{equation}': an output label is in no operand")
    out_shape = tuple(size[label] for label in out)
    if len(terms) == 1:
        if sorted(terms[0]) != sorted(out):
            raise NotConvertible(f"Einsum '{equation}' sums over an axis: only a permutation of one operand is "
                                 "supported")
        steps = _arrange_steps(terms[0], out, shapes[0], out_shape)
        x = ctx.tf_order(op.inputs[0])
        return ctx.set(op.outputs[0], _emit_steps(ctx, op, x, steps, op.name) if steps else x)
    if len(terms) != 2:
        raise NotConvertible(f"Einsum '{equation}' of {len(terms)} operands: only one or two are supported")
    a, b = terms
    lonely = [label for label in a + b if label not in out and not (label in a and label in b)]
    if lonely:
        raise NotConvertible(f"Einsum '{equation}' sums over label(s) {''.join(lonely)} of one operand: not supported")
    batch = [label for label in out if label in a and label in b]
    free_a = [label for label in out if label in a and label not in b]
    free_b = [label for label in out if label in b and label not in a]
    inner = [label for label in a if label in b and label not in out]
    dims = lambda labels: tuple(size[label] for label in labels)  # noqa: E731
    rows, cols, depth = math.prod(dims(free_a)), math.prod(dims(free_b)), math.prod(dims(inner))
    product = batch + free_a + free_b
    after = _arrange_steps(product, product, (*dims(batch), rows, cols), dims(product))
    after += _arrange_steps(product, out, dims(product), out_shape)
    name = op.name if not after else f"{op.name}/product"
    left = _arrange(ctx, op, ctx.tf_order(op.inputs[0]), a, batch + free_a + inner, (*dims(batch), rows, depth),
                    f"{op.name}/a")
    if not batch and ctx.is_const(op.inputs[1]) and not ctx.is_const(op.inputs[0]):
        kernel = np.asarray(ctx.const(op.inputs[1]), np.float32)  # EinsumDense: a linear layer
        kernel = kernel.transpose([b.index(label) for label in inner + free_b]).reshape(depth, cols)
        y = ctx.emit("linear", name, [left], (rows, cols), {}, {"weight": contiguous(kernel.T, np.float32)},
                     source_op=op.type)
    else:
        right = _arrange(ctx, op, ctx.tf_order(op.inputs[1]), b, batch + inner + free_b,
                         (*dims(batch), depth, cols), f"{op.name}/b")
        y = ctx.emit("matmul", name, [left, right], (*dims(batch), rows, cols), source_op=op.type)
    ctx.set(op.outputs[0], _emit_steps(ctx, op, y, after, op.name) if after else y)
