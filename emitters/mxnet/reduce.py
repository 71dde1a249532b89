"""The MXNet handlers of the reduce family: reductions, argmax and softmax."""

from __future__ import annotations

from tf_convert.emitters.base import NodeContext

from .contract import TABLE, Ctx, Fragment
from .elementwise import held_dtype
from .symbol import Ref


def _reduce(ctx: Ctx, kind: str) -> Fragment:
    f, shape = Fragment(), ctx.in_shape()
    axes = tuple(sorted(int(ax) % len(shape) for ax in ctx.attrs["axes"]))
    keep = bool(ctx.attrs.get("keepdims", False))
    if len(shape) == 4 and axes == (2, 3):
        # global pooling: the idiomatic (and oneDNN-accelerated) MXNet spelling
        name = ctx.name if keep else f"{ctx.name}_pool"
        y = f.op("Pooling", name, ctx.inputs, pool_type=kind, kernel=(1, 1), global_pool=True)
        if not keep:
            f.op("Reshape", ctx.name, [y], shape=tuple(ctx.out_shape))
        return f
    f.op("mean" if kind == "avg" else "max", ctx.name, ctx.inputs, axis=axes, keepdims=keep)
    return f


@TABLE.register("reduce_mean")
def reduce_mean(ctx: Ctx) -> Fragment:
    """mean; of integers TF's: the sum in int64 (no wrap) divided by the count, truncated toward zero (MXNet's
    integer division), cast back."""
    if ctx.graph.tensors[ctx.node.output].dtype.startswith("float"):
        return _reduce(ctx, "avg")
    f, n, shape = Fragment(), ctx.name, ctx.in_shape()
    axes = tuple(sorted(int(ax) % len(shape) for ax in ctx.attrs["axes"]))
    count = 1
    for axis in axes:
        count *= int(shape[axis])
    wide = f.op("Cast", f"{n}_int64", ctx.inputs, dtype="int64")
    total = f.op("sum", f"{n}_sum", [wide], axis=axes, keepdims=bool(ctx.attrs.get("keepdims", False)))
    mean = f.op("_div_scalar", f"{n}_mean", [total], scalar=float(count))
    f.op("Cast", n, [mean], dtype=held_dtype(ctx))
    return f


@TABLE.register("reduce_max")
def reduce_max(ctx: Ctx) -> Fragment:
    return _reduce(ctx, "max")


@TABLE.register("softmax")
def softmax(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op("softmax", ctx.name, ctx.inputs, axis=ctx.attrs["axis"] % len(ctx.out_shape))
    return f


@TABLE.register("argmax")
def argmax(ctx: Ctx) -> Fragment:
    f, n = Fragment(), ctx.name  # MXNet gives the index in the input's type: cast to TF's output_type
    y = f.op("argmax", f"{n}_index", ctx.inputs, axis=int(ctx.attrs["axis"]) % len(ctx.in_shape()),
             keepdims=bool(ctx.attrs.get("keepdims")))
    f.op("Cast", n, [y], dtype=held_dtype(ctx))
    return f


# ---- sum/prod/min/all/any (min/max on masks), argmin, cumsum, cumprod (a running product),
# log-softmax, top-k ------------------------------------------------------------------------------------------

def _axes(ctx: Ctx) -> tuple[int, ...]:
    rank = len(ctx.in_shape())
    return tuple(sorted(int(a) % rank for a in ctx.attrs["axes"]))


# on masks: all = min, any = max
REDUCE = {"reduce_sum": "sum", "reduce_prod": "prod", "reduce_min": "min", "reduce_all": "min", "reduce_any": "max"}


@TABLE.register(*REDUCE)
def reduce_axes(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op(REDUCE[ctx.node.op], ctx.name, ctx.inputs, axis=_axes(ctx), keepdims=bool(ctx.attrs.get("keepdims")))
    return f


@TABLE.register("argmin")
def argmin(ctx: Ctx) -> Fragment:
    f, n = Fragment(), ctx.name  # MXNet gives the index in the input's type: cast it
    y = f.op("argmin", f"{n}_index", ctx.inputs, axis=int(ctx.attrs["axis"]) % len(ctx.in_shape()),
             keepdims=bool(ctx.attrs.get("keepdims")))
    f.op("Cast", n, [y], dtype=held_dtype(ctx))
    return f


def _steps(f: Fragment, ctx: Ctx) -> tuple[int, list[Ref]]:
    axis = int(ctx.attrs["axis"]) % len(ctx.in_shape())
    n = ctx.in_shape()[axis]
    return axis, [f.op("slice_axis", f"{ctx.name}_step{i}", ctx.inputs, axis=axis, begin=i, end=i + 1)
                  for i in range(n)]


@TABLE.register("cumsum")
def cumsum(ctx: Ctx) -> Fragment:
    f, n, x = Fragment(), ctx.name, ctx.inputs[0]
    axis = int(ctx.attrs["axis"]) % len(ctx.in_shape())
    size, reverse = ctx.in_shape()[axis], bool(ctx.attrs.get("reverse"))
    if reverse:
        x = f.op("reverse", f"{n}_flip", [x], axis=axis)
    y = f.op("cumsum", f"{n}_sum", [x], axis=axis)
    if ctx.attrs.get("exclusive"):  # shift by one along the axis; the first is 0
        first = f.op("zeros_like", f"{n}_first", [f.op("slice_axis", f"{n}_head", [y], axis=axis, begin=0, end=1)])
        body = f.op("slice_axis", f"{n}_body", [y], axis=axis, begin=0, end=size - 1)
        y = f.op("Concat", f"{n}_shift", [first, body],
                 dim=axis, num_args=2)
    if reverse:
        y = f.op("reverse", f"{n}_back", [y], axis=axis)
    f.op("_copy", n, [y])
    return f


MAX_CUMPROD_STEPS = 256


def _cumprod_limit(ctx: NodeContext) -> str | None:
    n = ctx.graph.shape(ctx.node.inputs[0])[int(ctx.attrs["axis"])]
    return None if n <= MAX_CUMPROD_STEPS else f"cumprod over {n} > {MAX_CUMPROD_STEPS} steps (MXNet has no cumprod)"


@TABLE.register("cumprod", limit=_cumprod_limit)
def cumprod(ctx: Ctx) -> Fragment:
    """MXNet has no cumprod: one multiplication per step along the axis, in TF's order."""
    f, n = Fragment(), ctx.name
    axis, steps = _steps(f, ctx)
    if ctx.attrs.get("reverse"):
        steps.reverse()
    if ctx.attrs.get("exclusive"):
        steps = [f.op("ones_like", f"{n}_one", [steps[0]])] + steps[:-1]
    running, acc = [], None
    for i, step in enumerate(steps):
        acc = step if acc is None else f.op("elemwise_mul", f"{n}_running{i}", [acc, step])
        running.append(acc)
    if ctx.attrs.get("reverse"):
        running.reverse()
    f.op("Concat", n, running, dim=axis, num_args=len(running))
    return f


@TABLE.register("log_softmax")
def log_softmax(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op("log_softmax", ctx.name, ctx.inputs, axis=int(ctx.attrs["axis"]) % len(ctx.out_shape))
    return f


@TABLE.register("top_k_values", "top_k_indices")
def top_k(ctx: Ctx) -> Fragment:
    f = Fragment()
    if ctx.node.op == "top_k_values":
        f.op("topk", ctx.name, ctx.inputs, axis=-1, k=int(ctx.attrs["k"]), ret_typ="value", is_ascend=False)
    else:
        f.op("topk", ctx.name, ctx.inputs, axis=-1, k=int(ctx.attrs["k"]), ret_typ="indices", is_ascend=False,
             dtype=held_dtype(ctx))
    return f
