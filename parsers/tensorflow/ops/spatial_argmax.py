"""Issue 22 part B (opsb): MaxPoolWithArgmax (NHWC), both outputs as TF's kernel computes them: per window,
the taps in row-major order, a tap taken when it is the window's first real (unpadded) one or strictly
greater than the best so far -- so ties keep the first, as TF's -- and its flat index
((b * H + y) * W + x) * C + c (the batch term only with include_batch_in_index). Comparisons and selects of
the input's own values: exact in every target that has them."""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.padding.rules import same_pads_1d

from ..context import NHWC_TO_NCHW, Context, NotConvertible
from ..table import tf_op
from .lowering import Lowering
from .shape import pick_every

_MAX_TAPS = 64  # five nodes per window position


@tf_op("MaxPoolWithArgmax")
def max_pool_with_argmax(ctx: Context, op: Any) -> None:
    low = Lowering(ctx, op)
    (_, kh, kw, _), (_, sh, sw, _) = (list(op.get_attr(a)) for a in ("ksize", "strides"))
    if kh * kw > _MAX_TAPS:
        raise NotConvertible(f"a {kh}x{kw} window is {kh * kw} taps here (at most {_MAX_TAPS})")
    x = ctx.nchw(op.inputs[0], "NHWC")
    n, c, h, w = low.shape(x)
    _, oh, ow, _ = ctx.shape(op.outputs[0])
    (top, bottom), (left, right) = ((0, 0), (0, 0))
    if op.get_attr("padding").decode() == "SAME":
        (top, bottom), (left, right) = same_pads_1d(h, kh, sh, 1), same_pads_1d(w, kw, sw, 1)
    if top or bottom or left or right:
        x = low.node("pad", "pad", [x], (n, c, h + top + bottom, w + left + right),
                     {"pads": ((0, 0), (0, 0), (top, bottom), (left, right)), "mode": "constant",
                      "value": float("-inf")})
    rows, cols = np.arange(oh)[:, None] * sh - top, np.arange(ow)[None, :] * sw - left  # window origins
    seen = np.zeros((oh, ow), bool)
    index_type = op.outputs[1].dtype.name
    best = index = None
    for i in range(kh):
        for j in range(kw):
            tap = low.slice(f"tap{i}_{j}_rows", x, 2, i, i + (oh - 1) * sh + 1)
            tap = pick_every(ctx, f"{op.name}/tap{i}_{j}_rows_every", tap, 2, sh, oh, op.type) if sh > 1 and oh > 1 \
                else tap
            tap = low.slice(f"tap{i}_{j}", tap, 3, j, j + (ow - 1) * sw + 1)
            tap = pick_every(ctx, f"{op.name}/tap{i}_{j}_every", tap, 3, sw, ow, op.type) if sw > 1 and ow > 1 \
                else tap
            y, xx = rows + i, cols + j
            real = (y >= 0) & (y < h) & (xx >= 0) & (xx < w)
            first = real & ~seen
            seen |= real
            at = ((y * w + xx)[None, None] * c + np.arange(c)[None, :, None, None]).astype(index_type)
            at = low.const(f"index{i}_{j}", at, index_type)
            if best is None:
                best, index = tap, at
                continue
            greater = low.compare("greater", f"greater{i}_{j}", tap, best)
            take = low.binary("logical_and", f"real_greater{i}_{j}", greater,
                              low.const(f"real{i}_{j}", real[None, None], "bool"))
            if first.any():
                take = low.binary("logical_or", f"take{i}_{j}", take, low.const(f"first{i}_{j}", first[None, None],
                                                                                 "bool"))
            best = low.select(f"best{i}_{j}", take, tap, best)
            index = low.select(f"at{i}_{j}", take, at, index)
    batch = np.arange(n).reshape(n, 1, 1, 1) * (h * w * c if bool(op.get_attr("include_batch_in_index")) else 0)
    index = low.binary("add", "argmax", index, low.const("batch", batch, index_type))
    ctx.set(op.outputs[0], best, NHWC_TO_NCHW)
    ctx.set(op.outputs[1], index, NHWC_TO_NCHW)
