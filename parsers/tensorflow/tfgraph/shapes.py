"""Static shape inference, one function per TF op: `@shape_fn("Conv2D")`, `fn(node) -> [dims per
output]` where dims is a list (None for an unknown dim) or None (unknown rank). `node` gives the
inputs' dims, the constant value of an input when it has one, and the attrs. A function raises
ShapeError where TF's own inference would refuse the graph. An op without a function gets its
shape from its constant value when it has one, else unknown shapes.

SAME/VALID/EXPLICIT window sizes come from convert/padding/rules.py (every padding fact once).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from convert.padding.rules import output_size_1d, same_pads_1d

from .fold import FOLDS, STRIDED_MASKS, SHAPE_OPS
from .graph import DType, ShapeError, TensorShape

SHAPE_FNS: dict[str, Callable] = {}
Dims = list | None


def shape_fn(*names: str) -> Callable:
    def register(fn: Callable) -> Callable:
        for name in names:
            if name in SHAPE_FNS:
                raise ValueError(f"two shape functions for {name!r}")
            SHAPE_FNS[name] = fn
        return fn

    return register


class Node:
    """What a shape function sees of one op."""

    def __init__(self, op: Any, evaluator: Any):
        self.op = op
        self._evaluator = evaluator

    def dims(self, i: int) -> Dims:
        return self.op.inputs[i].shape.dims

    @property
    def weights(self) -> dict:
        """Const node name -> streamed value (graph.weights)."""
        return self._evaluator.graph.weights

    def value(self, i: int) -> np.ndarray | None:
        v = self._evaluator.value(self.op.inputs[i])
        return None if v is None else np.asarray(v)

    def ints(self, i: int) -> list[int] | None:
        v = self.value(i)
        return None if v is None else [int(x) for x in v.reshape(-1)]

    def attr(self, name: str, default: Any = None) -> Any:
        if name not in self.op.node_def.attr:
            return default
        value = self.op.get_attr(name)
        return value.decode() if isinstance(value, bytes) else value

    @property
    def n_out(self) -> int:
        return len(self.op.outputs)


# ---- dtypes ------------------------------------------------------------------------------------

_BOOL = 10
_INT32 = 3
_INT64 = 9
_RESOURCE = 20
_REF = 100  # DT_FLOAT_REF = DT_FLOAT + 100
_REF_OUTPUTS = {"VariableV2", "Variable", "Assign"}
_BOOL_OPS = {"Equal", "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual", "LogicalAnd",
             "LogicalOr", "LogicalNot", "IsFinite", "IsNan", "IsInf"}
# (attr, default enum) of the output dtype where it is not the op's T
_DTYPE_ATTRS = {"Shape": ("out_type", _INT32), "ShapeN": ("out_type", _INT32), "Size": ("out_type", _INT32),
                "Cast": ("DstT", None), "ArgMax": ("output_type", _INT64), "ArgMin": ("output_type", _INT64),
                "Range": ("Tidx", _INT32), "GatherV2": ("Tparams", None), "Gather": ("Tparams", None)}
_GENERIC = ("T", "dtype", "out_type", "DstT", "output_type", "Tout", "type")
_LISTS = ("T", "output_types", "component_types", "Toutputs", "Tout")


def out_dtypes(op: Any) -> list[DType | None]:
    """TF's dtype of each output of `op`, from its attrs (works on a bare NodeDef too)."""
    attrs = op.node_def.attr
    n = len(op.outputs) if hasattr(op, "outputs") else 1
    if op.type in _BOOL_OPS:
        return [DType(_BOOL)] * n
    if op.type == "Rank":
        return [DType(_INT32)]
    if op.type in ("Merge", "RefMerge"):  # (value, index of the input taken)
        return [DType(attrs["T"].type), DType(_INT32)][:n]
    if op.type == "VarHandleOp":
        return [DType(_RESOURCE)]
    if op.type in _REF_OUTPUTS:  # a TF1 reference variable's tensors are of the _REF type
        enum = attrs["dtype"].type if "dtype" in attrs else attrs["T"].type
        return [DType(enum + _REF)] * n
    if op.type in _DTYPE_ATTRS:
        name, default = _DTYPE_ATTRS[op.type]
        enum = attrs[name].type if name in attrs else default
        return [DType(enum) if enum is not None else None] * n
    if op.type.startswith("FusedBatchNorm") and "U" in attrs:
        return [DType(attrs["T"].type)] + [DType(attrs["U"].type)] * (n - 1)
    for name in _LISTS:
        if name in attrs and attrs[name].WhichOneof("value") == "list" and attrs[name].list.type:
            types = [DType(t) for t in attrs[name].list.type]
            return (types + [None] * n)[:n]
    for name in _GENERIC:
        if name in attrs and attrs[name].WhichOneof("value") == "type":
            return [DType(attrs[name].type)] * n
    return [None] * n


# ---- the pass ----------------------------------------------------------------------------------

def infer(op: Any, evaluator: Any) -> None:
    """Set the dtype and static shape of each output of `op` (its inputs are done)."""
    for t, dtype in zip(op.outputs, out_dtypes(op)):
        t.dtype = dtype
    fn = SHAPE_FNS.get(op.type)
    if fn is None:
        shapes = [_from_value(evaluator, t) for t in op.outputs] if op.type in FOLDS else [None] * len(op.outputs)
    else:
        shapes = fn(Node(op, evaluator))
    for t, dims in zip(op.outputs, list(shapes) + [None] * len(op.outputs)):
        t.shape = TensorShape(dims)


def _from_value(evaluator: Any, t: Any) -> Dims:
    v = evaluator.value(t)
    return None if v is None else list(v.shape)


# ---- helpers -----------------------------------------------------------------------------------

def merge(a: Dims, b: Dims, what: str = "") -> Dims:
    """The shape both `a` and `b` describe (TF's Merge)."""
    if a is None:
        return None if b is None else list(b)
    if b is None:
        return list(a)
    if len(a) != len(b):
        raise ShapeError(f"{what}shapes {_show(a)} and {_show(b)} differ in rank")
    out = []
    for x, y in zip(a, b):
        if x is not None and y is not None and x != y:
            raise ShapeError(f"{what}shapes {_show(a)} and {_show(b)} are not compatible")
        out.append(x if x is not None else y)
    return out


def broadcast(a: Dims, b: Dims) -> Dims:
    if a is None or b is None:
        return None
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        elif x != y:
            raise ShapeError(f"incompatible shapes for broadcasting: {_show(a)} and {_show(b)}")
        else:
            out.append(x)
    return out


def _show(dims: Dims) -> str:
    return "<unknown>" if dims is None else "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _axis(a: int, rank: int, what: str = "axis") -> int:
    if not -rank <= a < max(rank, 1):
        raise ShapeError(f"{what} {a} is out of range for rank {rank}")
    return a % rank if rank else 0


def _prod(dims: list) -> int | None:
    return None if any(d is None for d in dims) else math.prod(dims)


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


_SAME_SHAPE = ("Identity", "StopGradient", "Snapshot", "PreventGradient", "CheckNumerics", "Relu", "Relu6",
               "Elu", "Selu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Rsqrt", "Square", "Neg", "Abs",
               "Floor", "Ceil", "Round", "Rint", "Reciprocal", "Inv", "Sign", "Erf", "Erfc", "Softplus",
               "Softsign", "LeakyRelu", "Softmax", "LogSoftmax", "LogicalNot", "Cast", "ZerosLike",
               "OnesLike", "Cumsum", "IsFinite", "IsNan", "IsInf")


@shape_fn(*_SAME_SHAPE)
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

_BROADCASTING = ("Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "TruncateDiv", "FloorDiv",
                 "FloorMod", "Maximum", "Minimum", "Pow", "SquaredDifference", "Equal", "NotEqual",
                 "Greater", "GreaterEqual", "Less", "LessEqual", "LogicalAnd", "LogicalOr", "SelectV2")


@shape_fn(*_BROADCASTING)
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


# ---- windows -----------------------------------------------------------------------------------

def _spatial(fmt: str) -> tuple[int, int, int]:
    """(H axis, W axis, C axis) of a rank-4 tensor in `fmt`."""
    return (1, 2, 3) if not fmt.startswith("NC") else (2, 3, 1)


def window_size(n: int | None, k: int, s: int, d: int, padding: str, explicit: tuple[int, int]) -> int | None:
    """TF's output length of a window op along one axis."""
    if n is None:
        return None
    if padding == "SAME":
        before, after = same_pads_1d(n, k, s, d)
    elif padding == "EXPLICIT":
        before, after = explicit
    elif padding == "VALID":
        before, after = 0, 0
    else:
        raise ShapeError(f"unknown padding {padding!r}")
    out = output_size_1d(n, k, s, d, before, after)
    if out < 0:
        raise ShapeError(f"computed output size would be negative: input {n}, window {(k - 1) * d + 1}, "
                         f"stride {s}, {padding} padding")
    return out


def _explicit(node: Node, axis: int) -> tuple[int, int]:
    flat = node.attr("explicit_paddings", []) or []
    return (int(flat[2 * axis]), int(flat[2 * axis + 1])) if len(flat) == 8 else (0, 0)


def _windowed(node: Node, x: Dims, kernel: tuple[int, int], channels: int | None, fmt: str) -> Dims:
    if x is None:
        return [None] * 4
    if len(x) != 4:
        raise ShapeError(f"{node.op.type} needs a rank-4 input, got {_show(x)}")
    h, w, c = _spatial(fmt)
    strides = node.attr("strides") or [1, 1, 1, 1]
    dilations = node.attr("dilations") or [1, 1, 1, 1]
    padding = node.attr("padding", "VALID")
    out = list(x)
    for axis, k in zip((h, w), kernel):
        out[axis] = window_size(x[axis], k, int(strides[axis]), int(dilations[axis]), padding,
                                _explicit(node, axis))
    out[c] = channels
    return out


@shape_fn("Conv2D", "DepthwiseConv2dNative")
def _conv(node: Node) -> list:
    x, f = node.dims(0), node.dims(1)
    fmt = node.attr("data_format", "NHWC")
    if f is None:
        return [_windowed(node, x, (1, 1), None, fmt) if x is not None else [None] * 4]
    if len(f) != 4:
        raise ShapeError(f"{node.op.type} needs a rank-4 filter, got {_show(f)}")
    kh, kw, ci, co = f
    c_in = x[_spatial(fmt)[2]] if x is not None and len(x) == 4 else None
    if node.op.type == "Conv2D":
        if c_in is not None and ci is not None and (ci == 0 or c_in % ci):
            raise ShapeError(f"Conv2D: the input depth {c_in} is not a multiple of the filter's depth {ci}")
        channels = co
    else:
        if c_in is not None and ci is not None and c_in != ci:
            raise ShapeError(f"DepthwiseConv2dNative: input depth {c_in} differs from the filter's {ci}")
        channels = None if ci is None or co is None else ci * co
    if kh is None or kw is None:
        return [[x[0] if x else None, None, None, None]]
    return [_windowed(node, x, (kh, kw), channels, fmt)]


@shape_fn("MaxPool", "AvgPool")
def _pool(node: Node) -> list:
    x = node.dims(0)
    fmt = node.attr("data_format", "NHWC")
    h, w, c = _spatial(fmt)
    ksize = node.attr("ksize")
    return [_windowed(node, x, (int(ksize[h]), int(ksize[w])), x[c] if x is not None else None, fmt)]


@shape_fn("Conv2DBackpropInput")
def _conv_transpose(node: Node) -> list:
    sizes = node.ints(0)
    if sizes is not None:
        return [sizes]
    return [[None] * 4]


@shape_fn("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def _batch_norm(node: Node) -> list:
    x = node.dims(0)
    c = None
    if x is not None and len(x) == 4:
        c = x[_spatial(node.attr("data_format", "NHWC"))[2]]
    return [x] + [[c]] * 4 + [None] * (node.n_out - 5)


@shape_fn("ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic", "ResizeArea", "ScaleAndTranslate")
def _resize(node: Node) -> list:
    x, size = node.dims(0), node.ints(1)
    hw = size if size is not None else [None, None]
    return [[x[0], hw[0], hw[1], x[3]] if x is not None else [None, hw[0], hw[1], None]]


@shape_fn("ResizeBicubicGrad")
def _resize_grad(node: Node) -> list:
    return [node.dims(1)]


@shape_fn("DepthToSpace", "SpaceToDepth")
def _depth_space(node: Node) -> list:
    x = node.dims(0)
    if x is None:
        return [[None] * 4]
    b = int(node.attr("block_size"))
    h, w, c = _spatial(node.attr("data_format", "NHWC"))
    out = list(x)
    grow = node.op.type == "DepthToSpace"
    for axis in (h, w):
        out[axis] = None if x[axis] is None else (x[axis] * b if grow else x[axis] // b)
    out[c] = None if x[c] is None else (x[c] // (b * b) if grow else x[c] * b * b)
    return [out]


@shape_fn("SpaceToBatchND")
def _space_to_batch(node: Node) -> list:
    x, block, pads = node.dims(0), node.ints(1), node.value(2)
    if x is None or block is None or pads is None:
        return [None if x is None else [None] * len(x)]
    pads = pads.reshape(-1, 2)
    out = list(x)
    out[0] = None if x[0] is None else x[0] * math.prod(block)
    for i, b in enumerate(block, 1):
        n = x[i]
        out[i] = None if n is None else (n + int(pads[i - 1][0]) + int(pads[i - 1][1])) // b
    return [out]


@shape_fn("BatchToSpaceND")
def _batch_to_space(node: Node) -> list:
    x, block, crops = node.dims(0), node.ints(1), node.value(2)
    if x is None or block is None or crops is None:
        return [None if x is None else [None] * len(x)]
    crops = crops.reshape(-1, 2)
    out = list(x)
    out[0] = None if x[0] is None else x[0] // math.prod(block)
    for i, b in enumerate(block, 1):
        n = x[i]
        out[i] = None if n is None else n * b - int(crops[i - 1][0]) - int(crops[i - 1][1])
    return [out]


# ---- matmul ------------------------------------------------------------------------------------

def _check_inner(op: str, k1: int | None, k2: int | None) -> None:
    if k1 is not None and k2 is not None and k1 != k2:
        raise ShapeError(f"{op}: inner dimensions differ ({k1} vs {k2})")


@shape_fn("MatMul")
def _matmul(node: Node) -> list:
    a, b = node.dims(0), node.dims(1)
    a = a if a is not None else [None, None]
    b = b if b is not None else [None, None]
    if len(a) != 2 or len(b) != 2:
        raise ShapeError(f"MatMul needs rank-2 operands, got {_show(a)} and {_show(b)}")
    m, k1 = a[::-1] if node.attr("transpose_a", False) else a
    k2, n = b[::-1] if node.attr("transpose_b", False) else b
    _check_inner("MatMul", k1, k2)
    return [[m, n]]


@shape_fn("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def _batch_matmul(node: Node) -> list:
    a, b = node.dims(0), node.dims(1)
    if a is None or b is None:
        return [None]
    m, k1 = a[-2:][::-1] if node.attr("adj_x", False) else a[-2:]
    k2, n = b[-2:][::-1] if node.attr("adj_y", False) else b[-2:]
    _check_inner(node.op.type, k1, k2)
    batch = broadcast(a[:-2], b[:-2]) if node.op.type != "BatchMatMul" else merge(a[:-2], b[:-2])
    return [batch + [m, n]]


# ---- reshaping ---------------------------------------------------------------------------------

@shape_fn("Reshape")
def _reshape(node: Node) -> list:
    x, shape = node.dims(0), node.ints(1)
    if shape is None:
        s = node.dims(1)
        return [None if s is None or s[0] is None else [None] * s[0]]
    if shape.count(-1) > 1:
        raise ShapeError(f"Reshape: more than one -1 in {shape}")
    total = _prod(x) if x is not None else None
    known = math.prod(d for d in shape if d != -1)
    if -1 in shape:
        if total is None or known == 0:
            return [[None if d == -1 else d for d in shape]]
        if total % known:
            raise ShapeError(f"Reshape: cannot reshape a tensor of {total} elements to {shape}")
        return [[total // known if d == -1 else d for d in shape]]
    if total is not None and total != known:
        raise ShapeError(f"Reshape: cannot reshape a tensor of {total} elements to {shape}")
    return [shape]


@shape_fn("ExpandDims")
def _expand_dims(node: Node) -> list:
    x, dim = node.dims(0), node.ints(1)
    if x is None or dim is None:
        return [None]
    axis = _axis(dim[0], len(x) + 1, "ExpandDims axis")
    return [x[:axis] + [1] + x[axis:]]


@shape_fn("Squeeze")
def _squeeze(node: Node) -> list:
    x = node.dims(0)
    if x is None:
        return [None]
    dims = node.attr("squeeze_dims", []) or []
    if not dims:
        if any(d is None for d in x):
            return [None]
        return [[d for d in x if d != 1]]
    axes = {_axis(int(a), len(x), "Squeeze axis") for a in dims}
    for a in axes:
        if x[a] is not None and x[a] != 1:
            raise ShapeError(f"Squeeze: dimension {a} of {_show(x)} is not 1")
    return [[d for i, d in enumerate(x) if i not in axes]]


@shape_fn("Transpose")
def _transpose(node: Node) -> list:
    x, perm = node.dims(0), node.ints(1)
    if perm is None:
        return [None if x is None else [None] * len(x)]
    if x is None:
        return [[None] * len(perm)]
    if sorted(perm) != list(range(len(x))):
        raise ShapeError(f"Transpose: {perm} is not a permutation of rank {len(x)}")
    return [[x[p] for p in perm]]


def _concat(node: Node, axis: list[int] | None, shapes: list) -> list:
    rank = next((len(s) for s in shapes if s is not None), None)
    if rank is None:
        return [None]
    if axis is None:
        return [[None] * rank]
    a = _axis(axis[0], rank, "ConcatV2 axis")
    out = [None] * rank
    total = 0
    for s in shapes:
        if s is None:
            total = None
            continue
        if len(s) != rank:
            raise ShapeError(f"{node.op.type}: inputs of rank {len(s)} and {rank}")
        rest = merge([d for i, d in enumerate(out) if i != a], [d for i, d in enumerate(s) if i != a],
                     f"{node.op.type}: ")
        out = rest[:a] + [None] + rest[a:]
        total = None if total is None or s[a] is None else total + s[a]
    out[a] = total
    return [out]


@shape_fn("ConcatV2")
def _concat_v2(node: Node) -> list:
    n = len(node.op.inputs) - 1
    return _concat(node, node.ints(n), [node.dims(i) for i in range(n)])


@shape_fn("Concat")
def _concat_v1(node: Node) -> list:
    return _concat(node, node.ints(0), [node.dims(i) for i in range(1, len(node.op.inputs))])


@shape_fn("Pack")
def _pack(node: Node) -> list:
    out = None
    for i in range(len(node.op.inputs)):
        out = merge(out, node.dims(i), "Pack: ")
    if out is None:
        return [None]
    axis = _axis(int(node.attr("axis", 0)), len(out) + 1, "Pack axis")
    return [out[:axis] + [len(node.op.inputs)] + out[axis:]]


@shape_fn("Unpack")
def _unpack(node: Node) -> list:
    x = node.dims(0)
    if x is None:
        return [None] * node.n_out
    axis = _axis(int(node.attr("axis", 0)), len(x), "Unpack axis")
    if x[axis] is not None and x[axis] != node.n_out:
        raise ShapeError(f"Unpack: {node.n_out} outputs from a dimension of size {x[axis]}")
    return [x[:axis] + x[axis + 1:]] * node.n_out


@shape_fn("Split")
def _split(node: Node) -> list:
    axis, x = node.ints(0), node.dims(1)
    n = node.n_out
    if x is None or axis is None:
        return [None if x is None else [None] * len(x)] * n
    a = _axis(axis[0], len(x), "Split axis")
    if x[a] is not None and x[a] % n:
        raise ShapeError(f"Split: dimension {a} of size {x[a]} does not split into {n}")
    piece = list(x)
    piece[a] = None if x[a] is None else x[a] // n
    return [piece] * n


@shape_fn("SplitV")
def _split_v(node: Node) -> list:
    x, sizes, axis = node.dims(0), node.ints(1), node.ints(2)
    n = node.n_out
    if x is None or axis is None or sizes is None:
        return [None if x is None else [None] * len(x)] * n
    a = _axis(axis[0], len(x), "SplitV axis")
    if -1 in sizes and x[a] is not None:
        sizes = list(sizes)
        sizes[sizes.index(-1)] = x[a] - (sum(sizes) + 1)
    if x[a] is not None and -1 not in sizes and sum(sizes) != x[a]:
        raise ShapeError(f"SplitV: sizes {sizes} do not add up to dimension {a} of size {x[a]}")
    return [x[:a] + [None if s == -1 else s] + x[a + 1:] for s in sizes]


@shape_fn("Slice")
def _slice(node: Node) -> list:
    x, begin, size = node.dims(0), node.ints(1), node.ints(2)
    if begin is None or size is None:
        return [None if x is None else [None] * len(x)]
    if x is None:
        return [[None if s == -1 else s for s in size]]
    out = []
    for n, b, s in zip(x, begin, size):
        if s == -1:
            out.append(None if n is None else n - b)
        else:
            if n is not None and (b < 0 or b + s > n):
                raise ShapeError(f"Slice: begin {begin} size {size} out of bounds for {_show(x)}")
            out.append(s)
    return [out]


def _strided_axis(n: int | None, b: int, e: int, s: int, begin_all: bool, end_all: bool) -> int | None:
    if n is None:
        return None
    if s == 0:
        raise ShapeError("StridedSlice: a stride of 0")
    return len(range(*slice(None if begin_all else b, None if end_all else e, s).indices(n)))


@shape_fn("StridedSlice")
def _strided_slice(node: Node) -> list:
    x, begin, end, strides = node.dims(0), node.ints(1), node.ints(2), node.ints(3)
    if x is None or begin is None or end is None or strides is None:
        return [None]
    masks = {m: int(node.attr(m, 0)) for m in STRIDED_MASKS}
    ellipsis = next((i for i in range(len(begin)) if masks["ellipsis_mask"] >> i & 1), None)
    spec = list(range(len(begin))) + ([] if ellipsis is not None else [-1])
    used = sum(1 for i in range(len(begin)) if i != ellipsis and not masks["new_axis_mask"] >> i & 1)
    out: list = []
    axis = 0
    for i in spec:
        if i == -1 or i == ellipsis:
            for _ in range(len(x) - used):
                out.append(x[axis])
                axis += 1
        elif masks["new_axis_mask"] >> i & 1:
            out.append(1)
        elif axis >= len(x):
            raise ShapeError(f"StridedSlice: the slice spec indexes more than the {len(x)} axes of {_show(x)}")
        elif masks["shrink_axis_mask"] >> i & 1:
            n = x[axis]
            if n is not None and not -n <= begin[i] < n:
                raise ShapeError(f"StridedSlice: index {begin[i]} out of range for an axis of size {n}")
            axis += 1
        else:
            out.append(_strided_axis(x[axis], begin[i], end[i], strides[i], bool(masks["begin_mask"] >> i & 1),
                                     bool(masks["end_mask"] >> i & 1)))
            axis += 1
    return [out]


@shape_fn("Pad", "PadV2", "MirrorPad")
def _pad(node: Node) -> list:
    x, pads = node.dims(0), node.value(1)
    if pads is None:
        return [None if x is None else [None] * len(x)]
    pads = pads.reshape(-1, 2)
    if x is not None and len(x) != len(pads):
        raise ShapeError(f"{node.op.type}: paddings for rank {len(pads)} on a tensor of rank {len(x)}")
    x = x if x is not None else [None] * len(pads)
    return [[None if n is None else n + int(p[0]) + int(p[1]) for n, p in zip(x, pads)]]


@shape_fn("Tile")
def _tile(node: Node) -> list:
    x, mult = node.dims(0), node.ints(1)
    if mult is None:
        return [None if x is None else [None] * len(x)]
    x = x if x is not None else [None] * len(mult)
    return [[None if n is None else n * m for n, m in zip(x, mult)]]


@shape_fn("Fill", "BroadcastTo")
def _fill(node: Node) -> list:
    dims = node.ints(0 if node.op.type == "Fill" else 1)
    if dims is None:
        s = node.dims(0 if node.op.type == "Fill" else 1)
        return [None if s is None or s[0] is None else [None] * s[0]]
    if node.op.type == "BroadcastTo":
        broadcast(node.dims(0), dims)
    return [dims]


@shape_fn("BroadcastArgs")
def _broadcast_args(node: Node) -> list:
    a, b = node.dims(0), node.dims(1)
    return [[None if a is None or b is None or None in a + b else max(a[0], b[0])]]


@shape_fn("Range")
def _range(node: Node) -> list:
    values = [node.value(i) for i in range(3)]
    if any(v is None for v in values):
        return [[None]]
    start, limit, delta = (v.item() for v in values)
    if delta == 0:
        raise ShapeError("Range: delta is 0")
    return [[max(0, math.ceil((limit - start) / delta))]]


def _reduced(node: Node, x: Dims, axes: list[int] | None, keep: bool) -> Dims:
    if x is None:
        return None
    if axes is None:
        return [None] * len(x) if keep else None
    axes_set = {_axis(a, len(x), f"{node.op.type} axis") for a in axes} if x else set()
    if keep:
        return [1 if i in axes_set else d for i, d in enumerate(x)]
    return [d for i, d in enumerate(x) if i not in axes_set]


@shape_fn("Sum", "Prod", "Mean", "Max", "Min", "All", "Any")
def _reduce(node: Node) -> list:
    return [_reduced(node, node.dims(0), node.ints(1), bool(node.attr("keep_dims", False)))]


@shape_fn("ArgMax", "ArgMin")
def _arg(node: Node) -> list:
    axis = node.ints(1)
    return [_reduced(node, node.dims(0), axis[:1] if axis is not None else None, False)]


@shape_fn("GatherV2", "Gather")
def _gather(node: Node) -> list:
    params, indices = node.dims(0), node.dims(1)
    axis = node.ints(2) if node.op.type == "GatherV2" else [0]
    if params is None or indices is None or axis is None:
        return [None]
    a = _axis(axis[0], len(params), "GatherV2 axis")
    return [params[:a] + indices + params[a + 1:]]


@shape_fn("VariableV2", "Variable", "VarHandleOp")
def _variable(node: Node) -> list:
    dims = TensorShape.from_proto(node.attr("shape")).dims
    return [[] if node.op.type == "VarHandleOp" else dims]


@shape_fn("ReadVariableOp")
def _read_variable(node: Node) -> list:
    handle = node.op.inputs[0].op
    return [TensorShape.from_proto(handle.get_attr("shape")).dims if handle.type == "VarHandleOp" else None]


@shape_fn("Switch", "RefSwitch")
def _switch(node: Node) -> list:
    return [node.dims(0)] * 2


@shape_fn("Enter", "RefEnter")
def _enter(node: Node) -> list:
    """A loop variable may change shape from one iteration to the next: known only when constant."""
    return [node.dims(0) if node.attr("is_constant", False) else None]


@shape_fn("Exit", "RefExit", "NextIteration", "Assign")
def _forward(node: Node) -> list:
    return [node.dims(0)]


@shape_fn("Merge", "RefMerge")
def _merge(node: Node) -> list:
    """The dims every input agrees on (a cond's branches may differ: TF relaxes, not refuses)."""
    shapes = [node.dims(i) for i in range(len(node.op.inputs))]
    out = shapes[0] if shapes else None
    for s in shapes[1:]:
        if out is None or s is None or len(s) != len(out):
            out = None
            break
        out = [a if a == b else None for a, b in zip(out, s)]
    return [out, []]


@shape_fn("NoOp")
def _no_op(node: Node) -> list:
    return []


@shape_fn("IteratorGetNext", "IteratorGetNextSync")
def _iterator(node: Node) -> list:
    return [TensorShape.from_proto(s).dims for s in node.attr("output_shapes", []) or []]


assert not set(SHAPE_OPS) - set(SHAPE_FNS)
