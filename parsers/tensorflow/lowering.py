"""A TF op lowered to IR ops: the nodes of one lowering, each named <op name>/<part> with the TF op as its
source, with their output shapes worked out here (numpy broadcasting, reductions, slices)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .context import Context

Shape = tuple[int, ...]


class Lowering:
    """The IR nodes that compute one TF op."""

    def __init__(self, ctx: Context, op: Any):
        self.ctx, self.base, self.source = ctx, op.name, op.type

    # ---- lookups ---------------------------------------------------------------------------
    def shape(self, x: str) -> Shape:
        return tuple(self.ctx.graph.shape(x))

    def dtype(self, x: str) -> str:
        return self.ctx.graph.tensors[x].dtype

    # ---- nodes -------------------------------------------------------------------------------
    def node(self, ir_op: str, part: str, inputs: list[str], shape: Sequence[int], attrs: dict | None = None,
             dtype: str | None = None) -> str:
        return self.ctx.emit(ir_op, f"{self.base}/{part}" if part else self.base, inputs, tuple(shape), attrs,
                             source_op=self.source, out_dtype=dtype)

    def const(self, part: str, value: Any, dtype: str | None = None) -> str:
        value = np.asarray(value, dtype)
        return self.ctx.emit("const", f"{self.base}/{part}", [], value.shape, params={"value": value},
                             source_op=self.source, out_dtype=value.dtype.name)

    def reshape(self, part: str, x: str, shape: Sequence[int]) -> str:
        shape = tuple(int(d) for d in shape)
        return x if self.shape(x) == shape else self.node("reshape", part, [x], shape, {"shape": shape})

    def slice(self, part: str, x: str, axis: int, start: int, end: int) -> str:
        """x[start:end] along `axis`, every other axis whole."""
        shape = self.shape(x)
        if (start, end) == (0, shape[axis]):
            return x
        begin, stop = [0] * len(shape), list(shape)
        begin[axis], stop[axis] = start, end
        out = list(shape)
        out[axis] = end - start
        return self.node("slice", part, [x], out, {"begin": tuple(begin), "end": tuple(stop)})

    def concat(self, part: str, pieces: list[str], axis: int) -> str:
        if len(pieces) == 1:
            return pieces[0]
        shape = list(self.shape(pieces[0]))
        shape[axis] = sum(self.shape(p)[axis] for p in pieces)
        return self.node("concat", part, pieces, shape, {"axis": axis})

    def binary(self, ir_op: str, part: str, a: str, b: str, dtype: str | None = None) -> str:
        shape = np.broadcast_shapes(self.shape(a), self.shape(b))
        return self.node(ir_op, part, [a, b], shape, dtype=dtype)

    def compare(self, ir_op: str, part: str, a: str, b: str) -> str:
        return self.binary(ir_op, part, a, b, "bool")

    def select(self, part: str, cond: str, a: str, b: str) -> str:
        shape = np.broadcast_shapes(self.shape(cond), self.shape(a), self.shape(b))
        return self.node("select", part, [cond, a, b], shape, dtype=self.dtype(a))

    def cast(self, part: str, x: str, dtype: str) -> str:
        if self.dtype(x) == dtype:
            return x
        return self.node("cast", part, [x], self.shape(x), {"dtype": dtype}, dtype)

    def reduce(self, ir_op: str, part: str, x: str, axes: Sequence[int], keepdims: bool = False,
               dtype: str | None = None) -> str:
        shape = self.shape(x)
        axes = tuple(sorted(a % len(shape) for a in axes))
        out = [1 if i in axes else d for i, d in enumerate(shape)] if keepdims else \
            [d for i, d in enumerate(shape) if i not in axes]
        return self.node(ir_op, part, [x], out, {"axes": axes, "keepdims": keepdims}, dtype)

    def repeat(self, part: str, x: str, axis: int, times: int) -> str:
        """`times` copies of x (size 1 along `axis`) concatenated along it: a broadcast by copies."""
        return x if times == 1 else self.concat(part, [x] * times, axis)
