"""Full-integer (int8/uint8) operators, converted to TFLite's integer arithmetic bit for bit: int32
accumulators with zero points (integer_conv2d, integer_linear), the fixed-point multiplier and shift of
TFLite's reference kernels (requantize), saturation and fused-activation clamps; QUANTIZE / DEQUANTIZE at
the edges. The multipliers come from the scales as TFLite's Prepare computes them (convert.fixed_point).

An operator reading or writing an integer activation comes here (builder: `integer(op)`); one without a
handler here is refused by name (`refusal`): never a float kernel on integers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tf_convert.convert import fixed_point
from tf_convert.convert.padding import output_hw, tf_pads
from tf_convert.parsers.common.layout import nhwc_reshape

from . import layout, pieces, reduce, shape, spatial
from .elementwise import operand
from .op import Op
from .schema import ACTIVATIONS, Operator, Quantization, Tensor
from .table import QUANTIZED, TABLE

INTEGER_TYPES = {"INT8": "int8", "UINT8": "uint8"}
_LIMITS = {"INT8": (-128, 127), "UINT8": (0, 255)}
_ACCUMULATOR = ("int32", fixed_point.INT32_MIN, fixed_point.INT32_MAX)
_ADD_PRE_SHIFT = 20  # TFLite's ADD/SUB of 8-bit operands: both scaled by 2**20 before their multipliers
_LUT = ("TFLite computes it on 8-bit integers through its own lookup tables / fixed-point exp, which the "
        "converter does not reproduce bit for bit yet")
# integer operators with no exact conversion yet: why (the refusal names them, exit 3)
REASONS = {"LOG_SOFTMAX": _LUT}
_DEFAULT_REASON = "TFLite's integer kernel for it is not reproduced bit for bit yet"


def integer(operator: Operator, tensors: list[Tensor]) -> bool:
    """Whether the operator reads or writes an 8-bit quantized activation (a tensor without constant data)."""
    return any(0 <= i < len(tensors) and tensors[i].type in INTEGER_TYPES and tensors[i].data is None
               for i in [*operator.inputs, *operator.outputs])


def refusal(name: str) -> str:
    return f"on int8/uint8 tensors: {REASONS.get(name, _DEFAULT_REASON)}; exact or refused, never a float kernel"


# ---- what the handlers share ------------------------------------------------------------------------


def _params(op: Op, t: Tensor, what: str) -> Quantization:
    q = t.quantization
    if q is None or q.scale.size == 0:
        raise op.unsupported(f"{what} '{t.name}' is {t.type} without quantization parameters")
    return q


def _single(op: Op, t: Tensor, what: str) -> tuple[float, int]:
    q = _params(op, t, what)
    if q.scale.size != 1:
        raise op.unsupported(f"{what} '{t.name}' has per-channel quantization (only weights may)")
    return float(np.float32(q.scale[0])), int(q.zero_point[0])


def _output(op: Op) -> Tensor:
    t = op.tensors[op.op.outputs[0]]
    if t.type not in INTEGER_TYPES:
        raise op.unsupported(f"an integer operator writing {t.type} '{t.name}' (only int8/uint8 are converted)")
    return t


def _activation_range(op: Op, t: Tensor, name: str) -> tuple[int, int]:
    """CalculateActivationRangeQuantized: the fused activation's bounds in the output's integers (float32
    f / scale, rounded half away from zero)."""
    lo, hi = _LIMITS[t.type]
    scale, zero = _single(op, t, "output")

    def quantized(f: float) -> int:
        return zero + int(fixed_point.round_half_away(np.float32(f) / np.float32(scale)))

    bounds = {"NONE": (lo, hi), "RELU": (max(lo, quantized(0.0)), hi),
              "RELU6": (max(lo, quantized(0.0)), min(hi, quantized(6.0))),
              "RELU_N1_TO_1": (max(lo, quantized(-1.0)), min(hi, quantized(1.0)))}
    if name not in bounds:
        raise op.unsupported(f"fused activation {name} on integers")
    return bounds[name]


def _fused(op: Op) -> str:
    return ACTIVATIONS.get(int(op.options.FusedActivationFunction()), "?") if op.options is not None else "NONE"


def _requantize(op: Op, x: str, multipliers: list[tuple[int, int]], out: tuple[str, int, int], zero_point: int,
                offset: int = 0, pre_shift: int = 0, suffix: str = "", bound: int = 255,
                rounding: str = "double", axis: int = 1) -> str:
    """requantize of x by (significand, shift) per channel (along `axis`) or one, to out = (dtype, min, max), rounding
    twice (MultiplyByQuantizedMultiplier) or once (the fully-connected kernel's). `bound`:
    the largest |x + offset| the operator can reach (None: checked by the caller); TFLite scales it by 2**shift in
    int32, so a bound that could leave int32 there is refused (C's overflow has no exact form)."""
    dtype, lo, hi = out
    m = np.array([s for s, _ in multipliers], np.int64)
    s = np.array([e for _, e in multipliers], np.int64)
    if bound is not None and bound << (pre_shift + max(0, int(s.max()))) > fixed_point.INT32_MAX:
        raise op.unsupported(f"values up to {bound} times 2**{pre_shift + int(s.max())} can leave int32 (TFLite's own "
                             "product would overflow)")
    attrs = {"axis": axis, "offset": offset, "pre_shift": pre_shift, "zero_point": zero_point, "min": lo, "max": hi,
             "dtype": dtype, "rounding": rounding}
    return op.add("requantize", [x], op.shape(x), attrs, {"multiplier": m, "shift": s}, suffix=suffix,
                  out_dtype=dtype)


def _to_output(op: Op, acc: str, multipliers: list[tuple[int, int]], bound: int | None = None,
               rounding: str = "double", axis: int = 1) -> str:
    """An int32 accumulator to the operator's output integers (channels on `axis`), its fused activation clamped."""
    t = _output(op)
    lo, hi = _activation_range(op, t, _fused(op))
    return _requantize(op, acc, multipliers, (INTEGER_TYPES[t.type], lo, hi), _single(op, t, "output")[1],
                       suffix="/requantize", bound=bound, rounding=rounding, axis=axis)


def _check_headroom(op: Op, weight: np.ndarray, zero: int, bias: np.ndarray | None,
                    multipliers: list[tuple[int, int]]) -> None:
    """TFLite multiplies the int32 accumulator by 2**shift in int32 where a channel's shift is positive: refused
    where the largest accumulator the weights allow could leave int32 (C's overflow, no exact form)."""
    per_out = np.abs(weight.reshape(weight.shape[0], -1).astype(np.int64) - zero).sum(axis=1) * 255
    if bias is not None:
        per_out = per_out + np.abs(bias.astype(np.int64))
    for channel, (_, shift) in enumerate(multipliers):
        if shift > 0 and int(per_out[channel % len(per_out)]) << shift > fixed_point.INT32_MAX:
            raise op.unsupported(f"output channel {channel}: the accumulator times 2**{shift} can leave int32 "
                                 "(TFLite's own product would overflow)")


def _weights(op: Op, k: int, what: str) -> tuple[np.ndarray, Quantization]:
    value = op.const(k, what)
    t = op.tensor(k)
    if t.type not in INTEGER_TYPES:
        raise op.unsupported(f"{what} is {t.type}: an integer operator takes int8/uint8 {what}")
    return value, _params(op, t, what)


def _bias(op: Op, k: int) -> np.ndarray | None:
    if not op.has(k):
        return None
    value = op.const(k, "bias")
    if op.tensor(k).type != "INT32":
        raise op.unsupported(f"bias is {op.tensor(k).type}: 8-bit kernels take an int32 bias")
    return value.astype(np.int32).reshape(-1)


def _filter_multipliers(op: Op, filter_q: Quantization, channels: int, float_product: bool) -> list[tuple[int, int]]:
    """Per output channel, input scale * filter scale / output scale as TFLite's Prepare computes it: in float64
    (PopulateConvolutionQuantizationParams), or the scales' float32 product first (the per-tensor
    GetQuantizedConvolutionMultipler)."""
    in_scale, _ = _single(op, op.tensor(0), "input")
    out_scale, _ = _single(op, _output(op), "output")
    scales = np.broadcast_to(filter_q.scale.astype(np.float32).reshape(-1), (channels,))
    found = []
    for s in scales:
        product = np.float64(np.float32(in_scale) * s) if float_product else np.float64(in_scale) * np.float64(s)
        found.append(fixed_point.quantize_multiplier(float(product / np.float64(out_scale))))
    return found


def _weight_zero(op: Op, q: Quantization) -> int:
    zeros = np.unique(q.zero_point)
    if zeros.size > 1:
        raise op.unsupported("per-channel weight zero points")
    return int(zeros[0]) if zeros.size else 0


# ---- edges ------------------------------------------------------------------------------------------


@QUANTIZED.register("QUANTIZE")
def quantize(op: Op) -> list[str]:
    x, t = op.x(), _output(op)
    scale, zero = _single(op, t, "output")
    if op.dtype(x) == "float32":
        dtype = INTEGER_TYPES[t.type]
        return [op.add("quantize", [x], op.shape(x), {"scale": scale, "zero_point": zero, "dtype": dtype},
                       out_dtype=dtype)]
    in_scale, in_zero = _single(op, op.tensor(0), "input")
    multiplier = fixed_point.quantize_multiplier(float(np.float64(in_scale) / np.float64(scale)))
    lo, hi = _LIMITS[t.type]
    return [_requantize(op, x, [multiplier], (INTEGER_TYPES[t.type], lo, hi), zero, offset=-in_zero)]


@QUANTIZED.register("DEQUANTIZE")
def dequantize(op: Op) -> list[str]:
    x = op.x()
    scale, zero = _single(op, op.tensor(0), "input")
    return [op.add("dequantize", [x], op.shape(x), {"scale": scale, "zero_point": zero}, out_dtype="float32")]


# ---- accumulating operators ---------------------------------------------------------------------------


def _conv(op: Op, weight: np.ndarray, filter_q: Quantization, groups: int) -> str:
    """weight OIHW integers: integer_conv2d to int32, then requantize to the output's integers."""
    x = op.x()
    n, _, h, w = op.shape(x)
    kernel = tuple(weight.shape[2:])
    stride = (int(op.options.StrideH()), int(op.options.StrideW()))
    dilation = (int(op.options.DilationHFactor()), int(op.options.DilationWFactor()))
    pads = tf_pads((h, w), kernel, stride, dilation, spatial._padding(op))
    oh, ow = output_hw((h, w), kernel, stride, dilation, pads)
    _, in_zero = _single(op, op.tensor(0), "input")
    weight_zero = _weight_zero(op, filter_q)
    bias = _bias(op, 2)
    attrs = {"kernel": kernel, "stride": stride, "dilation": dilation, "groups": groups, "edges": tuple(pads),
             "input_zero_point": in_zero, "weight_zero_point": weight_zero}
    params = {"weight": weight} if bias is None else {"weight": weight, "bias": bias}
    acc = op.add("integer_conv2d", [x], (n, weight.shape[0], oh, ow), attrs, params, suffix="/accumulate",
                 out_dtype="int32")
    multipliers = _filter_multipliers(op, filter_q, weight.shape[0], op.tensor(0).type == "UINT8")
    _check_headroom(op, weight, weight_zero, bias, multipliers)
    return _to_output(op, acc, multipliers)


@QUANTIZED.register("CONV_2D")
def conv_2d(op: Op) -> list[str]:
    filt, q = _weights(op, 1, "filter")  # (O, H, W, I / groups)
    cin = op.shape()[1]
    if filt.shape[3] == 0 or cin % filt.shape[3]:
        raise op.unsupported(f"filter of {filt.shape[3]} input channels for an input of {cin}")
    return [_conv(op, np.ascontiguousarray(filt.transpose(0, 3, 1, 2)), q, cin // filt.shape[3])]


@QUANTIZED.register("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(op: Op) -> list[str]:
    filt, q = _weights(op, 1, "filter")  # (1, H, W, C * multiplier)
    cin = op.shape()[1]
    if filt.shape[0] != 1 or filt.shape[3] % cin:
        raise op.unsupported(f"depthwise filter {filt.shape} for an input of {cin} channels")
    return [_conv(op, np.ascontiguousarray(filt[0].transpose(2, 0, 1)[:, None]), q, cin)]


@QUANTIZED.register("FULLY_CONNECTED")
def fully_connected(op: Op) -> list[str]:
    if int(op.options.WeightsFormat()) != 0:
        raise op.unsupported("shuffled (non-default) weights format")
    weight, q = _weights(op, 1, "weights")  # (out, in)
    units, depth = weight.shape
    shape = op.source_shape(0)
    x = op.x()
    keep = bool(op.options.KeepNumDims()) and len(shape) == 3 and shape[-1] == depth  # (N, T, F): rank 3 as stored
    if (len(shape) != 2 or shape[-1] != depth) and not keep:
        if op.options.KeepNumDims() or int(np.prod(shape)) % depth:
            raise op.unsupported(f"weights of {depth} inputs for an input of shape {shape} (keep_num_dims="
                                 f"{bool(op.options.KeepNumDims())})")
        x = nhwc_reshape(op, x, (int(np.prod(shape)) // depth, depth))
    _, in_zero = _single(op, op.tensor(0), "input")
    weight_zero = _weight_zero(op, q)
    bias = _bias(op, 2)
    params = {"weight": weight} if bias is None else {"weight": weight, "bias": bias}
    acc = op.add("integer_linear", [x], (*op.shape(x)[:-1], units),
                 {"input_zero_point": in_zero, "weight_zero_point": weight_zero}, params, suffix="/accumulate",
                 out_dtype="int32")
    multipliers = _filter_multipliers(op, q, units, q.scale.size == 1)
    _check_headroom(op, weight, weight_zero, bias, multipliers)
    # TFLite's int8 fully-connected reference kernel rounds once (measured), its conv kernels twice
    return [_to_output(op, acc, multipliers, rounding="single" if op.tensor(0).type == "INT8" else "double",
                       axis=len(op.shape(acc)) - 1)]


# ---- elementwise ----------------------------------------------------------------------------------------


def _operands(op: Op) -> tuple[str, str, tuple[int, ...]]:
    rank = max(len(op.source_shape(k)) for k in (0, 1))
    a, b = operand(op, 0, rank), operand(op, 1, rank)
    return a, b, tuple(np.broadcast_shapes(op.shape(a), op.shape(b)))


@QUANTIZED.register("ADD")
@QUANTIZED.register("SUB")
def add(op: Op) -> list[str]:
    """TFLite's 8-bit ADD / SUB: each operand (x - zero) * 2**20 times its multiplier (scale / (2 * max scale)),
    the int32 sum (difference) times the output multiplier (2 * max scale / (2**20 * output scale)), plus the
    output zero."""
    s1, z1 = _single(op, op.tensor(0), "input")
    s2, z2 = _single(op, op.tensor(1), "input")
    so, _ = _single(op, _output(op), "output")
    twice_max = np.float64(2 * max(np.float32(s1), np.float32(s2)))
    m1 = fixed_point.quantize_multiplier(float(np.float64(s1) / twice_max))
    m2 = fixed_point.quantize_multiplier(float(np.float64(s2) / twice_max))
    mo = fixed_point.quantize_multiplier(float(twice_max / np.float64(np.float32(1 << _ADD_PRE_SHIFT) *
                                                                      np.float32(so))))
    if max(m1[1], m2[1], mo[1]) > 0:  # TFLite's Prepare refuses it too (QuantizeMultiplierSmallerThanOneExp)
        raise op.unsupported(f"scales {s1}, {s2} -> {so} need a multiplier above 1, which TFLite's 8-bit {op.op.name} "
                             "does not take")
    a, b, out = _operands(op)
    a = _requantize(op, a, [m1], _ACCUMULATOR, 0, offset=-z1, pre_shift=_ADD_PRE_SHIFT, suffix="/scaled0")
    b = _requantize(op, b, [m2], _ACCUMULATOR, 0, offset=-z2, pre_shift=_ADD_PRE_SHIFT, suffix="/scaled1")
    total = op.add("sub" if op.op.name == "SUB" else "add", [a, b], out, suffix="/sum", out_dtype="int32")
    return [_to_output(op, total, [mo])]


def _centred(op: Op, x: str, zero: int, k: int) -> str:
    x = op.add("cast", [x], op.shape(x), {"dtype": "int32"}, suffix=f"/int{k}", out_dtype="int32")
    if not zero:
        return x
    z = op.add("const", [], (), params={"value": np.array(zero, np.int32)}, suffix=f"/zero{k}", out_dtype="int32")
    return op.add("sub", [x, z], op.shape(x), suffix=f"/centred{k}", out_dtype="int32")


@QUANTIZED.register("MUL")
def mul(op: Op) -> list[str]:
    """TFLite's 8-bit MUL: (x1 - zero1) * (x2 - zero2) in int32 times s1 * s2 / output scale (float64)."""
    s1, z1 = _single(op, op.tensor(0), "input")
    s2, z2 = _single(op, op.tensor(1), "input")
    so, _ = _single(op, _output(op), "output")
    multiplier = fixed_point.quantize_multiplier(float(np.float64(s1) * np.float64(s2) / np.float64(so)))
    a, b, out = _operands(op)
    product = op.add("mul", [_centred(op, a, z1, 0), _centred(op, b, z2, 1)], out, suffix="/product",
                     out_dtype="int32")
    return [_to_output(op, product, [multiplier], bound=255 * 255)]


@QUANTIZED.register("PRELU")
def prelu(op: Op) -> list[str]:
    """TFLite's 8-bit PRELU: x - zero >= 0 times the input / output scale multiplier, else (x - zero) * (alpha -
    alpha zero) times input scale * alpha scale / output scale (both float32 quotients), plus the output zero."""
    s_in, z_in = _single(op, op.tensor(0), "input")
    s_alpha, z_alpha = _single(op, op.tensor(1), "alpha")
    t = _output(op)
    s_out, z_out = _single(op, t, "output")
    positive = fixed_point.quantize_multiplier(float(np.float32(s_in) / np.float32(s_out)))
    negative = fixed_point.quantize_multiplier(float(np.float32(s_in) * np.float32(s_alpha) / np.float32(s_out)))
    a, b, out = _operands(op)
    if out != op.shape(a):
        raise op.unsupported(f"alpha of shape {op.shape(b)} broadcasting the input {op.shape(a)} to {out}")
    centred = _centred(op, a, z_in, 0)
    product = op.add("mul", [centred, _centred(op, b, z_alpha, 1)], out, suffix="/product", out_dtype="int32")
    limits = (INTEGER_TYPES[t.type], *_LIMITS[t.type])
    scaled = _requantize(op, product, [negative], limits, z_out, suffix="/negative", bound=255 * 255)
    kept = _requantize(op, a, [positive], limits, z_out, offset=-z_in, suffix="/positive")
    zero = op.add("const", [], (), params={"value": np.array(0, np.int32)}, suffix="/zero", out_dtype="int32")
    sign = op.add("greater_equal", [centred, zero], out, suffix="/sign", out_dtype="bool")
    return [op.add("select", [sign, kept, scaled], out, out_dtype=limits[0])]


@QUANTIZED.register("MEAN")
def mean(op: Op) -> list[str]:
    """TFLite's integer MEAN: the int32 sum of the n reduced integers, less n * input zero, times the input /
    output scale multiplier with n folded in (its significand * 2**k // n, k = min(floor(log2 n), 32, 31 + shift),
    the shift less k), plus the output zero, clamped (reference_ops::QuantizedMeanOrSum)."""
    x, t = op.x(), _output(op)
    s_in, z_in = _single(op, op.tensor(0), "input")
    s_out, z_out = _single(op, t, "output")
    source = op.source_shape(0)
    n = int(np.prod([source[int(a) % len(source)] for a in set(op.const(1, "axes").reshape(-1).tolist())]))
    significand, shift = fixed_point.quantize_multiplier(float(np.float64(s_in) / np.float64(s_out)))
    k = min(n.bit_length() - 1, 32, 31 + shift)
    wide = op.add("cast", [x], op.shape(x), {"dtype": "int32"}, suffix="/int32", out_dtype="int32")
    index = op.op.inputs[0]
    op.ir[index] = wide  # the float handler's axis bookkeeping, on the int32 copy
    try:
        [total] = reduce.TABLE.get("SUM")(op)
    finally:
        op.ir[index] = x
    lo, hi = _LIMITS[t.type]
    return [_requantize(op, total, [((significand << k) // n, shift - k)], (INTEGER_TYPES[t.type], lo, hi), z_out,
                        offset=-z_in * n, suffix="/requantize", bound=255 * n)]


# ---- pooling and data movement ----------------------------------------------------------------------------


def _same_quantization(op: Op, inputs: list[int]) -> None:
    """The operator moves integers without rescaling them: TFLite requires (and the converter writes) one scale
    and zero point for its inputs and output; a file that differs would need a rescale the converter does not do."""
    out = _single(op, _output(op), "output")
    for k in inputs:
        if op.tensor(k).type in INTEGER_TYPES and _single(op, op.tensor(k), "input") != out:
            raise op.unsupported(f"input {k}'s scale/zero point {_single(op, op.tensor(k), 'input')} differ from the "
                                 f"output's {out} (a rescaling concatenation/move is not converted)")


def _window(op: Op) -> tuple[str, tuple, tuple, tuple, tuple]:
    x = op.x()
    n, c, h, w = op.shape(x)
    kernel = (int(op.options.FilterHeight()), int(op.options.FilterWidth()))
    stride = (int(op.options.StrideH()), int(op.options.StrideW()))
    pads = tf_pads((h, w), kernel, stride, (1, 1), spatial._padding(op))
    oh, ow = output_hw((h, w), kernel, stride, (1, 1), pads)
    return x, kernel, stride, tuple(pads), (n, c, oh, ow)


@QUANTIZED.register("AVERAGE_POOL_2D")
def average_pool_2d(op: Op) -> list[str]:
    _same_quantization(op, [0])
    x, kernel, stride, pads, out = _window(op)
    lo, hi = _activation_range(op, _output(op), _fused(op))
    return [op.add("integer_avg_pool2d", [x], out, {"kernel": kernel, "stride": stride, "edges": pads,
                                                     "min": lo, "max": hi})]


@QUANTIZED.register("MAX_POOL_2D")
def max_pool_2d(op: Op) -> list[str]:
    """The window's largest integer, clamped: in float32 (every 8-bit integer is one) and back."""
    _same_quantization(op, [0])
    x, kernel, stride, pads, out = _window(op)
    lo, hi = _activation_range(op, _output(op), _fused(op))
    dtype = op.dtype(x)
    wide = op.add("cast", [x], op.shape(x), {"dtype": "float32"}, suffix="/float", out_dtype="float32")
    attrs = {"kernel": kernel, "stride": stride, "pads": pads, "padding": spatial._padding(op)}
    y = op.add("max_pool2d", [wide], out, attrs, suffix="/max")
    y = op.add("clip", [y], out, {"min": float(lo), "max": float(hi)}, suffix="/clamp")
    return [op.add("cast", [y], out, {"dtype": dtype}, out_dtype=dtype)]


@QUANTIZED.register("PAD")
@QUANTIZED.register("PADV2")
def pad(op: Op) -> list[str]:
    """Padded with the output's zero point (PAD) or the given integer (PADV2), the integers unchanged."""
    _same_quantization(op, [0])
    value = int(op.const(2, "pad value").reshape(-1)[0]) if op.has(2) else _single(op, _output(op), "output")[1]
    x = op.x()
    rank = len(op.shape(x))
    paddings = op.const(1, "paddings").astype(np.int64).reshape(rank, 2)
    order = layout.TO_NCHW if rank == 4 else tuple(range(rank))
    pads = tuple((int(paddings[a][0]), int(paddings[a][1])) for a in order)
    out = tuple(d + b + e for d, (b, e) in zip(op.shape(x), pads))
    return [op.add("pad", [x], out, {"pads": pads, "mode": "constant", "value": float(value)})]


@QUANTIZED.register("CONCATENATION")
def concatenation(op: Op) -> list[str]:
    _same_quantization(op, list(range(len(op.op.inputs))))
    if _fused(op) != "NONE":
        raise op.unsupported(f"fused activation {_fused(op)} on an integer concatenation")
    return shape.concatenation(op)


def _moved(handler: Callable[[Op], list[str]], checked: bool = True) -> Callable[[Op], list[str]]:
    """A float handler that only moves elements: exact on integers when the quantization is unchanged."""

    def moved(op: Op) -> list[str]:
        if checked:
            _same_quantization(op, list(range(len(op.op.inputs))))
        return handler(op)

    moved.__name__ = handler.__name__
    return moved


def _in_float(op: Op, handler: Callable[[Op], list[str]]) -> str:
    """A float handler that only picks or compares input elements (nearest resize, depth <-> space, max, min), run
    on float32 copies of the integer inputs (every 8-bit integer is a float32) and cast back: the same integers."""
    _same_quantization(op, list(range(len(op.op.inputs))))
    ints = [i for i in op.op.inputs if i >= 0 and op.tensors[i].type in INTEGER_TYPES]
    constants = {i: op.values[i] for i in ints if i in op.values}  # a clip's bound: its integers as float32 too
    saved = {i: op.ir[i] for i in ints if i not in constants}
    for i, x in saved.items():
        op.ir[i] = op.add("cast", [x], op.shape(x), {"dtype": "float32"}, suffix="/float", out_dtype="float32")
    op.values.update({i: v.astype(np.float32) for i, v in constants.items()})
    try:
        [y] = handler(op)
    finally:
        op.ir.update(saved)
        op.values.update(constants)
    dtype = INTEGER_TYPES[_output(op).type]
    return op.add("cast", [y], op.shape(y), {"dtype": dtype}, suffix="/integer", out_dtype=dtype)


for _name in ("RESIZE_NEAREST_NEIGHBOR", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "MAXIMUM", "MINIMUM", "REDUCE_MAX",
              "REDUCE_MIN"):
    QUANTIZED.register(_name)(lambda op, name=_name: [_in_float(op, TABLE.get(name))])  # (looked up when called)

for _name, _handler in {"RESHAPE": shape.reshape, "SQUEEZE": shape.squeeze, "EXPAND_DIMS": shape.expand_dims,
                        "TRANSPOSE": shape.transpose, "STRIDED_SLICE": shape.strided_slice_activation,
                        "SLICE": pieces.slice_, "TILE": pieces.tile, "PACK": pieces.pack, "UNPACK": pieces.unpack,
                        "SPLIT": pieces.split, "SPLIT_V": pieces.split_v, "GATHER": pieces.gather}.items():
    QUANTIZED.register(_name)(_moved(_handler))
QUANTIZED.register("SHAPE")(_moved(shape.shape_activation, checked=False))
