"""The PyTorch handlers of TFLite's integer arithmetic (the nn family's quantized part): the accumulators in
float64 (integer products and sums below 2**53 are exact there), the fixed-point multiplier in int64 through
the `tflite_requantize` helper model.py carries (REQUANTIZE_HELPER)."""

from __future__ import annotations

import numpy as np

from tf_convert.convert import fixed_point

from .contract import TABLE, Ctx, Lowered, assign, lit

REQUANTIZE_HELPER = '''
def tflite_requantize(x: torch.Tensor, left: torch.Tensor, multiplier: torch.Tensor, right: torch.Tensor,
                      mask: torch.Tensor, offset: int, zero_point: int, low: int, high: int) -> torch.Tensor:
    """TFLite's MultiplyByQuantizedMultiplier in int64: (x + offset) * left, SaturatingRoundingDoublingHighMul
    by `multiplier` (C's division, toward zero), RoundingDivideByPOT by 2**right (mask = 2**right - 1; ties
    away from zero), then the zero point and the clamp."""
    a = (x.long() + offset) * left * multiplier
    a = torch.div(a + torch.where(a >= 0, 1 << 30, 1 - (1 << 30)), 1 << 31, rounding_mode="trunc")
    threshold = (mask >> 1) + (a < 0).long()
    a = (a >> right) + ((a & mask) > threshold).long()
    return torch.clamp(a + zero_point, low, high)
'''


def _per_channel(values: np.ndarray, axis: int, rank: int) -> np.ndarray:
    values = np.asarray(values, np.int64).reshape(-1)
    if values.size == 1:
        return values.reshape(())
    return values.reshape((-1,) + (1,) * (rank - 1 - axis % rank))


def _single_rounding(ctx: Ctx, axis: int, rank: int) -> Lowered:
    """requantize rounding once: ((x + offset) * 2**pre_shift * m + 2**(30 - s)) >> (31 - s) in int64."""
    a = ctx.attrs
    right = 31 - np.asarray(ctx.params["shift"], np.int64)
    buffers = {"multiplier": np.asarray(ctx.params["multiplier"], np.int64), "right": right,
               "rounding": np.left_shift(np.int64(1), right - 1)}
    names = {k: ctx.aux(k) for k in buffers}
    x = f"({ctx.args[0]}.long() + {int(a.get('offset', 0))}) * {1 << int(a.get('pre_shift', 0))}"
    y = f"(({x} * self.{names['multiplier']} + self.{names['rounding']}) >> self.{names['right']})"
    line = (f"{ctx.var} = torch.clamp({y} + {int(a.get('zero_point', 0))}, {int(a['min'])}, {int(a['max'])})"
            f".to(torch.{a['dtype']})")
    return Lowered(buffers=[(names[k], _per_channel(v, axis, rank)) for k, v in buffers.items()], lines=[line])


@TABLE.register("requantize")
def requantize(ctx: Ctx) -> Lowered:
    a, rank = ctx.attrs, len(ctx.in_shapes[0])
    axis = int(a.get("axis", 1))
    if a.get("rounding", "double") == "single":
        return _single_rounding(ctx, axis, rank)
    shift = np.asarray(ctx.params["shift"], np.int64)
    left = np.left_shift(np.int64(1), np.maximum(shift, 0) + int(a.get("pre_shift", 0)))
    right = np.maximum(-shift, 0)
    buffers = {"left": left, "multiplier": ctx.params["multiplier"], "right": right,
               "mask": np.left_shift(np.int64(1), right) - 1}
    names = {k: ctx.aux(k) for k in buffers}
    call = (f"tflite_requantize({ctx.args[0]}, self.{names['left']}, self.{names['multiplier']}, "
            f"self.{names['right']}, self.{names['mask']}, {int(a.get('offset', 0))}, "
            f"{int(a.get('zero_point', 0))}, {int(a['min'])}, {int(a['max'])})")
    return Lowered(buffers=[(names[k], _per_channel(v, axis, rank)) for k, v in buffers.items()],
                   lines=[f"{ctx.var} = {call}.to(torch.{a['dtype']})"])


@TABLE.register("quantize")
def quantize(ctx: Ctx) -> Lowered:
    """x / scale in float64, rounded half away from zero (exactly: the fraction is |q| - floor(|q|)), clamped."""
    a, v = ctx.attrs, ctx.var
    info = np.iinfo(str(a["dtype"]))
    zero = int(a["zero_point"])
    return Lowered(lines=[
        f"{v} = {ctx.args[0]}.double() / {lit(np.float64(np.float32(a['scale'])))}",
        f"{v} = torch.sign({v}) * ({v}.abs().floor() + ({v}.abs() - {v}.abs().floor() >= 0.5).double())",
        f"{v} = (torch.clamp({v}, {info.min - zero}, {info.max - zero}).long() + {zero}).to(torch.{a['dtype']})",
    ])


@TABLE.register("dequantize")
@assign
def dequantize(ctx: Ctx) -> str:
    a = ctx.attrs
    return f"({lit(np.float64(np.float32(a['scale'])))} * ({ctx.args[0]}.double() - {int(a['zero_point'])})).float()"


def _padded(x: str, edges) -> str:
    t, b, left, r = (int(e) for e in edges)
    return f"nn.functional.pad({x}, [{left}, {r}, {t}, {b}])" if any((t, b, left, r)) else x


@TABLE.register("integer_conv2d")
def integer_conv2d(ctx: Ctx) -> Lowered:
    a = ctx.attrs
    weight = ctx.params["weight"].astype(np.int32) - int(a.get("weight_zero_point", 0))
    buffers = [(ctx.var, weight)]
    bias = ""
    if "bias" in ctx.params:
        buffers.append((ctx.aux("bias"), ctx.params["bias"].astype(np.int32)))
        bias = f", self.{ctx.aux('bias')}.double()"
    x = _padded(f"({ctx.args[0]}.double() - {int(a['input_zero_point'])})", a["edges"])
    conv = (f"nn.functional.conv2d({x}, self.{ctx.var}.double(){bias}, stride={list(a['stride'])}, "
            f"dilation={list(a['dilation'])}, groups={int(a['groups'])})")
    return Lowered(buffers=buffers, lines=[f"{ctx.var} = {conv}.to(torch.int32)  # exact: integers below 2**53"])


@TABLE.register("integer_linear")
def integer_linear(ctx: Ctx) -> Lowered:
    a = ctx.attrs
    weight = ctx.params["weight"].astype(np.int32) - int(a.get("weight_zero_point", 0))
    buffers = [(ctx.var, weight)]
    bias = ""
    if "bias" in ctx.params:
        buffers.append((ctx.aux("bias"), ctx.params["bias"].astype(np.int32).reshape(-1)))
        bias = f", self.{ctx.aux('bias')}.double()"
    x = f"{ctx.args[0]}.double() - {int(a['input_zero_point'])}"
    return Lowered(buffers=buffers, lines=[f"{ctx.var} = nn.functional.linear({x}, self.{ctx.var}.double(){bias})"
                                           f".to(torch.int32)"])


@TABLE.register("integer_avg_pool2d")
def integer_avg_pool2d(ctx: Ctx) -> Lowered:
    """The window sums in float64 (exact), TFLite's rounding division by the real elements in int64."""
    a = ctx.attrs
    t, b, left, r = (int(e) for e in a["edges"])
    _, _, h, w = ctx.in_shapes[0]
    real = np.pad(np.ones((h, w)), ((t, b), (left, r)))
    (kh, kw), (sh, sw) = a["kernel"], a["stride"]
    oh, ow = ctx.out_shape[2:]
    count = np.array([[real[i * sh:i * sh + kh, j * sw:j * sw + kw].sum() for j in range(ow)] for i in range(oh)],
                     np.int64)
    v, n = ctx.var, ctx.aux("count")
    x = _padded(f"{ctx.args[0]}.double()", a["edges"])
    return Lowered(buffers=[(n, count)], lines=[
        f"{v} = nn.functional.avg_pool2d({x}, {list(a['kernel'])}, {list(a['stride'])}, divisor_override=1).long()",
        f"{v} = torch.div(torch.where({v} > 0, {v} + self.{n} // 2, {v} - self.{n} // 2), self.{n}, "
        f"rounding_mode=\"trunc\")",
        f"{v} = torch.clamp({v}, {int(a['min'])}, {int(a['max'])}).to({ctx.args[0]}.dtype)",
    ])


@TABLE.register("lookup")
def lookup(ctx: Ctx) -> Lowered:
    low = int(ctx.attrs["low"])
    index = f"{ctx.args[0]}.long() - {low}" if low else f"{ctx.args[0]}.long()"
    return Lowered(buffers=[(ctx.var, np.asarray(ctx.params["table"]))], lines=[f"{ctx.var} = self.{ctx.var}[{index}]"])


SOFTMAX_HELPER = '''
def tflite_high_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """gemmlowp's SaturatingRoundingDoublingHighMul of int32 values held in int64 (never both -2**31 here)."""
    ab = a * b
    return torch.div(ab + torch.where(ab >= 0, 1 << 30, 1 - (1 << 30)), 1 << 31, rounding_mode="trunc")


def tflite_softmax(x: torch.Tensor, exp: torch.Tensor, rescaled: torch.Tensor, powers: torch.Tensor, axis: int,
                   low: int, high: int) -> torch.Tensor:
    """TFLite's 8-bit softmax (its reference kernel): exp[d] of d = max - x (Q0.31), the sum of the rescaled exps,
    its reciprocal as gemmlowp's one_over_one_plus_x computes it (three Newton-Raphson steps in Q2.29), each exp
    times it, divided by 2**(35 - leading zeros of the sum) rounding half up (every value is >= 0), plus low."""
    d = x.long().amax(axis, keepdim=True) - x.long()
    e = exp[d]
    total = rescaled[d].sum(axis, keepdim=True)
    zeros = 32 - (total.unsqueeze(-1) >= powers[:32]).long().sum(-1)
    half = total * powers[zeros - 1]  # RoundingHalfSum(sum * 2**zeros - 2**31, 2**31 - 1): exact, zeros >= 1
    r = 1515870810 + tflite_high_mul(half, torch.full_like(half, -1010580540))
    for _ in range(3):
        error = (1 << 29) - tflite_high_mul(half, r)
        r = r + torch.clamp(tflite_high_mul(r, error) * 4, -(1 << 31), (1 << 31) - 1)
    r = torch.clamp(r * 2, -(1 << 31), (1 << 31) - 1)
    shift = 35 - zeros
    y = torch.div(tflite_high_mul(r, e) + powers[shift - 1], powers[shift], rounding_mode="floor")
    return torch.clamp(y + low, low, high)
'''
HELPERS = {"tflite_requantize(": REQUANTIZE_HELPER, "tflite_softmax(": SOFTMAX_HELPER}


@TABLE.register("integer_softmax")
def integer_softmax(ctx: Ctx) -> Lowered:
    a = ctx.attrs
    exp = np.asarray(ctx.params["exp"], np.int64)
    buffers = {"exp": exp, "rescaled": fixed_point.divide_by_pot(exp, 12),
               "powers": np.left_shift(np.int64(1), np.arange(36, dtype=np.int64))}
    names = {k: ctx.aux(k) for k in buffers}
    call = (f"tflite_softmax({ctx.args[0]}, self.{names['exp']}, self.{names['rescaled']}, self.{names['powers']}, "
            f"{int(a['axis']) % len(ctx.in_shapes[0])}, {int(a['min'])}, {int(a['max'])})")
    return Lowered(buffers=[(names[k], v) for k, v in buffers.items()],
                   lines=[f"{ctx.var} = {call}.to(torch.{a['dtype']})"])
