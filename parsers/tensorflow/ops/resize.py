"""TF resizes: ResizeBilinear / ResizeNearestNeighbor on TF's sampling grid; the inexact ones are refused."""

from __future__ import annotations

from typing import Any

from tf_convert.convert.sampling import SamplingError, tf_coordinate

from .. import runtime_shapes
from ..context import Context, NotConvertible, attr, fmt_perm
from ..table import tf_op
from .spatial import nchw_out

_MODES = {"ResizeBilinear": "bilinear", "ResizeNearestNeighbor": "nearest"}


@tf_op("ResizeBilinear", "ResizeNearestNeighbor")
def resize(ctx: Context, op: Any) -> None:
    try:
        coordinate = tf_coordinate(bool(attr(op, "align_corners", False)), bool(attr(op, "half_pixel_centers", False)))
    except SamplingError as e:
        raise NotConvertible(str(e)) from None
    if runtime_shapes.follows(ctx, op, 1):  # a size the graph computes: the model computes TF's grid
        runtime_shapes.resize(ctx, op, _MODES[op.type], coordinate)
        return
    ctx.shape(op.outputs[0]), ctx.shape(op.inputs[0])  # unknown sizes -> ask for --input-shape
    out_shape = nchw_out(ctx, op, "NHWC")
    x_ir = ctx.nchw(op.inputs[0], "NHWC")
    # a literal size (tf_keras's bilinear UpSampling2D in a SavedModel) stays that size at any input size in TF
    attrs = {"mode": _MODES[op.type], "coordinate": coordinate, "size": tuple(out_shape[2:]),
             "fixed_size": _literal(op.inputs[1])}
    out = ctx.emit("resize", op.name, [x_ir], out_shape, attrs, source_op=op.type)
    ctx.set(op.outputs[0], out, fmt_perm("NHWC"))


_INPUT_DEPENDENT = frozenset({"Placeholder", "PlaceholderWithDefault", "Shape", "ShapeN", "Size", "Rank"})


def _literal(t: Any) -> bool:
    """Whether `t` is computed from constants alone (tf_keras folds a static shape into `Const * Const` when
    it traces): TF then resizes to that size at any input size."""
    seen, todo = set(), [t.op]
    while todo:
        op = todo.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type in _INPUT_DEPENDENT or not (op.inputs or op.type == "Const"):
            return False
        todo += [i.op for i in op.inputs]
    return True


_REFUSED = {
    "ResizeBicubic": "bicubic resize (tf.image.resize method='bicubic')",
    "ResizeArea": "area resize (tf.image.resize method='area')",
    "ScaleAndTranslate": "antialiased or lanczos/gaussian/mitchellcubic resize (tf.image.resize antialias=True)",
    "ResizeBicubicGrad": "a resize gradient",
}


@tf_op(*_REFUSED)
def refused_resize(ctx: Context, op: Any) -> None:
    raise NotConvertible(f"{_REFUSED[op.type]} has no exact form in the targets; use method='bilinear' or "
                         "'nearest' with antialias=False")
