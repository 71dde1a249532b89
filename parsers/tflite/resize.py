"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR on TF's sampling grid (TFLite's two flags are TF's);
DEPTH_TO_SPACE and SPACE_TO_DEPTH."""

from __future__ import annotations

from tf_convert.convert.sampling import SamplingError, tf_coordinate

from .op import Op
from .table import TABLE

_MODES = {"RESIZE_BILINEAR": "bilinear", "RESIZE_NEAREST_NEIGHBOR": "nearest"}


def _resize(name: str):
    def handler(op: Op) -> list[str]:
        x = op.x()
        n, c, _, _ = op.shape(x)
        size = tuple(int(d) for d in op.const(1, "size").reshape(-1))
        try:
            coordinate = tf_coordinate(bool(op.options.AlignCorners()), bool(op.options.HalfPixelCenters()))
        except SamplingError as e:
            raise op.unsupported(str(e)) from None
        attrs = {"mode": _MODES[name], "coordinate": coordinate, "size": size}
        return [op.add("resize", [x], (n, c, *size), attrs)]

    return handler


for _name in _MODES:
    TABLE.register(_name)(_resize(_name))


@TABLE.register("DEPTH_TO_SPACE")
def depth_to_space(op: Op) -> list[str]:
    x = op.x()
    n, c, h, w = op.shape(x)
    b = int(op.options.BlockSize())
    return [op.add("depth_to_space", [x], (n, c // (b * b), h * b, w * b), {"block_size": b})]


@TABLE.register("SPACE_TO_DEPTH")
def space_to_depth(op: Op) -> list[str]:
    x = op.x()
    n, c, h, w = op.shape(x)
    b = int(op.options.BlockSize())
    return [op.add("space_to_depth", [x], (n, c * b * b, h // b, w // b), {"block_size": b})]
