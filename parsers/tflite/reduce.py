"""Reductions over constant axes: MEAN, SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD; ARG_MAX, ARG_MIN."""

from __future__ import annotations

from . import layout
from .op import Op
from .table import TABLE

_REDUCE = {"MEAN": "reduce_mean", "SUM": "reduce_sum", "REDUCE_MAX": "reduce_max", "REDUCE_MIN": "reduce_min",
           "REDUCE_PROD": "reduce_prod"}


def _reduce(name: str):
    ir_op = _REDUCE[name]

    def handler(op: Op) -> list[str]:
        x = op.x()
        shape = op.shape(x)
        rank = len(shape)
        axes = tuple(sorted({layout.ir_axis(int(a), rank) for a in op.const(1, "axes").reshape(-1)}))
        keep = bool(op.options.KeepDims()) if op.options is not None else False
        if keep:
            out = tuple(1 if i in axes else d for i, d in enumerate(shape))
        else:  # TFLite drops the axes of its own layout: the rest keep their TFLite order
            source = layout.source_shape(shape)
            dropped = {int(a) % rank for a in op.const(1, "axes").reshape(-1)}
            kept = tuple(d for i, d in enumerate(source) if i not in dropped)
            if rank == 4 and len(kept) == 4:
                kept = layout.ir_shape(kept)
            out = kept
            if rank == 4 and not _order_kept(dropped):
                raise op.unsupported(f"a reduction over axes {sorted(dropped)} of an image without keep_dims "
                                     "would reorder the remaining axes")
        return [op.add(ir_op, [x], out, {"axes": axes, "keepdims": keep})]

    return handler


def _order_kept(dropped: set[int]) -> bool:
    """Dropping these NHWC axes leaves the others in the same order in NCHW (C last in NHWC, second in
    NCHW: kept only where H and W both go, or C goes)."""
    return 3 in dropped or {1, 2} <= dropped


for _name in _REDUCE:
    TABLE.register(_name)(_reduce(_name))


def _arg(ir_op: str):
    def handler(op: Op) -> list[str]:
        x = op.x()
        shape = op.shape(x)
        axis = layout.ir_axis(int(op.const(1, "axis").reshape(-1)[0]), len(shape))
        if len(shape) == 4 and axis != 1:
            raise op.unsupported("an arg-reduction of an image over a spatial axis")
        out = tuple(d for i, d in enumerate(shape) if i != axis)
        dtype = op.tensors[op.op.outputs[0]].type.lower()
        y = op.add(ir_op, [x], out, {"axis": axis, "keepdims": False}, out_dtype="int64")
        if dtype == "int32":
            y = op.add("cast", [y], out, {"dtype": "int32"}, suffix="/int32", out_dtype="int32")
        return [y]

    return handler


TABLE.register("ARG_MAX")(_arg("argmax"))
TABLE.register("ARG_MIN")(_arg("argmin"))

