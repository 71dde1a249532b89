"""A `.tflite` flatbuffer read through TFLite's own schema (the `tflite` package: the classes `flatc`
generates from TFLite's schema.fbs), into plain records the builder walks. No TensorFlow.

Only what the conversion needs is read: tensors (shape, type, quantization, constant data), operators
(builtin name or custom code, inputs, outputs, typed options), subgraphs and SignatureDefs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tflite

from tf_convert.convert.errors import InputError
from tf_convert.parsers.source import is_tflite

from .sparsity import densify


# the schema's enums, value -> name, read from the generated classes (never restated here)
def _enum(cls: type) -> dict[int, str]:
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


BUILTIN_NAMES = _enum(tflite.BuiltinOperator)
OPTION_NAMES = _enum(tflite.BuiltinOptions)
TENSOR_TYPES = _enum(tflite.TensorType)
PADDINGS = _enum(tflite.Padding)
ACTIVATIONS = _enum(tflite.ActivationFunctionType)

# TensorType name -> numpy dtype of the stored bytes (little endian, as the schema says)
NUMPY_TYPES = {"FLOAT32": np.float32, "FLOAT16": np.float16, "FLOAT64": np.float64, "INT8": np.int8,
               "UINT8": np.uint8, "INT16": np.int16, "UINT16": np.uint16, "INT32": np.int32, "UINT32": np.uint32,
               "INT64": np.int64, "UINT64": np.uint64, "BOOL": np.bool_}


@dataclass
class Quantization:
    scale: np.ndarray  # float32, one per channel (or one)
    zero_point: np.ndarray  # int64
    axis: int  # the quantized dimension (per-channel)


@dataclass
class Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    signature: tuple[int, ...]  # shape_signature: -1 where the size is free ((): as `shape`)
    type: str  # TensorType name: FLOAT32, FLOAT16, INT8, ...
    data: np.ndarray | None  # the constant's value (None: an activation)
    quantization: Quantization | None
    sparse: bool = False
    variable: bool = False  # is_variable: state an operator keeps between runs (no producer needed)


@dataclass
class Operator:
    index: int
    name: str  # builtin name (CONV_2D) or the custom code
    custom: bool
    inputs: list[int]  # tensor indices; -1 = an optional input left out
    outputs: list[int]
    options: Any  # the typed options table (tflite.Conv2DOptions, ...) or None


@dataclass
class Subgraph:
    index: int
    name: str
    tensors: list[Tensor]
    operators: list[Operator]
    inputs: list[int]
    outputs: list[int]


@dataclass
class Signature:
    key: str
    subgraph: int
    inputs: dict[str, int]  # signature name -> tensor index (in order)
    outputs: dict[str, int]


@dataclass
class Model:
    path: Path
    subgraphs: list[Subgraph]
    signatures: list[Signature] = field(default_factory=list)
    description: str = ""


def _count(table: Any, field: str) -> int:
    """The length of the vector `field` of a flatbuffer table, once its last element is known to lie inside
    the file: a corrupt length fails here, before anything iterates over it."""
    n = int(getattr(table, f"{field}Length")())
    if n:
        getattr(table, field)(n - 1)  # an offset past the end of the buffer raises (struct.error)
    return n


def _text(value: bytes | None) -> str:
    return value.decode("utf-8", "replace") if value is not None else ""


def _ints(get_numpy: Any, is_none: bool) -> tuple[int, ...]:
    return () if is_none else tuple(int(d) for d in get_numpy())


def _options(op: Any) -> Any:
    kind = OPTION_NAMES.get(op.BuiltinOptionsType(), "NONE")
    table = op.BuiltinOptions()
    if kind == "NONE" or table is None:
        return None
    cls = getattr(tflite, kind, None)
    if cls is None:
        return None
    options = cls()
    options.Init(table.Bytes, table.Pos)
    return options


def _quantization(t: Any) -> Quantization | None:
    q = t.Quantization()
    if q is None or q.ScaleIsNone() or q.ScaleLength() == 0:
        return None
    zero = q.ZeroPointAsNumpy() if not q.ZeroPointIsNone() else np.zeros(q.ScaleLength(), np.int64)
    return Quantization(np.asarray(q.ScaleAsNumpy(), np.float32), np.asarray(zero, np.int64),
                        int(q.QuantizedDimension()))


def _data(model: Any, raw: bytes, t: Any, shape: tuple[int, ...], type_name: str, where: str) -> np.ndarray | None:
    index = t.Buffer()
    if index >= model.BuffersLength():
        raise InputError(f"{where}: names buffer {index}, the file has {model.BuffersLength()}; the file is corrupt")
    if index == 0:
        return None  # buffer 0 is the schema's empty sentinel: an activation
    buffer = model.Buffers(index)
    if buffer.Offset() > 1:  # a model over 2 GB keeps its buffers after the flatbuffer
        start, size = int(buffer.Offset()), int(buffer.Size())
        blob = raw[start:start + size]
        if len(blob) != size:
            raise InputError(f"{where}: buffer {index} lies past the end of the file (truncated .tflite)")
    elif buffer.DataIsNone() or buffer.DataLength() == 0:
        return None
    else:
        blob = buffer.DataAsNumpy().tobytes()
    dtype = NUMPY_TYPES.get(type_name)
    if dtype is None:
        return np.frombuffer(blob, np.uint8)  # STRING, RESOURCE...: raw bytes; no handler reads them as numbers
    if len(blob) % np.dtype(dtype).itemsize:
        raise InputError(f"{where}: buffer {index} holds {len(blob)} bytes, not a whole number of {type_name} "
                         f"values; the file is corrupt")
    value = np.frombuffer(blob, np.dtype(dtype).newbyteorder("<"))
    if t.Sparsity() is not None:  # compressed values: made dense as DENSIFY would (None: DENSIFY refuses)
        dense = densify(t.Sparsity(), value.astype(dtype), shape)
        return dense
    if value.size != int(np.prod(shape, dtype=np.int64)):
        raise InputError(f"{where}: buffer {index} holds {value.size} values for a tensor of shape {shape}; "
                         f"the file is corrupt")
    return value.reshape(shape).astype(dtype)


def _subgraph(model: Any, raw: bytes, k: int, path: Path, codes: list[tuple[str, bool]]) -> Subgraph:
    g = model.Subgraphs(k)
    tensors = []
    for i in range(_count(g, "Tensors")):
        t = g.Tensors(i)
        shape = _ints(t.ShapeAsNumpy, t.ShapeIsNone())
        signature = _ints(t.ShapeSignatureAsNumpy, t.ShapeSignatureIsNone())
        type_name = TENSOR_TYPES.get(t.Type(), f"type {t.Type()}")
        name = _text(t.Name()) or f"tensor_{i}"
        data = _data(model, raw, t, shape, type_name, f"{path}: tensor '{name}'")
        tensors.append(Tensor(i, name, shape, signature or shape, type_name, data, _quantization(t),
                              t.Sparsity() is not None, bool(t.IsVariable())))
    operators = []
    for i in range(_count(g, "Operators")):
        o = g.Operators(i)
        if o.OpcodeIndex() >= len(codes):
            raise InputError(f"{path}: subgraph {k}: operator {i} names opcode {o.OpcodeIndex()}, the file has "
                             f"{len(codes)}; the file is corrupt")
        name, custom = codes[o.OpcodeIndex()]
        operators.append(Operator(i, name, custom, [int(v) for v in _ints(o.InputsAsNumpy, o.InputsIsNone())],
                                  [int(v) for v in _ints(o.OutputsAsNumpy, o.OutputsIsNone())], _options(o)))
    return Subgraph(k, _text(g.Name()), tensors, operators, list(_ints(g.InputsAsNumpy, g.InputsIsNone())),
                    list(_ints(g.OutputsAsNumpy, g.OutputsIsNone())))


def _codes(model: Any) -> list[tuple[str, bool]]:
    codes = []
    for i in range(_count(model, "OperatorCodes")):
        c = model.OperatorCodes(i)
        # the schema kept the old int8 field for codes < 127: the larger of the two is the real one
        code = max(int(c.BuiltinCode()), int(c.DeprecatedBuiltinCode()))
        name = BUILTIN_NAMES.get(code, f"builtin {code}")
        if name == "CUSTOM":
            codes.append((_text(c.CustomCode()) or "CUSTOM", True))
        else:
            codes.append((name, False))
    return codes


def read(path: str | Path) -> Model:
    """The model in `path` (raises InputError for a file that is not a readable TFLite flatbuffer)."""
    path = Path(path)
    raw = path.read_bytes()
    if not is_tflite(raw[:8]):
        raise InputError(f"{path}: not a TFLite flatbuffer (no 'TFL3' identifier)")
    try:
        model = tflite.Model.GetRootAsModel(raw, 0)
        _count(model, "Buffers")
        codes = _codes(model)
        subgraphs = [_subgraph(model, raw, k, path, codes) for k in range(_count(model, "Subgraphs"))]
        signatures = []
        for i in range(_count(model, "SignatureDefs")):
            s = model.SignatureDefs(i)
            _count(s, "Inputs")
            _count(s, "Outputs")
            signatures.append(Signature(
                _text(s.SignatureKey()), int(s.SubgraphIndex()),
                {_text(s.Inputs(j).Name()): int(s.Inputs(j).TensorIndex()) for j in range(s.InputsLength())},
                {_text(s.Outputs(j).Name()): int(s.Outputs(j).TensorIndex()) for j in range(s.OutputsLength())}))
        description = _text(model.Description())
    except InputError:
        raise
    except Exception as err:  # noqa: BLE001 - an offset out of range, a bad union: the flatbuffer is corrupt
        raise InputError(f"{path}: corrupt TFLite flatbuffer ({type(err).__name__}: {err})") from None
    if not subgraphs:
        raise InputError(f"{path}: the TFLite file holds no subgraph")
    return Model(path, subgraphs, signatures, description)
