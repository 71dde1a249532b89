"""The ONNX handlers of the bitwise ops. BitwiseAnd/Or/Xor/Not arrived in opset 18; below
it, and/or/xor take the operands apart into bits (BitShift on the unsigned type, opset 11), combine the bits
and sum them back with their weights, and not is -1 - x (max - x unsigned). Shifts are BitShift on the
unsigned type after clamping the amount to the width (TF's rule); a signed right shift fills with the sign
as ~(~a >> s). Every step is an integer operation: exact."""

from __future__ import annotations

import numpy as np

from .contract import TABLE, Builder, Ctx, Emitted

_NATIVE = {"bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr", "bitwise_xor": "BitwiseXor"}
_NATIVE_OPSET = 18


def _type(dtype: np.dtype) -> int:
    from onnx import helper

    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _width(dtype: np.dtype) -> int:
    return np.dtype(dtype).itemsize * 8


def _unsigned(b: Builder, x: str, dtype: np.dtype) -> str:
    """x reinterpreted in the unsigned type of its width (Cast wraps, as two's complement does)."""
    unsigned = np.dtype(f"uint{_width(dtype)}")
    return x if np.dtype(dtype) == unsigned else b.op("Cast", [x], to=_type(unsigned))


def _bits(b: Builder, x: str, dtype: np.dtype) -> str:
    """(..., width) int64 0/1: bit k of x at position k."""
    width = _width(dtype)
    unsigned = np.dtype(f"uint{width}")
    column = b.op("Unsqueeze", [_unsigned(b, x, dtype), b.ints("last", [-1])])
    up = b.op("BitShift", [column, b.const("to_top", width - 1 - np.arange(width), unsigned)], direction="LEFT")
    bit = b.op("BitShift", [up, b.const("to_bottom", np.asarray(width - 1), unsigned)], direction="RIGHT")
    return b.op("Cast", [bit], to=_type(np.int64))


@TABLE.register(*_NATIVE)
def bitwise(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    if ctx.opset >= _NATIVE_OPSET:
        b.op(_NATIVE[ctx.node.op], [b.x(0), b.x(1)], b.out)
        return b.done()
    dtype = ctx.dtype(ctx.node.output)
    x, y = _bits(b, b.x(0), dtype), _bits(b, b.x(1), dtype)
    if ctx.node.op == "bitwise_and":
        bit = b.op("Mul", [x, y])
    elif ctx.node.op == "bitwise_or":
        bit = b.op("Max", [x, y])
    else:
        bit = b.op("Abs", [b.op("Sub", [x, y])])
    b.op("Cast", [_weighted_sum(b, bit, _width(dtype))], b.out, to=_type(dtype))  # narrower: the low bits
    return b.done()


def _weighted_sum(b: Builder, bits: str, width: int) -> str:
    """sum of bit k * 2^k over the last axis, in int64. onnxruntime's ReduceSum is exact only below 2^53,
    so 32 bits are summed at a time and the high word moved up by a Mul (wrapping into the sign bit)."""
    weights = b.const("weights", np.left_shift(np.int64(1), np.arange(min(width, 32), dtype=np.int64)), np.int64)

    def word(start: int) -> str:
        part = bits if width <= 32 else b.op("Slice", [bits, b.ints("start", [start]), b.ints("end", [start + 32]),
                                                       b.ints("axis", [-1])])
        return b.op("ReduceSum", [b.op("Mul", [part, weights]), b.ints("axes", [-1])], keepdims=0)

    if width <= 32:
        return word(0)
    return b.op("Add", [b.op("Mul", [word(32), b.const("word", np.asarray(1 << 32, np.int64), np.int64)]), word(0)])


def _complement(b: Builder, x: str, dtype: np.dtype, out: str | None = None) -> str:
    """~x: -1 - x signed, max - x unsigned (no wrap either way)."""
    top = np.iinfo(dtype).max if np.dtype(dtype).kind == "u" else -1
    return b.op("Sub", [b.const("all_ones", np.asarray(top), dtype), x], out)


@TABLE.register("bitwise_not")
def bitwise_not(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    if ctx.opset >= _NATIVE_OPSET:
        b.op("BitwiseNot", [b.x()], b.out)
    else:
        _complement(b, b.x(), ctx.dtype(ctx.node.output), b.out)
    return b.done()


@TABLE.register("left_shift", "right_shift")
def shift(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    dtype = ctx.dtype(ctx.node.output)
    amount_type = ctx.dtype(ctx.node.inputs[1])
    amount = b.op("Clip", [b.x(1), b.const("least", np.asarray(0), amount_type),
                           b.const("most", np.asarray(_width(dtype) - 1), amount_type)])
    amount = _unsigned(b, amount, amount_type) if _width(amount_type) == _width(dtype) else b.op(
        "Cast", [amount], to=_type(np.dtype(f"uint{_width(dtype)}")))
    signed = np.dtype(dtype).kind == "i"

    def shifted(x: str, direction: str, out: str | None = None) -> str:
        moved = b.op("BitShift", [_unsigned(b, x, dtype), amount], direction=direction)
        return b.op("Cast", [moved], out, to=_type(dtype)) if signed else b.op("Identity", [moved], out)

    a = b.x(0)
    if ctx.node.op == "left_shift" or not signed:
        shifted(a, "LEFT" if ctx.node.op == "left_shift" else "RIGHT", b.out)
        return b.done()
    negative = b.op("Less", [a, b.const("zero", np.asarray(0), dtype)])
    magnitude = b.op("Where", [negative, _complement(b, a, dtype), a])  # ~a >= 0 where a < 0
    moved = shifted(magnitude, "RIGHT")
    b.op("Where", [negative, _complement(b, moved, dtype), moved], b.out)
    return b.done()
