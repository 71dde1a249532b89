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


def multiply_once(x: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """The single-rounding MultiplyByQuantizedMultiplier TFLite's int8 FULLY_CONNECTED reference kernel computes
    (measured: 30000 outputs of the interpreter, none off; double rounding is off at about 1 in 1000):
    (x * multiplier + 2**(30 - shift)) >> (31 - shift) in int64, an arithmetic shift (ties toward +inf)."""
    total = 31 - np.asarray(shift, np.int64)
    product = np.asarray(x, np.int64) * np.asarray(multiplier, np.int64)
    return (product + (np.int64(1) << (total - 1))) >> total


# ---- gemmlowp's fixed point (fixedpoint.h), as TFLite's 8-bit softmax uses it; int32 raw values in int64 ----


def saturating_shift_left(x: np.ndarray, exponent: int) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOT with a positive exponent: x * 2**exponent saturated to int32."""
    return np.clip(np.asarray(x, np.int64) << exponent, INT32_MIN, INT32_MAX)


def _exp_quarter(a: np.ndarray) -> np.ndarray:
    """exp_on_interval_between_negative_one_quarter_and_0_excl (Q0.31 in and out): a Taylor expansion at -1/8."""
    x = a + (1 << 28)
    x2 = high_mul(x, x)
    x3 = high_mul(x2, x)
    x4_over_4 = divide_by_pot(high_mul(x2, x2), 2)
    rest = divide_by_pot(high_mul(x4_over_4 + x3, 715827883) + x2, 1)
    constant = 1895147668  # exp(-1/8)
    return constant + high_mul(constant, x + rest)


# exp(-2**k) in Q0.31 for k = -2..4: the barrel shifter's factors
_EXP_FACTORS = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
                (4, 242))


def exp_on_negative_values(a: np.ndarray, integer_bits: int = 5) -> np.ndarray:
    """exp of a <= 0 in Q(integer_bits).(31 - integer_bits), to Q0.31 (gemmlowp's exp_on_negative_values)."""
    a = np.asarray(a, np.int64)
    fractional = 31 - integer_bits
    quarter = 1 << (fractional - 2)
    a_mod_quarter_minus_quarter = (a & (quarter - 1)) - quarter
    result = _exp_quarter(saturating_shift_left(a_mod_quarter_minus_quarter, integer_bits))
    remainder = a_mod_quarter_minus_quarter - a
    for exponent, factor in _EXP_FACTORS:
        if integer_bits > exponent:
            result = np.where(remainder & (1 << (fractional + exponent)), high_mul(result, factor), result)
    return np.where(a == 0, INT32_MAX, result)


def one_over_one_plus_x(a: np.ndarray) -> np.ndarray:
    """1 / (1 + a) for a in [0, 1) in Q0.31 (gemmlowp's one_over_one_plus_x_for_x_in_0_1: three Newton-Raphson
    steps in Q2.29 from 48/17 - 32/17 * d, d = (1 + a) / 2)."""
    total = np.asarray(a, np.int64) + INT32_MAX
    half_denominator = np.where(total >= 0, (total + 1) // 2, -((1 - total) // 2))  # RoundingHalfSum
    x = 1515870810 + high_mul(half_denominator, -1010580540)
    for _ in range(3):
        error = (1 << 29) - high_mul(half_denominator, x)
        x = x + saturating_shift_left(high_mul(x, error), 2)
    return saturating_shift_left(x, 1)


def count_leading_zeros(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of x as a uint32 (x in [1, 2**31))."""
    x = np.asarray(x, np.int64)
    return 32 - sum((x >= (1 << j)).astype(np.int64) for j in range(32))
