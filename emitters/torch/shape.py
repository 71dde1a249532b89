"""The PyTorch handlers of the shape family: reshape, transpose, concat, slice, depth/space moves and constants."""

from __future__ import annotations

import numpy as np

from tf_convert.convert.ir.lazy import is_lazy
from tf_convert.convert.padding.sizes import kept_prefix, unit_axis_moves

from .contract import TABLE, Ctx, Lowered, assign, ints, lit
from .elementwise import LITERAL_CONSUMERS


@TABLE.register("const")
def const(ctx: Ctx) -> Lowered:
    value = ctx.params["value"]
    value = value if is_lazy(value) else np.asarray(value)
    consumers = ctx.index.readers(ctx.node.output)
    is_output = ctx.node.output in ctx.graph.outputs
    if value.ndim == 0 and np.isfinite(value) and consumers and not is_output and all(
        c.op in LITERAL_CONSUMERS for c in consumers
    ):
        return Lowered(expr=lit(value.item()))  # a scalar reads better inline: `x * 0.5`
    return Lowered(buffers=[(ctx.var, value)], expr=f"self.{ctx.var}")


@TABLE.register("reshape")
@assign
def reshape(ctx: Ctx) -> str:
    src, dst = ctx.in_shapes[0], tuple(int(d) for d in ctx.attrs["shape"])
    moves = unit_axis_moves(src, dst)
    fed = ctx.free_axes.get(ctx.node.inputs[0]) if ctx.dynamic else None
    if fed and moves:
        return _unit_axes(ctx.args[0], *moves)  # a 1-D layer's (N, C, L) <-> (N, C, 1, L): L stays free
    if fed:  # size_flow let it through: it keeps the free axes and reshapes only the axes after them
        return _kept_prefix(ctx.args[0], src, dst, kept_prefix(src, dst))
    # keep the batch axis free when the reshape leaves it alone, so other batch sizes work
    if src and dst and src[0] == dst[0] and len(dst) == 2 and len(src) > 2:
        return f"torch.flatten({ctx.args[0]}, 1)"
    if src and dst and src[0] == dst[0]:
        return f"{ctx.args[0]}.reshape({', '.join(['-1', *map(str, dst[1:])])})"
    if not dst:  # a scalar: reshape() needs the empty shape spelled out
        return f"{ctx.args[0]}.reshape(())"
    return f"{ctx.args[0]}.reshape({', '.join(map(str, dst))})"


def _kept_prefix(x: str, src: tuple[int, ...], dst: tuple[int, ...], kept: int) -> str:
    """Split or merge the axes after the first `kept` (MultiHeadAttention's heads) by name, not by size."""
    if len(src) == kept + 1:
        return f"{x}.unflatten({kept}, {ints(dst[kept:])})"
    flat = f"{x}.flatten({kept})"
    return flat if len(dst) == kept + 1 else f"{flat}.unflatten({kept}, {ints(dst[kept:])})"


def _unit_axes(x: str, removed: tuple[int, ...], inserted: tuple[int, ...]) -> str:
    """squeeze/unsqueeze: the axes that follow the runtime size keep it (a reshape would bake it)."""
    for axis in reversed(removed):
        x = f"{x}.squeeze({axis})"
    for axis in inserted:
        x = f"{x}.unsqueeze({axis})"
    return x


@TABLE.register("transpose")
@assign
def transpose(ctx: Ctx) -> str:
    return f"{ctx.args[0]}.permute({', '.join(str(int(p)) for p in ctx.attrs['perm'])})"


@TABLE.register("concat")
@assign
def concat(ctx: Ctx) -> str:
    axis = int(ctx.attrs["axis"]) % len(ctx.out_shape)
    return f"torch.cat([{', '.join(ctx.args)}], {axis})"


@TABLE.register("slice")
@assign
def slice_(ctx: Ctx) -> str:
    shape = ctx.in_shapes[0]
    parts = []
    for n, b, e in zip(shape, ctx.attrs["begin"], ctx.attrs["end"]):
        b, e = int(b), min(int(e), n)
        parts.append(":" if (b, e) == (0, n) else f"{b}:{e}")
    while parts and parts[-1] == ":":
        parts.pop()
    return f"{ctx.args[0]}[{', '.join(parts)}]" if parts else ctx.args[0]


@TABLE.register("depth_to_space")
def depth_to_space(ctx: Ctx) -> Lowered:
    b = int(ctx.attrs["block_size"])
    n, c, h, w = ctx.out_shape
    x, v = ctx.args[0], ctx.var  # TF's DCR channel order (pixel_shuffle is CRD)
    return Lowered(lines=[
        f"{v} = {x}.reshape(-1, {b}, {b}, {c}, {h // b}, {w // b}).permute(0, 3, 4, 1, 5, 2)",
        f"{v} = {v}.reshape(-1, {c}, {h}, {w})",
    ])


@TABLE.register("space_to_depth")
def space_to_depth(ctx: Ctx) -> Lowered:
    b = int(ctx.attrs["block_size"])
    n, c, h, w = ctx.in_shapes[0]
    x, v = ctx.args[0], ctx.var
    return Lowered(lines=[
        f"{v} = {x}.reshape(-1, {c}, {h // b}, {b}, {w // b}, {b}).permute(0, 3, 5, 1, 2, 4)",
        f"{v} = {v}.reshape(-1, {c * b * b}, {h // b}, {w // b})",
    ])
