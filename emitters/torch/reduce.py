"""The PyTorch handlers of the reduce family: reductions, argmax and softmax."""

from __future__ import annotations

from typing import Callable

import numpy as np

from .contract import TABLE, Ctx, Lowered, assign, ints, lit
from .elementwise import ir_dtype, is_float


def _reduce(fn: str) -> Callable[[Ctx], str]:
    def expr(ctx: Ctx) -> str:
        rank = len(ctx.in_shapes[0])
        axes = ints(sorted(int(a) % rank for a in ctx.attrs["axes"]))
        keep = ", keepdim=True" if ctx.attrs.get("keepdims", False) else ""
        return f"torch.{fn}({ctx.args[0]}, {axes}{keep})"

    expr.__name__ = fn
    return expr


@TABLE.register("reduce_mean")
def reduce_mean(ctx: Ctx) -> Lowered:
    """torch.mean; of integers (torch has none) TF's: the sum (in int64) divided by the count, truncated."""
    if is_float(ctx):
        return Lowered(lines=[f"{ctx.var} = {_reduce('mean')(ctx)}"])
    rank = len(ctx.in_shapes[0])
    axes = sorted(int(a) % rank for a in ctx.attrs["axes"])
    count = 1
    for a in axes:
        count *= int(ctx.in_shapes[0][a])
    keep = ", keepdim=True" if ctx.attrs.get("keepdims") else ""
    total = f"torch.sum({ctx.args[0]}, {ints(axes)}{keep}, dtype=torch.int64)"
    mean = f"torch.div({total}, {count}, rounding_mode=\"trunc\")"
    return Lowered(lines=[f"{ctx.var} = {mean}.to(torch.{ir_dtype(ctx)})"])


def _empty_extreme(ctx: Ctx) -> str | None:
    """TF's max (min) over no elements, where a reduced axis is empty (torch.amax/amin raise): the dtype's
    lowest (highest) value, filled to the output's static shape; None where nothing reduced is empty."""
    rank = len(ctx.in_shapes[0])
    axes = [int(a) % rank for a in ctx.attrs["axes"]]
    if all(ctx.in_shapes[0][a] != 0 for a in axes) or -1 in ctx.out_shape:
        return None
    dtype = ir_dtype(ctx)
    info = np.finfo(dtype) if is_float(ctx) else np.iinfo(dtype)
    low = ctx.node.op == "reduce_max"
    value = (float("-inf") if low else float("inf")) if is_float(ctx) else int(info.min if low else info.max)
    return f"torch.full({ints(ctx.out_shape)}, {lit(value)}, dtype=torch.{dtype})"


@TABLE.register("reduce_max")
@assign
def reduce_max(ctx: Ctx) -> str:
    return _empty_extreme(ctx) or _reduce("amax")(ctx)


@TABLE.register("softmax")
@assign
def softmax(ctx: Ctx) -> str:
    return f"torch.softmax({ctx.args[0]}, {int(ctx.attrs['axis']) % len(ctx.in_shapes[0])})"


@TABLE.register("argmax")
def argmax(ctx: Ctx) -> Lowered:
    axis = int(ctx.attrs["axis"]) % len(ctx.in_shapes[0])
    keep = ", keepdim=True" if ctx.attrs.get("keepdims") else ""
    to = "" if ir_dtype(ctx) == "int64" else f".to(torch.{ir_dtype(ctx)})"  # TF's output_type
    return Lowered(lines=[f"{ctx.var} = torch.argmax({ctx.args[0]}, {axis}{keep}){to}"])


# ---- sum/prod/min/all/any, argmin, cumsum/cumprod (exclusive, reverse), top-k, log-softmax --
# Integer reductions keep the IR's type (torch sums integers into int64).

def _axes(ctx: Ctx) -> list[int]:
    rank = len(ctx.in_shapes[0])
    return sorted(int(a) % rank for a in ctx.attrs["axes"])


@TABLE.register("reduce_sum", "reduce_min", "reduce_all", "reduce_any")
def reduce_many_axes(ctx: Ctx) -> Lowered:
    fn = {"reduce_sum": "sum", "reduce_min": "amin", "reduce_all": "all", "reduce_any": "any"}[ctx.node.op]
    empty = _empty_extreme(ctx) if fn == "amin" else None
    if empty:
        return Lowered(lines=[f"{ctx.var} = {empty}"])
    keep = ", keepdim=True" if ctx.attrs.get("keepdims") else ""
    # torch sums integers into int64: keep the IR's type
    dtype = f", dtype=torch.{ir_dtype(ctx)}" if fn == "sum" and not is_float(ctx) else ""
    return Lowered(lines=[f"{ctx.var} = torch.{fn}({ctx.args[0]}, {ints(_axes(ctx))}{keep}{dtype})"])


@TABLE.register("reduce_prod")
def reduce_prod(ctx: Ctx) -> Lowered:
    """torch.prod takes one axis: one call per axis, the last axis first so the others keep their index."""
    keep = ", keepdim=True" if ctx.attrs.get("keepdims") else ""
    dtype = "" if is_float(ctx) else f", dtype=torch.{ir_dtype(ctx)}"
    expr = ctx.args[0]
    for axis in reversed(_axes(ctx)):
        expr = f"torch.prod({expr}, {axis}{keep}{dtype})"
    return Lowered(lines=[f"{ctx.var} = {expr}"])


@TABLE.register("argmin")
def argmin(ctx: Ctx) -> Lowered:
    axis = int(ctx.attrs["axis"]) % len(ctx.in_shapes[0])
    keep = ", keepdim=True" if ctx.attrs.get("keepdims") else ""
    to = "" if ir_dtype(ctx) == "int64" else f".to(torch.{ir_dtype(ctx)})"
    return Lowered(lines=[f"{ctx.var} = torch.argmin({ctx.args[0]}, {axis}{keep}){to}"])


@TABLE.register("cumsum", "cumprod")
def cumulative(ctx: Ctx) -> Lowered:
    axis = int(ctx.attrs["axis"]) % len(ctx.in_shapes[0])
    n, v, x = ctx.in_shapes[0][axis], ctx.var, ctx.args[0]
    fn, first = ("cumsum", "zeros_like") if ctx.node.op == "cumsum" else ("cumprod", "ones_like")
    dtype = "" if is_float(ctx) else f", dtype=torch.{ir_dtype(ctx)}"
    reverse = bool(ctx.attrs.get("reverse"))
    source = f"{x}.flip({axis})" if reverse else x
    lines = [f"{v} = torch.{fn}({source}, {axis}{dtype})"]
    if ctx.attrs.get("exclusive"):  # shift by one along the axis; the first is the identity
        head, body = f"torch.{first}({v}.narrow({axis}, 0, 1))", f"{v}.narrow({axis}, 0, {n - 1})"
        lines.append(f"{v} = torch.cat([{head}, {body}], {axis})")
    if reverse:
        lines.append(f"{v} = {v}.flip({axis})")
    return Lowered(lines=lines)


@TABLE.register("top_k_values", "top_k_indices")
def top_k(ctx: Ctx) -> Lowered:
    # a stable sort, not torch.topk: TF gives the lower index first among equal values, topk does not promise it
    part = ".values" if ctx.node.op == "top_k_values" else ".indices.to(torch.int32)"
    k = int(ctx.attrs["k"])
    ordered = f"torch.sort({ctx.args[0]}, dim=-1, descending=True, stable=True)"
    return Lowered(lines=[f"{ctx.var} = {ordered}{part}[..., :{k}]"])


@TABLE.register("log_softmax")
@assign
def log_softmax(ctx: Ctx) -> str:
    return f"torch.log_softmax({ctx.args[0]}, {int(ctx.attrs['axis']) % len(ctx.in_shapes[0])})"
