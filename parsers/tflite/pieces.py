"""Operators that move run-time elements around: PACK, UNPACK, SPLIT, SPLIT_V, SLICE, GATHER, GATHER_ND,
TILE, BROADCAST_TO, CUMSUM, CAST and REVERSE_V2. Each works on its inputs in TFLite's own element order (a rank-4
activation transposed from the IR's NCHW first, the result transposed back), so every axis is the file's
axis as written: copies of elements (or a running sum in TFLite's order), exact in every target."""

from __future__ import annotations

import numpy as np

from . import layout
from .op import Op
from .schema import NUMPY_TYPES
from .table import TABLE

_IR_TYPES = {"FLOAT32": "float32", "INT32": "int32", "INT64": "int64", "BOOL": "bool"}


def source_ordered(op: Op, k: int) -> str:
    """Input k as an IR tensor in TFLite's element order and shape (a constant as stored)."""
    value = op.value(k)
    if value is not None:
        value = np.asarray(value.astype(np.float32) if value.dtype.kind == "f" else value)
        value = np.ascontiguousarray(value).reshape(value.shape)  # a 0-d value stays 0-d
        return op.add("const", [], value.shape, params={"value": value}, suffix=f"/c{k}",
                      out_dtype=str(value.dtype))
    x = op.x(k)
    if len(op.shape(x)) != 4:
        return x
    return op.add("transpose", [x], op.source_shape(k), {"perm": layout.TO_NHWC}, suffix=f"/nhwc{k}")


def from_source(op: Op, y: str, suffix: str = "") -> str:
    """A tensor in TFLite's element order as the IR holds that tensor (rank 4: NCHW)."""
    shape = op.shape(y)
    if len(shape) != 4:
        return y
    return op.add("transpose", [y], layout.ir_shape(shape), {"perm": layout.TO_NCHW}, suffix=f"{suffix}/nchw")


def _slice(op: Op, x: str, axis: int, lo: int, hi: int, suffix: str) -> str:
    shape = list(op.shape(x))
    begin, end = [0] * len(shape), list(shape)
    begin[axis], end[axis] = lo, hi
    shape[axis] = hi - lo
    return op.add("slice", [x], shape, {"begin": tuple(begin), "end": tuple(end)}, suffix=suffix)


def _reshape(op: Op, x: str, shape: tuple[int, ...], suffix: str) -> str:
    return op.add("reshape", [x], shape, {"shape": tuple(shape)}, suffix=suffix)


def _concat(op: Op, pieces: list[str], axis: int, suffix: str = "") -> str:
    if len(pieces) == 1:
        return pieces[0]
    shape = list(op.shape(pieces[0]))
    shape[axis] = sum(op.shape(p)[axis] for p in pieces)
    return op.add("concat", pieces, shape, {"axis": axis}, suffix=suffix)


def _axis(op: Op, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise op.unsupported(f"axis {axis} of a rank-{rank} tensor")
    return axis % rank


@TABLE.register("PACK")
def pack(op: Op) -> list[str]:
    """Each input gets the new axis (a reshape), then one concat along it."""
    shape = op.source_shape(0)
    axis = _axis(op, int(op.options.Axis()), len(shape) + 1)
    one = (*shape[:axis], 1, *shape[axis:])
    pieces = [_reshape(op, source_ordered(op, k), one, f"/expand{k}") for k in range(len(op.op.inputs))]
    return [from_source(op, _concat(op, pieces, axis, "/stack"))]


@TABLE.register("UNPACK")
def unpack(op: Op) -> list[str]:
    shape = op.source_shape(0)
    axis = _axis(op, int(op.options.Axis()), len(shape))
    x = source_ordered(op, 0)
    rest = tuple(d for a, d in enumerate(shape) if a != axis)
    return [from_source(op, _reshape(op, _slice(op, x, axis, i, i + 1, f"/{i}"), rest, f"/{i}/squeeze"), f"/{i}")
            for i in range(shape[axis])]


def _split(op: Op, x_k: int, axis: int, sizes: list[int]) -> list[str]:
    x = source_ordered(op, x_k)
    shape = op.source_shape(x_k)
    axis = _axis(op, axis, len(shape))
    if -1 in sizes:
        sizes[sizes.index(-1)] = shape[axis] - (sum(sizes) + 1)
    if sum(sizes) != shape[axis] or min(sizes) < 0:
        raise op.unsupported(f"sizes {sizes} for an axis of {shape[axis]}")
    starts = np.cumsum([0, *sizes]).tolist()
    return [from_source(op, _slice(op, x, axis, lo, hi, f"/{i}"), f"/{i}")
            for i, (lo, hi) in enumerate(zip(starts, starts[1:]))]


@TABLE.register("SPLIT")
def split(op: Op) -> list[str]:
    """Inputs (axis, x): num_splits equal pieces."""
    count = int(op.options.NumSplits())
    n = op.source_shape(1)[_axis(op, int(op.const(0, "axis").reshape(-1)[0]), len(op.source_shape(1)))]
    if count <= 0 or n % count:
        raise op.unsupported(f"{count} equal pieces of an axis of {n}")
    return _split(op, 1, int(op.const(0, "axis").reshape(-1)[0]), [n // count] * count)


@TABLE.register("SPLIT_V")
def split_v(op: Op) -> list[str]:
    """Inputs (x, size_splits, axis)."""
    sizes = [int(s) for s in op.const(1, "size_splits").reshape(-1)]
    return _split(op, 0, int(op.const(2, "axis").reshape(-1)[0]), sizes)


@TABLE.register("SLICE")
def slice_(op: Op) -> list[str]:
    """Inputs (x, begin, size); a size of -1 runs to the end."""
    shape = op.source_shape(0)
    begin = [int(b) for b in op.const(1, "begin").reshape(-1)]
    size = [int(s) for s in op.const(2, "size").reshape(-1)]
    end = [n if s == -1 else b + s for b, s, n in zip(begin, size, shape)]
    if len(begin) != len(shape) or any(not 0 <= b <= e <= n for b, e, n in zip(begin, end, shape)):
        raise op.unsupported(f"begin {begin}, size {size} on a tensor of shape {shape}")
    ir_order = layout.TO_NCHW if len(shape) == 4 else tuple(range(len(shape)))
    x = op.x()
    return [op.add("slice", [x], tuple(end[a] - begin[a] for a in ir_order),
                   {"begin": tuple(begin[a] for a in ir_order), "end": tuple(end[a] for a in ir_order)})]


@TABLE.register("GATHER")
def gather(op: Op) -> list[str]:
    """numpy.take(params, indices, axis); batch_dims 0 only."""
    if int(op.options.BatchDims()):
        raise op.unsupported(f"batch_dims={int(op.options.BatchDims())}")
    shape = op.source_shape(0)
    axis = _axis(op, int(op.options.Axis()), len(shape))
    indices = op.value(1)
    if indices is not None and (indices.min(initial=0) < 0 or indices.max(initial=0) >= shape[axis]):
        raise op.unsupported(f"indices outside [0, {shape[axis]})")
    idx_shape = op.source_shape(1)
    if indices is not None and indices.ndim == 0:  # one position (a loop's step): a slice, which every target has
        at = int(indices)
        piece = _slice(op, source_ordered(op, 0), axis, at, at + 1, "/take")
        return [from_source(op, _reshape(op, piece, (*shape[:axis], *shape[axis + 1:]), "/squeeze"))]
    out = (*shape[:axis], *idx_shape, *shape[axis + 1:])
    y = op.add("gather", [source_ordered(op, 0), source_ordered(op, 1)], out, {"axis": axis}, suffix="/gather")
    return [from_source(op, y)]


@TABLE.register("GATHER_ND")
def gather_nd(op: Op) -> list[str]:
    """Constant indices: the first K axes flattened (a reshape), then one gather of the flat positions."""
    indices = op.const(1, "indices").astype(np.int64)
    shape = op.source_shape(0)
    depth = indices.shape[-1]
    if depth > len(shape) or (indices < 0).any() or (indices >= np.asarray(shape[:depth])).any():
        raise op.unsupported(f"indices outside the shape {shape}")
    flat = np.ravel_multi_index(tuple(np.moveaxis(indices, -1, 0)), shape[:depth]).astype(np.int64) \
        if depth else np.zeros(indices.shape[:-1], np.int64)
    rows = _reshape(op, source_ordered(op, 0), (int(np.prod(shape[:depth])), *shape[depth:]), "/rows")
    positions = op.add("const", [], flat.shape, params={"value": np.ascontiguousarray(flat)}, suffix="/positions",
                       out_dtype="int64")
    y = op.add("gather", [rows, positions], (*flat.shape, *shape[depth:]), {"axis": 0}, suffix="/gather")
    return [from_source(op, y)]


def _copies(op: Op, x: str, axis: int, count: int, suffix: str) -> str:
    return _concat(op, [x] * count, axis, suffix) if count != 1 else x


@TABLE.register("TILE")
def tile(op: Op) -> list[str]:
    multiples = [int(m) for m in op.const(1, "multiples").reshape(-1)]
    if len(multiples) != len(op.source_shape(0)) or min(multiples, default=1) < 1:
        raise op.unsupported(f"multiples {multiples} for a tensor of shape {op.source_shape(0)}")
    x = source_ordered(op, 0)
    for a, m in enumerate(multiples):
        x = _copies(op, x, a, m, f"/tile{a}")
    return [from_source(op, x)]


@TABLE.register("BROADCAST_TO")
def broadcast_to(op: Op) -> list[str]:
    want = tuple(int(d) for d in op.const(1, "shape").reshape(-1))
    shape = op.source_shape(0)
    ranked = (1,) * (len(want) - len(shape)) + tuple(shape)
    if len(want) < len(shape) or any(n not in (1, w) for n, w in zip(ranked, want)):
        raise op.unsupported(f"a tensor of shape {shape} broadcast to {want}")
    x = source_ordered(op, 0)
    if ranked != tuple(shape):
        x = _reshape(op, x, ranked, "/rank")
    for a, (n, w) in enumerate(zip(ranked, want)):
        if n != w:
            x = _copies(op, x, a, w, f"/axis{a}")
    return [from_source(op, x)]


@TABLE.register("CUMSUM")
def cumsum(op: Op) -> list[str]:
    shape = op.source_shape(0)
    axis = _axis(op, int(op.const(1, "axis").reshape(-1)[0]), len(shape))
    attrs = {"axis": axis, "exclusive": bool(op.options.Exclusive()), "reverse": bool(op.options.Reverse())}
    return [from_source(op, op.add("cumsum", [source_ordered(op, 0)], shape, attrs, suffix="/cumsum"))]


@TABLE.register("CAST")
def cast(op: Op) -> list[str]:
    """float -> int truncates toward 0 (TFLite's static_cast), -> bool is x != 0."""
    to = op.tensors[op.op.outputs[0]].type
    if to not in _IR_TYPES or to not in NUMPY_TYPES:
        raise op.unsupported(f"CAST to {to}")
    x = op.x()
    return [op.add("cast", [x], op.shape(x), {"dtype": _IR_TYPES[to]}, out_dtype=_IR_TYPES[to])]


@TABLE.register("REVERSE_V2")
def reverse_v2(op: Op) -> list[str]:
    """Inputs (x, axes): each axis read backwards, a gather of the positions n-1 ... 0 (a copy, exact)."""
    shape = op.source_shape(0)
    axes = sorted({_axis(op, int(a), len(shape)) for a in op.const(1, "axes").reshape(-1)})
    x = first = source_ordered(op, 0)
    for a in (a for a in axes if shape[a] > 1):
        backwards = np.arange(shape[a] - 1, -1, -1, dtype=np.int64)
        positions = op.add("const", [], backwards.shape, params={"value": backwards}, suffix=f"/positions{a}",
                           out_dtype="int64")
        x = op.add("gather", [x, positions], shape, {"axis": a}, suffix=f"/reverse{a}")
    if x == first:  # nothing to reverse: the output is still a tensor of its own
        x = op.add("identity", [x], shape)
    return [from_source(op, x)]
