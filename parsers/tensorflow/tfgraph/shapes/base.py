"""The shape-function table, what a function sees of its op (`Node`), the dtype rule, the
inference pass and the shape helpers every family uses."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from tf_convert.convert.registry import OpTable

from ...known_ops import attr_defaults
from ..fold import FOLDS
from ..static import DType, ShapeError, TensorShape

SHAPE_FNS = OpTable("TF shape functions")  # TF op type -> fn(node) -> output shapes
Dims = list | None
shape_fn = SHAPE_FNS.register


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

    def partial_ints(self, i: int) -> list[int | None] | None:
        """Input i's integer elements where the graph fixes them (a constant; the constant scalars of a Pack),
        None for each one only the run computes; None when not even its length is known."""
        full = self.ints(i)
        if full is not None:
            return full
        t = self.op.inputs[i]
        if t.op.type == "Pack" and all(p.shape.rank == 0 for p in t.op.inputs):
            values = [self._evaluator.value(p) for p in t.op.inputs]
            return [None if v is None else int(np.asarray(v).reshape(-1)[0]) for v in values]
        dims = t.shape.dims
        return [None] * dims[0] if dims is not None and len(dims) == 1 and dims[0] is not None else None

    def attr(self, name: str, default: Any = None) -> Any:
        """The attr (TF's default where the NodeDef leaves it out), else `default`; strings decoded."""
        try:
            value = self.op.get_attr(name)
        except ValueError:
            return default
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
             "LogicalOr", "LogicalNot", "IsFinite", "IsNan", "IsInf", "ApproximateEqual",
             "InTopK", "InTopKV2"}
# (attr, default enum) of the output dtype where it is not the op's T
_DTYPE_ATTRS = {"Shape": ("out_type", _INT32), "ShapeN": ("out_type", _INT32), "Size": ("out_type", _INT32),
                "Cast": ("DstT", None), "ArgMax": ("output_type", _INT64), "ArgMin": ("output_type", _INT64),
                "Range": ("Tidx", _INT32), "GatherV2": ("Tparams", None), "Gather": ("Tparams", None),
                "GatherNd": ("Tparams", None),
                # float32 only, no type attr
                **{op: ("T", 1) for op in ("FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars",
                                           "FakeQuantWithMinMaxVarsPerChannel")},
                # index outputs of a value input
                "LowerBound": ("out_type", _INT32), "UpperBound": ("out_type", _INT32),
                "UnravelIndex": ("Tidx", _INT32), "ConcatOffset": ("shape_type", _INT32),
                "HistogramFixedWidth": ("dtype", _INT32), "SparseMatMul": ("T", 1),  # float32, no type attr
                # spectral ops: the real or complex type their attrs name (default float32 / complex64)
                **{op: ("Tout", 1) for op in ("ComplexAbs", "Real", "Imag", "Angle")}, "Complex": ("Tout", 8),
                **{op: ("Tcomplex", 8) for op in ("RFFT", "RFFT2D", "RFFT3D", "FFT", "IFFT", "FFT2D", "IFFT2D", "FFT3D",
                                              "IFFT3D")},
                **{op: ("Treal", 1) for op in ("IRFFT", "IRFFT2D", "IRFFT3D")}}
_GENERIC = ("T", "dtype", "out_type", "DstT", "output_type", "Tout", "type")
# SparseTensor outputs -- int64 indices and shapes (I) around the values (T), bools (B)
_SPARSE_OUTPUTS = {"SparseReorder": "IT", "SparseSlice": "ITI", "SparseConcat": "ITI", "SparseFillEmptyRows": "ITBI",
                   "SparseReduceMaxSparse": "ITI", "SparseReduceSumSparse": "ITI", "SparseSparseMaximum": "IT",
                   "SparseSparseMinimum": "IT"}
# non-max suppression: int32 indices (I), the scores in the boxes' type (T), an int32 count (I)
_NMS_OUTPUTS = {"NonMaxSuppression": "I", "NonMaxSuppressionV2": "I", "NonMaxSuppressionV3": "I",
                "NonMaxSuppressionV4": "II", "NonMaxSuppressionV5": "ITI", "CombinedNonMaxSuppression": "TTTI"}
_LISTS = ("T", "output_types", "component_types", "Toutputs", "Tout")


_defaults = lru_cache(maxsize=None)(attr_defaults)  # read only: one decoding per op type


def out_dtypes(op: Any) -> list[DType | None]:
    """TF's dtype of each output of `op`, from its attrs (works on a bare NodeDef too). An attr the NodeDef
    leaves out has its default from TF's op definition, as TF's import fills it in: a SavedModel is written
    with default attrs stripped (tf_keras's LeakyRelu has no `T`)."""
    attrs = {**_defaults(op.type), **dict(op.node_def.attr)}
    n = len(op.outputs) if hasattr(op, "outputs") else 1
    if op.type in _BOOL_OPS:
        return [DType(_BOOL)] * n
    if op.type == "PopulationCount":
        return [DType(4)]  # uint8
    if op.type == "ToBool":
        return [DType(_BOOL)]
    if op.type in ("Rank", "Bucketize"):
        return [DType(_INT32)]
    if op.type == "Where":  # coordinates, whatever the condition's type
        return [DType(_INT64)]
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
    if op.type == "MaxPoolWithArgmax":  # (values, argmax)
        return [DType(attrs["T"].type), DType(attrs["Targmax"].type if "Targmax" in attrs else _INT64)][:n]
    if op.type == "CTCGreedyDecoder":  # decoded indices, values, shape (int64), log_probability (T)
        return [DType(_INT64)] * 3 + [DType(attrs["T"].type if "T" in attrs else 1)]
    if op.type == "RaggedRange":  # (rt_nested_splits, rt_dense_values)
        return [DType(attrs["Tsplits"].type if "Tsplits" in attrs else _INT64), DType(attrs["T"].type)][:n]
    if op.type.startswith("Unique"):  # (values, indices, counts): the indices' type is out_idx
        index = DType(attrs["out_idx"].type if "out_idx" in attrs else _INT32)
        return [DType(attrs["T"].type), index, index][:n]
    if op.type in ("TopKV2", "TopK"):  # (values, indices)
        return [DType(attrs["T"].type), DType(attrs["index_type"].type if "index_type" in attrs else _INT32)][:n]
    if op.type in _NMS_OUTPUTS:
        enums = {"I": _INT32, "T": attrs["T"].type if "T" in attrs else 1}
        return [DType(enums[k]) for k in _NMS_OUTPUTS[op.type]][:n]
    if op.type in _SPARSE_OUTPUTS or op.type == "SparseSplit":
        kinds = _SPARSE_OUTPUTS.get(op.type) or "".join(k * (n // 3) for k in "ITI")
        enums = {"I": _INT64, "B": _BOOL, "T": attrs["T"].type}
        return [DType(enums[k]) for k in kinds][:n]
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
        raise ShapeError(f"{what}shapes {show(a)} and {show(b)} differ in rank")
    out = []
    for x, y in zip(a, b):
        if x is not None and y is not None and x != y:
            raise ShapeError(f"{what}shapes {show(a)} and {show(b)} are not compatible")
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
            raise ShapeError(f"incompatible shapes for broadcasting: {show(a)} and {show(b)}")
        else:
            out.append(x)
    return out


def show(dims: Dims) -> str:
    return "<unknown>" if dims is None else "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def axis_index(a: int, rank: int, what: str = "axis") -> int:
    if not -rank <= a < max(rank, 1):
        raise ShapeError(f"{what} {a} is out of range for rank {rank}")
    return a % rank if rank else 0


def known_prod(dims: list) -> int | None:
    return None if any(d is None for d in dims) else math.prod(dims)
