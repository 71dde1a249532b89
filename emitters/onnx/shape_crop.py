"""The ONNX handler of the shape family's `crop` (Keras Cropping3D)."""

from __future__ import annotations

from .contract import TABLE, Builder, Ctx, Emitted

_TO_THE_END = 2**63 - 1  # ONNX Slice clamps an end past the axis to its size


@TABLE.register("crop")
def crop(ctx: Ctx) -> Emitted:
    """One Slice whose ends count back from each axis's end: the same elements at every input size."""
    b = Builder(ctx, ctx.node)
    cropped = [(axis, int(s), int(e)) for axis, (s, e) in enumerate(ctx.node.attrs["crops"]) if int(s) or int(e)]
    if not cropped:
        b.op("Identity", [b.x()], b.out)
        return b.done()
    starts = [s for _, s, _ in cropped]
    ends = [-e if e else _TO_THE_END for _, _, e in cropped]
    axes = [axis for axis, _, _ in cropped]
    b.op("Slice", [b.x(), b.ints("starts", starts), b.ints("ends", ends), b.ints("axes", axes)], b.out)
    return b.done()
