"""CumulativeLogsumexp, unrolled along its axis with TF's own step (Eigen's
LogSumExp reducer, applied in scan order): acc = max(acc, x) + log1p(exp(min(acc, x) - max(acc, x))).
The exclusive form starts from -inf, as TF's does."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..context import Context, NotConvertible, ir_axis
from ..lowering import Lowering
from ..table import tf_op

_MAX_STEPS = 512  # one slice and five elementwise nodes per step


@tf_op("CumulativeLogsumexp")
def cumulative_logsumexp(ctx: Context, op: Any) -> None:
    low = Lowering(ctx, op)
    v = ctx.val(op.inputs[0])
    rank = len(ctx.shape(op.inputs[0]))
    axis = ir_axis(int(np.asarray(ctx.const(op.inputs[1])).reshape(())), rank, v.perm)
    n = low.shape(v.ir)[axis]
    if n > _MAX_STEPS:
        raise NotConvertible(f"a running log-sum-exp over {n} elements (one step each, at most {_MAX_STEPS})")
    order = range(n - 1, -1, -1) if bool(op.get_attr("reverse")) else range(n)
    acc, outs = None, {}
    for i in order:
        x = low.slice(f"x{i}", v.ir, axis, i, i + 1)
        if acc is None:
            acc = x
        else:
            top = low.binary("maximum", f"max{i}", acc, x)
            gap = low.binary("sub", f"gap{i}", low.binary("minimum", f"min{i}", acc, x), top)
            tail = low.node("log1p", f"log1p{i}", [low.node("exp", f"exp{i}", [gap], low.shape(gap))], low.shape(gap))
            acc = low.binary("add", f"acc{i}", top, tail)
        outs[i] = acc
    if bool(op.get_attr("exclusive")):  # each position gets what came before it; the first, -inf
        shape = list(low.shape(v.ir))
        shape[axis] = 1
        start = low.const("start", np.full(shape, -np.inf), low.dtype(v.ir))
        outs = {i: outs[order[k - 1]] if k else start for k, i in enumerate(order)}
    out = low.concat("", [outs[i] for i in range(n)], axis)
    ctx.set(op.outputs[0], out, v.perm)
