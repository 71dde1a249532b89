"""The PyTorch handlers of the elementwise family: unary and binary arithmetic, activations, clip, identity."""

from __future__ import annotations

from typing import Callable

from ..base import NodeContext
from .contract import TABLE, Ctx, Lowered, assign, call, lit


@TABLE.register("identity")
@assign
def identity(ctx: Ctx) -> str:
    return ctx.args[0]


@TABLE.register("clip")
@assign
def clip(ctx: Ctx) -> str:
    lo, hi = ctx.attrs.get("min"), ctx.attrs.get("max")
    lo = None if lo is None or float(lo) == float("-inf") else lit(lo)
    hi = None if hi is None or float(hi) == float("inf") else lit(hi)
    return call("torch.clamp", ctx.args[0], min=lo, max=hi)


@TABLE.register("leaky_relu")
@assign
def leaky_relu(ctx: Ctx) -> str:
    return f"torch.nn.functional.leaky_relu({ctx.args[0]}, {lit(ctx.attrs['alpha'])})"


@TABLE.register("elu")
@assign
def elu(ctx: Ctx) -> str:
    alpha = float(ctx.attrs.get("alpha", 1.0))
    return call("torch.nn.functional.elu", ctx.args[0], alpha=None if alpha == 1.0 else lit(alpha))


@TABLE.register("hard_sigmoid")
@assign
def hard_sigmoid(ctx: Ctx) -> str:
    alpha, beta = float(ctx.attrs["alpha"]), float(ctx.attrs["beta"])
    if abs(alpha - 1 / 6) < 1e-7 and beta == 0.5:
        return f"torch.nn.functional.hardsigmoid({ctx.args[0]})"  # relu6(x + 3) / 6, as Keras 3
    return f"torch.clamp({ctx.args[0]} * {lit(alpha)} + {lit(beta)}, 0.0, 1.0)"


def gelu_limits(ctx: NodeContext) -> str | None:
    approximate = str(ctx.attrs.get("approximate", "none"))
    return None if approximate in ("none", "tanh") else f"gelu approximate={approximate!r}"


@TABLE.register("gelu", limit=gelu_limits)
@assign
def gelu(ctx: Ctx) -> str:
    approximate = str(ctx.attrs.get("approximate", "none"))
    approximate = None if approximate == "none" else repr(approximate)
    return call("torch.nn.functional.gelu", ctx.args[0], approximate=approximate)


# ---- one template per op torch has natively; the dtype-dependent ones (integer division) get a handler -----

# IR op -> torch expression of the inputs {x}, {a} {b}, or {c} {a} {b}
TEMPLATES = {
    "add": "{a} + {b}", "sub": "{a} - {b}", "mul": "{a} * {b}", "div": "{a} / {b}",
    "maximum": "torch.maximum({a}, {b})", "minimum": "torch.minimum({a}, {b})",
    "relu": "torch.relu({x})", "sigmoid": "torch.sigmoid({x})", "tanh": "torch.tanh({x})",
    "swish": "torch.nn.functional.silu({x})", "hard_swish": "torch.nn.functional.hardswish({x})",
    "exp": "torch.exp({x})", "sqrt": "torch.sqrt({x})", "rsqrt": "torch.rsqrt({x})", "square": "{x} * {x}",
    "neg": "-{x}", "abs": "torch.abs({x})",
    "softplus": "torch.nn.functional.softplus({x})",
    "softsign": "torch.nn.functional.softsign({x})",
    "selu": "torch.selu({x})",
    "erf": "torch.erf({x})", "erfc": "torch.erfc({x})",
    "floor": "torch.floor({x})", "ceil": "torch.ceil({x})",
    "round": "torch.round({x})",  # half to even, as TF
    "sign": "torch.sign({x})",
    "log": "torch.log({x})", "log1p": "torch.log1p({x})", "expm1": "torch.expm1({x})",
    "reciprocal": "torch.reciprocal({x})",
    "sin": "torch.sin({x})", "cos": "torch.cos({x})", "tan": "torch.tan({x})",
    "asin": "torch.asin({x})", "acos": "torch.acos({x})", "atan": "torch.atan({x})",
    "sinh": "torch.sinh({x})", "cosh": "torch.cosh({x})",
    "asinh": "torch.asinh({x})", "acosh": "torch.acosh({x})", "atanh": "torch.atanh({x})",
    "is_nan": "torch.isnan({x})", "is_inf": "torch.isinf({x})", "is_finite": "torch.isfinite({x})",
    "logical_not": "torch.logical_not({x})",
    "pow": "torch.pow({a}, {b})",
    "floor_mod": "torch.remainder({a}, {b})",  # fmod, then + b where the signs differ: TF's rule
    "truncate_mod": "torch.fmod({a}, {b})",
    "div_no_nan": "torch.where({b} == 0, 0.0, {a} / {b})",
    "atan2": "torch.atan2({a}, {b})",
    "equal": "torch.eq({a}, {b})", "not_equal": "torch.ne({a}, {b})",
    "less": "torch.lt({a}, {b})", "less_equal": "torch.le({a}, {b})",
    "greater": "torch.gt({a}, {b})", "greater_equal": "torch.ge({a}, {b})",
    "logical_and": "torch.logical_and({a}, {b})", "logical_or": "torch.logical_or({a}, {b})",
    "select": "torch.where({c}, {a}, {b})",
}
# the ops written as Python operators, which accept a float literal (`x * 0.5`)
LITERAL_CONSUMERS = frozenset(op for op, tpl in TEMPLATES.items() if tpl.startswith("{a} "))


def ir_dtype(ctx: Ctx, tensor: str | None = None) -> str:
    """The IR dtype of `tensor` (default: the node's output)."""
    return ctx.graph.tensors[tensor or ctx.node.output].dtype


def is_float(ctx: Ctx, tensor: str | None = None) -> bool:
    return ir_dtype(ctx, tensor).startswith("float")


def _any_arity(template: str) -> Callable[[Ctx], Lowered]:
    """A template of {x}, {a} {b}, or {c} {a} {b} (select's condition first)."""
    def handler(ctx: Ctx) -> Lowered:
        names = dict(zip("cab", ctx.args)) if len(ctx.args) == 3 else (
            dict(zip("ab", ctx.args)) if len(ctx.args) == 2 else {"x": ctx.args[0]})
        return Lowered(lines=[f"{ctx.var} = {template.format(**names)}"])

    return handler


for _op, _tpl in TEMPLATES.items():
    TABLE.register(_op)(_any_arity(_tpl))


@TABLE.register("floor_div")
def floor_div(ctx: Ctx) -> Lowered:
    a, b = ctx.args
    # TF floors the rounded float quotient; torch's rounding_mode='floor' corrects it (not TF's numbers)
    expr = f"torch.floor({a} / {b})" if is_float(ctx) else f"torch.div({a}, {b}, rounding_mode='floor')"
    return Lowered(lines=[f"{ctx.var} = {expr}"])


@TABLE.register("truncate_div")
def truncate_div(ctx: Ctx) -> Lowered:
    a, b = ctx.args
    expr = f"torch.trunc({a} / {b})" if is_float(ctx) else f"torch.div({a}, {b}, rounding_mode='trunc')"
    return Lowered(lines=[f"{ctx.var} = {expr}"])


@TABLE.register("cast")
def cast(ctx: Ctx) -> Lowered:
    dtype = str(ctx.attrs["dtype"])
    expr = f"{ctx.args[0]} != 0" if dtype == "bool" else f"{ctx.args[0]}.to(torch.{dtype})"
    return Lowered(lines=[f"{ctx.var} = {expr}"])
