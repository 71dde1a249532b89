"""TFLite's fixed-point arithmetic of quantized kernels, in numpy int64: a real multiplier as a 31-bit
significand and a power-of-two shift (QuantizeMultiplier), and the product of an int32 by it
(MultiplyByQuantizedMultiplier: SaturatingRoundingDoublingHighMul then RoundingDivideByPOT, TFLite's
default double rounding, tensorflow/lite/kernels/internal/common.cc); rounding half away from zero."""

from __future__ import annotations

import math

import numpy as np

INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1


def quantize_multiplier(real: float) -> tuple[int, int]:
    """(significand, shift) with real = significand * 2**(shift - 31), significand in [2**30, 2**31): TFLite's
    QuantizeMultiplier on a double (frexp, round half away from zero, a significand of 2**31 halved)."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    fixed = int(round_half_away(np.float64(q * 2.0 ** 31)))
    if fixed == 2 ** 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def round_half_away(x: np.ndarray) -> np.ndarray:
    """std::round on doubles (exact: the fraction |x| - floor(|x|) is computed without rounding)."""
    x = np.asarray(x, np.float64)
    whole = np.floor(np.abs(x))
    return np.sign(x) * (whole + (np.abs(x) - whole >= 0.5))


def high_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """SaturatingRoundingDoublingHighMul of int32 values (b > 0: the saturating case a == b == INT32_MIN
    never occurs): (a * b + nudge) / 2**31, C's division truncating toward zero."""
    ab = np.asarray(a, np.int64) * np.asarray(b, np.int64)
    nudged = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    q = np.abs(nudged) >> 31
    return np.where(nudged < 0, -q, q)


def divide_by_pot(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """RoundingDivideByPOT: x / 2**exponent rounded to nearest, ties away from zero."""
    x, exponent = np.asarray(x, np.int64), np.asarray(exponent, np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply(x: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """MultiplyByQuantizedMultiplier(x, multiplier, shift): x * 2**max(shift, 0), times the significand,
    divided by 2**max(-shift, 0). The parser makes sure x * 2**shift stays inside int32 (TFLite's own product
    is int32)."""
    shift = np.asarray(shift, np.int64)
    scaled = np.asarray(x, np.int64) << np.maximum(shift, 0)
    return divide_by_pot(high_mul(scaled, multiplier), np.maximum(-shift, 0))
