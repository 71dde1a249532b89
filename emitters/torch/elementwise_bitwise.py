"""The PyTorch handlers of the bitwise ops: torch's own, the shift amount clamped to the
width first (TF's rule; torch leaves amounts past the width undefined)."""

from __future__ import annotations

import numpy as np

from .contract import TABLE, Ctx, Lowered
from .elementwise import ir_dtype

_NATIVE = {"bitwise_and": "torch.bitwise_and", "bitwise_or": "torch.bitwise_or", "bitwise_xor": "torch.bitwise_xor"}
_SHIFTS = {"left_shift": "torch.bitwise_left_shift", "right_shift": "torch.bitwise_right_shift"}


@TABLE.register(*_NATIVE)
def bitwise(ctx: Ctx) -> Lowered:
    a, b = ctx.args
    return Lowered(lines=[f"{ctx.var} = {_NATIVE[ctx.node.op]}({a}, {b})"])


@TABLE.register("bitwise_not")
def bitwise_not(ctx: Ctx) -> Lowered:
    return Lowered(lines=[f"{ctx.var} = torch.bitwise_not({ctx.args[0]})"])


@TABLE.register(*_SHIFTS)
def shift(ctx: Ctx) -> Lowered:
    a, b = ctx.args
    width = np.dtype(ir_dtype(ctx)).itemsize * 8
    return Lowered(lines=[f"{ctx.var} = {_SHIFTS[ctx.node.op]}({a}, torch.clamp({b}, 0, {width - 1}))"])
