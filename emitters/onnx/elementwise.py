"""The ONNX handlers of the elementwise family: unary and binary arithmetic, activations, clip, identity."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from tf_convert.emitters.base import NodeContext

from .contract import TABLE, Builder, Ctx, Emitted, Handler


@TABLE.register("clip")
def clip(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    lo, hi = node.attrs.get("min"), node.attrs.get("max")
    inputs = [b.x(), "" if lo is None else b.const("min", float(lo)), "" if hi is None else b.const("max", float(hi))]
    while inputs[-1] == "":
        inputs.pop()
    b.op("Clip", inputs, b.out)
    return b.done()


@TABLE.register("leaky_relu")
def leaky_relu(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    b.op("LeakyRelu", [b.x()], b.out, alpha=float(node.attrs["alpha"]))
    return b.done()


@TABLE.register("elu")
def elu(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    b.op("Elu", [b.x()], b.out, alpha=float(node.attrs.get("alpha", 1.0)))
    return b.done()


@TABLE.register("hard_sigmoid")
def hard_sigmoid(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    b.op("HardSigmoid", [b.x()], b.out, alpha=float(node.attrs["alpha"]), beta=float(node.attrs["beta"]))
    return b.done()


def logistic(b: Builder, x: str, out: str | None = None) -> str:
    """1 / (1 + exp(-x)): onnxruntime's Sigmoid kernel approximates (2e-4 relative at x = -10, 0 from -18 on,
    where TF gives 1.5e-8), so a small score (a presence flag) comes out wrong; its Exp is float32-exact."""
    dtype = b.ctx.dtype(b.ctx.node.output)  # x's (an input's name may be one the emitter gave it)
    one = b.const("one", np.ones((), dtype), dtype)
    return b.op("Reciprocal", [b.op("Add", [b.op("Exp", [b.op("Neg", [x])]), one])], out)


@TABLE.register("sigmoid")
def sigmoid(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    logistic(b, b.x(), b.out)
    return b.done()


@TABLE.register("swish")
def swish(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    b.op("Mul", [b.x(), logistic(b, b.x())], b.out)
    return b.done()


@TABLE.register("hard_swish")
def hard_swish(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    if ctx.opset >= 14:
        b.op("HardSwish", [b.x()], b.out)
    else:  # x * relu6(x + 3) / 6 == x * clip(x / 6 + 0.5, 0, 1)
        b.op("Mul", [b.x(), b.op("HardSigmoid", [b.x()], alpha=1.0 / 6.0, beta=0.5)], b.out)
    return b.done()


def gelu_limits(ctx: NodeContext) -> str | None:
    node = ctx.node
    approximate = node.attrs.get("approximate", "none")
    return None if approximate in ("none", "tanh") else f"gelu approximate={approximate!r}"


@TABLE.register("gelu", limit=gelu_limits)
def gelu(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    approximate = node.attrs.get("approximate", "none")
    if ctx.opset >= 20:
        b.op("Gelu", [b.x()], b.out, approximate=approximate)
        return b.done()
    x = b.x()
    if approximate == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = b.op("Mul", [b.op("Mul", [x, x]), x])
        inner = b.op("Add", [x, b.op("Mul", [cube, b.const("c", 0.044715)])])
        t = b.op("Tanh", [b.op("Mul", [inner, b.const("k", math.sqrt(2.0 / math.pi))])])
    else:  # 0.5 x (1 + erf(x / sqrt(2)))
        t = b.op("Erf", [b.op("Mul", [x, b.const("inv_sqrt2", 1.0 / math.sqrt(2.0))])])
    one_plus = b.op("Add", [t, b.const("one", 1.0)])
    b.op("Mul", [b.op("Mul", [x, b.const("half", 0.5)]), one_plus], b.out)
    return b.done()


@TABLE.register("rsqrt")
def rsqrt(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    b.op("Reciprocal", [b.op("Sqrt", [b.x()])], b.out)
    return b.done()


@TABLE.register("square")
def square(ctx: Ctx) -> Emitted:
    node = ctx.node
    b = Builder(ctx, node)
    b.op("Mul", [b.x(), b.x()], b.out)
    return b.done()


# ---- one row per op ONNX has natively; exact compositions for the rest from ONNX's own ops: FloorMod on
# floats (Mod fmod=1, then + b where the signs differ), floor division, Atan2 (Atan of the quotient plus the
# quadrant), DivNoNan.

# IR op -> (ONNX op, number of inputs, fixed attributes)
NATIVE: dict[str, tuple[str, int, dict[str, Any]]] = {
    "add": ("Add", 2, {}), "sub": ("Sub", 2, {}), "mul": ("Mul", 2, {}), "div": ("Div", 2, {}),
    "maximum": ("Max", 2, {}), "minimum": ("Min", 2, {}),
    "tanh": ("Tanh", 1, {}), "exp": ("Exp", 1, {}),
    "sqrt": ("Sqrt", 1, {}), "neg": ("Neg", 1, {}), "abs": ("Abs", 1, {}), "identity": ("Identity", 1, {}),
    "softplus": ("Softplus", 1, {}), "softsign": ("Softsign", 1, {}),
    "selu": ("Selu", 1, {"alpha": 1.6732632423543772, "gamma": 1.0507009873554805}),
    "erf": ("Erf", 1, {}), "floor": ("Floor", 1, {}), "ceil": ("Ceil", 1, {}),
    "round": ("Round", 1, {}),  # half to even, as TF
    "sign": ("Sign", 1, {}), "log": ("Log", 1, {}), "reciprocal": ("Reciprocal", 1, {}),
    "sin": ("Sin", 1, {}), "cos": ("Cos", 1, {}), "tan": ("Tan", 1, {}), "asin": ("Asin", 1, {}),
    "acos": ("Acos", 1, {}), "atan": ("Atan", 1, {}), "sinh": ("Sinh", 1, {}), "cosh": ("Cosh", 1, {}),
    "asinh": ("Asinh", 1, {}), "acosh": ("Acosh", 1, {}), "atanh": ("Atanh", 1, {}),
    "is_nan": ("IsNaN", 1, {}), "is_inf": ("IsInf", 1, {}), "logical_not": ("Not", 1, {}),
    "pow": ("Pow", 2, {}), "truncate_mod": ("Mod", 2, {"fmod": 1}),
    "equal": ("Equal", 2, {}), "less": ("Less", 2, {}), "less_equal": ("LessOrEqual", 2, {}),
    "greater": ("Greater", 2, {}), "greater_equal": ("GreaterOrEqual", 2, {}),
    "logical_and": ("And", 2, {}), "logical_or": ("Or", 2, {}),
}


def _native(op_type: str, n_inputs: int, attrs: dict[str, Any]) -> Handler:
    def handler(ctx: Ctx) -> Emitted:
        b = Builder(ctx, ctx.node)
        if op_type in ("Max", "Min") and ctx.dtype(ctx.node.output) == np.int16:
            _in_int32(b, op_type, [b.x(i) for i in range(n_inputs)])
            return b.done()
        b.op(op_type, [b.x(i) for i in range(n_inputs)], b.out, **attrs)
        return b.done()

    return handler


for _ir, (_onnx, _n, _attrs) in NATIVE.items():
    TABLE.register(_ir)(_native(_onnx, _n, _attrs))


def _in_int32(b: Builder, op_type: str, inputs: list[str]) -> None:
    """`op_type` of int16 inputs through int32 (onnxruntime has no int16 Max, Min or Relu): exact, the result
    is one of the inputs or 0."""
    from onnx import TensorProto

    wide = [b.op("Cast", [x], to=TensorProto.INT32) for x in inputs]
    b.op("Cast", [b.op(op_type, wide)], b.out, to=TensorProto.INT16)


@TABLE.register("relu")
def relu(ctx: Ctx) -> Emitted:
    """Relu; of an int64 (or int16) tensor Max(x, 0): onnxruntime's Relu kernels are float, int8 and int32."""
    b = Builder(ctx, ctx.node)
    if ctx.dtype(ctx.node.output).kind == "f" or ctx.dtype(ctx.node.output) in (np.int8, np.int32):
        b.op("Relu", [b.x()], b.out)
    elif ctx.dtype(ctx.node.output) == np.int16:
        _in_int32(b, "Relu", [b.x()])
    else:
        b.op("Max", [b.x(), const_zero(b, ctx.node.inputs[0])], b.out)
    return b.done()


@TABLE.register("select")
def select(ctx: Ctx) -> Emitted:
    """Where; between two masks (onnxruntime has no bool Where) (c and x) or (not c and y)."""
    b = Builder(ctx, ctx.node)
    c, x, y = (b.x(i) for i in range(3))
    if ctx.dtype(ctx.node.output) != np.bool_:
        b.op("Where", [c, x, y], b.out)
    else:
        b.op("Or", [b.op("And", [c, x]), b.op("And", [b.op("Not", [c]), y])], b.out)
    return b.done()


def _is_float(ctx: Ctx, tensor: str) -> bool:
    return ctx.dtype(tensor).kind == "f"


def const_one(b: Builder, like: str) -> str:
    return b.const("one", np.ones((), b.ctx.dtype(like)), b.ctx.dtype(like))


def const_zero(b: Builder, like: str) -> str:
    return b.const("zero", np.zeros((), b.ctx.dtype(like)), b.ctx.dtype(like))


def _composed(build: Callable[[Builder, list[str]], None]) -> Handler:
    def handler(ctx: Ctx) -> Emitted:
        b = Builder(ctx, ctx.node)
        build(b, [b.x(i) for i in range(len(ctx.node.inputs))])
        return b.done()

    handler.__name__ = build.__name__
    return handler


@TABLE.register("erfc")
@_composed
def erfc(b: Builder, x: list[str]) -> None:
    b.op("Sub", [const_one(b, b.node.inputs[0]), b.op("Erf", x)], b.out)


@TABLE.register("log1p")
@_composed
def log1p(b: Builder, x: list[str]) -> None:
    b.op("Log", [b.op("Add", [x[0], const_one(b, b.node.inputs[0])])], b.out)


@TABLE.register("expm1")
@_composed
def expm1(b: Builder, x: list[str]) -> None:
    b.op("Sub", [b.op("Exp", x), const_one(b, b.node.inputs[0])], b.out)


@TABLE.register("is_finite")
@_composed
def is_finite(b: Builder, x: list[str]) -> None:
    b.op("Not", [b.op("Or", [b.op("IsNaN", x), b.op("IsInf", x)])], b.out)


@TABLE.register("not_equal")
@_composed
def not_equal(b: Builder, x: list[str]) -> None:
    b.op("Not", [b.op("Equal", x)], b.out)


@TABLE.register("floor_mod")
@_composed
def floor_mod(b: Builder, x: list[str]) -> None:
    a, d = x
    if not _is_float(b.ctx, b.node.inputs[0]):
        b.op("Mod", [a, d], b.out, fmod=0)  # integer Mod is the floor modulus
        return
    m = b.op("Mod", [a, d], fmod=1)
    zero = const_zero(b, b.node.inputs[0])
    differ = b.op("Xor", [b.op("Less", [d, zero]), b.op("Less", [m, zero])])
    fix = b.op("And", [b.op("Not", [b.op("Equal", [m, zero])]), differ])
    b.op("Where", [fix, b.op("Add", [m, d]), m], b.out)


@TABLE.register("floor_div")
@_composed
def floor_div(b: Builder, x: list[str]) -> None:
    a, d = x
    if _is_float(b.ctx, b.node.inputs[0]):
        b.op("Floor", [b.op("Div", [a, d])], b.out)
    else:  # a - floormod(a, d) is a multiple of d: the division is exact
        b.op("Div", [b.op("Sub", [a, b.op("Mod", [a, d], fmod=0)]), d], b.out)


def _integer_only(ctx: NodeContext) -> str | None:
    dtype = ctx.graph.tensors[ctx.node.inputs[0]].dtype
    return None if not dtype.startswith("float") else "truncating division of floats (TF defines it for integers)"


@TABLE.register("truncate_div", limit=_integer_only)
@_composed
def truncate_div(b: Builder, x: list[str]) -> None:
    b.op("Div", x, b.out)  # integer Div rounds toward zero


@TABLE.register("div_no_nan")
@_composed
def div_no_nan(b: Builder, x: list[str]) -> None:
    a, d = x
    zero = const_zero(b, b.node.inputs[1])
    b.op("Where", [b.op("Equal", [d, zero]), zero, b.op("Div", [a, d])], b.out)


@TABLE.register("atan2")
@_composed
def atan2(b: Builder, x: list[str]) -> None:
    """atan(y / x), plus pi (sign of y) where x < 0; +-pi/2 where x == 0 (0 where both are)."""
    y, d = x
    dtype = b.ctx.dtype(b.node.inputs[0])
    zero = const_zero(b, b.node.inputs[0])
    pi = b.const("pi", np.asarray(math.pi, dtype), dtype)
    half_pi = b.const("half_pi", np.asarray(math.pi / 2, dtype), dtype)
    base = b.op("Atan", [b.op("Div", [y, d])])
    y_negative = b.op("Less", [y, zero])
    signed_pi = b.op("Where", [y_negative, b.op("Neg", [pi]), pi])
    left = b.op("Add", [base, signed_pi])
    vertical = b.op("Mul", [b.op("Sign", [y]), half_pi])
    on_axis = b.op("Where", [b.op("Equal", [d, zero]), vertical, base])
    b.op("Where", [b.op("Less", [d, zero]), left, on_axis], b.out)


@TABLE.register("cast")
def cast(ctx: Ctx) -> Emitted:
    from onnx import helper

    b = Builder(ctx, ctx.node)
    b.op("Cast", [b.x()], b.out, to=helper.np_dtype_to_tensor_dtype(np.dtype(str(ctx.attrs["dtype"]))))
    return b.done()
