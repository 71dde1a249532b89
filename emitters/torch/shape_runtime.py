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
_TORCH_TYPES = {**_TORCH_INTS, "float32": "torch.float32"}


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


# model.py's TF Unique (codegen adds it where a node calls it): torch.unique sorts, TF keeps the order of first
# occurrence, rebuilt from where each sorted value first occurs
UNIQUE_HELPER = '''
def tf_unique(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """TensorFlow's Unique along `dim`: the distinct slices in the order of their first occurrence, the
    position of each slice of x among them, and how many slices of x each one is."""
    values, inverse, counts = torch.unique(x, sorted=True, return_inverse=True, return_counts=True, dim=dim)
    n = x.shape[dim]
    first = torch.full([values.shape[dim]], n, dtype=torch.int64).scatter_reduce(0, inverse, torch.arange(n), "amin")
    order = torch.argsort(first)  # the sorted values, by first occurrence
    return values.index_select(dim, order), torch.argsort(order)[inverse], counts[order]
'''
_UNIQUE_OUTPUTS = {"values": 0, "indices": 1, "counts": 2}


@TABLE.register("unique")
@assign
def unique(ctx: Ctx) -> str:
    axis = int(ctx.attrs["axis"]) % max(len(ctx.in_shapes[0]), 1)
    output = ctx.attrs["output"]
    found = f"tf_unique({ctx.args[0]}, {axis})[{_UNIQUE_OUTPUTS[output]}]"
    return found if output == "values" else f"{found}.to({_TORCH_INTS[ctx.attrs.get('index_dtype', 'int32')]})"


@TABLE.register("bincount_by")
def bincount_by(ctx: Ctx) -> Lowered:
    """An equality mask of the values against each of the run-time number of bins; its terms (ones or the
    weights) summed over the values one after the other, as TF's kernel adds them (a running sum from a zero
    row put in front: its last row)."""
    v, (x, size, *weights) = ctx.var, ctx.args
    dtype = _TORCH_TYPES[ctx.attrs["dtype"]]
    lines = [f"{v}_hits = {x}.unsqueeze(-1) == torch.arange(int({size}), dtype={x}.dtype)"]
    if ctx.attrs.get("binary_output"):
        return Lowered(lines=lines + [f"{v} = {v}_hits.any(-2).to({dtype})"])
    terms = (f"torch.where({v}_hits, {weights[0]}.unsqueeze(-1).to({dtype}), torch.zeros((), dtype={dtype}))"
             if weights else f"{v}_hits.to({dtype})")
    lines.append(f"{v} = torch.nn.functional.pad({terms}, [0, 0, 1, 0]).cumsum(-2, dtype={dtype})[..., -1, :]")
    return Lowered(lines=lines)


@TABLE.register("ragged_range")
def ragged_range(ctx: Ctx) -> Lowered:
    """Each row's length as TF's kernel counts it, their running sum the row splits; each value's row (repeated
    by the lengths) and its place in the row give start + place * delta."""
    v, (starts, limits, deltas) = ctx.var, ctx.args
    lines = [f"{v}_span = ({limits} - {starts}).abs()",
             f"{v}_away = (({deltas} > 0) & ({limits} < {starts})) | (({deltas} < 0) & ({limits} > {starts}))",
             f"{v}_lengths = torch.where({v}_away, torch.zeros_like({v}_span), "
             f"torch.div({v}_span + {deltas}.abs() - 1, {deltas}.abs(), rounding_mode='floor')).long()",
             f"{v}_splits = torch.nn.functional.pad({v}_lengths.cumsum(0), [1, 0])"]
    if ctx.attrs["output"] == "row_splits":
        return Lowered(lines=lines + [f"{v} = {v}_splits.to({_TORCH_INTS[ctx.attrs.get('splits_dtype', 'int64')]})"])
    lines += [f"{v}_rows = torch.repeat_interleave(torch.arange({v}_lengths.shape[0]), {v}_lengths)",
              f"{v}_place = (torch.arange({v}_rows.shape[0]) - {v}_splits[{v}_rows]).to({starts}.dtype)",
              f"{v} = {starts}[{v}_rows] + {v}_place * {deltas}[{v}_rows]"]
    return Lowered(lines=lines)


@TABLE.register("ctc_greedy_decoder")
def ctc_greedy_decoder(ctx: Ctx) -> Lowered:
    """Each step's best class (torch.max: the first on ties) where the step is within its sequence; the kept
    ones (not blank, not a repeat) listed batch by batch; the log probability summed in step order."""
    v, (logits, lengths) = ctx.var, ctx.args
    steps, _, classes = (int(d) for d in ctx.in_shapes[0])
    blank = int(ctx.attrs["blank"]) % classes
    output = ctx.attrs["output"]
    lines = [f"{v}_best, {v}_class = {logits}.max(-1)",  # (T, B)
             f"{v}_live = torch.arange({steps}).unsqueeze(1) < {lengths}.unsqueeze(0)"]
    if output == "log_probability":
        terms = f"torch.where({v}_live, -{v}_best, torch.zeros_like({v}_best))"
        return Lowered(lines=lines + [f"{v} = torch.nn.functional.pad({terms}, [0, 0, 1, 0]).cumsum(0)[-1:].t()"])
    lines.append(f"{v}_keep = {v}_live & ({v}_class != {blank})")
    if ctx.attrs["merge_repeated"]:
        lines.append(f"{v}_keep = {v}_keep & torch.cat([torch.ones_like({v}_keep[:1]), "
                     f"{v}_class[1:] != {v}_class[:-1]])")
    lines.append(f"{v}_keep = {v}_keep.t()")  # (B, T): batch by batch
    if output == "values":
        return Lowered(lines=lines + [f"{v} = {v}_class.t()[{v}_keep]"])
    lines.append(f"{v}_place = {v}_keep.long().cumsum(1)")
    if output == "shape":
        return Lowered(lines=lines + [f"{v} = torch.stack([torch.tensor({ctx.in_shapes[0][1]}), "
                                      f"{v}_place[:, -1:].max() if {steps} else torch.tensor(0)])"])
    return Lowered(lines=lines + [f"{v} = torch.stack([{v}_keep.nonzero()[:, 0], {v}_place[{v}_keep] - 1], 1)"])


@TABLE.register("resize_to")
def resize_to(ctx: Ctx) -> Lowered:
    """TF's resize grid computed while the model runs, in float32 as TF (convert.sampling.rules): per axis the
    source coordinate of each output index, then gathers (nearest) or TF's two lerps, x first (bilinear)."""
    x, size = ctx.args
    mode, coordinate = ctx.attrs["mode"], ctx.attrs["coordinate"]
    out = Lowered()
    taps = {}
    for axis, name in ((2, "rows"), (3, "cols")):
        n, o, src = f"{x}.shape[{axis}]", f"int({size}[{axis - 2}])", ctx.aux(name)
        scale = f"torch.tensor(float({n}), dtype=torch.float32) / float({o})"
        if coordinate == "align_corners":
            scale = (f"(torch.tensor(float({n} - 1), dtype=torch.float32) / float({o} - 1) if {o} > 1 "
                     f"else {scale})")
        dst = f"torch.arange({o}, dtype=torch.float32)"
        if coordinate == "half_pixel":
            dst = f"({dst} + 0.5)"
        shift = " - 0.5" if coordinate == "half_pixel" and mode == "bilinear" else ""
        out.lines.append(f"{src} = {dst} * ({scale}){shift}")
        if mode == "nearest":
            index = f"torch.floor({src})"
            if coordinate == "align_corners":  # TF rounds half away from zero there
                index = f"({index} + ({src} - torch.floor({src}) >= 0.5).float())"
            out.lines.append(f"{src} = {index}.long().clamp(0, {n} - 1)")
            taps[axis] = (src,)
        else:
            floor = ctx.aux("lo" if axis == 2 else "hi")
            out.lines.append(f"{floor} = torch.floor({src})")
            taps[axis] = (f"{floor}.long().clamp(min=0)", f"torch.ceil({src}).long().clamp(max={n} - 1)",
                          f"({src} - {floor}).to({x}.dtype)")
    if mode == "nearest":
        out.lines.append(f"{ctx.var} = {x}.index_select(2, {taps[2][0]}).index_select(3, {taps[3][0]})")
        return out
    (ylo, yhi, wy), (xlo, xhi, wx) = taps[2], taps[3]
    left, right, top = ctx.aux("left"), ctx.aux("right"), ctx.aux("top")
    out.lines += [f"{left} = {x}.index_select(3, {xlo})", f"{right} = {x}.index_select(3, {xhi})",
                  f"{left} = {left} + ({right} - {left}) * {wx}",  # TF lerps along x first, then along y
                  f"{top} = {left}.index_select(2, {ylo})",
                  f"{ctx.var} = {top} + ({left}.index_select(2, {yhi}) - {top}) * {wy}.reshape(-1, 1)"]
    return out
