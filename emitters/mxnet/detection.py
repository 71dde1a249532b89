"""The MXNet handlers of the detection family: non-max suppression lowered exactly, the candidates taken one by
one in TF's order within the symbol (MXNet's contrib.box_nms is not TF's: it takes (x1, y1, x2, y2) corners in
order, and drops boxes differently). Every step works on 0/1 masks and small whole numbers held in float32,
so it is exact; the symbol grows by about ten nodes per box.

  iou:   TF's float32 IoU of every pair (its corner sort, order of operations, 0 where an area is <= 0);
  rank:  a candidate's place in TF's order, the candidates (score > score_threshold) before it:
         higher scores, and equal scores at lower indices (NaN scores are never candidates);
  keep:  for r = 0 .. N-1, the candidate of rank r is kept unless it overlaps (IoU > iou_threshold) a kept one;
  slot:  a kept box's place among the kept (the same order): the first max_output_size fill the output.
"""

from __future__ import annotations

import numpy as np

from .contract import TABLE, Ctx, Fragment, Ref
from .elementwise import held_dtype


def _iou_over(f: Fragment, ctx: Ctx, boxes: Ref, n: int) -> Ref:
    """(N, N) 0/1: IoU(i, j) > iou_threshold, both areas > 0."""
    name = ctx.name
    first = f.op("slice_axis", f"{name}_yx1", [boxes], axis=1, begin=0, end=2)
    second = f.op("slice_axis", f"{name}_yx2", [boxes], axis=1, begin=2, end=4)
    lo = f.op("_minimum", f"{name}_lo", [first, second])
    hi = f.op("_maximum", f"{name}_hi", [first, second])
    ext = f.op("elemwise_sub", f"{name}_ext", [hi, lo])
    area = f.op("elemwise_mul", f"{name}_area", [f.op("slice_axis", f"{name}_h", [ext], axis=1, begin=0, end=1),
                                                   f.op("slice_axis", f"{name}_w", [ext], axis=1, begin=1, end=2)])
    rows = {k: f.op("Reshape", f"{name}_{k}_i", [v], shape=(n, 1, 2)) for k, v in (("lo", lo), ("hi", hi))}
    cols = {k: f.op("Reshape", f"{name}_{k}_j", [v], shape=(1, n, 2)) for k, v in (("lo", lo), ("hi", hi))}
    top = f.op("broadcast_minimum", f"{name}_top", [rows["hi"], cols["hi"]])
    bottom = f.op("broadcast_maximum", f"{name}_bottom", [rows["lo"], cols["lo"]])
    span = f.op("broadcast_sub", f"{name}_span", [top, bottom])
    span = f.op("relu", f"{name}_overlap", [span])  # TF's max(d, 0)
    inter = f.op("elemwise_mul", f"{name}_inter3",
                 [f.op("slice_axis", f"{name}_dy", [span], axis=2, begin=0, end=1),
                  f.op("slice_axis", f"{name}_dx", [span], axis=2, begin=1, end=2)])
    inter = f.op("Reshape", f"{name}_inter", [inter], shape=(n, n))
    area_i = f.op("Reshape", f"{name}_area_i", [area], shape=(n, 1))
    area_j = f.op("Reshape", f"{name}_area_j", [area], shape=(1, n))
    union = f.op("elemwise_sub", f"{name}_union", [f.op("broadcast_add", f"{name}_areas", [area_i, area_j]), inter])
    iou = f.op("elemwise_div", f"{name}_iou", [inter, union])
    over = f.op("_greater_scalar", f"{name}_over_t", [iou], scalar=float(ctx.attrs["iou_threshold"]))
    solid_i = f.op("_greater_scalar", f"{name}_solid_i", [area_i], scalar=0.0)
    solid_j = f.op("_greater_scalar", f"{name}_solid_j", [area_j], scalar=0.0)
    return f.op("broadcast_mul", f"{name}_over", [f.op("broadcast_mul", f"{name}_over_i", [over, solid_i]), solid_j])


@TABLE.register("non_max_suppression")
def non_max_suppression(ctx: Ctx) -> Fragment:
    f = Fragment()
    name, (boxes, scores) = ctx.name, ctx.inputs
    n, limit = int(ctx.in_shape(1)[0]), int(ctx.attrs["max_output_size"])
    over = _iou_over(f, ctx, boxes, n)
    valid = f.op("_greater_scalar", f"{name}_valid", [scores], scalar=float(ctx.attrs["score_threshold"]))
    s_i = f.op("Reshape", f"{name}_s_i", [scores], shape=(n, 1))
    s_j = f.op("Reshape", f"{name}_s_j", [scores], shape=(1, n))
    earlier = f.var(f"{name}_earlier", np.tril(np.ones((n, n), np.float32), -1))  # [i, j]: j < i
    # [i, j]: candidate j comes before i in TF's order
    before = f.op("elemwise_add", f"{name}_before_any",
                  [f.op("broadcast_greater", f"{name}_higher", [s_j, s_i]),
                   f.op("elemwise_mul", f"{name}_tied",
                        [f.op("broadcast_equal", f"{name}_equal", [s_j, s_i]), earlier])])
    before = f.op("broadcast_mul", f"{name}_before",
                  [before, f.op("Reshape", f"{name}_valid_j", [valid], shape=(1, n))])
    rank = f.op("sum", f"{name}_rank", [before], axis=1)  # (N,)
    keep = f.op("zeros_like", f"{name}_keep0", [scores])
    for r in range(n):
        step = f"{name}_r{r}"
        at = f.op("elemwise_mul", f"{step}_at", [f.op("_equal_scalar", f"{step}_is", [rank], scalar=float(r)), valid])
        row = f.op("sum", f"{step}_row", [f.op("broadcast_mul", f"{step}_rows",
                                               [f.op("Reshape", f"{step}_col", [at], shape=(n, 1)), over])], axis=0)
        hit = f.op("sum", f"{step}_hit", [f.op("elemwise_mul", f"{step}_hits", [row, keep])])
        free = f.op("_equal_scalar", f"{step}_free", [hit], scalar=0.0)
        keep = f.op("elemwise_add", f"{step}_keep", [keep, f.op("broadcast_mul", f"{step}_new", [at, free])])
    output = ctx.attrs["output"]
    if output == "count":
        total = f.op("sum", f"{name}_total", [keep])
        total = f.op("_minimum_scalar", f"{name}_capped", [total], scalar=float(limit))
        f.op("Cast", name, [total], dtype=held_dtype(ctx))
        return f
    # a kept box's slot: the kept boxes before it
    slot = f.op("sum", f"{name}_slot", [f.op("broadcast_mul", f"{name}_kept_before",
                                             [before, f.op("Reshape", f"{name}_keep_j", [keep], shape=(1, n))])],
                axis=1)
    slots = f.var(f"{name}_slots", np.arange(limit, dtype=np.float32).reshape(limit, 1))
    placed = f.op("broadcast_mul", f"{name}_placed",  # (M, N): slot m holds box i
                  [f.op("broadcast_equal", f"{name}_at_slot",
                        [f.op("Reshape", f"{name}_slot_j", [slot], shape=(1, n)), slots]),
                   f.op("Reshape", f"{name}_keep_row", [keep], shape=(1, n))])
    if output == "indices":
        values = f.var(f"{name}_index", np.arange(n, dtype=np.float32).reshape(1, n))
    else:
        values = f.op("Reshape", f"{name}_score_row", [scores], shape=(1, n))
    values = f.op("broadcast_to", f"{name}_values", [values], shape=(limit, n))
    spread = f.op("where", f"{name}_picked", [placed, values, f.op("zeros_like", f"{name}_none", [placed])])
    # one value per slot, zeros elsewhere: the sum adds zeros to it (exact)
    total = f.op("sum", f"{name}_sum" if output == "indices" else name, [spread], axis=1)
    if output == "indices":
        f.op("Cast", name, [total], dtype=held_dtype(ctx))
    return f


def _positions(f: Fragment, tag: str, lo: Ref, hi: Ref, extent: int, steps: int) -> Ref:
    """TF's CropAndResize sample positions along one axis, (n, steps) float32, its order of operations
    (constants as float32 parameters: no scalar op's double arithmetic)."""
    last = f.var(f"{tag}_last", np.float32([[extent - 1]]))
    if steps == 1:
        mid = f.op("broadcast_mul", f"{tag}_mid", [f.op("elemwise_add", f"{tag}_sum", [lo, hi]),
                                                   f.var(f"{tag}_half", np.float32([[0.5]]))])
        return f.op("broadcast_mul", f"{tag}_pos", [mid, last])
    scale = f.op("broadcast_div", f"{tag}_scale", [f.op("broadcast_mul", f"{tag}_span", [
        f.op("elemwise_sub", f"{tag}_ext", [hi, lo]), last]), f.var(f"{tag}_steps", np.float32([[steps - 1]]))])
    start = f.op("broadcast_mul", f"{tag}_start", [lo, last])
    grid = f.var(f"{tag}_grid", np.arange(steps, dtype=np.float32)[None])
    return f.op("broadcast_add", f"{tag}_pos", [start, f.op("broadcast_mul", f"{tag}_step", [grid, scale])])


@TABLE.register("crop_and_resize")
def crop_and_resize(ctx: Ctx) -> Fragment:
    f = Fragment()
    name, (image, boxes, index) = ctx.name, ctx.inputs
    _, h, w, c = (int(n) for n in ctx.in_shape(0))
    n = int(ctx.in_shape(1)[0])
    ch, cw = (int(v) for v in ctx.attrs["size"])
    corner = [f.op("slice_axis", f"{name}_c{k}", [boxes], axis=1, begin=k, end=k + 1) for k in range(4)]  # (n, 1)
    ys = _positions(f, f"{name}_y", corner[0], corner[2], h, ch)
    xs = _positions(f, f"{name}_x", corner[1], corner[3], w, cw)

    def inside(p: Ref, extent: int, tag: str) -> Ref:
        return f.op("elemwise_mul", f"{tag}_in", [f.op("_greater_equal_scalar", f"{tag}_ge", [p], scalar=0.0),
                                                  f.op("_lesser_equal_scalar", f"{tag}_le", [p],
                                                       scalar=float(extent - 1))])

    mask = f.op("broadcast_mul", f"{name}_mask", [
        f.op("Reshape", f"{name}_in_y", [inside(ys, h, f"{name}_y")], shape=(n, ch, 1, 1)),
        f.op("Reshape", f"{name}_in_x", [inside(xs, w, f"{name}_x")], shape=(n, 1, cw, 1))])
    flat = f.op("Reshape", f"{name}_flat", [image], shape=(-1, c))
    base = f.op("_mul_scalar", f"{name}_base", [f.op("Cast", f"{name}_box", [index], dtype="float32")],
                scalar=float(h * w))
    base = f.op("Reshape", f"{name}_base3", [base], shape=(n, 1, 1))

    def at(y: Ref, x: Ref, tag: str) -> Ref:  # (n, ch, cw, C); positions are small whole numbers: exact
        row = f.op("_mul_scalar", f"{tag}_row", [f.op("clip", f"{tag}_cy", [y], a_min=0.0, a_max=float(h - 1))],
                   scalar=float(w))
        col = f.op("clip", f"{tag}_cx", [x], a_min=0.0, a_max=float(w - 1))
        where = f.op("broadcast_add", f"{tag}_at", [
            f.op("broadcast_add", f"{tag}_at_y", [base, f.op("Reshape", f"{tag}_row3", [row], shape=(n, ch, 1))]),
            f.op("Reshape", f"{tag}_col3", [col], shape=(n, 1, cw))])
        return f.op("take", f"{tag}_px", [flat, where], axis=0)

    if ctx.attrs["method"] == "nearest":
        def rounded(p: Ref, tag: str) -> Ref:  # roundf (half away from zero) on positions >= 0
            low = f.op("floor", f"{tag}_floor", [p])
            up = f.op("_greater_equal_scalar", f"{tag}_up", [f.op("elemwise_sub", f"{tag}_frac", [p, low])],
                      scalar=0.5)
            return f.op("elemwise_add", f"{tag}_round", [low, up])

        out = at(rounded(ys, f"{name}_ny"), rounded(xs, f"{name}_nx"), f"{name}_near")
    else:
        t, l_ = f.op("floor", f"{name}_t", [ys]), f.op("floor", f"{name}_l", [xs])
        bo, r = f.op("ceil", f"{name}_b", [ys]), f.op("ceil", f"{name}_r", [xs])
        dy = f.op("Reshape", f"{name}_dy", [f.op("elemwise_sub", f"{name}_fy", [ys, t])], shape=(n, ch, 1, 1))
        dx = f.op("Reshape", f"{name}_dx", [f.op("elemwise_sub", f"{name}_fx", [xs, l_])], shape=(n, 1, cw, 1))
        tl, tr = at(t, l_, f"{name}_tl"), at(t, r, f"{name}_tr")
        bl, br = at(bo, l_, f"{name}_bl"), at(bo, r, f"{name}_br")

        def lerp(a: Ref, b: Ref, d: Ref, tag: str) -> Ref:
            return f.op("elemwise_add", tag, [a, f.op("broadcast_mul", f"{tag}_d", [
                f.op("elemwise_sub", f"{tag}_diff", [b, a]), d])])

        out = lerp(lerp(tl, tr, dx, f"{name}_top"), lerp(bl, br, dx, f"{name}_bottom"), dy, f"{name}_lerp")
    fill = f.op("_mul_scalar", f"{name}_fill", [f.op("ones_like", f"{name}_ones", [out])],
                scalar=float(ctx.attrs["extrapolation_value"]))
    f.op("where", name, [f.op("broadcast_like", f"{name}_mask_all", [mask, out]), out, fill])
    return f
