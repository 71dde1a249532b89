"""Elementwise extras: the identity-likes TF graphs carry (copies and checks that pass their
input through at inference), QuantizeAndDequantizeV2/V3/V4 with a given range (a constant, or one the graph
computes), and the bitwise ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..context import Context, NotConvertible, attr, permute_shape
from ..lowering import Lowering
from ..table import tf_op
from .elementwise import broadcast_inputs, pass_through


@tf_op("CheckNumericsV2", "DeepCopy", "Copy", "CopyHost", "GuaranteeConst")
def identity_like(ctx: Context, op: Any) -> None:
    """Their output is their (first) input: CheckNumericsV2 only raises on nan/inf, the copies copy,
    GuaranteeConst only promises the runtime a constant."""
    pass_through(ctx, op)


# ---- QuantizeAndDequantizeV2/V3/V4 with a given range ------------------------------------------------

_QDQ = ("QuantizeAndDequantizeV2", "QuantizeAndDequantizeV3", "QuantizeAndDequantizeV4",
        "QuantizeAndDequantize")  # V1 (removed at GraphDef version 22): the range in attributes, half to even


def quantize_range(low: float, high: float, bits: int, signed: bool, narrow: bool) -> tuple[float, float, float, float]:
    """(min, max, scale, inverse_scale) as TF's kernel works them out, in float32: the side of the range
    that gives the smaller scale is kept, the other one moved onto the quantized grid."""
    f32 = np.float32
    q_min = (-(1 << (bits - 1)) + (1 if narrow else 0)) if signed else 0
    q_max = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    largest = np.finfo(np.float32).max
    low, high = f32(low), f32(high)
    from_min = f32(q_min) / low if q_min * low > 0 else largest
    from_max = f32(q_max) / high if q_max * high > 0 else largest
    if from_min == largest and from_max == largest:
        raise NotConvertible(f"quantization range [{low}, {high}] has no scale on the {bits}-bit grid")
    if from_min < from_max:
        scale, inverse = f32(from_min), low / f32(q_min)
        high = f32(q_max) * inverse
    else:
        scale, inverse = f32(from_max), high / f32(q_max)
        low = f32(q_min) * inverse
    return float(low), float(high), float(scale), float(inverse)


@tf_op(*_QDQ)
def quantize_and_dequantize(ctx: Context, op: Any) -> None:
    """clip(x, min, max) * scale, rounded (half to even, or half up as floor(y + 0.5)), * inverse_scale:
    TF's kernel step by step in float32, with the range it derives from the given one."""
    if not bool(attr(op, "range_given", op.type == "QuantizeAndDequantizeV3")):
        raise NotConvertible(f"{op.type} with range_given=False (the range comes from the data at run time); "
                             "give it a constant range")
    if int(attr(op, "axis", -1)) != -1:
        raise NotConvertible(f"{op.type} per channel (axis={attr(op, 'axis')}); only one range for the tensor "
                             "is supported")
    if op.outputs[0].dtype.name != "float32":
        raise NotConvertible(f"{op.type} of {op.outputs[0].dtype.name}: only float32 is supported")
    bits = int(np.asarray(ctx.const(op.inputs[3])).reshape(-1)[0]) if op.type == "QuantizeAndDequantizeV3" \
        else int(attr(op, "num_bits", 8))
    signed, narrow = bool(attr(op, "signed_input", True)), bool(attr(op, "narrow_range", False))
    if op.type == "QuantizeAndDequantize":
        low, high = float(attr(op, "input_min")), float(attr(op, "input_max"))
    elif not all(ctx.is_const(t) for t in op.inputs[1:3]):
        _quantize_run_time_range(ctx, op, bits, signed, narrow)
        return
    else:
        low, high = (float(np.asarray(ctx.const(t)).reshape(-1)[0]) for t in op.inputs[1:3])
    low, high, scale, inverse = quantize_range(low, high, bits, signed, narrow)
    v = ctx.val(op.inputs[0])
    shape = ctx.graph.shape(v.ir)

    def scalar(name: str, value: float) -> str:
        return ctx.emit("const", f"{op.name}/{name}", [], (), params={"value": np.float32(value)}, source_op=op.type,
                        out_dtype="float32")

    x = ctx.emit("clip", f"{op.name}/clip", [v.ir], shape, {"min": low, "max": high}, source_op=op.type)
    x = ctx.emit("mul", f"{op.name}/scale", [x, scalar("scale_value", scale)], shape, source_op=op.type)
    if attr(op, "round_mode", "HALF_TO_EVEN") == "HALF_UP":
        x = ctx.emit("add", f"{op.name}/half", [x, scalar("half_value", 0.5)], shape, source_op=op.type)
        x = ctx.emit("floor", f"{op.name}/round", [x], shape, source_op=op.type)
    else:
        x = ctx.emit("round", f"{op.name}/round", [x], shape, source_op=op.type)
    out = ctx.emit("mul", op.name, [x, scalar("inverse_scale", inverse)], shape, source_op=op.type)
    ctx.set(op.outputs[0], out, v.perm)


def _quantize_run_time_range(ctx: Context, op: Any, bits: int, signed: bool, narrow: bool) -> None:
    """`quantize_range` computed by the converted model from a range the graph computes: the same float32
    steps, each choice a select."""
    low = Lowering(ctx, op)
    ends = []
    for k, t in enumerate(op.inputs[1:3]):
        if tuple(ctx.shape(t)) not in ((), (1,)):
            raise NotConvertible(f"{op.type} with a range shaped {tuple(ctx.shape(t))} (one range is supported)")
        ends.append(low.reshape(f"range{k}", ctx.tf_order(t), ()))
    q_min = (-(1 << (bits - 1)) + (1 if narrow else 0)) if signed else 0
    q_max = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    zero, largest = low.const("zero", np.float32(0)), low.const("largest", np.finfo(np.float32).max)
    q_low, q_high = low.const("q_min", np.float32(q_min)), low.const("q_max", np.float32(q_max))
    lo, hi = ends
    from_max = low.select("from_max", low.compare("greater", "high_positive", hi, zero),
                          low.binary("div", "max_scale", q_high, hi), largest)
    max_inverse = low.binary("div", "max_inverse", hi, q_high)
    if q_min < 0:  # q_min * low > 0 only for a negative low
        from_min = low.select("from_min", low.compare("less", "low_negative", lo, zero),
                              low.binary("div", "min_scale", q_low, lo), largest)
        min_side = low.compare("less", "min_side", from_min, from_max)
        scale = low.select("scale", min_side, from_min, from_max)
        min_inverse = low.binary("div", "min_inverse", lo, q_low)
        inverse = low.select("inverse", min_side, min_inverse, max_inverse)
        lo = low.select("low", min_side, lo, low.binary("mul", "low_moved", q_low, max_inverse))
        hi = low.select("high", min_side, low.binary("mul", "high_moved", q_high, min_inverse), hi)
    else:  # from_min is the largest float: the max side always gives the scale
        scale, inverse = from_max, max_inverse
        lo = low.binary("mul", "low_moved", q_low, max_inverse)
    v = ctx.val(op.inputs[0])
    x = low.binary("minimum", "clip", low.binary("maximum", "clip_low", v.ir, lo), hi)
    x = low.binary("mul", "scale_value", x, scale)
    if attr(op, "round_mode", "HALF_TO_EVEN") == "HALF_UP":
        x = low.node("floor", "round", [low.binary("add", "half", x, low.const("half_value", np.float32(0.5)))],
                     low.shape(x))
    else:
        x = low.node("round", "round", [x], low.shape(x))
    ctx.set(op.outputs[0], low.binary("mul", "", x, inverse), v.perm)


# ---- bitwise ops (integer tensors) ---------------------------------------------------------------------

BITWISE = {"BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor",
           "LeftShift": "left_shift", "RightShift": "right_shift"}
_INTEGER_TYPES = ("int32", "int64", "int8", "uint8")  # the integer dtypes the converted graph holds
_BITWISE_TYPES = _INTEGER_TYPES + ("int16",)  # and computes bitwise ops in (convert.ir.dtypes.COMPUTED_WIDE)


def _integers(op: Any) -> None:
    dtype = op.outputs[0].dtype.name
    if dtype not in _BITWISE_TYPES:
        raise NotConvertible(f"{op.type} of {dtype}: the converted graph computes bitwise ops in "
                             f"{', '.join(_BITWISE_TYPES)} integers")


@tf_op(*BITWISE)
def bitwise(ctx: Context, op: Any) -> None:
    _integers(op)
    names, perm = broadcast_inputs(ctx, op, list(op.inputs[:2]))
    out = ctx.emit(BITWISE[op.type], op.name, names, permute_shape(ctx.shape(op.outputs[0]), perm), source_op=op.type,
                   out_dtype=op.outputs[0].dtype.name)
    ctx.set(op.outputs[0], out, perm)


@tf_op("Invert")
def invert(ctx: Context, op: Any) -> None:
    _integers(op)
    v = ctx.val(op.inputs[0])
    out = ctx.emit("bitwise_not", op.name, [v.ir], ctx.graph.shape(v.ir), source_op=op.type,
                   out_dtype=op.outputs[0].dtype.name)
    ctx.set(op.outputs[0], out, v.perm)


_NIBBLE_BITS = np.array([bin(i).count("1") for i in range(16)], np.int32)


@tf_op("PopulationCount")
def population_count(ctx: Context, op: Any) -> None:
    """The set bits of each element (uint8): per 4-bit group, (x >> 4k) & 15 looks its count up in a 16-entry
    table; the counts are summed. Shifts, masks, a gather and small sums: exact."""
    dtype = op.inputs[0].dtype.name
    if dtype not in _INTEGER_TYPES:
        raise NotConvertible(f"{op.type} of {dtype}: the converted graph holds {', '.join(_INTEGER_TYPES)} integers")
    v = ctx.val(op.inputs[0])
    shape = ctx.graph.shape(v.ir)

    def const(name: str, value: np.ndarray) -> str:
        return ctx.emit("const", f"{op.name}/{name}", [], value.shape, params={"value": value}, source_op=op.type,
                        out_dtype=value.dtype.name)

    table, low = const("table", _NIBBLE_BITS), const("nibble", np.asarray(15, dtype))
    total = None
    for k in range(np.dtype(dtype).itemsize * 2):
        x = v.ir if k == 0 else ctx.emit("right_shift", f"{op.name}/shift{k}", [v.ir, const(
            f"by{k}", np.asarray(4 * k, dtype))], shape, source_op=op.type, out_dtype=dtype)
        nibble = ctx.emit("bitwise_and", f"{op.name}/nibble{k}", [x, low], shape, source_op=op.type, out_dtype=dtype)
        if dtype not in ("int32", "int64"):  # gather indices are int32 / int64
            nibble = ctx.emit("cast", f"{op.name}/index{k}", [nibble], shape, {"dtype": "int32"}, source_op=op.type,
                              out_dtype="int32")
        count = ctx.emit("gather", f"{op.name}/count{k}", [table, nibble], shape, {"axis": 0}, source_op=op.type,
                         out_dtype="int32")
        total = count if total is None else ctx.emit("add", f"{op.name}/sum{k}", [total, count], shape,
                                                     source_op=op.type, out_dtype="int32")
    out = ctx.emit("cast", op.name, [total], shape, {"dtype": "uint8"}, source_op=op.type, out_dtype="uint8")
    ctx.set(op.outputs[0], out, v.perm)


@tf_op("ToBool")
def to_bool(ctx: Context, op: Any) -> None:
    """A scalar: x != 0 for a scalar x, whether it has elements for any other (a constant: shapes are static)."""
    shape = ctx.shape(op.inputs[0])
    if shape:
        value = np.asarray(int(np.prod(shape)) > 0)
        out = ctx.emit("const", op.name, [], (), params={"value": value}, source_op=op.type, out_dtype="bool")
    else:
        v = ctx.val(op.inputs[0])
        out = ctx.emit("cast", op.name, [v.ir], (), {"dtype": "bool"}, source_op=op.type, out_dtype="bool")
    ctx.set(op.outputs[0], out)
