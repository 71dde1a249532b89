"""Corrupt `.tflite` files, generated from a fixed seed: mutants of four small files TFLite's own converter
writes (a dilated SAME conv net, dense + softmax, reshape/concat/mean, resizes).

`bases(directory)` writes the four base files; `mutant(base, index, dest)` writes mutant number `index` of
one base under `dest` and returns (path, what was done). The same (base, index) always gives the same bytes.
Byte-level mutants flip bits, truncate or zero a block; structured ones edit the flatbuffer through its
object API (TFLite's generated `schema_py_generated`: ModelT ... Pack): indices out of range, cycles,
reordered operators, zero strides and dilations, deleted or swapped options, scalar and negative shapes,
an empty subgraph, no outputs.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

BASES = ("conv", "dense", "reshape", "resize")
SEED = 42


# ---- the base files --------------------------------------------------------------------------------

def _functions() -> dict[str, Any]:
    import tensorflow as tf

    rng = np.random.default_rng(7)

    def const(*shape: int) -> Any:
        return tf.constant(rng.standard_normal(shape).astype(np.float32) * 0.5)

    w1, b1, w2, dw = const(3, 3, 3, 4), const(4), const(1, 1, 4, 5), const(3, 3, 5, 1)

    @tf.function(input_signature=[tf.TensorSpec((1, 9, 9, 3), tf.float32)])
    def conv(x):
        y = tf.nn.relu(tf.nn.conv2d(x, w1, strides=1, padding="SAME", dilations=2) + b1)
        y = tf.nn.conv2d(y, w2, strides=1, padding="VALID")
        y = tf.nn.relu6(tf.nn.depthwise_conv2d(y, dw, strides=[1, 2, 2, 1], padding="SAME"))
        return tf.nn.max_pool2d(y, 2, 2, "SAME")

    wd, bd = const(12, 6), const(6)

    @tf.function(input_signature=[tf.TensorSpec((2, 12), tf.float32)])
    def dense(x):
        return tf.nn.softmax(tf.matmul(x, wd) + bd)

    @tf.function(input_signature=[tf.TensorSpec((1, 4, 4, 3), tf.float32)])
    def reshape(x):
        flat = tf.reshape(x, (1, 16, 3))
        both = tf.concat([flat, flat * 2.0], axis=2)
        return tf.reduce_mean(both, axis=1), tf.reshape(both, (1, 4, 4, 6)) - 1.0

    @tf.function(input_signature=[tf.TensorSpec((1, 5, 5, 2), tf.float32)])
    def resize(x):
        up = tf.compat.v1.image.resize_bilinear(x, (8, 8), half_pixel_centers=True)
        near = tf.compat.v1.image.resize_nearest_neighbor(x, (8, 8), align_corners=True)
        return up + near

    return {"conv": conv, "dense": dense, "reshape": reshape, "resize": resize}


def bases(directory: Path) -> dict[str, Path]:
    """The four base files, written by tf.lite.TFLiteConverter into `directory`."""
    import tensorflow as tf

    directory.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, fn in _functions().items():
        converter = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn)
        path = directory / f"{name}.tflite"
        path.write_bytes(converter.convert())
        files[name] = path
    return files


# ---- byte-level mutations --------------------------------------------------------------------------

def _bit_flips(data: bytes, rng: np.random.Generator) -> bytes:
    b = bytearray(data)
    for _ in range(int(rng.integers(1, 9))):
        pos = int(rng.integers(8, len(b)))  # past the root offset and the identifier: the tables themselves
        b[pos] ^= 1 << int(rng.integers(0, 8))
    return bytes(b)


def _truncate(data: bytes, rng: np.random.Generator) -> bytes:
    return data[: int(rng.integers(8, len(data)))]


def _zero_block(data: bytes, rng: np.random.Generator) -> bytes:
    size = int(rng.integers(1, 64))
    start = int(rng.integers(8, len(data) - size))
    return data[:start] + bytes(size) + data[start + size:]


def _int_word(data: bytes, rng: np.random.Generator) -> bytes:
    """One aligned 32-bit word set to a value a corrupt file holds: 0, -1, a huge length or offset."""
    b = bytearray(data)
    pos = int(rng.integers(2, len(b) // 4)) * 4
    value = [0, -1, 1 << 30, 0x7FFFFFFF, int(rng.integers(1, 64))][int(rng.integers(0, 5))]
    b[pos:pos + 4] = int(value).to_bytes(4, "little", signed=True)
    return bytes(b)


BYTE_MUTATIONS: dict[str, Callable[[bytes, np.random.Generator], bytes]] = {
    "bitflip": _bit_flips, "truncate": _truncate, "zero": _zero_block, "word": _int_word}


# ---- structured mutations (the flatbuffer's object API) -------------------------------------------

def _schema() -> Any:
    from tensorflow.lite.python import schema_py_generated

    return schema_py_generated


def _pick(rng: np.random.Generator, items: list) -> Any:
    return items[int(rng.integers(0, len(items)))]


def _ops_with(g: Any, field: str) -> list:
    return [o for o in g.operators if o.builtinOptions is not None and hasattr(o.builtinOptions, field)]


def _tensor_out_of_range(m: Any, g: Any, rng: np.random.Generator) -> str:
    op = _pick(rng, g.operators)
    side = "inputs" if rng.random() < 0.6 else "outputs"
    values = list(getattr(op, side))
    k = int(rng.integers(0, len(values)))
    values[k] = _pick(rng, [len(g.tensors), len(g.tensors) + 7, -2, -1, 1 << 30])
    setattr(op, side, values)
    return f"operator {g.operators.index(op)} {side}[{k}] = {values[k]}"


def _io_out_of_range(m: Any, g: Any, rng: np.random.Generator) -> str:
    side = "inputs" if rng.random() < 0.5 else "outputs"
    values = list(getattr(g, side))
    values[0] = _pick(rng, [len(g.tensors), -1, -5])
    setattr(g, side, values)
    return f"subgraph {side}[0] = {values[0]}"


def _buffer_out_of_range(m: Any, g: Any, rng: np.random.Generator) -> str:
    t = _pick(rng, g.tensors)
    t.buffer = _pick(rng, [len(m.buffers), len(m.buffers) + 100, 1 << 31 - 1])
    return f"tensor {t.name!r} buffer = {t.buffer}"


def _opcode_out_of_range(m: Any, g: Any, rng: np.random.Generator) -> str:
    op = _pick(rng, g.operators)
    op.opcodeIndex = _pick(rng, [len(m.operatorCodes), len(m.operatorCodes) + 3, 255])
    return f"operator {g.operators.index(op)} opcode index = {op.opcodeIndex}"


def _builtin_code(m: Any, g: Any, rng: np.random.Generator) -> str:
    code = _pick(rng, m.operatorCodes)
    code.builtinCode = _pick(rng, [int(rng.integers(0, 200)), 1000, -3])
    code.deprecatedBuiltinCode = min(max(code.builtinCode, 0), 127)
    return f"opcode builtin code = {code.builtinCode}"


def _signature_subgraph(m: Any, g: Any, rng: np.random.Generator) -> str:
    if not m.signatureDefs:
        return _io_out_of_range(m, g, rng)
    m.signatureDefs[0].subgraphIndex = _pick(rng, [1, 5, -1])
    return f"signature subgraph index = {m.signatureDefs[0].subgraphIndex}"


def _cycle(m: Any, g: Any, rng: np.random.Generator) -> str:
    """An operator reads the output of one after it that depends on it: no order runs them."""
    if len(g.operators) < 2:
        first = g.operators[0]
        first.inputs = [first.outputs[0], *list(first.inputs)[1:]]
        return "operator 0 reads its own output"
    i = int(rng.integers(0, len(g.operators) - 1))
    later = g.operators[len(g.operators) - 1]
    op = g.operators[i]
    op.inputs = [later.outputs[0], *list(op.inputs)[1:]]
    return f"operator {i} reads the output of operator {len(g.operators) - 1}: a cycle"


def _reorder(m: Any, g: Any, rng: np.random.Generator) -> str:
    """Operators out of file order (a topological order still exists: must convert as before)."""
    order = list(rng.permutation(len(g.operators)))
    g.operators = [g.operators[i] for i in order]
    return f"operators reordered {order}"


def _zero_window(m: Any, g: Any, rng: np.random.Generator) -> str:
    fields = ["strideW", "strideH", "dilationWFactor", "dilationHFactor", "filterWidth", "filterHeight"]
    candidates = [(o, f) for f in fields for o in _ops_with(g, f)]
    if not candidates:
        return _delete_options(m, g, rng)
    op, field = _pick(rng, candidates)
    value = _pick(rng, [0, -1, 0])
    setattr(op.builtinOptions, field, value)
    return f"operator {g.operators.index(op)} {field} = {value}"


def _enum_out_of_range(m: Any, g: Any, rng: np.random.Generator) -> str:
    candidates = [(o, f) for f in ("padding", "fusedActivationFunction") for o in _ops_with(g, f)]
    if not candidates:
        return _delete_options(m, g, rng)
    op, field = _pick(rng, candidates)
    setattr(op.builtinOptions, field, _pick(rng, [7, 99, -1]))
    return f"operator {g.operators.index(op)} {field} = {getattr(op.builtinOptions, field)}"


def _delete_options(m: Any, g: Any, rng: np.random.Generator) -> str:
    ops = [o for o in g.operators if o.builtinOptions is not None] or g.operators
    op = _pick(rng, ops)
    op.builtinOptionsType, op.builtinOptions = 0, None
    return f"operator {g.operators.index(op)} options deleted"


def _swap_options(m: Any, g: Any, rng: np.random.Generator) -> str:
    ops = [o for o in g.operators if o.builtinOptions is not None]
    kinds = {o.builtinOptionsType for o in ops}
    if len(kinds) < 2:
        return _delete_options(m, g, rng)
    a = _pick(rng, ops)
    b = _pick(rng, [o for o in ops if o.builtinOptionsType != a.builtinOptionsType])
    a.builtinOptionsType, a.builtinOptions = b.builtinOptionsType, copy.deepcopy(b.builtinOptions)
    return f"operator {g.operators.index(a)} given operator {g.operators.index(b)}'s options"


def _scalar_shape(m: Any, g: Any, rng: np.random.Generator) -> str:
    t = _pick(rng, g.tensors)
    t.shape = np.zeros(0, np.int32)
    t.shapeSignature = None
    return f"tensor {t.name!r} shape = ()"


def _bad_shape(m: Any, g: Any, rng: np.random.Generator) -> str:
    t = _pick(rng, [t for t in g.tensors if t.shape is not None and len(t.shape)] or g.tensors)
    shape = np.array(t.shape if t.shape is not None else [1], np.int32)
    k = int(rng.integers(0, len(shape)))
    shape[k] = _pick(rng, [-1, -7, 0, 1 << 20, shape[k] + 1])
    t.shape = shape
    return f"tensor {t.name!r} shape = {tuple(int(d) for d in shape)}"


def _shape_signature(m: Any, g: Any, rng: np.random.Generator) -> str:
    t = _pick(rng, [g.tensors[i] for i in g.inputs])
    t.shapeSignature = np.array([-1] * len(t.shape) if rng.random() < 0.5 else [1, -1], np.int32)
    return f"tensor {t.name!r} shape signature = {tuple(int(d) for d in t.shapeSignature)}"


def _type(m: Any, g: Any, rng: np.random.Generator) -> str:
    t = _pick(rng, g.tensors)
    t.type = _pick(rng, [2, 9, 3, 6, 99])  # INT32, INT8, UINT8, BOOL, unknown
    return f"tensor {t.name!r} type = {t.type}"


def _buffer_size(m: Any, g: Any, rng: np.random.Generator) -> str:
    constants = [t for t in g.tensors if 0 < t.buffer < len(m.buffers) and m.buffers[t.buffer].data is not None
                 and len(m.buffers[t.buffer].data)]
    if not constants:
        return _bad_shape(m, g, rng)
    t = _pick(rng, constants)
    data = m.buffers[t.buffer].data
    m.buffers[t.buffer].data = data[: len(data) - int(rng.integers(1, 4))] if rng.random() < 0.6 else \
        np.concatenate([data, data[:4]])
    return f"tensor {t.name!r} buffer of {len(m.buffers[t.buffer].data)} bytes"


def _missing_input(m: Any, g: Any, rng: np.random.Generator) -> str:
    op = _pick(rng, g.operators)
    k = int(rng.integers(0, len(op.inputs)))
    op.inputs = [v for j, v in enumerate(op.inputs) if j != k] if rng.random() < 0.5 else \
        [-1 if j == k else v for j, v in enumerate(op.inputs)]
    return f"operator {g.operators.index(op)} input {k} dropped or -1"


def _empty_subgraph(m: Any, g: Any, rng: np.random.Generator) -> str:
    g.tensors, g.operators, g.inputs, g.outputs = [], [], [], []
    return "empty subgraph"


def _no_outputs(m: Any, g: Any, rng: np.random.Generator) -> str:
    g.outputs = []
    if m.signatureDefs:
        m.signatureDefs = []
    return "no outputs"


def _no_operators(m: Any, g: Any, rng: np.random.Generator) -> str:
    g.operators = []
    return "no operators"


def _no_subgraphs(m: Any, g: Any, rng: np.random.Generator) -> str:
    m.subgraphs = []
    return "no subgraphs"


def _unproduced(m: Any, g: Any, rng: np.random.Generator) -> str:
    """An operator deleted: what it computed is read but never produced."""
    k = int(rng.integers(0, len(g.operators)))
    del g.operators[k]
    return f"operator {k} deleted"


def _output_is_input(m: Any, g: Any, rng: np.random.Generator) -> str:
    g.outputs = [*list(g.outputs), g.inputs[0]] if rng.random() < 0.5 else [g.outputs[0], g.outputs[0]]
    return f"subgraph outputs = {list(g.outputs)}"


STRUCTURED: dict[str, Callable[[Any, Any, np.random.Generator], str]] = {
    "tensor_index": _tensor_out_of_range, "io_index": _io_out_of_range, "buffer_index": _buffer_out_of_range,
    "opcode_index": _opcode_out_of_range, "builtin_code": _builtin_code, "signature": _signature_subgraph,
    "cycle": _cycle, "reorder": _reorder, "zero_window": _zero_window, "enum": _enum_out_of_range,
    "delete_options": _delete_options, "swap_options": _swap_options, "scalar_shape": _scalar_shape,
    "bad_shape": _bad_shape, "shape_signature": _shape_signature, "type": _type, "buffer_size": _buffer_size,
    "missing_input": _missing_input, "empty_subgraph": _empty_subgraph, "no_outputs": _no_outputs,
    "no_operators": _no_operators, "no_subgraphs": _no_subgraphs, "unproduced": _unproduced,
    "output_is_input": _output_is_input,
}


def _packed(model: Any) -> bytes:
    import flatbuffers

    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _structured(data: bytes, kind: str, rng: np.random.Generator) -> tuple[bytes, str]:
    model = _schema().ModelT.InitFromPackedBuf(bytearray(data), 0)
    what = STRUCTURED[kind](model, model.subgraphs[0], rng)
    return _packed(model), what


def edited(base: Path, dest: Path, edit: Callable[[Any], None]) -> Path:
    """A copy of `base` in `dest` with `edit(model)` applied to its object-API model (ModelT)."""
    model = _schema().ModelT.InitFromPackedBuf(bytearray(base.read_bytes()), 0)
    edit(model)
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / base.name
    path.write_bytes(_packed(model))
    return path


# ---- the mutant table ------------------------------------------------------------------------------

KINDS = sorted(BYTE_MUTATIONS) + sorted(STRUCTURED)


def mutant(base: Path, index: int, dest: Path) -> tuple[Path, str]:
    """Mutant number `index` of `base`, written to `dest`/<base name>: (its path, what was done). The first
    len(KINDS) mutants of a base take each kind once; the rest draw the kind at random."""
    rng = np.random.default_rng([SEED, BASES.index(base.stem), index])
    kind = KINDS[index] if index < len(KINDS) else _pick(rng, KINDS)
    data = base.read_bytes()
    if kind in BYTE_MUTATIONS:
        data, what = BYTE_MUTATIONS[kind](data, rng), kind
    else:
        data, what = _structured(data, kind, rng)
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / base.name
    path.write_bytes(data)
    return path, f"{kind}: {what}" if what != kind else kind


__all__ = ["BASES", "KINDS", "bases", "edited", "mutant"]
