"""One numpy evaluator per TF op, `@fold("Pack")`: `fn(op, *input_values) -> value` (a tuple for
several outputs). `op` offers get_attr (a tfgraph Op or a bare NodeDef's NodeAttrs). Used for the
constant frontier of the parser and by the training passes (training/graph.py's const_value).

Inputs of Shape/ShapeN/Size/Rank may be stand-ins that only have `.shape`. A Const's value may be
a lazy array: evaluators that only pass a value through (Identity) never materialize it.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from tf_convert.convert.ir.graph import Node
from tf_convert.convert.ir.ops import TF_OPS
from tf_convert.convert.ir.reference import evaluate_node
from tf_convert.convert.ir.reference.shape_runtime import ragged_range_rows, unique_along
from tf_convert.convert.registry import OpTable

FOLDS = OpTable("TF constant folding")  # TF op type -> fn(op, *input_values) -> value
SHAPE_OPS = frozenset({"Shape", "ShapeN", "Size", "Rank"})  # known from static shapes alone
fold = FOLDS.register


def cast_to(value: Any, dtype: Any) -> Any:
    """`value` as TF's output dtype (numpy's promotion can differ); lazy values pass as they are."""
    if isinstance(value, (bool, int, float, np.generic, list)):
        value = np.asarray(value)
    if dtype is None or not isinstance(value, np.ndarray):
        return value
    try:
        want = np.dtype(dtype.as_numpy_dtype)
    except (TypeError, ValueError, KeyError):
        return value
    return value if value.dtype == want else value.astype(want)


def _attr(op: Any, name: str, default: Any = None) -> Any:
    try:
        value = op.get_attr(name)
    except ValueError:
        return default
    return default if value is None else value


def _int(v: Any) -> int:
    return int(np.asarray(v).reshape(()))


def _ints(v: Any) -> list[int]:
    return [int(x) for x in np.asarray(v).reshape(-1)]


# ---- pass-through and shape-only ---------------------------------------------------------------

@fold("Identity", "StopGradient", "Snapshot", "PreventGradient", "CheckNumerics", "EnsureShape",
      "PlaceholderWithDefault")
def _identity(op: Any, x: Any, *rest: Any) -> Any:
    return x


@fold("IdentityN")
def _identity_n(op: Any, *xs: Any) -> tuple:
    return tuple(xs)


def _out_type(op: Any) -> np.dtype:
    t = _attr(op, "out_type")
    return np.dtype(t.as_numpy_dtype) if t is not None else np.dtype(np.int32)


@fold("Shape")
def _shape(op: Any, x: Any) -> np.ndarray:
    return np.asarray(tuple(x.shape), _out_type(op)).reshape(-1)


@fold("ShapeN")
def _shape_n(op: Any, *xs: Any) -> tuple:
    return tuple(np.asarray(tuple(x.shape), _out_type(op)).reshape(-1) for x in xs)


@fold("Size")
def _size(op: Any, x: Any) -> np.ndarray:
    return np.asarray(math.prod(x.shape), _out_type(op))


@fold("Rank")
def _rank(op: Any, x: Any) -> np.ndarray:
    return np.asarray(len(x.shape), np.int32)


# ---- elementwise: the catalog's ops, computed by the IR reference (the one numpy evaluator) ----------

def reference(ir_op: str, attrs: dict[str, Any] | None = None) -> Callable:
    """A fold computing IR `ir_op` (with `attrs`) on the op's inputs, as convert.ir.reference defines it."""
    def evaluate(op: Any, *xs: Any) -> np.ndarray:
        node = Node(ir_op, ir_op, [f"x{i}" for i in range(len(xs))], ["y"], dict(attrs or {}))
        return evaluate_node(node, [np.asarray(x) for x in xs])

    return evaluate


# every TF op the catalog names as one of its ops (a row's `tf`), plus the TF ops the parser writes as one
# or two catalog ops of its own choosing
for _name, (_ir_op, _attrs) in TF_OPS.items():
    fold(_name)(reference(_ir_op, _attrs))
fold("Mul")(reference("mul"))
fold("Pow")(reference("pow"))
fold("Erf")(reference("erf"))
fold("Erfc")(reference("erfc"))
fold("MatrixDeterminant", "BatchMatrixDeterminant")(reference("matrix_determinant"))


@fold("MatrixInverse", "BatchMatrixInverse")
def _matrix_inverse(op: Any, x: Any) -> np.ndarray:
    x = np.asarray(x)
    return reference("matrix_inverse")(op, np.swapaxes(x, -1, -2) if _attr(op, "adjoint") else x)


@fold("Div")
def _div(op: Any, a: Any, b: Any) -> np.ndarray:
    """TF's Div is C division: floats divide, integers round toward zero."""
    a, b = np.asarray(a), np.asarray(b)
    return reference("truncate_div" if np.issubdtype(np.result_type(a, b), np.integer) else "div")(op, a, b)


@fold("SquaredDifference")
def _squared_difference(op: Any, a: Any, b: Any) -> np.ndarray:
    return reference("square")(op, reference("sub")(op, a, b))


@fold("ZerosLike")
def _zeros_like(op: Any, x: Any) -> np.ndarray:
    return np.zeros_like(np.asarray(x))


@fold("OnesLike")
def _ones_like(op: Any, x: Any) -> np.ndarray:
    return np.ones_like(np.asarray(x))


@fold("AddN")
def _add_n(op: Any, *xs: Any) -> np.ndarray:
    return sum(np.asarray(x) for x in xs[1:]) + np.asarray(xs[0])


@fold("Cast")
def _cast(op: Any, x: Any) -> np.ndarray:
    return np.asarray(x).astype(op.get_attr("DstT").as_numpy_dtype)


@fold("Select")
def _select(op: Any, c: Any, a: Any, b: Any) -> np.ndarray:
    c, a = np.asarray(c), np.asarray(a)
    if c.ndim == 1 and a.ndim > 1:  # v1 Select picks whole rows by a vector condition
        c = c.reshape((-1,) + (1,) * (a.ndim - 1))
    return np.where(c, a, np.asarray(b))


@fold("SelectV2")
def _select_v2(op: Any, c: Any, a: Any, b: Any) -> np.ndarray:
    return np.where(np.asarray(c), np.asarray(a), np.asarray(b))


@fold("BiasAdd", "BiasAddV1")
def _bias_add(op: Any, x: Any, b: Any) -> np.ndarray:
    x, b = np.asarray(x), np.asarray(b)
    fmt = _attr(op, "data_format", b"NHWC")
    if fmt.startswith(b"NC") and x.ndim >= 3:
        return x + b.reshape((-1,) + (1,) * (x.ndim - 2))
    return x + b


@fold("MatMul")
def _matmul(op: Any, a: Any, b: Any) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    return (a.T if _attr(op, "transpose_a", False) else a) @ (b.T if _attr(op, "transpose_b", False) else b)


# ---- reductions --------------------------------------------------------------------------------

_REDUCE: dict[str, Callable] = {"Sum": np.sum, "Prod": np.prod, "Mean": np.mean, "Max": np.max,
                                "Min": np.min, "All": np.all, "Any": np.any}


def _register_reduce(name: str, fn: Callable) -> None:
    @fold(name)
    def reduce(op: Any, x: Any, axes: Any) -> np.ndarray:
        x = np.asarray(x)
        axis = tuple(sorted({a % x.ndim for a in _ints(axes)})) if x.ndim else ()
        return fn(x, axis=axis, keepdims=bool(_attr(op, "keep_dims", False)))


for _name, _fn in _REDUCE.items():
    _register_reduce(_name, _fn)


@fold("ArgMax", "ArgMin")
def _arg(op: Any, x: Any, axis: Any) -> np.ndarray:
    fn = np.argmax if op.type == "ArgMax" else np.argmin
    return fn(np.asarray(x), axis=_int(axis))


# ---- shape manipulation ------------------------------------------------------------------------

@fold("Pack")
def _pack(op: Any, *xs: Any) -> np.ndarray:
    return np.stack([np.asarray(x) for x in xs], axis=int(_attr(op, "axis", 0)))


@fold("Unpack")
def _unpack(op: Any, x: Any) -> tuple:
    x = np.asarray(x)
    axis = int(_attr(op, "axis", 0)) % x.ndim
    return tuple(np.take(x, i, axis=axis) for i in range(x.shape[axis]))


@fold("ConcatV2")
def _concat_v2(op: Any, *args: Any) -> np.ndarray:
    return np.concatenate([np.asarray(x) for x in args[:-1]], axis=_int(args[-1]))


@fold("Concat")
def _concat(op: Any, axis: Any, *xs: Any) -> np.ndarray:
    return np.concatenate([np.asarray(x) for x in xs], axis=_int(axis))


@fold("Reshape")
def _reshape(op: Any, x: Any, shape: Any) -> np.ndarray:
    return np.reshape(np.asarray(x), _ints(shape))


@fold("ExpandDims")
def _expand_dims(op: Any, x: Any, axis: Any) -> np.ndarray:
    x = np.asarray(x)
    a = _int(axis)
    return np.expand_dims(x, a if a >= 0 else a + x.ndim + 1)


@fold("Squeeze")
def _squeeze(op: Any, x: Any) -> np.ndarray:
    x = np.asarray(x)
    dims = _attr(op, "squeeze_dims", []) or []
    return np.squeeze(x, axis=tuple(d % x.ndim for d in dims)) if dims else np.squeeze(x)


@fold("Transpose")
def _transpose(op: Any, x: Any, perm: Any) -> np.ndarray:
    return np.transpose(np.asarray(x), _ints(perm))


@fold("Fill")
def _fill(op: Any, dims: Any, value: Any) -> np.ndarray:
    value = np.asarray(value)
    return np.full(_ints(dims), value, value.dtype)


@fold("Range")
def _range(op: Any, start: Any, limit: Any, delta: Any) -> np.ndarray:
    return np.arange(np.asarray(start).item(), np.asarray(limit).item(), np.asarray(delta).item())


@fold("Unique", "UniqueV2", "UniqueWithCounts", "UniqueWithCountsV2")
def _unique(op: Any, x: Any, *axis: Any) -> tuple:
    """(values, indices, counts), in TF's first-occurrence order (each cast to its output's type)."""
    values = np.asarray(x)
    at = _ints(axis[0]) if axis else []
    return unique_along(values, at[0] % values.ndim if at else 0)


@fold("RaggedRange")
def _ragged_range(op: Any, starts: Any, limits: Any, deltas: Any) -> tuple:
    return ragged_range_rows(*np.broadcast_arrays(*[np.asarray(v).reshape(-1) for v in (starts, limits, deltas)]))


@fold("Tile")
def _tile(op: Any, x: Any, multiples: Any) -> np.ndarray:
    return np.tile(np.asarray(x), _ints(multiples))


@fold("BroadcastTo")
def _broadcast_to(op: Any, x: Any, shape: Any) -> np.ndarray:
    return np.array(np.broadcast_to(np.asarray(x), _ints(shape)))


@fold("BroadcastArgs")
def _broadcast_args(op: Any, a: Any, b: Any) -> np.ndarray:
    return np.asarray(np.broadcast_shapes(tuple(_ints(a)), tuple(_ints(b))), np.asarray(a).dtype)


@fold("GatherV2", "Gather")
def _gather(op: Any, params: Any, indices: Any, axis: Any = 0) -> np.ndarray:
    return np.take(np.asarray(params), np.asarray(indices), axis=_int(axis))


@fold("Slice")
def _slice(op: Any, x: Any, begin: Any, size: Any) -> np.ndarray:
    x = np.asarray(x)
    index = tuple(slice(b, None if s == -1 else b + s) for b, s in zip(_ints(begin), _ints(size)))
    return x[index]


def strided_index(begin: list[int], end: list[int], strides: list[int], masks: dict[str, int]) -> tuple:
    """TF's StridedSlice spec as a numpy index (slices, ints, None for new axes, Ellipsis)."""
    index: list[Any] = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        if masks["ellipsis_mask"] >> i & 1:
            index.append(Ellipsis)
        elif masks["new_axis_mask"] >> i & 1:
            index.append(None)
        elif masks["shrink_axis_mask"] >> i & 1:
            index.append(b)
        else:
            index.append(slice(None if masks["begin_mask"] >> i & 1 else b,
                               None if masks["end_mask"] >> i & 1 else e, s))
    return tuple(index)


STRIDED_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


@fold("StridedSlice")
def _strided_slice(op: Any, x: Any, begin: Any, end: Any, strides: Any) -> np.ndarray:
    masks = {m: int(_attr(op, m, 0)) for m in STRIDED_MASKS}
    return np.asarray(x)[strided_index(_ints(begin), _ints(end), _ints(strides), masks)]


@fold("Split")
def _split(op: Any, axis: Any, x: Any) -> tuple:
    return tuple(np.split(np.asarray(x), int(op.get_attr("num_split")), axis=_int(axis)))


@fold("SplitV")
def _split_v(op: Any, x: Any, sizes: Any, axis: Any) -> tuple:
    x = np.asarray(x)
    a = _int(axis) % x.ndim
    sizes = _ints(sizes)
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[a] - (sum(sizes) + 1)
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=a))


@fold("Pad", "PadV2", "MirrorPad")
def _pad(op: Any, x: Any, paddings: Any, value: Any = 0) -> np.ndarray:
    x = np.asarray(x)
    widths = np.asarray(paddings).reshape(-1, 2).tolist()
    if op.type == "MirrorPad":
        mode = "reflect" if _attr(op, "mode", b"REFLECT").upper() == b"REFLECT" else "symmetric"
        return np.pad(x, widths, mode=mode)
    return np.pad(x, widths, constant_values=np.asarray(value).item())


# ---- indexing ops with constant inputs ----------------------------------------------------------------
@fold("ReverseV2")
def _reverse(op: Any, x: Any, axis: Any) -> np.ndarray:
    return np.flip(np.asarray(x), tuple(_ints(axis))).copy()


@fold("Where")
def _where(op: Any, condition: Any) -> np.ndarray:
    """The coordinates of the true (non-zero) elements, row-major, int64: a static result only
    when the condition is a constant."""
    return np.argwhere(np.asarray(condition)).astype(np.int64)


@fold("GatherNd")
def _gather_nd(op: Any, params: Any, indices: Any) -> np.ndarray:
    params, indices = np.asarray(params), np.asarray(indices)
    depth = indices.shape[-1]
    picked = params[tuple(np.moveaxis(indices, -1, 0))] if depth else params[None].repeat(
        int(np.prod(indices.shape[:-1])), 0).reshape(indices.shape[:-1] + params.shape)
    return np.asarray(picked)


@fold("ScatterNd")
def _scatter_nd(op: Any, indices: Any, updates: Any, shape: Any) -> np.ndarray:
    """Zeros of `shape` with the updates added at their indices (duplicates sum, as in TF)."""
    updates = np.asarray(updates)
    out = np.zeros(_ints(shape), updates.dtype)
    np.add.at(out, tuple(np.moveaxis(np.asarray(indices), -1, 0)), updates)
    return out


_TENSOR_SCATTER = {"TensorScatterUpdate": None, "TensorScatterAdd": np.add, "TensorScatterSub": np.subtract,
                   "TensorScatterMax": np.maximum, "TensorScatterMin": np.minimum}


@fold(*_TENSOR_SCATTER)
def _tensor_scatter(op: Any, tensor: Any, indices: Any, updates: Any) -> np.ndarray:
    """A copy of `tensor` with the updates written (or combined) at their indices (Swin's shift mask). An
    index repeated in an update is left to the parser's handler: TF leaves which update wins unspecified."""
    out = np.array(tensor, copy=True)
    indices, updates = np.asarray(indices), np.asarray(updates, out.dtype)
    where = tuple(np.moveaxis(indices, -1, 0))
    combine = _TENSOR_SCATTER[op.type]
    if combine is None:
        flat = indices.reshape(-1, indices.shape[-1])
        if len({tuple(row) for row in flat.tolist()}) != len(flat):
            raise ValueError("TensorScatterUpdate with a repeated index")
        out[where] = updates
    else:
        combine.at(out, where, updates)
    return out


# ---- fake quantization ------------------------------------------------------------------------------
FAKE_QUANT_OPS = ("FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel")


def fake_quant_attrs(op_type: str, low: float, high: float, num_bits: int, narrow_range: bool) -> dict[str, Any]:
    """The IR fake_quant attrs for one TF (min, max) pair: TF's Nudge (fake_quant_ops_functor.h),
    step by step in float32 as TF computes it. The Vars op divides by the scale, the others
    multiply by an inverse computed on its own (not 1 / scale)."""
    f32 = np.float32
    low, high = f32(low), f32(high)
    qmin, qmax = f32(1 if narrow_range else 0), f32((1 << int(num_bits)) - 1)
    scale = (high - low) / (qmax - qmin)
    inverse = (qmax - qmin) / (high - low)
    from_min = qmin - low / scale
    zero_point = qmin if from_min < qmin else qmax if from_min > qmax else f32(math.floor(float(from_min) + 0.5))
    nudged_min, nudged_max = (qmin - zero_point) * scale, (qmax - zero_point) * scale
    divide = op_type == "FakeQuantWithMinMaxVars"
    return {"min": float(nudged_min), "max": float(nudged_max), "scale": float(scale),
            "step": float(scale if divide else inverse), "divide": divide,
            "zero": float(np.floor(-nudged_min * inverse + f32(0.5)))}


def _fake_quant(op: Any, op_type: str, x: Any, low: Any = None, high: Any = None) -> np.ndarray:
    """Fake-quantized constants (the weights of a quantization-aware graph); per channel along the
    last axis; min == max == 0 gives zeros, as in TF."""
    x = np.asarray(x, np.float32)
    bits, narrow = _attr(op, "num_bits", 8), bool(_attr(op, "narrow_range", False))
    if low is None:
        lows, highs = [_attr(op, "min", -6.0)], [_attr(op, "max", 6.0)]
    else:
        lows, highs = np.asarray(low, np.float32).reshape(-1), np.asarray(high, np.float32).reshape(-1)
    per_channel = op_type == "FakeQuantWithMinMaxVarsPerChannel"
    out = np.empty_like(x)
    for i, (lo, hi) in enumerate(zip(lows, highs)):
        part = (..., i) if per_channel else ...
        if lo == 0 and hi == 0 and low is not None:
            out[part] = 0
            continue
        attrs = fake_quant_attrs(op_type, lo, hi, bits, narrow)
        out[part] = evaluate_node(Node("fake_quant", "fake_quant", ["x"], ["y"], attrs), [x[part]])
    return out


for _op_type in FAKE_QUANT_OPS:
    fold(_op_type)(lambda op, *values, _op_type=_op_type: _fake_quant(op, _op_type, *values))
