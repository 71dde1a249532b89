"""The PyTorch handlers of TFLite's integer arithmetic (the nn family's quantized part): the accumulators in
float64 (integer products and sums below 2**53 are exact there), the fixed-point multiplier in int64 through
the `tflite_requantize` helper model.py carries (REQUANTIZE_HELPER)."""

from __future__ import annotations

import numpy as np

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


@TABLE.register("requantize")
def requantize(ctx: Ctx) -> Lowered:
    a, rank = ctx.attrs, len(ctx.in_shapes[0])
    axis = int(a.get("axis", 1))
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
