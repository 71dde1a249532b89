"""TFLite's integer kernels written a second time, element by element in Python ints (a transcription of
tensorflow/lite/kernels/internal/common.cc and reference_integer_ops), to check the numpy reference of the
integer IR ops (convert/ir/reference/nn_quant.py) row by row: ROWS joins test_ir_reference's OTHER_OPS."""

from __future__ import annotations

import math

import numpy as np


def _c_div(a: int, b: int) -> int:
    """C's integer division: toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _high_mul(a: int, b: int) -> int:
    ab = a * b
    return _c_div(ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30)), 1 << 31)


def _divide_by_pot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    return (x >> exponent) + ((x & mask) > (mask >> 1) + (1 if x < 0 else 0))


def multiply(x: int, multiplier: int, shift: int) -> int:
    return _divide_by_pot(_high_mul(x * (1 << max(shift, 0)), multiplier), max(-shift, 0))


def _round(v: float) -> int:
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def multiply_once(x: int, multiplier: int, shift: int) -> int:
    """The fully-connected kernel's single rounding."""
    return (x * multiplier + (1 << (30 - shift))) >> (31 - shift)


def _requantize(x, multiplier, shift, offset, pre_shift, zero, low, high, dtype, once=False):
    x = np.asarray(x)
    out = np.empty(x.shape, np.int64)
    m, s = np.asarray(multiplier).reshape(-1), np.asarray(shift).reshape(-1)
    scale = multiply_once if once else multiply
    for index in np.ndindex(x.shape):
        c = index[1] if m.size > 1 else 0
        value = scale((int(x[index]) + offset) << pre_shift, int(m[c]), int(s[c])) + zero
        out[index] = min(max(value, low), high)
    return out.astype(dtype)


def _conv(x, weight, bias, stride, edges, x_zero, groups):
    x = np.asarray(x).astype(np.int64) - x_zero
    t, b, left, r = edges
    x = np.pad(x, ((0, 0), (0, 0), (t, b), (left, r)))
    n, c, h, w = x.shape
    o, per_group, kh, kw = weight.shape
    oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), np.int64)
    for i in np.ndindex(out.shape):
        g = i[1] // (o // groups)
        acc = int(bias[i[1]])
        for ci in range(per_group):
            for y in range(kh):
                for z in range(kw):
                    acc += int(x[i[0], g * per_group + ci, i[2] * stride + y, i[3] * stride + z]) * int(
                        weight[i[1], ci, y, z])
        out[i] = acc
    return out.astype(np.int32)


def _avg_pool(x, kernel, stride, edges, low, high):
    x = np.asarray(x)
    t, b, left, r = edges
    n, c, h, w = x.shape
    oh, ow = (h + t + b - kernel) // stride + 1, (w + left + r - kernel) // stride + 1
    out = np.zeros((n, c, oh, ow), np.int64)
    for i in np.ndindex(out.shape):
        cells = [int(x[i[0], i[1], y, z]) for y in range(i[2] * stride - t, i[2] * stride - t + kernel)
                 for z in range(i[3] * stride - left, i[3] * stride - left + kernel) if 0 <= y < h and 0 <= z < w]
        acc, count = sum(cells), len(cells)
        acc = _c_div(acc + count // 2, count) if acc > 0 else _c_div(acc - count // 2, count)
        out[i] = min(max(acc, low), high)
    return out.astype(x.dtype)


def _softmax(x, exp, low, high):
    """GetReciprocal and the output loop of reference_ops::Softmax, row by row (last axis), in Python ints."""
    x = np.asarray(x)
    out = np.empty(x.shape, np.int64)
    for row in np.ndindex(x.shape[:-1]):
        values = [int(v) for v in x[row]]
        exps = [int(exp[max(values) - v]) for v in values]
        total = sum(_divide_by_pot(e, 12) for e in exps)
        zeros = 32 - total.bit_length()
        half = ((total << zeros) - (1 << 31) + (1 << 31) - 1 + 1) // 2  # RoundingHalfSum(a, One)

        def sat4(v, k):
            return max(-(1 << 31), min((1 << 31) - 1, v << k))

        r = 1515870810 + _high_mul(half, -1010580540)
        for _ in range(3):
            r = r + sat4(_high_mul(r, (1 << 29) - _high_mul(half, r)), 2)
        r = sat4(r, 1)
        out[row] = [min(high, max(low, _divide_by_pot(_high_mul(r, e), 12 - zeros + 31 - 8) + low)) for e in exps]
    return out.astype(np.int8)


_rng = np.random.default_rng(44)
_ACC = _rng.integers(-(2 ** 20), 2 ** 20, (2, 3, 4, 5)).astype(np.int32)
_ACC[0, 0, 0, :3] = [0, 1 << 19, -(1 << 19)]  # ties of the rounding shift
_INT8 = _rng.integers(-128, 128, (2, 3, 5, 6)).astype(np.int8)
_FLOATS = np.concatenate([_rng.normal(0, 3, 50), np.arange(-6, 6.5, 0.5) * 0.1]).astype(np.float32).reshape(1, -1)
_MULTIPLIERS = np.array([1 << 30, 1518500250, (1 << 31) - 1], np.int64)
_SHIFTS = np.array([-8, -12, 2], np.int64)
_WEIGHT = _rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
_DEPTHWISE = _rng.integers(-127, 128, (3, 1, 2, 2)).astype(np.int8)
_BIAS = _rng.integers(-5000, 5000, 4).astype(np.int32)
_FC = _rng.integers(-127, 128, (7, 6)).astype(np.int8)
_FC_BIAS = _rng.integers(-5000, 5000, 7).astype(np.int32)

_TABLE = _rng.integers(-128, 128, 256).astype(np.int8)
_EXP = np.concatenate([[2 ** 31 - 1], np.sort(_rng.integers(0, 2 ** 31 - 1, 255))[::-1]]).astype(np.int32)
_EXP[200:] = 0  # beyond TFLite's diff_min

ROWS = {
    "lookup": [({"low": -128}, {"table": _TABLE}, [_INT8],
                lambda tf, x: np.array([_TABLE[int(v) + 128] for v in np.asarray(x).reshape(-1)], np.int8).reshape(
                    np.shape(x)))],
    "requantize": [
        ({"axis": 1, "offset": 0, "pre_shift": 0, "zero_point": 3, "min": -128, "max": 127, "dtype": "int8"},
         {"multiplier": _MULTIPLIERS, "shift": _SHIFTS}, [_ACC],
         lambda tf, x: _requantize(x, _MULTIPLIERS, _SHIFTS, 0, 0, 3, -128, 127, np.int8)),
        ({"axis": 1, "offset": 17, "pre_shift": 20, "zero_point": 0, "min": -(2 ** 31), "max": 2 ** 31 - 1,
          "dtype": "int32"}, {"multiplier": np.array([1431655765]), "shift": np.array([-1])}, [_INT8],
         lambda tf, x: _requantize(x, [1431655765], [-1], 17, 20, 0, -(2 ** 31), 2 ** 31 - 1, np.int32)),
        ({"axis": 1, "offset": 0, "pre_shift": 0, "zero_point": -3, "min": -128, "max": 127, "dtype": "int8",
          "rounding": "single"}, {"multiplier": _MULTIPLIERS, "shift": _SHIFTS}, [_ACC],
         lambda tf, x: _requantize(x, _MULTIPLIERS, _SHIFTS, 0, 0, -3, -128, 127, np.int8, once=True)),
    ],
    "quantize": [({"scale": 0.0235, "zero_point": -5, "dtype": "int8"}, {}, [_FLOATS],
                  lambda tf, x: np.clip([[_round(float(v) / float(np.float32(0.0235))) - 5 for v in np.asarray(x)[0]]],
                                        -128, 127).astype(np.int8))],
    "dequantize": [({"scale": 0.0235, "zero_point": -5}, {}, [_INT8],
                    lambda tf, x: (float(np.float32(0.0235)) * (np.asarray(x).astype(np.float64) + 5)).astype(
                        np.float32))],
    "integer_conv2d": [
        ({"kernel": (3, 3), "stride": (2, 2), "dilation": (1, 1), "groups": 1, "edges": (1, 1, 0, 1),
          "input_zero_point": -7, "weight_zero_point": 0}, {"weight": _WEIGHT, "bias": _BIAS}, [_INT8],
         lambda tf, x: _conv(x, _WEIGHT, _BIAS, 2, (1, 1, 0, 1), -7, 1)),
        ({"kernel": (2, 2), "stride": (1, 1), "dilation": (1, 1), "groups": 3, "edges": (0, 1, 0, 1),
          "input_zero_point": 4, "weight_zero_point": 0}, {"weight": _DEPTHWISE}, [_INT8],
         lambda tf, x: _conv(x, _DEPTHWISE, np.zeros(3, np.int32), 1, (0, 1, 0, 1), 4, 3)),
    ],
    "integer_linear": [({"input_zero_point": 9, "weight_zero_point": 0}, {"weight": _FC, "bias": _FC_BIAS},
                        [_INT8[0, 0]],
                        lambda tf, x: ((np.asarray(x).astype(np.int64) - 9) @ _FC.T.astype(np.int64) + _FC_BIAS).astype(
                            np.int32))],
    "integer_softmax": [({"axis": -1, "min": -128, "max": 127, "dtype": "int8"}, {"exp": _EXP}, [_INT8],
                         lambda tf, x: _softmax(x, _EXP, -128, 127))],
    "integer_avg_pool2d": [({"kernel": (3, 3), "stride": (2, 2), "edges": (1, 1, 1, 1), "min": -100, "max": 127},
                            {}, [_INT8], lambda tf, x: _avg_pool(x, 3, 2, (1, 1, 1, 1), -100, 127))],
}
