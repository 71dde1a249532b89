"""The MXNet handlers of the bitwise ops: and/or/xor/not are MXNet's numpy operators
(_npi_bitwise_*). MXNet has no shift: a shift of a 32-bit or narrower integer is computed in int64, where
it is exact, as a * 2^s (left; the cast back keeps the low bits) or floor(a / 2^s) (right, which fills with
the sign), the amount clamped to the width first (TF's rule)."""

from __future__ import annotations

import numpy as np

from tf_convert.emitters.base import NodeContext

from .contract import TABLE, Ctx, Fragment
from .elementwise import _ranked, held_dtype

_NATIVE = {"bitwise_and": "_npi_bitwise_and", "bitwise_or": "_npi_bitwise_or", "bitwise_xor": "_npi_bitwise_xor"}


@TABLE.register(*_NATIVE)
def bitwise(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op(_NATIVE[ctx.node.op], ctx.name, _ranked(f, ctx))
    return f


@TABLE.register("bitwise_not")
def bitwise_not(ctx: Ctx) -> Fragment:
    f = Fragment()
    f.op("_npi_bitwise_not", ctx.name, ctx.inputs)
    return f


def _narrow_only(ctx: NodeContext) -> str | None:
    dtype = ctx.graph.tensors[ctx.node.output].dtype
    return None if np.dtype(dtype).itemsize <= 4 else (
        f"a shift of {dtype} (MXNet has no shift; its int64 lowering holds 32-bit and narrower integers only)")


@TABLE.register("left_shift", "right_shift", limit=_narrow_only)
def shift(ctx: Ctx) -> Fragment:
    f, n = Fragment(), ctx.name
    width = np.dtype(ctx.graph.tensors[ctx.node.output].dtype).itemsize * 8
    a, s = (f.op("Cast", f"{n}_wide{i}", [ref], dtype="int64") for i, ref in enumerate(_ranked(f, ctx)))
    s = f.op("clip", f"{n}_amount", [s], a_min=0.0, a_max=float(width - 1))
    power = f.op("_rpower_scalar", f"{n}_power", [s], scalar=2.0)  # 2^s, exact up to 2^31 in int64
    if ctx.node.op == "left_shift":
        wide = f.op("broadcast_mul", f"{n}_product", [a, power])
    else:  # floor division: a - floormod(a, 2^s) is a multiple of 2^s
        rest = f.op("broadcast_sub", f"{n}_multiple", [a, f.op("broadcast_mod", f"{n}_mod", [a, power])])
        wide = f.op("broadcast_div", f"{n}_quotient", [rest, power])
    f.op("Cast", n, [wide], dtype=held_dtype(ctx))
    return f
