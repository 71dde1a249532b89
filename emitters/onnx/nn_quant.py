"""The ONNX handlers of TFLite's integer arithmetic (the nn family's quantized part): accumulators by
ConvInteger / MatMulInteger (int32, zero points subtracted, padding that adds nothing), the fixed-point
multiplier in int64 (Div truncates as C's does; RoundingDivideByPOT on the value moved up by 2**32, a multiple
of every divisor, so that every division is of a non-negative number), clamps by Max/Min."""

from __future__ import annotations

import numpy as np

from tf_convert.convert import fixed_point

from .contract import TABLE, Builder, Ctx, Emitted, positive_axis, reduce_op

_I64 = np.int64


def _per_channel(values: np.ndarray, axis: int, rank: int) -> np.ndarray:
    values = np.asarray(values, _I64).reshape(-1)
    if values.size == 1:
        return values.reshape(())
    return values.reshape((-1,) + (1,) * (rank - 1 - axis % rank))


def _cast(b: Builder, x: str, dtype: str, out: str | None = None) -> str:
    from onnx import helper

    return b.op("Cast", [x], out, to=helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))


def _clamp(b: Builder, x: str, low, high, dtype) -> str:
    x = b.op("Max", [x, b.const("low", np.array(low, dtype), dtype)])
    return b.op("Min", [x, b.const("high", np.array(high, dtype), dtype)])


def _single_rounding(b: Builder, x: str, params: dict, channel) -> str:
    """(x * m + 2**(30 - s)) >> (31 - s): Div truncates, so a negative quotient that left a remainder is one less
    (the floor an arithmetic shift gives)."""
    right = 31 - np.asarray(params["shift"], _I64)
    x = b.op("Add", [b.op("Mul", [x, channel("multiplier", params["multiplier"])]),
                     channel("rounding", np.left_shift(_I64(1), right - 1))])
    div = channel("divisor", np.left_shift(_I64(1), right))
    quotient = b.op("Div", [x, div])
    behind = b.op("Less", [b.op("Sub", [x, b.op("Mul", [quotient, div])]), b.const("zero", np.array(0, _I64), _I64)])
    return b.op("Sub", [quotient, _cast(b, behind, "int64")])


@TABLE.register("requantize")
def requantize(ctx: Ctx) -> Emitted:
    a, b = ctx.node.attrs, Builder(ctx, ctx.node)
    rank = len(ctx.shape(ctx.node.inputs[0]))
    axis = int(a.get("axis", 1))
    shift = np.asarray(ctx.node.params["shift"], _I64)
    right = np.maximum(-shift, 0)
    divisor = np.left_shift(_I64(1), right)
    left = np.left_shift(_I64(1), np.maximum(shift, 0) + int(a.get("pre_shift", 0)))

    def channel(suffix: str, values) -> str:
        return b.const(suffix, _per_channel(values, axis, rank), _I64)

    x = _cast(b, b.x(), "int64")
    if int(a.get("offset", 0)):
        x = b.op("Add", [x, b.const("offset", np.array(int(a["offset"]), _I64), _I64)])
    if a.get("rounding", "double") == "single":
        pre = b.const("pre", np.array(1 << int(a.get("pre_shift", 0)), _I64), _I64)
        x = _single_rounding(b, b.op("Mul", [x, pre]), ctx.node.params, channel)
    else:
        x = b.op("Mul", [b.op("Mul", [x, channel("left", left)]), channel("multiplier", ctx.node.params["multiplier"])])
        # SaturatingRoundingDoublingHighMul: (ab + nudge) / 2**31 toward zero
        non_negative = b.op("GreaterOrEqual", [x, b.const("zero", np.array(0, _I64), _I64)])
        nudge = b.op("Where", [non_negative, b.const("up", np.array(1 << 30, _I64), _I64),
                               b.const("down", np.array(1 - (1 << 30), _I64), _I64)])
        x = b.op("Div", [b.op("Add", [x, nudge]), b.const("high", np.array(1 << 31, _I64), _I64)])
        # RoundingDivideByPOT: floor and remainder of x + 2**32 (>= 0) by 2**right
        moved = b.op("Add", [x, b.const("moved", np.array(1 << 32, _I64), _I64)])
        div = channel("divisor", divisor)
        quotient = b.op("Div", [moved, div])
        remainder = b.op("Sub", [moved, b.op("Mul", [quotient, div])])
        floor = b.op("Sub", [quotient, channel("lift", (1 << 32) // divisor)])
        negative = _cast(b, b.op("Less", [x, b.const("zero", np.array(0, _I64), _I64)]), "int64")
        threshold = b.op("Add", [channel("threshold", (divisor - 1) >> 1), negative])
        x = b.op("Add", [floor, _cast(b, b.op("Greater", [remainder, threshold]), "int64")])
    if int(a.get("zero_point", 0)):
        x = b.op("Add", [x, b.const("zero_point", np.array(int(a["zero_point"]), _I64), _I64)])
    x = _clamp(b, x, int(a["min"]), int(a["max"]), _I64)
    _cast(b, x, str(a["dtype"]), b.out)
    return b.done()


@TABLE.register("quantize")
def quantize(ctx: Ctx) -> Emitted:
    """x / scale in float64, rounded half away from zero (the fraction |q| - floor(|q|) is exact), clamped."""
    a, b = ctx.node.attrs, Builder(ctx, ctx.node)
    info, zero = np.iinfo(str(a["dtype"])), int(a["zero_point"])
    q = b.op("Div", [_cast(b, b.x(), "float64"), b.const("scale", np.float64(np.float32(a["scale"])), np.float64)])
    magnitude = b.op("Abs", [q])
    whole = b.op("Floor", [magnitude])
    up = b.op("GreaterOrEqual", [b.op("Sub", [magnitude, whole]), b.const("half", np.float64(0.5), np.float64)])
    rounded = b.op("Mul", [b.op("Sign", [q]), b.op("Add", [whole, _cast(b, up, "float64")])])
    rounded = _clamp(b, rounded, float(info.min - zero), float(info.max - zero), np.float64)
    shifted = b.op("Add", [_cast(b, rounded, "int64"), b.const("zero_point", np.array(zero, _I64), _I64)])
    _cast(b, shifted, str(a["dtype"]), b.out)
    return b.done()


@TABLE.register("dequantize")
def dequantize(ctx: Ctx) -> Emitted:
    a, b = ctx.node.attrs, Builder(ctx, ctx.node)
    centred = b.op("Sub", [_cast(b, b.x(), "float64"), b.const("zero_point", np.float64(a["zero_point"]), np.float64)])
    value = b.op("Mul", [centred, b.const("scale", np.float64(np.float32(a["scale"])), np.float64)])
    _cast(b, value, "float32", b.out)
    return b.done()


def _zero(b: Builder, suffix: str, value: int, dtype: np.dtype) -> str:
    return b.const(suffix, np.array(value, dtype), dtype)


def _with_bias(b: Builder, acc: str, ctx: Ctx, shape: tuple[int, ...]) -> None:
    if "bias" in ctx.node.params:
        bias = b.const("bias", np.asarray(ctx.node.params["bias"], np.int32).reshape(shape), np.int32)
        b.op("Add", [acc, bias], b.out)
    else:
        b.op("Identity", [acc], b.out)


@TABLE.register("integer_conv2d")
def integer_conv2d(ctx: Ctx) -> Emitted:
    a, b = ctx.node.attrs, Builder(ctx, ctx.node)
    weight = np.asarray(ctx.node.params["weight"])
    x_dtype = ctx.dtype(ctx.node.inputs[0])
    t, bottom, left, r = (int(e) for e in a["edges"])
    inputs = [b.x(), b.const("weight", weight, weight.dtype), _zero(b, "x_zero", int(a["input_zero_point"]), x_dtype),
              _zero(b, "w_zero", int(a.get("weight_zero_point", 0)), weight.dtype)]
    acc = b.op("ConvInteger", inputs, kernel_shape=list(a["kernel"]), strides=list(a["stride"]),
               dilations=list(a["dilation"]), group=int(a["groups"]), pads=[t, left, bottom, r])
    _with_bias(b, acc, ctx, (-1, 1, 1))
    return b.done()


@TABLE.register("integer_linear")
def integer_linear(ctx: Ctx) -> Emitted:
    a, b = ctx.node.attrs, Builder(ctx, ctx.node)
    weight = np.ascontiguousarray(np.asarray(ctx.node.params["weight"]).T)
    x_dtype = ctx.dtype(ctx.node.inputs[0])
    inputs = [b.x(), b.const("weight", weight, weight.dtype), _zero(b, "x_zero", int(a["input_zero_point"]), x_dtype),
              _zero(b, "w_zero", int(a.get("weight_zero_point", 0)), weight.dtype)]
    _with_bias(b, b.op("MatMulInteger", inputs), ctx, (-1,))
    return b.done()


@TABLE.register("integer_avg_pool2d")
def integer_avg_pool2d(ctx: Ctx) -> Emitted:
    """Window sums by a depthwise ConvInteger of ones (padding adds nothing), TFLite's rounding division by the
    real elements (a constant: the node is bound to its size) in int64."""
    a, b = ctx.node.attrs, Builder(ctx, ctx.node)
    _, c, h, w = ctx.shape(ctx.node.inputs[0])
    x_dtype = ctx.dtype(ctx.node.inputs[0])
    t, bottom, left, r = (int(e) for e in a["edges"])
    (kh, kw), (sh, sw) = a["kernel"], a["stride"]
    oh, ow = ctx.shape(ctx.node.output)[2:]
    real = np.pad(np.ones((h, w), _I64), ((t, bottom), (left, r)))
    count = np.array([[real[i * sh:i * sh + kh, j * sw:j * sw + kw].sum() for j in range(ow)] for i in range(oh)],
                     _I64)
    ones = np.ones((c, 1, kh, kw), np.uint8)
    total = b.op("ConvInteger", [b.x(), b.const("ones", ones, np.uint8), _zero(b, "x_zero", 0, x_dtype),
                                 _zero(b, "w_zero", 0, np.dtype(np.uint8))],
                 kernel_shape=[kh, kw], strides=[sh, sw], group=c, pads=[t, left, bottom, r])
    total = _cast(b, total, "int64")
    half = b.const("half", count // 2, _I64)
    positive = b.op("Greater", [total, b.const("zero", np.array(0, _I64), _I64)])
    rounded = b.op("Where", [positive, b.op("Add", [total, half]), b.op("Sub", [total, half])])
    y = _clamp(b, b.op("Div", [rounded, b.const("count", count, _I64)]), int(a["min"]), int(a["max"]), _I64)
    _cast(b, y, str(x_dtype), b.out)
    return b.done()


@TABLE.register("lookup")
def lookup(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    table = np.asarray(ctx.node.params["table"])
    index = b.op("Sub", [_cast(b, b.x(), "int64"), b.const("low", np.array(int(ctx.node.attrs["low"]), _I64), _I64)])
    b.op("Gather", [b.const("table", table, table.dtype), index], b.out, axis=0)
    return b.done()


def _high_mul(b: Builder, x: str, y: str) -> str:
    """gemmlowp's SaturatingRoundingDoublingHighMul of int32 values in int64 (never both -2**31 here)."""
    product = b.op("Mul", [x, y])
    nudge = b.op("Where", [b.op("GreaterOrEqual", [product, b.const("zero", np.array(0, _I64), _I64)]),
                           b.const("up", np.array(1 << 30, _I64), _I64),
                           b.const("down", np.array(1 - (1 << 30), _I64), _I64)])
    return b.op("Div", [b.op("Add", [product, nudge]), b.const("high", np.array(1 << 31, _I64), _I64)])


def _saturating_shift(b: Builder, x: str, exponent: int) -> str:
    shifted = b.op("Mul", [x, b.const("pot", np.array(1 << exponent, _I64), _I64)])
    return _clamp(b, shifted, -(1 << 31), (1 << 31) - 1, _I64)


@TABLE.register("integer_softmax")
def integer_softmax(ctx: Ctx) -> Emitted:
    """TFLite's 8-bit softmax: exp[d] of d = max - x by Gather, the rescaled sum, its leading zeros (the powers of 2
    it reaches, counted along the softmax axis), gemmlowp's reciprocal in int64, the rounding division by a power
    of 2 (of values >= 0) picked by Gather."""
    a, b = ctx.node.attrs, Builder(ctx, ctx.node)
    rank = len(ctx.shape(ctx.node.inputs[0]))
    axis = positive_axis(int(a["axis"]), rank)
    exp = np.asarray(ctx.node.params["exp"], _I64)
    powers = b.const("powers", np.left_shift(_I64(1), np.arange(36, dtype=_I64)), _I64)

    def one(value: int) -> str:
        return b.const("c", np.array(value, _I64), _I64)

    def reduce_sum(x: str) -> str:
        if ctx.opset >= 13:
            return b.op("ReduceSum", [x, b.ints("axes", [axis])], keepdims=1)
        return b.op("ReduceSum", [x], axes=[axis], keepdims=1)

    x = _cast(b, b.x(), "int64")
    d = b.op("Sub", [reduce_op(b, "ReduceMax", x, [axis], True), x])
    e = b.op("Gather", [b.const("exp", exp, _I64), d], axis=0)
    total = reduce_sum(b.op("Gather", [b.const("rescaled", fixed_point.divide_by_pot(exp, 12), _I64), d], axis=0))
    thresholds = np.left_shift(_I64(1), np.arange(32, dtype=_I64)).reshape([32 if k == axis else 1
                                                                            for k in range(rank)])
    bits = reduce_sum(_cast(b, b.op("GreaterOrEqual", [total, b.const("thresholds", thresholds, _I64)]), "int64"))
    zeros = b.op("Sub", [one(32), bits])
    half = b.op("Mul", [total, b.op("Gather", [powers, b.op("Sub", [zeros, one(1)])], axis=0)])
    r = b.op("Add", [one(1515870810), _high_mul(b, half, one(-1010580540))])
    for _ in range(3):
        error = b.op("Sub", [one(1 << 29), _high_mul(b, half, r)])
        r = b.op("Add", [r, _saturating_shift(b, _high_mul(b, r, error), 2)])
    r = _saturating_shift(b, r, 1)
    shift = b.op("Sub", [one(35), zeros])
    rounded = b.op("Add", [_high_mul(b, r, e), b.op("Gather", [powers, b.op("Sub", [shift, one(1)])], axis=0)])
    y = b.op("Div", [rounded, b.op("Gather", [powers, shift], axis=0)])
    y = _clamp(b, b.op("Add", [y, one(int(a["min"]))]), int(a["min"]), int(a["max"]), _I64)
    _cast(b, y, str(a["dtype"]), b.out)
    return b.done()
