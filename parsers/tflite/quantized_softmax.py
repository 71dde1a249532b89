"""TFLite's int8 SOFTMAX as its reference kernel computes it (gemmlowp fixed point): the input's difference from
its row maximum (0..255) scaled by beta * input scale (PreprocessSoftmaxScaling's multiplier and left shift) and
put through exp_on_negative_values -- a function of the difference alone, so a 256-entry int32 table computed
here (0 beyond TFLite's diff_min) -- then, per row, the sum, its fixed-point reciprocal and the scaled outputs
(the IR op integer_softmax, convert.fixed_point)."""

from __future__ import annotations

import math

import numpy as np

from tf_convert.convert import fixed_point
from tf_convert.parsers.common.layout import ir_axis

from .op import Op
from .quantized import _single
from .table import QUANTIZED

_SCALED_DIFF_INTEGER_BITS = 5
_ACCUMULATION_INTEGER_BITS = 12


def exp_table(input_scale: float, beta: float) -> np.ndarray:
    """exp of -(0..255) input steps in Q0.31 as TFLite's reference softmax computes it (0 where it skips)."""
    real = min(float(np.float64(beta) * np.float64(np.float32(input_scale)) * (1 << (31 - _SCALED_DIFF_INTEGER_BITS))),
               (1 << 31) - 1.0)
    multiplier, shift = fixed_point.quantize_multiplier(real)
    radius = math.floor(((1 << _SCALED_DIFF_INTEGER_BITS) - 1) * (1 << (31 - _SCALED_DIFF_INTEGER_BITS)) /
                        (1 << shift))  # CalculateInputRadius
    diff = -np.arange(256, dtype=np.int64)
    rescaled = fixed_point.high_mul(diff << shift, multiplier)  # MultiplyByQuantizedMultiplierGreaterThanOne
    exp = fixed_point.exp_on_negative_values(rescaled, _SCALED_DIFF_INTEGER_BITS)
    return np.where(diff >= -radius, exp, 0).astype(np.int32)


@QUANTIZED.register("SOFTMAX")
def softmax(op: Op) -> list[str]:
    source, out = op.tensor(0), op.tensors[op.op.outputs[0]]
    if source.type != "INT8" or out.type != "INT8":
        raise op.unsupported(f"{source.type} -> {out.type} SOFTMAX: only TFLite's int8 kernel is reproduced")
    scale, _ = _single(op, source, "input")
    out_scale, out_zero = _single(op, out, "output")
    if out_zero != -128 or abs(out_scale - 1 / 256) > 0.001 / 256:  # what TFLite's Prepare requires
        raise op.unsupported(f"output scale {out_scale}, zero point {out_zero} (TFLite's int8 softmax writes 1/256, "
                             "-128)")
    depth = op.source_shape(0)[-1]
    if depth << 19 > fixed_point.INT32_MAX:  # the sum of the rescaled exps is an int32
        raise op.unsupported(f"a softmax over {depth} values (TFLite's int32 sum could overflow)")
    x = op.x()
    attrs = {"axis": ir_axis(-1, len(op.shape(x))), "min": -128, "max": 127, "dtype": "int8"}
    return [op.add("integer_softmax", [x], op.shape(x), attrs, {"exp": exp_table(scale, float(op.options.Beta()))})]
