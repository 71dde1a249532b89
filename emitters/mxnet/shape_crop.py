"""The MXNet handler of the shape family's `crop` (Keras Cropping3D)."""

from __future__ import annotations

from .contract import TABLE, Ctx
from .symbol import Fragment


@TABLE.register("crop")
def crop(ctx: Ctx) -> Fragment:
    """A `slice` with plain indices at the conversion size (MXNet models run at that size only)."""
    f, shape = Fragment(), ctx.in_shape()
    crops = [(int(b), int(e)) for b, e in ctx.attrs["crops"]]
    begin, end = tuple(b for b, _ in crops), tuple(n - e for n, (_, e) in zip(shape, crops))
    f.op("slice", ctx.name, ctx.inputs, begin=begin, end=end)
    return f
