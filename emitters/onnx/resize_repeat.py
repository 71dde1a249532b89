"""The ONNX handler of the resize family's `repeat` (Keras UpSampling3D)."""

from __future__ import annotations

from .contract import TABLE, Builder, Ctx, Emitted


@TABLE.register("repeat")
def repeat(ctx: Ctx) -> Emitted:
    """A nearest Resize by whole-number scales: output index i reads floor(i / r) (asymmetric, floor), an
    exact repeat on any rank, and the output follows the runtime size."""
    b = Builder(ctx, ctx.node)
    scales = [float(r) for r in ctx.node.attrs["repeats"]]
    b.op("Resize", [b.x(), "", b.const("scales", scales)], b.out, mode="nearest",
         coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    return b.done()
