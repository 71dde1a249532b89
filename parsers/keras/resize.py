"""UpSampling2D: TF's resize with half-pixel centers (Keras 3 repeats for 'nearest', which is the
same grid at integer factors); the sampling rules are in convert.sampling."""

from __future__ import annotations

from .call import Call
from .conv import pair
from .table import TABLE

_MODES = {"nearest": "nearest", "bilinear": "bilinear"}


@TABLE.register("UpSampling2D")
def up_sampling2d(call: Call) -> list[str]:
    call.require_channels_last()
    interpolation = str(call.cfg("interpolation", "nearest"))
    if interpolation not in _MODES:
        raise call.unsupported(f"interpolation={interpolation!r} has no exact form in the targets "
                               "(nearest and bilinear convert)")
    fh, fw = pair(call.cfg("size", 2))
    n, c, h, w = call.shape()
    attrs = {"mode": _MODES[interpolation], "coordinate": "half_pixel", "size": (h * fh, w * fw)}
    return [call.add("resize", [call.x], (n, c, h * fh, w * fw), attrs)]
