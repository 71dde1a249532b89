"""TFLite's int8 kernels of one input element (LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU, RELU, RELU6,
RELU_N1_TO_1): each output integer is a function of one input integer, so the conversion computes that function
for all 256 inputs here, as TFLite's reference kernel computes it (its Prepare's float32 scales and multipliers,
its fixed-point steps), and the model carries the table (an IR `lookup`). The uint8 variants are other kernels
or other tables: refused by name until a test checks them."""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

import numpy as np

from tf_convert.convert import fixed_point
from tf_convert.convert.ir.libm_expf import expf

from .op import Op
from .quantized import _single
from .table import QUANTIZED

_INT8 = np.arange(-128, 128, dtype=np.int64)
_F32 = np.float32


def _libm_tanhf() -> Callable[[float], float]:
    """The C library's tanhf, the function TFLite's table calls through std::tanh on a float (numpy's float32 tanh
    differs from it in the last place at about one input in four)."""
    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    libm.tanhf.restype, libm.tanhf.argtypes = ctypes.c_float, [ctypes.c_float]
    return libm.tanhf


def _table(op: Op, kernel: Callable[[np.ndarray, tuple[float, int], tuple[float, int]], np.ndarray]) -> list[str]:
    """The operator as a table: `kernel(q, (input scale, zero), (output scale, zero))` of every int8 input q,
    clamped to int8."""
    source, out = op.tensor(0), op.tensors[op.op.outputs[0]]
    if source.type != "INT8" or out.type != "INT8":
        raise op.unsupported(f"{source.type} {op.op.name}: only TFLite's int8 kernel is reproduced (the uint8 one "
                             "is not checked yet)")
    values = kernel(_INT8, _single(op, source, "input"), _single(op, out, "output"))
    table = np.clip(values, -128, 127).astype(np.int8)
    x = op.x()
    return [op.add("lookup", [x], op.shape(x), {"low": -128}, {"table": table})]


def _lut(transform: Callable[[np.ndarray], np.ndarray]) -> Callable:
    """LUTPopulate: float32 scale * (q - zero), the float function, times float32 1 / output scale, std::round
    (half away from zero), plus the output zero."""

    def kernel(q: np.ndarray, inp: tuple[float, int], out: tuple[float, int]) -> np.ndarray:
        real = _F32(inp[0]) * (q - inp[1]).astype(_F32)
        scaled = (transform(real).astype(_F32) * (_F32(1) / _F32(out[0]))).astype(_F32)
        return fixed_point.round_half_away(scaled).astype(np.int64) + out[1]

    return kernel


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return _F32(1) / (_F32(1) + expf(-v).astype(_F32))


def _tanh(v: np.ndarray) -> np.ndarray:
    tanhf = _libm_tanhf()
    return np.array([tanhf(float(x)) for x in v], _F32)


QUANTIZED.register("LOGISTIC")(lambda op: _table(op, _lut(_sigmoid)))
QUANTIZED.register("TANH")(lambda op: _table(op, _lut(_tanh)))


def _multiplier(real: np.float32) -> tuple[int, int]:
    return fixed_point.quantize_multiplier(float(np.float64(real)))


def _relu(low: float | None, high: float | None) -> Callable:
    """ReluX: (q - zero) times the input / output scale multiplier (their float32 quotient), plus the output zero,
    clamped to the bounds' integers (float32 bound / scale, roundf)."""

    def kernel(q: np.ndarray, inp: tuple[float, int], out: tuple[float, int]) -> np.ndarray:
        m, s = _multiplier(_F32(inp[0]) / _F32(out[0]))
        y = fixed_point.multiply(q - inp[1], m, s) + out[1]
        lo = -128 if low is None else max(-128, out[1] + int(fixed_point.round_half_away(_F32(low) / _F32(out[0]))))
        hi = 127 if high is None else min(127, out[1] + int(fixed_point.round_half_away(_F32(high) / _F32(out[0]))))
        return np.clip(y, lo, hi)

    return kernel


for _name, _bounds in {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}.items():
    QUANTIZED.register(_name)(lambda op, bounds=_bounds: _table(op, _relu(*bounds)))


@QUANTIZED.register("LEAKY_RELU")
def leaky_relu(op: Op) -> list[str]:
    """QuantizeLeakyRelu: q - zero >= 0 by the identity multiplier (input / output scale), else by the alpha one
    (input scale * alpha / output scale), both computed in float32; plus the output zero."""
    alpha = _F32(op.options.Alpha())

    def kernel(q: np.ndarray, inp: tuple[float, int], out: tuple[float, int]) -> np.ndarray:
        centred = q - inp[1]
        identity = fixed_point.multiply(centred, *_multiplier(_F32(inp[0]) / _F32(out[0])))
        scaled = fixed_point.multiply(centred, *_multiplier(_F32(inp[0]) * alpha / _F32(out[0])))
        return np.where(centred >= 0, identity, scaled) + out[1]

    return _table(op, kernel)


def _high_mul16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul of int16 values."""
    ab = a * b
    q = ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    q = np.where(q < 0, -(-q >> 15), q >> 15)
    return np.where((a == b) & (a == -32768), 32767, q)


def _saturate16(x: np.ndarray) -> np.ndarray:
    return np.clip(x, -32768, 32767)


def _to_int16_multiplier(m: int) -> int:
    """DownScaleInt32ToInt16Multiplier."""
    return 32767 if m >= 2 ** 31 - 1 - (1 << 15) else (m + (1 << 15)) >> 16


@QUANTIZED.register("HARD_SWISH")
def hard_swish(op: Op) -> list[str]:
    """reference_ops::HardSwish on int8: the input on a 2**7 finer scale, the output multiplier and the 'relu-ish'
    multiplier as 16-bit fixed point (float32 scales in Prepare), saturating 16-bit steps."""

    def kernel(q: np.ndarray, inp: tuple[float, int], out: tuple[float, int]) -> np.ndarray:
        hires = (_F32(1) / _F32(128)) * _F32(inp[0])
        out_m, out_e = _multiplier(hires / _F32(out[0]))
        relu_m, relu_e = _multiplier(hires / (_F32(3) / _F32(32768)))
        out_m, relu_m = _to_int16_multiplier(out_m), _to_int16_multiplier(relu_m)
        if out_e > 0:
            raise op.unsupported(f"output multiplier exponent {out_e} > 0 (TFLite's Prepare refuses it too)")
        value = (q - inp[1]) * 128
        preshift = _high_mul16(value, out_m)
        reluish = value
        if relu_e > 0:
            reluish = _saturate16(reluish * (1 << (relu_e - 1)))
        reluish = _high_mul16(reluish, relu_m)
        if relu_e > 0:
            reluish = _saturate16(reluish * 2)
        if relu_e < 0:
            reluish = fixed_point.divide_by_pot(reluish, -relu_e)
        reluish = (reluish + (1 << 15)) >> 1
        ab = reluish * preshift  # SaturatingDoublingHighMul: toward zero, no rounding
        product = np.where(ab < 0, -(-ab >> 15), ab >> 15)
        product = np.where((reluish == -32768) & (preshift == -32768), 32767, product)
        return fixed_point.divide_by_pot(product, -out_e) + out[1]

    return _table(op, kernel)
