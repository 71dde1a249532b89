"""RESHAPE, SQUEEZE, EXPAND_DIMS (in TFLite's element order), CONCATENATION, TRANSPOSE, and the shape
arithmetic folded to numbers (SHAPE, STRIDED_SLICE, PACK, CAST, GATHER... on known values)."""

from __future__ import annotations

import numpy as np

from tf_convert.parsers.common.layout import nhwc_reshape

from . import layout
from .elementwise import operand
from .op import Op
from .schema import NUMPY_TYPES
from .table import FOLD, TABLE


def _target(op: Op, shape: list[int]) -> tuple[int, ...]:
    """`shape` with its -1 resolved against input 0's element count."""
    total = int(np.prod(op.source_shape(0)))
    shape = [int(d) for d in shape]
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        shape[shape.index(-1)] = total // known if known else 0
    if int(np.prod(shape)) != total:
        raise op.unsupported(f"reshape of {op.source_shape(0)} to {tuple(shape)}")
    return tuple(shape)


def _reshape_to(op: Op, shape: tuple[int, ...]) -> str:
    x = op.x()
    if tuple(shape) == op.source_shape(0):
        return op.add("identity", [x], op.shape(x))
    return nhwc_reshape(op, x, shape)


@TABLE.register("RESHAPE")
def reshape(op: Op) -> list[str]:
    if op.has(1):
        shape = op.const(1, "new shape").reshape(-1).tolist()
    elif op.options is not None and not op.options.NewShapeIsNone():
        shape = op.options.NewShapeAsNumpy().tolist()
    else:
        raise op.unsupported("RESHAPE without a new shape")
    return [_reshape_to(op, _target(op, shape))]


@TABLE.register("SQUEEZE")
def squeeze(op: Op) -> list[str]:
    shape = op.source_shape(0)
    dims = [] if op.options is None or op.options.SqueezeDimsIsNone() else op.options.SqueezeDimsAsNumpy().tolist()
    axes = {int(d) % len(shape) for d in dims} or {i for i, d in enumerate(shape) if d == 1}
    return [_reshape_to(op, tuple(d for i, d in enumerate(shape) if i not in axes))]


@TABLE.register("EXPAND_DIMS")
def expand_dims(op: Op) -> list[str]:
    shape = list(op.source_shape(0))
    axis = int(op.const(1, "axis").reshape(-1)[0])
    shape.insert(axis % (len(shape) + 1), 1)
    return [_reshape_to(op, tuple(shape))]


@TABLE.register("CONCATENATION")
def concatenation(op: Op) -> list[str]:
    rank = len(op.source_shape(0))
    axis = layout.ir_axis(int(op.options.Axis()), rank)
    inputs = [operand(op, k, rank) for k in range(len(op.op.inputs))]
    # an empty piece (a loop's first write into its output buffer) adds nothing: the targets get none
    inputs = [t for t in inputs if op.shape(t)[axis]] or inputs[:1]
    shape = list(op.shape(inputs[0]))
    shape[axis] = sum(op.shape(t)[axis] for t in inputs)
    return [op.activation(op.add("concat", inputs, shape, {"axis": axis}))]


@TABLE.register("TRANSPOSE")
def transpose(op: Op) -> list[str]:
    """TFLite permutes its own (NHWC) axes: composed with the layout change into one IR transpose."""
    x = op.x()
    rank = len(op.shape(x))
    source_perm = [int(p) for p in op.const(1, "permutation").reshape(-1)]
    to_source = layout.TO_NHWC if rank == 4 else tuple(range(rank))
    from_source = layout.TO_NCHW if rank == 4 else tuple(range(rank))
    ir_of_source_out = [to_source[p] for p in source_perm]
    perm = tuple(ir_of_source_out[m] for m in from_source)
    return [op.add("transpose", [x], tuple(op.shape(x)[p] for p in perm), {"perm": perm})]


@TABLE.register("STRIDED_SLICE")
def strided_slice_activation(op: Op) -> list[str]:
    """Step-1 slices (shrink axes dropped after): an IR slice in IR axis order."""
    o = op.options
    if o.EllipsisMask() or o.NewAxisMask() or (hasattr(o, "Offset") and o.Offset()):
        raise op.unsupported("ellipsis, new-axis or offset masks")
    source = op.source_shape(0)
    begin, end, strides = (op.const(k, what).reshape(-1).astype(np.int64).tolist()
                           for k, what in ((1, "begin"), (2, "end"), (3, "strides")))
    if any(s != 1 for s in strides):
        raise op.unsupported(f"strides {strides} (only step 1 is supported)")
    lo, hi, kept = [], [], []
    for i, n in enumerate(source):
        if i >= len(begin):
            lo.append(0), hi.append(n), kept.append(n)
            continue
        shrink = _bit(o.ShrinkAxisMask(), i)
        b = 0 if _bit(o.BeginMask(), i) and not shrink else begin[i]
        b = min(max(b + n if b < 0 else b, 0), n)
        e = b + 1 if shrink else n if _bit(o.EndMask(), i) else end[i]
        e = min(max(e + n if e < 0 else e, b), n)
        lo.append(b), hi.append(e)
        if not shrink:
            kept.append(e - b)
    order = layout.TO_NCHW if len(source) == 4 else tuple(range(len(source)))
    ir_begin, ir_end = tuple(lo[a] for a in order), tuple(hi[a] for a in order)
    x = op.x()
    sliced = op.add("slice", [x], tuple(e - b for b, e in zip(ir_begin, ir_end)),
                    {"begin": ir_begin, "end": ir_end}, suffix="/slice" if len(kept) != len(source) else "")
    if len(kept) == len(source):
        return [sliced]
    return [nhwc_reshape(op, sliced, tuple(kept))]


# ---- folded on known values ---------------------------------------------------------------------

@FOLD.register("SHAPE")
def shape_(op: Op, values: list[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(values[0].shape, np.int32)]


@TABLE.register("SHAPE")
def shape_activation(op: Op) -> list[str]:
    """The shape of an activation is static in the IR: a constant (int32, TFLite's default out_type)."""
    value = np.asarray(op.source_shape(0), np.int32)
    op.values[op.op.outputs[0]] = value
    return [op.add("const", [], value.shape, params={"value": value}, out_dtype="int32")]


def _bit(mask: int, i: int) -> bool:
    return bool(mask >> i & 1)


@FOLD.register("STRIDED_SLICE")
def strided_slice(op: Op, values: list[np.ndarray]) -> list[np.ndarray]:
    x, begin, end, strides = values[0], *(v.reshape(-1).astype(np.int64) for v in values[1:4])
    o = op.options
    if o.EllipsisMask() or o.NewAxisMask() or (o.Offset() if hasattr(o, "Offset") else False):
        raise op.unsupported("STRIDED_SLICE with ellipsis, new-axis or offset masks on a shape")
    index = []
    for i in range(len(begin)):
        if _bit(o.ShrinkAxisMask(), i):
            index.append(int(begin[i]))
            continue
        b = None if _bit(o.BeginMask(), i) else int(begin[i])
        e = None if _bit(o.EndMask(), i) else int(end[i])
        index.append(slice(b, e, int(strides[i])))
    return [np.asarray(x[tuple(index)])]


@FOLD.register("PACK")
def pack(op: Op, values: list[np.ndarray]) -> list[np.ndarray]:
    return [np.stack(values, axis=int(op.options.Axis()))]


@FOLD.register("CONCATENATION")
def concat_values(op: Op, values: list[np.ndarray]) -> list[np.ndarray]:
    return [np.concatenate(values, axis=int(op.options.Axis()))]


@FOLD.register("RESHAPE")
def reshape_value(op: Op, values: list[np.ndarray]) -> list[np.ndarray]:
    shape = values[1].reshape(-1).tolist() if len(values) > 1 else op.options.NewShapeAsNumpy().tolist()
    return [values[0].reshape(shape)]


@FOLD.register("GATHER")
def gather(op: Op, values: list[np.ndarray]) -> list[np.ndarray]:
    return [np.take(values[0], values[1], axis=int(op.options.Axis()))]


@FOLD.register("CAST")
def cast(op: Op, values: list[np.ndarray]) -> list[np.ndarray]:
    out = op.tensors[op.op.outputs[0]].type
    if out not in NUMPY_TYPES:
        raise op.unsupported(f"CAST to {out}")
    return [values[0].astype(NUMPY_TYPES[out])]


def _int_binary(fn):
    def fold(op: Op, values: list[np.ndarray]) -> list[np.ndarray]:
        a, b = values
        if a.dtype.kind not in "iu" or b.dtype.kind not in "iu":
            return [fn(a.astype(np.float32), b.astype(np.float32)).astype(np.float32)]
        return [fn(a, b).astype(a.dtype)]

    return fold


for _name, _fn in (("ADD", np.add), ("SUB", np.subtract), ("MUL", np.multiply), ("MAXIMUM", np.maximum),
                   ("MINIMUM", np.minimum)):
    FOLD.register(_name)(_int_binary(_fn))


def _reduce_values(fn):
    def fold(op: Op, values: list[np.ndarray]) -> list[np.ndarray]:
        axes = tuple(int(a) for a in values[1].reshape(-1))
        keep = bool(op.options.KeepDims()) if op.options is not None else False
        return [np.asarray(fn(values[0], axis=axes, keepdims=keep)).astype(values[0].dtype)]

    return fold


for _name, _fn in (("REDUCE_PROD", np.prod), ("SUM", np.sum), ("REDUCE_MAX", np.max), ("REDUCE_MIN", np.min)):
    FOLD.register(_name)(_reduce_values(_fn))
