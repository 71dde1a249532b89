"""TF tensor values <-> numpy, and TF's DataType enum <-> numpy dtypes, with numpy alone.

Same results as TensorFlow's tensor_util.MakeNdarray / make_tensor_proto and tf.dtypes (the tests
check it dtype by dtype). bfloat16, float8, float4, int4/uint4 and int2/uint2 values are ml_dtypes
arrays, as in TensorFlow; ml_dtypes is imported only when such a tensor appears (a clear error says
to install it when it is missing). Quantized types are numpy structured dtypes, as in TensorFlow.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from tf_convert.convert.errors import InputError

from .protos import GraphDef, TensorProto

REF_OFFSET = 100  # DT_FLOAT_REF = DT_FLOAT + 100, and so on


class _DType(NamedTuple):
    name: str  # TF's name
    numpy: Any  # numpy dtype spec; "ml_dtypes.X" for ml_dtypes' types; None: no numpy value
    field: str  # the TensorProto field that holds the values when tensor_content is empty
    content: bool  # make_tensor_proto writes tensor_content for more than one element


def _q(name: str, base: str) -> list[tuple[str, str]]:
    return [(name, base)]


# TF's DataType enum (types.proto) -> facts about it.
_DTYPES: dict[int, _DType] = {
    1: _DType("float32", "float32", "float_val", True),
    2: _DType("float64", "float64", "double_val", True),
    3: _DType("int32", "int32", "int_val", True),
    4: _DType("uint8", "uint8", "int_val", True),
    5: _DType("int16", "int16", "int_val", True),
    6: _DType("int8", "int8", "int_val", True),
    7: _DType("string", "object", "string_val", False),
    8: _DType("complex64", "complex64", "scomplex_val", False),
    9: _DType("int64", "int64", "int64_val", True),
    10: _DType("bool", "bool", "bool_val", False),
    11: _DType("qint8", _q("qint8", "i1"), "int_val", True),
    12: _DType("quint8", _q("quint8", "u1"), "int_val", True),
    13: _DType("qint32", _q("qint32", "<i4"), "int_val", True),
    14: _DType("bfloat16", "ml_dtypes.bfloat16", "half_val", True),
    15: _DType("qint16", _q("qint16", "<i2"), "int_val", True),
    16: _DType("quint16", _q("quint16", "<u2"), "int_val", True),
    17: _DType("uint16", "uint16", "int_val", False),  # not in TF's tensor_content types
    18: _DType("complex128", "complex128", "dcomplex_val", False),
    19: _DType("float16", "float16", "half_val", True),
    20: _DType("resource", None, "resource_handle_val", False),
    21: _DType("variant", None, "variant_val", False),
    22: _DType("uint32", "uint32", "uint32_val", True),
    23: _DType("uint64", "uint64", "uint64_val", True),
    24: _DType("float8_e5m2", "ml_dtypes.float8_e5m2", "float8_val", True),
    25: _DType("float8_e4m3fn", "ml_dtypes.float8_e4m3fn", "float8_val", True),
    26: _DType("float8_e4m3fnuz", "ml_dtypes.float8_e4m3fnuz", "float8_val", True),
    27: _DType("float8_e4m3b11fnuz", "ml_dtypes.float8_e4m3b11fnuz", "float8_val", True),
    28: _DType("float8_e5m2fnuz", "ml_dtypes.float8_e5m2fnuz", "float8_val", True),
    # 4- and 2-bit integers travel one per int_val, never as tensor_content (TF's packing varies)
    29: _DType("int4", "ml_dtypes.int4", "int_val", False),
    30: _DType("uint4", "ml_dtypes.uint4", "int_val", False),
    31: _DType("int2", "ml_dtypes.int2", "int_val", False),
    32: _DType("uint2", "ml_dtypes.uint2", "int_val", False),
    33: _DType("float4_e2m1fn", "ml_dtypes.float4_e2m1fn", "float8_val", True),
}
_BY_NAME = {d.name: enum for enum, d in _DTYPES.items()}
_COMPLEX_PARTS = {"scomplex_val": np.float32, "dcomplex_val": np.float64}


def _entry(enum: int) -> _DType:
    base = enum - REF_OFFSET if enum > REF_OFFSET else enum
    if base not in _DTYPES:
        raise ValueError(f"unknown TensorFlow DataType enum {enum}")
    return _DTYPES[base]


def _numpy(entry: _DType) -> np.dtype:
    if entry.numpy is None:
        raise ValueError(f"TensorFlow dtype '{entry.name}' has no numpy value")
    if isinstance(entry.numpy, str) and entry.numpy.startswith("ml_dtypes."):
        try:
            import ml_dtypes
        except ImportError:
            raise ValueError(f"TensorFlow dtype '{entry.name}' needs the ml_dtypes package: "
                             "pip install ml_dtypes") from None
        return np.dtype(getattr(ml_dtypes, entry.numpy.split(".", 1)[1]))
    return np.dtype(entry.numpy)


def numpy_dtype(enum: int) -> np.dtype:
    """The numpy dtype of TF DataType `enum` (a _REF type counts as its base type)."""
    return _numpy(_entry(enum))


def dtype_name(enum: int) -> str:
    """TF's name of DataType `enum` ('float32', 'int64', 'bool', 'float32_ref', ...)."""
    name = _entry(enum).name
    return f"{name}_ref" if enum > REF_OFFSET else name


def dtype_enum(dtype: Any) -> int:
    """TF's DataType enum of a numpy dtype (any bytes, str or object dtype is TF's string)."""
    dt = np.dtype(dtype)
    if dt.kind in "OSU":
        return _BY_NAME["string"]
    if dt.names is not None:  # quantized: a one-field structured dtype named after the type
        enum = _BY_NAME.get(dt.names[0])
        if enum is not None and np.dtype(_DTYPES[enum].numpy) == dt:
            return enum
    elif dt.name in _BY_NAME and dt.name != "string":
        return _BY_NAME[dt.name]
    raise TypeError(f"numpy dtype {dt} has no TensorFlow equivalent")


def _shape(tensor: Any) -> list[int]:
    return [d.size for d in tensor.tensor_shape.dim]


def to_numpy(tensor: Any) -> np.ndarray:
    """The value of a TensorProto: tensor_content, else the dtype's *_val field, where fewer values
    than elements repeat the last one (TF's rule: one value fills the whole shape)."""
    entry = _entry(tensor.dtype)
    dt = _numpy(entry)
    shape = _shape(tensor)
    count = int(np.prod(shape, dtype=np.int64))
    if tensor.tensor_content:
        if dt.kind == "O" or len(tensor.tensor_content) != count * dt.itemsize:
            raise ValueError(f"TensorProto of {entry.name}{shape}: tensor_content holds "
                             f"{len(tensor.tensor_content)} bytes, expected {count * dt.itemsize}")
        return np.frombuffer(tensor.tensor_content, dtype=dt).copy().reshape(shape)
    raw = getattr(tensor, entry.field)
    if entry.field == "string_val":
        values = list(raw)
        if len(values) > count:
            raise ValueError(f"TensorProto of string{shape}: {len(values)} values for {count} elements")
        values += [values[-1] if values else b""] * (count - len(values))
        array = np.empty(count, dtype=object)
        array[:] = values
        return array.reshape(shape)
    values = _values(entry, dt, raw)
    if values.size == 0:
        return np.zeros(shape, dt)
    if values.size > count:
        raise ValueError(f"TensorProto of {entry.name}{shape}: {values.size} values for {count} elements")
    if values.size < count:
        values = np.concatenate([values, np.repeat(values[-1:], count - values.size)])
    return values.reshape(shape)


def _values(entry: _DType, dt: np.dtype, raw: Any) -> np.ndarray:
    """The flat values of a *_val field as dtype `dt`."""
    if entry.field == "half_val":
        bits = np.asarray(raw, dtype=np.int64)
        if bits.size and (bits.min() < 0 or bits.max() > 0xFFFF):
            raise ValueError(f"TensorProto of {entry.name}: half_val holds a value outside 16 bits")
        return bits.astype(np.uint16).view(dt)
    if entry.field == "float8_val":
        return np.frombuffer(raw, dtype=np.uint8).view(dt)
    if entry.field in _COMPLEX_PARTS:
        parts = np.asarray(raw, dtype=_COMPLEX_PARTS[entry.field])
        return parts[: parts.size // 2 * 2].view(dt)  # (real, imag) pairs; an odd last one is dropped
    if dt.names is not None:  # quantized
        return np.asarray(raw, dtype=dt.fields[dt.names[0]][0]).view(dt)
    try:
        return np.fromiter(raw, dtype=dt, count=len(raw))
    except (OverflowError, ValueError, TypeError):
        raise ValueError(f"TensorProto of {entry.name}: {entry.field} holds a value out of range") from None


def to_proto(value: Any) -> Any:
    """A TensorProto holding `value` (a numpy array or scalar), written as make_tensor_proto writes
    it: tensor_content for more than one element of a plain numeric type, else the *_val field."""

    array = np.asarray(value)
    if not array.dtype.isnative:  # TF's bytes are little-endian (native on every platform TF runs on)
        array = array.astype(array.dtype.newbyteorder("="))
    enum = dtype_enum(array.dtype)
    entry = _DTYPES[enum]
    proto = TensorProto(dtype=enum)
    proto.tensor_shape.SetInParent()
    for size in array.shape:
        proto.tensor_shape.dim.add(size=size)
    if entry.content and array.size > 1:
        proto.tensor_content = array.tobytes()
        return proto
    flat = array.ravel()
    field = getattr(proto, entry.field) if entry.field != "float8_val" else None
    if entry.field == "string_val":
        field.extend(x if isinstance(x, bytes) else str(x).encode() for x in flat)
    elif entry.field == "half_val":
        field.extend(flat.view(np.uint16).tolist())
    elif entry.field == "float8_val":
        proto.float8_val = flat.view(np.uint8).tobytes()
    elif entry.field in _COMPLEX_PARTS:
        field.extend(flat.view(_COMPLEX_PARTS[entry.field]).tolist())
    elif array.dtype.names is not None:
        field.extend(flat.view(array.dtype.fields[array.dtype.names[0]][0]).tolist())
    elif enum in (29, 30, 31, 32):  # 4- and 2-bit integers: as plain ints
        field.extend(flat.astype(np.int8).tolist())
    else:
        field.extend(flat.tolist())
    return proto


def const_node(name: str, value: Any) -> Any:
    """A Const NodeDef named `name` holding `value` (loop variables and weights the converter's graph
    rewrites put in place of the nodes they replace)."""

    node = GraphDef().node.add(name=name, op="Const")
    proto = to_proto(np.asarray(value))
    node.attr["dtype"].type = proto.dtype
    node.attr["value"].tensor.CopyFrom(proto)
    return node


def read_const(node: Any) -> np.ndarray:
    """The value of Const NodeDef `node`; a value that cannot be read (a corrupt file: an unknown
    dtype, content that does not fit the shape) is an InputError naming the node."""
    try:
        return to_numpy(node.attr["value"].tensor)
    except ValueError as e:
        raise InputError(f"node '{node.name}' ({node.op}) holds a value that cannot be read ({e}); the file "
                         "may be corrupt") from None
