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


@TABLE.register("combined_non_max_suppression")
def combined_non_max_suppression(ctx: Ctx) -> Fragment:
    """TF's CombinedNonMaxSuppression lowered exactly as non_max_suppression is, on every (batch, class)
    group at once (G = B * C; the IoU matrix (G, N, N)), each group stopping at S selections; a selection's
    slot is c * S + its rank in the group; the C * S slots (unfilled: score -1, class -1, box 0) ranked by
    comparisons (score descending, the lower slot first on ties) and written to their positions."""
    f = Fragment()
    name, (boxes, scores) = ctx.name, ctx.inputs
    batch, n, q, _ = (int(d) for d in ctx.in_shape(0))
    classes = int(ctx.in_shape(1)[2])
    groups, per_class, length = batch * classes, int(ctx.attrs["max_per_class"]), int(ctx.attrs["per_batch"])
    slots = classes * per_class
    s = f.op("Reshape", f"{name}_s", [f.op("transpose", f"{name}_s_t", [scores], axes=(0, 2, 1))], shape=(groups, n))
    bx = f.op("transpose", f"{name}_bx_t", [boxes], axes=(0, 2, 1, 3))  # (B, q, N, 4)
    if q == 1:
        bx = f.op("broadcast_to", f"{name}_bx_c", [bx], shape=(batch, classes, n, 4))
    bx = f.op("Reshape", f"{name}_bx", [bx], shape=(groups, n, 4))
    # (G, N, N) 0/1: IoU(i, j) > iou_threshold, both areas > 0 (TF's float32 IoU)
    lo = f.op("_minimum", f"{name}_lo", [f.op("slice_axis", f"{name}_a", [bx], axis=2, begin=0, end=2),
                                         f.op("slice_axis", f"{name}_b", [bx], axis=2, begin=2, end=4)])
    hi = f.op("_maximum", f"{name}_hi", [f.op("slice_axis", f"{name}_a2", [bx], axis=2, begin=0, end=2),
                                         f.op("slice_axis", f"{name}_b2", [bx], axis=2, begin=2, end=4)])
    ext = f.op("elemwise_sub", f"{name}_ext", [hi, lo])
    area = f.op("elemwise_mul", f"{name}_area", [f.op("slice_axis", f"{name}_h", [ext], axis=2, begin=0, end=1),
                                                   f.op("slice_axis", f"{name}_w", [ext], axis=2, begin=1, end=2)])
    span = f.op("broadcast_sub", f"{name}_span", [
        f.op("broadcast_minimum", f"{name}_top", [f.op("Reshape", f"{name}_hi_i", [hi], shape=(groups, n, 1, 2)),
                                                  f.op("Reshape", f"{name}_hi_j", [hi], shape=(groups, 1, n, 2))]),
        f.op("broadcast_maximum", f"{name}_bottom", [f.op("Reshape", f"{name}_lo_i", [lo], shape=(groups, n, 1, 2)),
                                                     f.op("Reshape", f"{name}_lo_j", [lo], shape=(groups, 1, n, 2))])])
    span = f.op("relu", f"{name}_overlap", [span])
    inter = f.op("Reshape", f"{name}_inter", [f.op("elemwise_mul", f"{name}_inter4", [
        f.op("slice_axis", f"{name}_dy", [span], axis=3, begin=0, end=1),
        f.op("slice_axis", f"{name}_dx", [span], axis=3, begin=1, end=2)])], shape=(groups, n, n))
    area_i = f.op("Reshape", f"{name}_area_i", [area], shape=(groups, n, 1))
    area_j = f.op("Reshape", f"{name}_area_j", [area], shape=(groups, 1, n))
    union = f.op("elemwise_sub", f"{name}_union", [f.op("broadcast_add", f"{name}_areas", [area_i, area_j]), inter])
    over = f.op("_greater_scalar", f"{name}_over_t", [f.op("elemwise_div", f"{name}_iou", [inter, union])],
                scalar=float(ctx.attrs["iou_threshold"]))
    over = f.op("broadcast_mul", f"{name}_over", [f.op("broadcast_mul", f"{name}_over_i", [
        over, f.op("_greater_scalar", f"{name}_solid_i", [area_i], scalar=0.0)]),
        f.op("_greater_scalar", f"{name}_solid_j", [area_j], scalar=0.0)])
    # each group's candidates in TF's order (score descending, the lower index first on ties)
    valid = f.op("_greater_scalar", f"{name}_valid", [s], scalar=float(ctx.attrs["score_threshold"]))
    s_i = f.op("Reshape", f"{name}_s_i", [s], shape=(groups, n, 1))
    s_j = f.op("Reshape", f"{name}_s_j", [s], shape=(groups, 1, n))
    earlier = f.var(f"{name}_earlier", np.tril(np.ones((1, n, n), np.float32), -1))
    before = f.op("broadcast_add", f"{name}_before_any", [
        f.op("broadcast_greater", f"{name}_higher", [s_j, s_i]),
        f.op("broadcast_mul", f"{name}_tied", [f.op("broadcast_equal", f"{name}_equal", [s_j, s_i]), earlier])])
    before = f.op("broadcast_mul", f"{name}_before", [before, f.op("Reshape", f"{name}_valid_j", [valid],
                                                                     shape=(groups, 1, n))])
    rank = f.op("sum", f"{name}_rank", [before], axis=2)  # (G, N)
    keep = f.op("zeros_like", f"{name}_keep0", [s])
    for r in range(n):
        step = f"{name}_r{r}"
        at = f.op("elemwise_mul", f"{step}_at", [f.op("_equal_scalar", f"{step}_is", [rank], scalar=float(r)), valid])
        row = f.op("sum", f"{step}_row", [f.op("broadcast_mul", f"{step}_rows", [
            f.op("Reshape", f"{step}_col", [at], shape=(groups, n, 1)), over])], axis=1)  # (G, N)
        hit = f.op("sum", f"{step}_hit", [f.op("elemwise_mul", f"{step}_hits", [row, keep])], axis=1, keepdims=True)
        room = f.op("_lesser_scalar", f"{step}_room", [f.op("sum", f"{step}_kept", [keep], axis=1, keepdims=True)],
                    scalar=float(per_class))
        free = f.op("elemwise_mul", f"{step}_free", [f.op("_equal_scalar", f"{step}_none", [hit], scalar=0.0), room])
        keep = f.op("elemwise_add", f"{step}_keep", [keep, f.op("broadcast_mul", f"{step}_new", [at, free])])
    total = f.op("_minimum_scalar", f"{name}_capped", [f.op("sum", f"{name}_total", [
        f.op("Reshape", f"{name}_keep_b", [keep], shape=(batch, classes * n))], axis=1)], scalar=float(length))
    if ctx.attrs["output"] == "count":
        f.op("Cast", name, [total], dtype=held_dtype(ctx))
        return f
    # a selection's slot in its batch: c * S + the selections before it in its group
    first = f.var(f"{name}_first", np.tile(np.arange(classes, dtype=np.float32) * per_class, batch).reshape(groups, 1))
    slot = f.op("broadcast_add", f"{name}_slot", [f.op("sum", f"{name}_picked_before", [f.op(
        "broadcast_mul", f"{name}_kept_before", [before, f.op("Reshape", f"{name}_keep_j", [keep],
                                                                shape=(groups, 1, n))])], axis=2), first])
    places = f.var(f"{name}_places", np.arange(slots, dtype=np.float32).reshape(1, slots, 1))
    placed = f.op("broadcast_mul", f"{name}_placed", [  # (B, CS, CN): slot m holds selection k
        f.op("broadcast_equal", f"{name}_at", [f.op("Reshape", f"{name}_slot_b", [slot], shape=(batch, 1, classes * n)),
                                               places]),
        f.op("Reshape", f"{name}_keep_row", [keep], shape=(batch, 1, classes * n))])
    filled = f.op("sum", f"{name}_filled", [placed], axis=2)  # (B, CS) 0/1

    def gathered(tag: str, values: Ref, fill: float) -> Ref:  # (B, CS): the slot's value, fill where unfilled
        spread = f.op("where", f"{tag}_spread", [placed, f.op("broadcast_like", f"{tag}_all", [values, placed]),
                                                 f.op("zeros_like", f"{tag}_zeros", [placed])])
        found = f.op("sum", f"{tag}_found", [spread], axis=2)
        return f.op("where", f"{tag}_slots", [filled, found, f.op("_mul_scalar", f"{tag}_fill", [
            f.op("ones_like", f"{tag}_ones", [found])], scalar=fill)])

    key = gathered(f"{name}_score", f.op("Reshape", f"{name}_s_b", [s], shape=(batch, 1, classes * n)), -1.0)
    output = ctx.attrs["output"]
    if output == "scores":
        value = key
    elif output == "classes":
        labels = np.repeat(np.arange(classes, dtype=np.float32), n).reshape(1, 1, classes * n)
        value = gathered(f"{name}_class", f.var(f"{name}_labels", labels), -1.0)
    else:
        wide = (batch, slots, classes * n, 4)
        coords = f.op("broadcast_to", f"{name}_coords", [f.op("Reshape", f"{name}_bx_b", [bx], shape=(
            batch, 1, classes * n, 4))], shape=wide)
        cells = f.op("broadcast_to", f"{name}_cells", [f.op("Reshape", f"{name}_placed4", [placed], shape=(
            batch, slots, classes * n, 1))], shape=wide)
        spread = f.op("where", f"{name}_box_spread", [cells, coords, f.op("zeros_like", f"{name}_box0", [coords])])
        value = f.op("sum", f"{name}_box_slots", [spread], axis=2)  # (B, CS, 4), zeros where unfilled
        if ctx.attrs["clip_boxes"]:
            value = f.op("clip", f"{name}_clipped", [value], a_min=0.0, a_max=1.0)
    # the slots' order: higher scores first, the lower slot first on ties
    k_i = f.op("Reshape", f"{name}_k_i", [key], shape=(batch, slots, 1))
    k_j = f.op("Reshape", f"{name}_k_j", [key], shape=(batch, 1, slots))
    lower = f.var(f"{name}_lower", np.tril(np.ones((1, slots, slots), np.float32), -1))
    order = f.op("sum", f"{name}_order", [f.op("broadcast_add", f"{name}_ahead", [
        f.op("broadcast_greater", f"{name}_k_higher", [k_j, k_i]),
        f.op("broadcast_mul", f"{name}_k_tied", [f.op("broadcast_equal", f"{name}_k_equal", [k_j, k_i]), lower])])],
        axis=2)  # (B, CS)
    shown = min(length, slots)
    positions = f.var(f"{name}_positions", np.arange(shown, dtype=np.float32).reshape(1, shown, 1))
    moved = f.op("broadcast_equal", f"{name}_moved", [f.op("Reshape", f"{name}_order_b", [order],
                                                           shape=(batch, 1, slots)), positions])  # (B, P', CS)
    if output == "boxes":
        moved4 = f.op("Reshape", f"{name}_moved4", [moved], shape=(batch, shown, slots, 1))
        full = f.op("broadcast_to", f"{name}_moved_all", [moved4], shape=(batch, shown, slots, 4))
        values = f.op("broadcast_to", f"{name}_value_all", [f.op("Reshape", f"{name}_value4", [value],
                                                                 shape=(batch, 1, slots, 4))],
                      shape=(batch, shown, slots, 4))
        out = f.op("sum", f"{name}_out", [f.op("where", f"{name}_pick", [
            full, values, f.op("zeros_like", f"{name}_pick0", [values])])], axis=2)  # (B, P', 4)
    else:
        values = f.op("broadcast_to", f"{name}_value_all", [f.op("Reshape", f"{name}_value3", [value],
                                                                 shape=(batch, 1, slots))], shape=(batch, shown, slots))
        out = f.op("sum", f"{name}_out", [f.op("where", f"{name}_pick", [
            moved, values, f.op("zeros_like", f"{name}_pick0", [values])])], axis=2)  # (B, P')
    tail = (4,) if output == "boxes" else ()
    if length > shown:
        out = f.op("Concat", f"{name}_padded", [out, f.var(f"{name}_pad", np.zeros((batch, length - shown, *tail),
                                                                                np.float32))], dim=1, num_args=2)
    at = f.var(f"{name}_at_pos", np.arange(length, dtype=np.float32).reshape(1, length, *([1] * len(tail))))
    keep_pos = f.op("broadcast_lesser", f"{name}_valid_pos", [at, f.op("Reshape", f"{name}_count", [total],
                                                                      shape=(batch, 1, *([1] * len(tail))))])
    f.op("where", name, [f.op("broadcast_like", f"{name}_keep_all", [keep_pos, out]), out,
                         f.op("zeros_like", f"{name}_none", [out])])
    return f
