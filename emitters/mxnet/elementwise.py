"""The MXNet handlers of the elementwise family: unary and binary arithmetic, activations, clip, identity."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tf_convert.emitters.base import NodeContext

from .contract import TABLE, Ctx, Fragment
from .symbol import Ref, symbol_dtype


@TABLE.register("clip")
def clip(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op("clip", ctx.name, ctx.inputs, a_min=float(ctx.attrs["min"]), a_max=float(ctx.attrs["max"]))
    return f


@TABLE.register("leaky_relu")
def leaky_relu(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op("LeakyReLU", ctx.name, ctx.inputs, act_type="leaky", slope=float(ctx.attrs["alpha"]))
    return f


@TABLE.register("elu")
def elu(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op("LeakyReLU", ctx.name, ctx.inputs, act_type="elu", slope=float(ctx.attrs["alpha"]))
    return f


@TABLE.register("hard_sigmoid")
def hard_sigmoid(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op("hard_sigmoid", ctx.name, ctx.inputs, alpha=float(ctx.attrs["alpha"]), beta=float(ctx.attrs["beta"]))
    return f


@TABLE.register("swish")
def swish(ctx: Ctx) -> Fragment:
    f = Fragment()
    s = f.op("Activation", f"{ctx.name}_sigmoid", ctx.inputs, act_type="sigmoid")
    f.op("elemwise_mul", ctx.name, [ctx.inputs[0], s])
    return f


@TABLE.register("hard_swish")
def hard_swish(ctx: Ctx) -> Fragment:
    f, n = Fragment(), ctx.name
    t = f.op("_plus_scalar", f"{n}_plus3", ctx.inputs, scalar=3.0)
    t = f.op("clip", f"{n}_relu6", [t], a_min=0.0, a_max=6.0)
    t = f.op("_div_scalar", f"{n}_div6", [t], scalar=6.0)
    f.op("elemwise_mul", n, [ctx.inputs[0], t])
    return f


@TABLE.register("gelu")
def gelu(ctx: Ctx) -> Fragment:
    f, n, x = Fragment(), ctx.name, ctx.inputs[0]
    if ctx.attrs.get("approximate", "none") in ("none", False, None):
        f.op("LeakyReLU", n, [x], act_type="gelu")  # MXNet's gelu is the erf form
        return f
    # tanh form: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
    cube = f.op("_mul_scalar", f"{n}_cube", [f.op("_power_scalar", f"{n}_pow3", [x], scalar=3.0)], scalar=0.044715)
    total = f.op("elemwise_add", f"{n}_sum", [x, cube])
    inner = f.op("_mul_scalar", f"{n}_inner", [total], scalar=math.sqrt(2 / math.pi))
    t = f.op("_plus_scalar", f"{n}_onep", [f.op("tanh", f"{n}_tanh", [inner])], scalar=1.0)
    half = f.op("_mul_scalar", f"{n}_half", [x], scalar=0.5)
    f.op("elemwise_mul", n, [half, t])
    return f


# ---- one row per op MXNet has natively (NATIVE, BROADCAST), exact compositions for the rest (Round half to
# even, integer floor division, truncated modulus, Atan2, IsInf/IsNan/IsFinite). MXNet 1.x ops compute
# masks as numbers: an IR bool tensor is a 0/1 float32 tensor inside the symbol (symbol.MASK); bool
# graph inputs and outputs are cast at the boundary (__init__.py). Integer tensors stay int32/int64.

# IR op -> (MXNet op, attributes)
NATIVE: dict[str, tuple[str, dict[str, Any]]] = {
    "relu": ("Activation", {"act_type": "relu"}), "sigmoid": ("Activation", {"act_type": "sigmoid"}),
    "tanh": ("Activation", {"act_type": "tanh"}), "exp": ("exp", {}), "sqrt": ("sqrt", {}), "rsqrt": ("rsqrt", {}),
    "square": ("square", {}), "neg": ("negative", {}), "abs": ("abs", {}), "identity": ("_copy", {}),
    "softplus": ("Activation", {"act_type": "softrelu"}),
    "softsign": ("Activation", {"act_type": "softsign"}),
    "selu": ("LeakyReLU", {"act_type": "selu"}),
    "erf": ("erf", {}), "floor": ("floor", {}), "ceil": ("ceil", {}), "sign": ("sign", {}),
    "log": ("log", {}), "log1p": ("log1p", {}), "expm1": ("expm1", {}), "reciprocal": ("reciprocal", {}),
    "sin": ("sin", {}), "cos": ("cos", {}), "tan": ("tan", {}), "asin": ("arcsin", {}), "acos": ("arccos", {}),
    "atan": ("arctan", {}), "sinh": ("sinh", {}), "cosh": ("cosh", {}), "asinh": ("arcsinh", {}),
    "acosh": ("arccosh", {}), "atanh": ("arctanh", {}),
    "logical_not": ("_equal_scalar", {"scalar": 0.0}),  # on a 0/1 mask
}
# IR op -> MXNet broadcasting op; comparisons give 0/1 in the inputs' type
BROADCAST = {
    "add": "broadcast_add", "sub": "broadcast_sub", "mul": "broadcast_mul", "div": "broadcast_div",
    "maximum": "broadcast_maximum", "minimum": "broadcast_minimum",
    "pow": "broadcast_power", "equal": "broadcast_equal", "not_equal": "broadcast_not_equal",
    "less": "broadcast_lesser", "less_equal": "broadcast_lesser_equal", "greater": "broadcast_greater",
    "greater_equal": "broadcast_greater_equal", "logical_and": "broadcast_logical_and",
    "logical_or": "broadcast_logical_or",
}


def held_dtype(ctx: Ctx, tensor: str | None = None) -> str:
    """The dtype `tensor` (default: the node's output) has inside the symbol (symbol.symbol_dtype)."""
    return symbol_dtype(ctx.graph.tensors[tensor or ctx.node.output].dtype)


def _is_float(ctx: Ctx, tensor: str) -> bool:
    return ctx.graph.tensors[tensor].dtype.startswith("float")


@TABLE.register(*NATIVE)
def native(ctx: Ctx) -> Fragment:
    f = Fragment()
    op, attrs = NATIVE[ctx.node.op]
    if ctx.node.op == "relu" and not _is_float(ctx, ctx.node.inputs[0]):  # Activation takes floats only
        op, attrs = "_maximum_scalar", {"scalar": 0.0}
    f.op(op, ctx.name, ctx.inputs, **attrs)
    return f


def _ranked(f: Fragment, ctx: Ctx, full: bool = False) -> list[Ref]:
    """The inputs at the output's rank (numpy aligns trailing axes; MXNet wants equal ranks), or with
    `full` broadcast to the output's shape (for ops that do not broadcast: where)."""
    rank, refs = len(ctx.out_shape), []
    for i, (tensor, ref) in enumerate(zip(ctx.node.inputs, ctx.inputs)):
        shape = ctx.graph.shape(tensor)
        if len(shape) != rank:
            padded = (1,) * (rank - len(shape)) + tuple(shape)
            value = ctx.index.const_value(tensor)
            if value is not None:
                ref = f.var(f"{ctx.name}_in{i}", np.asarray(value).reshape(padded), held_dtype(ctx, tensor))
            else:
                ref = f.op("Reshape", f"{ctx.name}_in{i}", [ref], shape=padded)
            shape = padded
        if full and tuple(shape) != tuple(ctx.out_shape):
            ref = f.op("broadcast_to", f"{ctx.name}_full{i}", [ref], shape=tuple(ctx.out_shape))
        refs.append(ref)
    return refs


def _as(f: Fragment, ctx: Ctx, ref: Ref, dtype: str) -> Ref:
    """`ref` cast to the node's output dtype (as held), named as the node."""
    if dtype == held_dtype(ctx):
        return ref
    return f.op("Cast", ctx.name, [ref], dtype=held_dtype(ctx))


@TABLE.register(*BROADCAST)
def broadcast(ctx: Ctx) -> Fragment:
    f = Fragment()
    ins = _ranked(f, ctx)
    in_dtype = held_dtype(ctx, ctx.node.inputs[0])
    y = f.op(BROADCAST[ctx.node.op], ctx.name if in_dtype == held_dtype(ctx) else f"{ctx.name}_raw", ins)
    _as(f, ctx, y, in_dtype)
    return f


@TABLE.register("round")
def round_half_even(ctx: Ctx) -> Fragment:
    """floor(x) + (frac > 0.5) + (frac == 0.5) * (floor(x) mod 2): x - floor(x) is exact in floats."""
    f, n, x = Fragment(), ctx.name, ctx.inputs[0]
    low = f.op("floor", f"{n}_floor", [x])
    frac = f.op("elemwise_sub", f"{n}_frac", [x, low])
    up = f.op("_greater_scalar", f"{n}_up", [frac], scalar=0.5)
    tie = f.op("_equal_scalar", f"{n}_tie", [frac], scalar=0.5)
    odd = f.op("_mod_scalar", f"{n}_odd", [low], scalar=2.0)
    step = f.op("elemwise_add", f"{n}_step", [up, f.op("elemwise_mul", f"{n}_tie_odd", [tie, odd])])
    f.op("elemwise_add", n, [low, step])
    return f


@TABLE.register("erfc")
def erfc(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op("_rminus_scalar", ctx.name, [f.op("erf", f"{ctx.name}_erf", ctx.inputs)], scalar=1.0)
    return f


@TABLE.register("is_nan")
def is_nan(ctx: Ctx) -> Fragment:
    f, x = Fragment(), ctx.inputs[0]
    f.op("_not_equal", ctx.name, [x, x])
    return f


@TABLE.register("is_finite")
def is_finite(ctx: Ctx) -> Fragment:
    """x - x is 0 for a finite x, nan for nan and inf."""
    f, x = Fragment(), ctx.inputs[0]
    f.op("_equal_scalar", ctx.name, [f.op("elemwise_sub", f"{ctx.name}_diff", [x, x])], scalar=0.0)
    return f


@TABLE.register("is_inf")
def is_inf(ctx: Ctx) -> Fragment:
    f, x = Fragment(), ctx.inputs[0]
    f.op("_equal_scalar", ctx.name, [f.op("abs", f"{ctx.name}_abs", [x])], scalar=math.inf)
    return f


@TABLE.register("floor_mod")
def floor_mod(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op("broadcast_mod", ctx.name, _ranked(f, ctx))  # MXNet's mod takes the divisor's sign, as TF's
    return f


@TABLE.register("floor_div")
def floor_div(ctx: Ctx) -> Fragment:
    f, n = Fragment(), ctx.name
    a, b = _ranked(f, ctx)
    if _is_float(ctx, ctx.node.inputs[0]):
        f.op("floor", n, [f.op("broadcast_div", f"{n}_quotient", [a, b])])
    else:  # a - floormod(a, b) is a multiple of b: the division is exact
        rest = f.op("broadcast_sub", f"{n}_multiple", [a, f.op("broadcast_mod", f"{n}_mod", [a, b])])
        f.op("broadcast_div", n, [rest, b])
    return f


def _integer_only(ctx: NodeContext) -> str | None:
    dtype = ctx.graph.tensors[ctx.node.inputs[0]].dtype
    return None if not dtype.startswith("float") else "truncating division of floats (TF defines it for integers)"


@TABLE.register("truncate_div", limit=_integer_only)
def truncate_div(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op("broadcast_div", ctx.name, _ranked(f, ctx))  # integer division rounds toward zero
    return f


@TABLE.register("truncate_mod")
def truncate_mod(ctx: Ctx) -> Fragment:
    """MXNet has the floor modulus m only: the remainder with a's sign is m - b where m != 0 and the
    signs of a and b differ."""
    f, n = Fragment(), ctx.name
    a, b = _ranked(f, ctx, full=True)
    m = f.op("broadcast_mod", f"{n}_floor_mod", [a, b])
    differ = f.op("_not_equal", f"{n}_differ", [f.op("_lesser_scalar", f"{n}_a_neg", [a], scalar=0.0),
                                                f.op("_lesser_scalar", f"{n}_b_neg", [b], scalar=0.0)])
    nonzero = f.op("_not_equal_scalar", f"{n}_nonzero", [m], scalar=0.0)
    fix = f.op("elemwise_mul", f"{n}_fix", [differ, nonzero])
    f.op("where", n, [fix, f.op("elemwise_sub", f"{n}_shifted", [m, b]), m])
    return f


@TABLE.register("div_no_nan")
def div_no_nan(ctx: Ctx) -> Fragment:
    f, n = Fragment(), ctx.name
    a, b = _ranked(f, ctx, full=True)
    zero = f.op("_equal_scalar", f"{n}_zero", [b], scalar=0.0)
    q = f.op("elemwise_div", f"{n}_quotient", [a, b])
    f.op("where", n, [zero, f.op("zeros_like", f"{n}_zeros", [q]), q])
    return f


@TABLE.register("atan2")
def atan2(ctx: Ctx) -> Fragment:
    """atan(y / x), plus pi (with y's sign) where x < 0; +-pi/2 where x == 0 (0 where both are)."""
    f, n = Fragment(), ctx.name
    y, x = _ranked(f, ctx, full=True)
    base = f.op("arctan", f"{n}_atan", [f.op("elemwise_div", f"{n}_ratio", [y, x])])
    y_sign = f.op("sign", f"{n}_y_sign", [y])
    y_neg = f.op("_lesser_scalar", f"{n}_y_neg", [y], scalar=0.0)
    signed_pi = f.op("_plus_scalar", f"{n}_signed_pi", [f.op("_mul_scalar", f"{n}_m2pi", [y_neg], scalar=-2 * math.pi)],
                     scalar=math.pi)
    left = f.op("elemwise_add", f"{n}_left", [base, signed_pi])
    vertical = f.op("_mul_scalar", f"{n}_vertical", [y_sign], scalar=math.pi / 2)
    on_axis = f.op("where", f"{n}_on_axis", [f.op("_equal_scalar", f"{n}_x_zero", [x], scalar=0.0), vertical, base])
    f.op("where", n, [f.op("_lesser_scalar", f"{n}_x_neg", [x], scalar=0.0), left, on_axis])
    return f


@TABLE.register("select")
def select(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op("where", ctx.name, _ranked(f, ctx, full=True))  # the condition is a 0/1 mask
    return f


@TABLE.register("cast")
def cast(ctx: Ctx) -> Fragment:
    f, n, x = Fragment(), ctx.name, ctx.inputs[0]
    if ctx.attrs["dtype"] == "bool":  # x != 0, as a mask
        same_type = held_dtype(ctx, ctx.node.inputs[0]) == held_dtype(ctx)
        nonzero = f.op("_not_equal_scalar", n if same_type else f"{n}_nonzero",
                       [x], scalar=0.0)
        _as(f, ctx, nonzero, held_dtype(ctx, ctx.node.inputs[0]))
    else:
        f.op("Cast", n, [x], dtype=held_dtype(ctx))
    return f
