"""Weights as the conversion takes them: float32 as stored; float16 constants and int8/uint8 constants
that the file itself dequantizes (a DEQUANTIZE operator on a constant) become float32 exactly as TFLite's
DEQUANTIZE computes them. Integer arithmetic (quantized activations, or hybrid kernels that quantize
activations at run time) has no exact float form: refused by name. The choice goes to conversion.json
(`inference_passes`) and to the notes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tf_convert.parsers.base import ParseOptions

from .op import Op
from .table import FOLD, TABLE

if TYPE_CHECKING:
    from .builder import Builder

QUANTIZED_TYPES = ("INT8", "UINT8", "INT16", "INT4")
QUANTIZED_HINT = ("quantized (integer) arithmetic: TFLite computes it in integers, which no float conversion "
                  "reproduces exactly; convert the float model (TFLiteConverter without optimizations) instead")
HYBRID_HINT = ("hybrid (dynamic-range) quantized weights: TFLite quantizes the activations at run time, "
               "which no float conversion reproduces exactly; convert the float model instead")


def float_weight(op: Op, k: int, what: str) -> np.ndarray:
    """Input k as a float32 weight (a constant, or a constant the file dequantizes)."""
    value = op.const(k, what)
    if value.dtype.kind != "f":
        raise op.unsupported(f"{what}: {HYBRID_HINT}" if op.tensor(k).type in QUANTIZED_TYPES
                             else f"{what} is {op.tensor(k).type}, not a float tensor")
    return np.ascontiguousarray(value, dtype=np.float32)


@TABLE.register("QUANTIZE")
def quantize(op: Op) -> list[str]:
    raise op.unsupported(f"quantizes activations to {op.tensors[op.op.outputs[0]].type}: {QUANTIZED_HINT}")


@TABLE.register("DENSIFY")
def densify(op: Op) -> list[str]:
    raise op.unsupported("block-sparse weights (a block map or reordered traversal in TFLite's sparsity format) are "
                         "not read; convert the dense model (TFLiteConverter without Optimize.EXPERIMENTAL_SPARSITY)")


@FOLD.register("DENSIFY")
def densified(op: Op, values: list[np.ndarray]) -> list[np.ndarray]:
    return [values[0]]  # read dense already (sparsity.densify)


@TABLE.register("DEQUANTIZE")
def dequantize_activation(op: Op) -> list[str]:
    raise op.unsupported(f"dequantizes a {op.tensor(0).type} activation computed at run time: {QUANTIZED_HINT}")


@FOLD.register("DEQUANTIZE")
def dequantize(op: Op, values: list[np.ndarray]) -> list[np.ndarray]:
    value, t = values[0], op.tensor(0)
    if value.dtype == np.float16:  # every float16 is a float32: exact
        return [value.astype(np.float32)]
    q = t.quantization
    if q is None or value.dtype.kind not in "iu":
        raise op.unsupported(f"DEQUANTIZE of a {t.type} tensor without quantization parameters")
    if q.scale.size == 1:  # TFLite: float(double(scale) * (q - zero_point))
        return [(np.float64(q.scale[0]) * (value.astype(np.int64) - q.zero_point[0])).astype(np.float32)]
    shape = [1] * value.ndim  # per channel: float(q - zero_point[c]) * scale[c], in float32
    shape[q.axis] = -1
    centred = (value.astype(np.int64) - q.zero_point.reshape(shape)).astype(np.float32)
    return [centred * q.scale.reshape(shape).astype(np.float32)]


def record(builder: Builder, options: ParseOptions) -> None:
    """The weight choice, once per conversion: what the file stores and what the conversion takes."""
    consts = [t for t in builder.tensors if t.data is not None]
    dequantized = {op.inputs[0] for op in builder.subgraph.operators if op.name == "DEQUANTIZE" and op.inputs}
    halves = [t for t in consts if t.type == "FLOAT16" and t.index in dequantized]
    ints = [t for t in consts if t.type in QUANTIZED_TYPES and t.index in dequantized]
    sparse = [t for t in consts if t.sparse]
    if sparse:
        options.notes.append(f"{len(sparse)} sparse weight tensor(s) made dense as TFLite's DENSIFY does (exact)")
        options.records.append({"pass": "tflite_weights", "stored": "sparse", "taken": "dense",
                                "tensors": len(sparse), "why": "DENSIFY places the stored values: exact"})
    if halves:
        options.notes.append(f"{len(halves)} float16 weight tensor(s) with their DEQUANTIZE taken as float32 "
                             "(exact: TFLite computes in float32 from the same values)")
        options.records.append({"pass": "tflite_weights", "stored": "float16", "taken": "float32",
                                "tensors": len(halves), "why": "DEQUANTIZE float16 -> float32 is exact"})
    if ints:
        options.notes.append(f"{len(ints)} int8/uint8 weight tensor(s) dequantized to float32 as TFLite's "
                             "DEQUANTIZE computes them (scale * (q - zero_point)); the arithmetic is float32")
        options.records.append({"pass": "tflite_weights", "stored": "int8/uint8 (quantized)", "taken": "float32",
                                "tensors": len(ints), "why": "the file dequantizes them itself; float32 "
                                "arithmetic as TFLite runs it (quantized arithmetic is refused by name)"})
