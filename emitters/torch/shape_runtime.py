"""The PyTorch handlers of the shape ops whose sizes follow run-time values (convert.ir.runtime_dims): the model
reads the parameter tensor (a shape, multiples, paddings, bounds, a depth) as Python ints while it runs. Written
so that torch.jit.script takes them (`[int(v) for v in t]`, not `t.tolist()`); torch.export cannot follow a size
that depends on data."""

from __future__ import annotations

from .contract import TABLE, Ctx, assign, lit


def _ints(t: str) -> str:
    """The Python int list of a run-time integer vector."""
    return f"[int(v) for v in {t}]"

_TORCH_INTS = {"int32": "torch.int32", "int64": "torch.int64"}


@TABLE.register("reshape_to")
@assign
def reshape_to(ctx: Ctx) -> str:
    return f"{ctx.args[0]}.reshape({_ints(ctx.args[1])})"


@TABLE.register("broadcast_to")
@assign
def broadcast_to(ctx: Ctx) -> str:
    return f"torch.broadcast_to({ctx.args[0]}, {_ints(ctx.args[1])}).clone()"


@TABLE.register("tile_by")
@assign
def tile_by(ctx: Ctx) -> str:
    return f"{ctx.args[0]}.repeat({_ints(ctx.args[1])})"


@TABLE.register("pad_by")
@assign
def pad_by(ctx: Ctx) -> str:
    # F.pad takes (before, after) pairs from the last axis back
    value = float(ctx.attrs.get("value", 0.0))
    dtype = ctx.graph.tensors[ctx.node.inputs[0]].dtype
    fill = lit(int(value) if dtype.startswith(("int", "uint")) else value)
    return f"torch.nn.functional.pad({ctx.args[0]}, {_ints(ctx.args[1] + '.flip(0).reshape(-1)')}, value={fill})"


@TABLE.register("slice_to")
@assign
def slice_to(ctx: Ctx) -> str:
    x, starts, ends = ctx.args
    rank = len(ctx.in_shapes[0])
    if not rank:
        return x
    # Python's slice rules are TF's for a step of 1: negative bounds count from the end, both are clamped
    return f"{x}[{', '.join(f'int({starts}[{a}]):int({ends}[{a}])' for a in range(rank))}]"


@TABLE.register("one_hot_by")
@assign
def one_hot_by(ctx: Ctx) -> str:
    ids, depth = ctx.args
    axis = int(ctx.attrs["axis"])
    positions = [-1] + [1] * (len(ctx.in_shapes[0]) - axis)
    hit = f"{ids}.unsqueeze({axis}) == torch.arange(int({depth})).reshape({positions})"
    # out-of-range and negative ids match no position: an all-`off` row, as TF's
    return f"torch.where({hit}, {lit(float(ctx.attrs['on']))}, {lit(float(ctx.attrs['off']))})"


@TABLE.register("range")
@assign
def range_(ctx: Ctx) -> str:
    start, limit, delta = ctx.args
    dtype = ctx.graph.tensors[ctx.node.output].dtype
    if dtype in _TORCH_INTS:
        return f"torch.arange(int({start}), int({limit}), int({delta}), dtype={_TORCH_INTS[dtype]})"
    # TF's float Range: the length and start + float(i) * delta in the inputs' type (torch.arange works in
    # double and rounds once, which differs)
    count = f"int(torch.ceil(torch.abs(({limit} - {start}) / {delta})))"
    return f"{start} + torch.arange({count}, dtype={start}.dtype) * {delta}"


@TABLE.register("expand_dims_by")
@assign
def expand_dims_by(ctx: Ctx) -> str:
    return f"{ctx.args[0]}.unsqueeze(int({ctx.args[1]}))"
