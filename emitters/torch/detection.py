"""The PyTorch handlers of the detection family: non-max suppression in plain PyTorch (TF's IoU in float32,
its order, a greedy pass over the candidates), and the cut of a data-dependent length."""

from __future__ import annotations

import math

import numpy as np

from tf_convert.convert.ir import libm_expf

from .contract import TABLE, Ctx, Lowered, lit
from .elementwise import ir_dtype


def nms_lines(ctx: Ctx) -> list[str]:
    """`{var}_keep` (N,): which candidate, in `{var}_order` (scores descending, lower index first on ties),
    TF's greedy pass selects (before max_output_size)."""
    v, (b, s) = ctx.var, ctx.args
    n = int(ctx.in_shapes[1][0])
    lines = [
        f"{v}_lo = torch.minimum({b}[:, 0:2], {b}[:, 2:4])",  # (ymin, xmin): TF takes either corner order
        f"{v}_hi = torch.maximum({b}[:, 0:2], {b}[:, 2:4])",
        f"{v}_area = ({v}_hi[:, 0] - {v}_lo[:, 0]) * ({v}_hi[:, 1] - {v}_lo[:, 1])",
        f"{v}_iou = torch.clamp(torch.minimum({v}_hi[:, None], {v}_hi[None]) - torch.maximum({v}_lo[:, None], "
        f"{v}_lo[None]), min=0.0)",
        f"{v}_iou = {v}_iou[:, :, 0] * {v}_iou[:, :, 1]",  # the intersection, y extent first as TF
        f"{v}_iou = {v}_iou / ({v}_area[:, None] + {v}_area[None, :] - {v}_iou)",
        f"{v}_over = ({v}_iou > {lit(float(ctx.attrs['iou_threshold']))}) & ({v}_area[:, None] > 0) "
        f"& ({v}_area[None, :] > 0)",
        f"{v}_order = torch.sort({s}, descending=True, stable=True).indices",
        f"{v}_over = {v}_over[{v}_order][:, {v}_order]",
        f"{v}_keep = ({s} > {lit(float(ctx.attrs['score_threshold']))})[{v}_order]",
        f"for {v}_i in range(1, {n}):",  # each candidate against the ones selected before it
        f"    {v}_keep[{v}_i] = {v}_keep[{v}_i] & ~({v}_over[{v}_i, :{v}_i] & {v}_keep[:{v}_i]).any()",
    ]
    return lines


def _expf_lines(v: str, x: str) -> list[str]:
    """`{v}_w` = glibc's expf of float32 `x` (TF's std::exp on float), its float64 steps
    (convert.ir.libm_expf): a correctly rounded exp differs from it in about 1 value of 1500."""
    table = ", ".join(repr(t) for t in libm_expf.TABLE)
    c0, c1, c2 = (repr(c) for c in libm_expf.POLY)
    return [
        f"{v}_z = {x}.double() * {libm_expf.INV_LN2_N!r}",
        f"{v}_kd = ({v}_z + {libm_expf.SHIFT!r}) - {libm_expf.SHIFT!r}",  # round to an integer, ties to even
        f"{v}_r = {v}_z - {v}_kd",
        f"{v}_k = {v}_kd.long()",
        f"{v}_s = torch.ldexp(torch.tensor([{table}], dtype=torch.float64)[{v}_k % {libm_expf.N}], "
        f"torch.div({v}_k, {libm_expf.N}, rounding_mode='floor').double())",
        f"{v}_y = ({v}_r * {c0} + {c1}) * ({v}_r * {v}_r) + ({v}_r * {c2} + 1.0)",
        f"{v}_w = torch.where({x} < {libm_expf.UNDERFLOW!r}, torch.zeros(()), ({v}_y * {v}_s).float())",
    ]


def soft_nms_lines(ctx: Ctx) -> list[str]:
    """`{var}_sel` (python list of indices) and `{var}_kept` (their decayed scores, 0-d float32): TF's
    soft-NMS, its CPU kernel's lazy pass: the top candidate (score, then lower index) takes the weights of
    the boxes selected since it was last popped, newest first, in float32; selected if its score is
    unchanged, re-queued if still > score_threshold, else dropped."""
    v, s = ctx.var, ctx.args[1]
    n, limit = int(ctx.in_shapes[1][0]), int(ctx.attrs["max_output_size"])
    scale = float(np.float32(-0.5) / np.float32(ctx.attrs["soft_nms_sigma"]))
    threshold = lit(float(ctx.attrs["score_threshold"]))
    lines = nms_lines(ctx)[:6] + [
        f"{v}_iou = torch.where(({v}_area[:, None] > 0) & ({v}_area[None, :] > 0), {v}_iou, torch.zeros(()))",
        f"{v}_x = (torch.tensor({scale!r}) * {v}_iou) * {v}_iou",  # float32, TF's order
    ]
    lines += _expf_lines(v, f"{v}_x")
    lines += [
        f"{v}_cur = {s}.clone()",
        f"{v}_alive = {s} > {threshold}",
        f"{v}_begin = [0] * {n}",
        f"{v}_sel, {v}_kept = [], []",
        f"while len({v}_sel) < {limit} and bool({v}_alive.any()):",
        f"    {v}_t = int(torch.argmax(torch.where({v}_alive, {v}_cur, torch.tensor(float('-inf')))))",  # first max
        f"    {v}_old = {v}_cur[{v}_t].clone()",
        f"    {v}_now = {v}_old",
        f"    for {v}_j in range(len({v}_sel) - 1, {v}_begin[{v}_t] - 1, -1):",
        f"        {v}_now = {v}_now * {v}_w[{v}_t, {v}_sel[{v}_j]]",
        f"        if bool({v}_now <= {threshold}):",
        "            break",
        f"    {v}_begin[{v}_t] = len({v}_sel)",
        f"    if bool({v}_now == {v}_old):",
        f"        {v}_sel.append({v}_t)",
        f"        {v}_kept.append({v}_now)",
        f"        {v}_alive[{v}_t] = False",
        f"    elif bool({v}_now > {threshold}):",
        f"        {v}_cur[{v}_t] = {v}_now",
        "    else:",
        f"        {v}_alive[{v}_t] = False",
    ]
    return lines


def _soft_nms(ctx: Ctx) -> Lowered:
    v, limit, output = ctx.var, int(ctx.attrs["max_output_size"]), ctx.attrs["output"]
    lines = soft_nms_lines(ctx)
    if output == "count":
        lines.append(f"{v} = torch.tensor(len({v}_sel), dtype=torch.int32)")
    elif output == "indices":
        lines.append(f"{v} = torch.tensor({v}_sel + [0] * ({limit} - len({v}_sel)), dtype=torch.int32)")
    else:
        lines.append(f"{v} = torch.stack({v}_kept + [torch.zeros(())] * ({limit} - len({v}_kept)))"
                     if limit else f"{v} = torch.zeros(0)")
    return Lowered(lines=lines)


@TABLE.register("non_max_suppression")
def non_max_suppression(ctx: Ctx) -> Lowered:
    v, s = ctx.var, ctx.args[1]
    limit = int(ctx.attrs["max_output_size"])
    if float(ctx.attrs.get("soft_nms_sigma", 0.0)) > 0:
        return _soft_nms(ctx)
    lines = nms_lines(ctx)
    lines += [f"{v}_take = {v}_keep & (torch.cumsum({v}_keep.long(), 0) <= {limit})"]
    output = ctx.attrs["output"]
    if output == "count":
        return Lowered(lines=lines + [f"{v} = {v}_take.sum().to(torch.int32)"])
    # the selected go to their rank among the selected, the others to a slot past the end
    lines.append(f"{v}_pos = torch.where({v}_take, torch.cumsum({v}_take.long(), 0) - 1, {limit})")
    if output == "scores":
        source, dtype = f"{s}[{v}_order]", "torch.float32"
    else:
        source, dtype = f"{v}_order", "torch.int64"
    lines.append(f"{v} = torch.zeros({limit + 1}, dtype={dtype}).scatter(0, {v}_pos, {source})[:{limit}]")
    if output == "indices":
        lines.append(f"{v} = {v}.to(torch.int32)")
    return Lowered(lines=lines)


@TABLE.register("prefix")
def prefix(ctx: Ctx) -> Lowered:
    x, count = ctx.args
    # a mask rather than x[:int(count)]: torch.export takes the data-dependent length of a mask's rows
    return Lowered(lines=[f"{ctx.var} = {x}[torch.arange({int(ctx.in_shapes[0][0])}) < {count}]"])


def _positions(lo: str, hi: str, extent: int, steps: int) -> str:
    """TF's CropAndResize sample positions along one axis, (n, steps) float32, its order of operations."""
    last = f"torch.tensor({float(extent - 1)!r})"
    if steps == 1:
        return f"((0.5 * ({lo} + {hi})) * {last})[:, None]"
    return (f"{lo}[:, None] * {last} + torch.arange({steps}, dtype=torch.float32)[None] * "
            f"(({hi} - {lo}) * {last} / torch.tensor({float(steps - 1)!r}))[:, None]")


@TABLE.register("crop_and_resize")
def crop_and_resize(ctx: Ctx) -> Lowered:
    v, (image, boxes, index) = ctx.var, ctx.args
    _, h, w, c = (int(n) for n in ctx.in_shapes[0])
    ch, cw = (int(n) for n in ctx.attrs["size"])
    lines = [
        f"{v}_y = {_positions(f'{boxes}[:, 0]', f'{boxes}[:, 2]', h, ch)}",
        f"{v}_x = {_positions(f'{boxes}[:, 1]', f'{boxes}[:, 3]', w, cw)}",
        f"{v}_in = (({v}_y >= 0) & ({v}_y <= {h - 1}))[:, :, None, None] & "
        f"(({v}_x >= 0) & ({v}_x <= {w - 1}))[:, None, :, None]",
        f"{v}_flat = {image}.reshape(-1, {c})",
        f"{v}_b = {index}.long()[:, None, None] * {h * w}",
    ]

    def at(y: str, x: str) -> str:  # the pixels at (y, x) of each box: (n, ch, cw, C)
        return (f"{v}_flat[{v}_b + {y}.clamp(0, {h - 1}).long()[:, :, None] * {w} + "
                f"{x}.clamp(0, {w - 1}).long()[:, None, :]]")

    if ctx.attrs["method"] == "nearest":
        lines += [f"{v}_ry = torch.floor({v}_y)", f"{v}_rx = torch.floor({v}_x)",
                  # roundf (half away from zero) on positions >= 0; x - floor(x) is exact
                  f"{v}_ry = {v}_ry + ({v}_y - {v}_ry >= 0.5).float()",
                  f"{v}_rx = {v}_rx + ({v}_x - {v}_rx >= 0.5).float()",
                  f"{v}_out = {at(f'{v}_ry', f'{v}_rx')}"]
    else:
        lines += [f"{v}_t = torch.floor({v}_y)", f"{v}_l = torch.floor({v}_x)",
                  f"{v}_bo = torch.ceil({v}_y)", f"{v}_r = torch.ceil({v}_x)",
                  f"{v}_dy = ({v}_y - {v}_t)[:, :, None, None]", f"{v}_dx = ({v}_x - {v}_l)[:, None, :, None]",
                  f"{v}_tl = {at(f'{v}_t', f'{v}_l')}", f"{v}_tr = {at(f'{v}_t', f'{v}_r')}",
                  f"{v}_bl = {at(f'{v}_bo', f'{v}_l')}", f"{v}_br = {at(f'{v}_bo', f'{v}_r')}",
                  f"{v}_top = {v}_tl + ({v}_tr - {v}_tl) * {v}_dx",
                  f"{v}_bot = {v}_bl + ({v}_br - {v}_bl) * {v}_dx",
                  f"{v}_out = {v}_top + ({v}_bot - {v}_top) * {v}_dy"]
    fill = lit(float(ctx.attrs["extrapolation_value"]))
    lines.append(f"{v} = torch.where({v}_in, {v}_out, torch.tensor({fill}))")
    return Lowered(lines=lines)


@TABLE.register("combined_non_max_suppression")
def combined_non_max_suppression(ctx: Ctx) -> Lowered:
    """TF's greedy pass per (batch, class), one candidate of every (batch, class) per step in original box
    indices (the IoU matrix stays (B, q, N, N)); the selections go to their class's slots, which a stable
    sort orders by score across classes."""
    v, (b, s) = ctx.var, ctx.args
    batch, n, q, _ = (int(d) for d in ctx.in_shapes[0])
    classes = int(ctx.in_shapes[1][2])
    per_class, length = int(ctx.attrs["max_per_class"]), int(ctx.attrs["per_batch"])
    slots = classes * per_class
    lines = [
        f"{v}_s = {s}.permute(0, 2, 1)",  # (B, C, N)
        f"{v}_bx = {b}.permute(0, 2, 1, 3)",  # (B, q, N, 4)
        f"{v}_lo = torch.minimum({v}_bx[..., 0:2], {v}_bx[..., 2:4])",
        f"{v}_hi = torch.maximum({v}_bx[..., 0:2], {v}_bx[..., 2:4])",
        f"{v}_area = ({v}_hi[..., 0] - {v}_lo[..., 0]) * ({v}_hi[..., 1] - {v}_lo[..., 1])",
        f"{v}_iou = torch.clamp(torch.minimum({v}_hi[:, :, :, None], {v}_hi[:, :, None]) - "
        f"torch.maximum({v}_lo[:, :, :, None], {v}_lo[:, :, None]), min=0.0)",
        f"{v}_iou = {v}_iou[..., 0] * {v}_iou[..., 1]",
        f"{v}_iou = {v}_iou / ({v}_area[:, :, :, None] + {v}_area[:, :, None, :] - {v}_iou)",
        f"{v}_over = ({v}_iou > {lit(float(ctx.attrs['iou_threshold']))}) & ({v}_area[:, :, :, None] > 0) "
        f"& ({v}_area[:, :, None, :] > 0)",
        f"{v}_order = torch.sort({v}_s, dim=2, descending=True, stable=True).indices",
        f"{v}_valid = {v}_s > {lit(float(ctx.attrs['score_threshold']))}",
        f"{v}_sel = torch.zeros({batch}, {classes}, {n}, dtype=torch.bool)",
        f"{v}_rank = torch.full(({batch}, {classes}, {n}), {per_class}, dtype=torch.int64)",
        f"{v}_count = torch.zeros({batch}, {classes}, dtype=torch.int64)",
        f"{v}_bi = torch.arange({batch})[:, None]",
        f"{v}_qi = " + (f"torch.arange({classes})[None, :]" if q > 1
                        else f"torch.zeros(1, {classes}, dtype=torch.int64)"),
        f"for {v}_i in range({n}):",  # every (batch, class)'s next candidate against its selected boxes
        f"    {v}_c = {v}_order[:, :, {v}_i:{v}_i + 1]",
        f"    {v}_row = {v}_over[{v}_bi, {v}_qi, {v}_c[:, :, 0]]",
        f"    {v}_ok = {v}_valid.gather(2, {v}_c)[:, :, 0] & ~({v}_row & {v}_sel).any(-1) & ({v}_count < {per_class})",
        f"    {v}_sel = {v}_sel.scatter(2, {v}_c, {v}_ok[:, :, None])",
        f"    {v}_rank = {v}_rank.scatter(2, {v}_c, torch.where({v}_ok, {v}_count, {per_class})[:, :, None])",
        f"    {v}_count = {v}_count + {v}_ok.long()",
        f"{v}_total = torch.clamp({v}_count.sum(1), max={length}).to(torch.int32)",
    ]
    output = ctx.attrs["output"]
    if output == "count":
        return Lowered(lines=lines + [f"{v} = {v}_total"])
    # slot c * S + rank of each selection, the unselected to a slot past the end
    lines.append(f"{v}_pos = torch.where({v}_sel, torch.arange({classes})[None, :, None] * {per_class} + {v}_rank, "
                 f"{slots}).reshape({batch}, {classes * n})")
    tail = ""
    if output == "scores":
        lines.append(f"{v}_slot = torch.full(({batch}, {slots + 1}), -1.0).scatter(1, {v}_pos, "
                     f"{v}_s.reshape({batch}, {classes * n}))[:, :{slots}]")
    else:
        lines += [f"{v}_key = torch.full(({batch}, {slots + 1}), -1.0).scatter(1, {v}_pos, "
                  f"{v}_s.reshape({batch}, {classes * n}))[:, :{slots}]"]
        if output == "classes":
            lines.append(f"{v}_slot = torch.full(({batch}, {slots + 1}), -1.0).scatter(1, {v}_pos, "
                         f"torch.arange({classes}, dtype=torch.float32)[None, :, None].expand({batch}, {classes}, {n})"
                         f".reshape({batch}, {classes * n}))[:, :{slots}]")
        else:
            tail = ", 4"
            lines.append(f"{v}_slot = torch.zeros({batch}, {slots + 1}, 4).scatter(1, {v}_pos[:, :, None].expand("
                         f"{batch}, {classes * n}, 4), {v}_bx.expand({batch}, {classes}, {n}, 4).reshape("
                         f"{batch}, {classes * n}, 4))[:, :{slots}]")
            if ctx.attrs["clip_boxes"]:
                lines.append(f"{v}_slot = torch.clamp({v}_slot, 0.0, 1.0)")
    key = f"{v}_slot" if output == "scores" else f"{v}_key"
    lines.append(f"{v}_by = torch.sort({key}, dim=1, descending=True, stable=True).indices")
    lines.append(f"{v}_slot = {v}_slot.gather(1, {v}_by" + (f"[:, :, None].expand({batch}, {slots}, 4))"
                                                          if tail else ")"))
    if length > slots:
        lines.append(f"{v}_slot = torch.cat([{v}_slot, torch.zeros({batch}, {length - slots}{tail})], 1)")
    keep = f"(torch.arange({length})[None] < {v}_total[:, None])" + ("[:, :, None]" if tail else "")
    lines.append(f"{v} = torch.where({keep}, {v}_slot[:, :{length}], torch.tensor(0.0))")
    return Lowered(lines=lines)


@TABLE.register("nonzero")
def nonzero(ctx: Ctx) -> Lowered:
    """The true elements' flat positions moved to their rank among the true ones (the others past the end),
    then unravelled: (size, ndim) coordinates, zeros after the count."""
    v, x = ctx.var, ctx.args[0]
    shape = [int(d) for d in ctx.in_shapes[0]]
    size = math.prod(shape)
    lines = [f"{v}_m = ({x} != 0).reshape(-1)"]
    if ctx.attrs["output"] == "count":
        return Lowered(lines=lines + [f"{v} = {v}_m.sum().to(torch.int32)"])
    strides = [math.prod(shape[k + 1:]) for k in range(len(shape))]
    lines += [f"{v}_pos = torch.where({v}_m, torch.cumsum({v}_m.long(), 0) - 1, {size})",
              f"{v}_flat = torch.zeros({size + 1}, dtype=torch.int64).scatter(0, {v}_pos, "
              f"torch.arange({size}))[:{size}]",
              # unfilled rows hold position 0: coordinates 0
              f"{v} = ({v}_flat[:, None] // torch.tensor({strides})) % torch.tensor({shape})"]
    if ir_dtype(ctx) != "int64":  # graphs written before the IR's indices were TF's int64
        lines.append(f"{v} = {v}.to(torch.{ir_dtype(ctx)})")
    return Lowered(lines=lines)
