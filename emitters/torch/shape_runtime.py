"""The PyTorch handlers of the shape ops whose sizes follow run-time values (convert.ir.runtime_dims): the model
reads the parameter tensor (a shape, multiples, paddings, bounds, a depth) as Python ints while it runs. Written
so that torch.jit.script takes them (`[int(v) for v in t]`, not `t.tolist()`); torch.export cannot follow a size
that depends on data."""

from __future__ import annotations

from .contract import TABLE, Ctx, Lowered, assign, lit


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
def pad_by(ctx: Ctx) -> Lowered:
    if ctx.attrs.get("mode", "constant") != "constant":
        return _mirror_by(ctx)
    return Lowered(lines=[f"{ctx.var} = {_constant_pad_by(ctx)}"])


def _mirror_by(ctx: Ctx) -> Lowered:
    """TF's MirrorPad by run-time paddings: per axis, the source position of each output position gathered
    (TF allows at most size - 1 (reflect) or size (symmetric) on a side: one reflection is enough)."""
    x, pads = ctx.args
    at, out = ctx.aux("i"), Lowered()
    cur = x
    for axis in range(len(ctx.in_shapes[0])):
        n = f"{cur}.shape[{axis}]"
        out.lines.append(f"{at} = torch.arange(-int({pads}[{axis}, 0]), {n} + int({pads}[{axis}, 1]))")
        if ctx.attrs["mode"] == "reflect":
            source = f"({n} - 1) - (({n} - 1) - {at}.abs()).abs()"
        else:
            source = f"torch.where({at} < 0, -1 - {at}, torch.where({at} >= {n}, 2 * {n} - 1 - {at}, {at}))"
        out.lines.append(f"{ctx.var} = {cur}.index_select({axis}, {source})")
        cur = ctx.var
    if cur == x:  # a scalar: nothing to pad
        out.lines.append(f"{ctx.var} = {x}")
    return out


def _constant_pad_by(ctx: Ctx) -> str:
    # F.pad takes (before, after) pairs from the last axis back
    value = float(ctx.attrs.get("value", 0.0))
    dtype = ctx.graph.tensors[ctx.node.inputs[0]].dtype
    fill = lit(int(value) if dtype.startswith(("int", "uint")) else value)
    return f"torch.nn.functional.pad({ctx.args[0]}, {_ints(ctx.args[1] + '.flip(0).reshape(-1)')}, value={fill})"


@TABLE.register("slice_to")
def slice_to(ctx: Ctx) -> Lowered:
    x, starts, ends = ctx.args
    rank = len(ctx.in_shapes[0])
    steps = list(ctx.attrs.get("steps") or [1] * rank)
    if not rank:
        return Lowered(lines=[f"{ctx.var} = {x}"])
    # Python's slice rules are TF's: negative bounds count from the end, both are clamped; torch slices
    # forward only, so a backward axis gathers its positions (below)
    forward = ", ".join(f"int({starts}[{a}]):int({ends}[{a}])" + (f":{s}" if s != 1 else "") if s > 0 else ":"
                        for a, s in enumerate(steps))
    out = Lowered(lines=[f"{ctx.var} = {x}[{forward}]"])
    lo, hi = ctx.aux("lo"), ctx.aux("hi")
    for a, s in enumerate(steps):
        if s > 0:
            continue
        n = f"{ctx.var}.shape[{a}]"
        # TF's (and Python's) backward bounds: counted from the end when negative, clamped to [-1, n - 1]
        out.lines += [f"{lo} = int({starts}[{a}])", f"{hi} = int({ends}[{a}])",
                      f"{lo} = min(max({lo} + {n} if {lo} < 0 else {lo}, -1), {n} - 1)",
                      f"{hi} = min(max({hi} + {n} if {hi} < 0 else {hi}, -1), {n} - 1)",
                      f"{ctx.var} = {ctx.var}.index_select({a}, {lo} - {-s} * torch.arange(max(0, ({lo} - {hi} + "
                      f"{-s - 1}) // {-s})))"]
    return out


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
