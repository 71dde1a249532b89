"""`--dequantize`: a full-integer model read as the float model it approximates, a separate and named choice
(the result is judged with the tolerance the user sets, never called exact). Every int8/uint8 constant and
quantized int32 bias becomes float32 as TFLite's DEQUANTIZE computes it (scale * (q - zero_point), per
channel), every int8/uint8 activation a float32 one, and the QUANTIZE / DEQUANTIZE operators go (their two
tensors become one: the file's input and output names are kept). Only files with float inputs and outputs:
an int8 input would have no float meaning to feed."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tf_convert.convert.errors import Unsupported, UnsupportedError
from tf_convert.parsers.base import ParseOptions

from .quantized import INTEGER_TYPES
from .schema import Model, Subgraph, Tensor

_EDGES = ("QUANTIZE", "DEQUANTIZE")


def dequantized(model: Model, options: ParseOptions) -> Model:
    subgraphs = [_subgraph(model, s) for s in model.subgraphs]
    options.notes.append("--dequantize: the integer model taken as float32 (weights dequantized as TFLite's "
                         "DEQUANTIZE does, float arithmetic): an approximation, judged with --rtol")
    options.records.append({"pass": "tflite_dequantize", "stored": "int8/uint8 (quantized)", "taken": "float32",
                            "why": "--dequantize: float arithmetic, not TFLite's integer arithmetic"})
    return replace(model, subgraphs=subgraphs)


def _real(t: Tensor) -> np.ndarray:
    q = t.quantization
    shape = [1] * t.data.ndim
    if q.scale.size > 1:
        shape[q.axis] = -1
    centred = t.data.astype(np.float64) - q.zero_point.reshape(shape if q.zero_point.size > 1 else ())
    return (centred * q.scale.astype(np.float64).reshape(shape if q.scale.size > 1 else ())).astype(np.float32)


def _tensor(t: Tensor) -> Tensor:
    quantized = t.quantization is not None and t.quantization.scale.size > 0
    if t.type in INTEGER_TYPES or (t.type == "INT32" and t.data is not None and quantized):
        data = _real(t) if t.data is not None and quantized else t.data
        if t.data is not None and not quantized:
            return t  # an integer constant without scale (an index): kept
        return replace(t, type="FLOAT32", data=data, quantization=None)
    return t


def _subgraph(model: Model, sub: Subgraph) -> Subgraph:
    boundary = [*sub.inputs, *sub.outputs]
    integer_ends = [sub.tensors[i].name for i in boundary if sub.tensors[i].type in INTEGER_TYPES]
    if integer_ends:
        raise UnsupportedError([Unsupported("--dequantize", integer_ends[0], "an int8/uint8 model input or output "
                                            "has no float meaning to feed or compare; --dequantize takes a model "
                                            "with float inputs and outputs (QUANTIZE/DEQUANTIZE at its edges), or "
                                            "convert without --dequantize (TFLite's integer arithmetic, exact)")],
                               target="tflite parser")
    same: dict[int, int] = {}  # tensor -> the tensor it becomes
    kept = []
    for operator in sub.operators:
        if operator.name in _EDGES and not operator.custom and operator.inputs and operator.outputs:
            source, result = operator.inputs[0], operator.outputs[0]
            given = sub.tensors[source]
            if given.data is None and operator.name == "DEQUANTIZE":  # the file's output name stays
                same[source] = result
                continue
            if given.data is None or given.type in INTEGER_TYPES:  # its readers read the input (or the constant)
                same[result] = source
                continue
        kept.append(operator)  # (a float16 constant's DEQUANTIZE stays: the fold takes it)

    def final(i: int) -> int:
        while i in same:
            i = same[i]
        return i

    operators = [replace(o, inputs=[final(i) if i >= 0 else i for i in o.inputs],
                         outputs=[final(i) for i in o.outputs]) for o in kept]
    return replace(sub, tensors=[_tensor(t) for t in sub.tensors], operators=operators,
                   inputs=[final(i) for i in sub.inputs], outputs=[final(i) for i in sub.outputs])
