"""Embeddings and token inputs: gather and one_hot.

Integer tensors stay integer: token ids arrive as int64 (torch's index type)."""

from __future__ import annotations

from .contract import TABLE, Ctx, Lowered


@TABLE.register("gather")
def gather(ctx: Ctx) -> Lowered:
    data, indices = ctx.args
    axis = int(ctx.attrs["axis"])
    # advanced indexing on one axis is numpy.take: data[:, ids] has shape data[:1] + ids + data[2:]
    index = ", ".join([":"] * axis + [f"{indices}.long()"])
    return Lowered(lines=[f"{ctx.var} = {data}[{index}]"])


@TABLE.register("one_hot")
def one_hot(ctx: Ctx) -> Lowered:
    depth, axis = int(ctx.attrs["depth"]), int(ctx.attrs["axis"])
    on, off = float(ctx.attrs["on"]), float(ctx.attrs["off"])
    rank = len(ctx.out_shape)
    # compare with 0..depth-1 along the new axis: out-of-range ids give an all-off row, as TF
    positions = f"torch.arange({depth}, device={ctx.args[0]}.device)"
    if axis != rank - 1:
        positions += f".view({depth}{', 1' * (rank - 1 - axis)})"
    hit = f"({ctx.args[0]}.unsqueeze({axis}) == {positions})"
    value = f"{hit}.float()" if (on, off) == (1.0, 0.0) else f"torch.where({hit}, {on!r}, {off!r})"
    return Lowered(lines=[f"{ctx.var} = {value}"])
