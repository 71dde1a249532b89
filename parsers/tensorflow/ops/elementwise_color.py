"""Image colour ops: RGBToHSV, HSVToRGB, AdjustContrast(v2), AdjustSaturation and AdjustHue, each
TF's CPU kernel step by step in float32 (the same operations in the same order, so the same roundings), on the
channel axis where the input already has it in the converted graph (an NHWC image stays NCHW)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..context import Context, NotConvertible, Val, ir_axis
from ..table import tf_op


class _Steps:
    """Emits one colour op's IR nodes: elementwise steps on tensors shaped like one channel of the input."""

    def __init__(self, ctx: Context, op: Any, v: Val):
        self.ctx, self.op = ctx, op
        shape = ctx.shape(op.inputs[0])
        if not shape or shape[-1] != 3:
            raise NotConvertible(f"{op.type} of shape {tuple(shape)}: the last axis must hold 3 channels")
        self.rank = len(shape)
        self.axis = ir_axis(self.rank - 1, self.rank, v.perm)  # the channels in the IR tensor
        self.full = tuple(ctx.graph.shape(v.ir))
        one = list(self.full)
        one[self.axis] = 1
        self.one = tuple(one)
        self._consts: dict[float, str] = {}

    def __call__(self, ir_op: str, *inputs: str, attrs: dict | None = None, dtype: str = "float32",
                 name: str | None = None) -> str:
        base = name or f"{self.op.name}/{ir_op}"
        return self.ctx.emit(ir_op, base, list(inputs), self.one, attrs, source_op=self.op.type, out_dtype=dtype)

    def factor(self, t: Any, times: float = 1.0) -> str:
        """A scalar float32 parameter times `times` (float32 product, as TF's kernel): the constant folded here,
        a tensor the graph computes multiplied at run time."""
        if self.ctx.is_const(t):
            value = np.asarray(self.ctx.const(t), np.float32).reshape(-1)
            if value.size != 1:
                raise NotConvertible(f"{self.op.type} with {value.size} factors (one is supported)")
            return self.const(float(value[0] * np.float32(times)))
        if tuple(self.ctx.shape(t)) not in ((), (1,)):
            raise NotConvertible(f"{self.op.type} with factors shaped {tuple(self.ctx.shape(t))} (one is supported)")
        x = self.ctx.tf_order(t)
        if self.ctx.graph.shape(x):
            x = self.ctx.emit("reshape", f"{self.op.name}/factor", [x], (), {"shape": ()}, source_op=self.op.type)
        if times == 1.0:
            return x
        return self.ctx.emit("mul", f"{self.op.name}/factor_times", [x, self.const(times)], (),
                             source_op=self.op.type)

    def const(self, value: float) -> str:
        """A float32 scalar (value is rounded to float32 first, as TF's T(value))."""
        if value not in self._consts:
            self._consts[value] = self.ctx.emit("const", f"{self.op.name}/c", [], (), source_op=self.op.type,
                                                params={"value": np.float32(value)}, out_dtype="float32")
        return self._consts[value]

    def channel(self, x: str, c: int) -> str:
        begin = [0] * self.rank
        end = list(self.full)
        begin[self.axis], end[self.axis] = c, c + 1
        return self.ctx.emit("slice", f"{self.op.name}/channel{c}", [x], self.one,
                             {"begin": tuple(begin), "end": tuple(end)}, source_op=self.op.type)

    def reduce(self, ir_op: str, x: str) -> str:
        return self.ctx.emit(ir_op, f"{self.op.name}/{ir_op}", [x], self.one, {"axes": (self.axis,), "keepdims": True},
                             source_op=self.op.type)

    def where(self, cond: str, a: str, b: str) -> str:
        return self("select", cond, a, b)

    def test(self, ir_op: str, a: str, b: str) -> str:
        return self(ir_op, a, b, dtype="bool")

    def join(self, channels: list[str]) -> str:
        return self.ctx.emit("concat", self.op.name, channels, self.full, {"axis": self.axis}, source_op=self.op.type)


def _float32(op: Any) -> None:
    if op.outputs[0].dtype.name != "float32":
        raise NotConvertible(f"{op.type} of {op.outputs[0].dtype.name}: only float32 images are supported")


@tf_op("RGBToHSV")
def rgb_to_hsv(ctx: Context, op: Any) -> None:
    """V = max, range = V - min, S = range / V (0 where V <= 0), norm = (1 / range) * (1 / 6),
    H = norm * (G - B) where R == V, else norm * (B - R) + 2 / 6 where G == V, else norm * (R - G) + 4 / 6;
    0 where range <= 0; + 1 where negative."""
    _float32(op)
    v = ctx.val(op.inputs[0])
    s = _Steps(ctx, op, v)
    r, g, b = (s.channel(v.ir, c) for c in range(3))
    zero = s.const(0.0)
    value = s.reduce("reduce_max", v.ir)
    spread = s("sub", value, s.reduce("reduce_min", v.ir))
    saturation = s.where(s.test("greater", value, zero), s("div", spread, value), zero)
    norm = s("mul", s("div", s.const(1.0), spread), s.const(np.float32(1) / np.float32(6)))
    hue = s.where(s.test("equal", r, value), s("mul", norm, s("sub", g, b)),
                  s.where(s.test("equal", g, value),
                          s("add", s("mul", norm, s("sub", b, r)), s.const(np.float32(2) / np.float32(6))),
                          s("add", s("mul", norm, s("sub", r, g)), s.const(np.float32(4) / np.float32(6)))))
    hue = s.where(s.test("greater", spread, zero), hue, zero)
    hue = s.where(s.test("less", hue, zero), s("add", hue, s.const(1.0)), hue)
    ctx.set(op.outputs[0], s.join([hue, saturation, value]), v.perm)


@tf_op("HSVToRGB")
def hsv_to_rgb(ctx: Context, op: Any) -> None:
    """dh = H * 6; dr = clip(|dh - 3| - 1), dg = clip(-|dh - 2| + 2), db = clip(-|dh - 4| + 2) to [0, 1];
    each channel (1 - S + S * d) * V."""
    _float32(op)
    v = ctx.val(op.inputs[0])
    s = _Steps(ctx, op, v)
    hue, sat, value = (s.channel(v.ir, c) for c in range(3))
    dh = s("mul", hue, s.const(6.0))
    unit = {"min": 0.0, "max": 1.0}
    dr = s("clip", s("sub", s("abs", s("sub", dh, s.const(3.0))), s.const(1.0)), attrs=unit)
    dg = s("clip", s("add", s("neg", s("abs", s("sub", dh, s.const(2.0)))), s.const(2.0)), attrs=unit)
    db = s("clip", s("add", s("neg", s("abs", s("sub", dh, s.const(4.0)))), s.const(2.0)), attrs=unit)
    one_s = s("add", s("neg", sat), s.const(1.0))
    rgb = [s("mul", s("add", one_s, s("mul", sat, d)), value) for d in (dr, dg, db)]
    ctx.set(op.outputs[0], s.join(rgb), v.perm)


@tf_op("AdjustContrastv2", "AdjustContrast")
def adjust_contrast(ctx: Context, op: Any) -> None:
    """(x - mean) * factor + mean, the mean per channel over the image's height and width; V1 (removed at
    GraphDef version 2) clips that to [min_value, max_value]."""
    _float32(op)
    if ctx.is_const(op.inputs[1]):
        factor = np.asarray(ctx.const(op.inputs[1]), np.float32).reshape(-1)
        if factor.size != 1:
            raise NotConvertible(f"{op.type} with {factor.size} contrast factors (one is supported)")
    elif ctx.shape(op.inputs[1]) not in ((), (1,)):
        raise NotConvertible(f"{op.type} with contrast factors shaped {ctx.shape(op.inputs[1])} (one is supported)")
    rank = len(ctx.shape(op.inputs[0]))
    if rank < 3:
        raise NotConvertible(f"{op.type} of a rank-{rank} tensor: an image is (..., height, width, channels)")
    v = ctx.val(op.inputs[0])
    shape = ctx.graph.shape(v.ir)
    axes = tuple(sorted(ir_axis(a, rank, v.perm) for a in (rank - 3, rank - 2)))
    kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
    mean = ctx.emit("reduce_mean", f"{op.name}/mean", [v.ir], kept, {"axes": axes, "keepdims": True},
                    source_op=op.type)
    if ctx.is_const(op.inputs[1]):
        scale = ctx.emit("const", f"{op.name}/factor", [], (), params={"value": factor.reshape(())},
                         source_op=op.type, out_dtype="float32")
    else:  # a factor the graph computes: the same product, by a tensor
        scale = ctx.tf_order(op.inputs[1])
    centred = ctx.emit("sub", f"{op.name}/centred", [v.ir, mean], shape, source_op=op.type)
    scaled = ctx.emit("mul", f"{op.name}/scaled", [centred, scale], shape, source_op=op.type)
    if op.type == "AdjustContrastv2":
        ctx.set(op.outputs[0], ctx.emit("add", op.name, [scaled, mean], shape, source_op=op.type), v.perm)
        return
    low, high = (float(np.asarray(ctx.const(t), np.float32).reshape(-1)[0]) for t in op.inputs[2:4])
    out = ctx.emit("add", f"{op.name}/shifted", [scaled, mean], shape, source_op=op.type)
    ctx.set(op.outputs[0], ctx.emit("clip", op.name, [out], shape, {"min": low, "max": high}, source_op=op.type),
            v.perm)


# ---- AdjustSaturation / AdjustHue: TF's per-pixel CPU kernels (adjust_saturation_op.cc, adjust_hue_op.cc) --

def _pick(s: _Steps, cases: list[tuple[str, str]], default: str) -> str:
    """The value of the first (mask, value) whose mask holds, else `default`."""
    out = default
    for mask, value in reversed(cases):
        out = s.where(mask, value, out)
    return out


def _categories(s: _Steps, hue6: str) -> list[str]:
    """Masks: floor(hue6) == k for k = 0..5 (TF's int cast of a non-negative value)."""
    sector = s("floor", hue6)
    return [s.test("equal", sector, s.const(float(k))) for k in range(6)]


def _any(s: _Steps, masks: list[str]) -> str:
    out = masks[0]
    for m in masks[1:]:
        out = s("logical_or", out, m, dtype="bool")
    return out


@tf_op("AdjustSaturation")
def adjust_saturation(ctx: Context, op: Any) -> None:
    """rgb -> hsv (TF's scalar helper: its 2/6 and 4/6 offsets are added in double, here in float32: at most
    one unit in the last place of the hue, which moves the colour continuously), s = clip(s * scale, 0, 1),
    hsv -> rgb by sector (a hue of exactly 1 is TF's grey)."""
    _float32(op)
    v = ctx.val(op.inputs[0])
    s = _Steps(ctx, op, v)
    r, g, b = (s.channel(v.ir, c) for c in range(3))
    zero, one = s.const(0.0), s.const(1.0)
    value = s("maximum", r, s("maximum", g, b))
    spread = s("sub", value, s("minimum", r, s("minimum", g, b)))
    sat = s.where(s.test("greater", value, zero), s("div", spread, value), zero)
    norm = s("div", one, s("mul", s.const(6.0), spread))
    hue = s.where(s.test("equal", r, value), s("mul", norm, s("sub", g, b)),
                  s.where(s.test("equal", g, value), s("add", s("mul", norm, s("sub", b, r)), s.const(2.0 / 6.0)),
                          s("add", s("mul", norm, s("sub", r, g)), s.const(4.0 / 6.0))))
    hue = s.where(s.test("less_equal", spread, zero), zero, hue)
    hue = s.where(s.test("less", hue, zero), s("add", hue, one), hue)
    sat = s("clip", s("mul", sat, s.factor(op.inputs[1])), attrs={"min": 0.0, "max": 1.0})
    chroma = s("mul", sat, value)
    low = s("sub", value, chroma)
    hue6 = s("mul", hue, s.const(6.0))
    two = s.const(2.0)
    within = s("sub", hue6, s("mul", two, s("floor", s("mul", hue6, s.const(0.5)))))  # hue6 mod 2, exact
    mid = s("mul", chroma, s("sub", one, s("abs", s("sub", within, one))))
    k = _categories(s, hue6)
    red = _pick(s, [(_any(s, [k[0], k[5]]), chroma), (_any(s, [k[1], k[4]]), mid)], zero)
    green = _pick(s, [(_any(s, [k[1], k[2]]), chroma), (_any(s, [k[0], k[3]]), mid)], zero)
    blue = _pick(s, [(_any(s, [k[3], k[4]]), chroma), (_any(s, [k[2], k[5]]), mid)], zero)
    ctx.set(op.outputs[0], s.join([s("add", c, low) for c in (red, green, blue)]), v.perm)


@tf_op("AdjustHue")
def adjust_hue(ctx: Context, op: Any) -> None:
    """TF's hue-and-value-range form: the sector of the channel order (ties as TF's comparisons break them),
    h = sector + (ratio or 1 - ratio), h += delta * 6 wrapped into [0, 6), back by sector."""
    _float32(op)
    v = ctx.val(op.inputs[0])
    s = _Steps(ctx, op, v)
    r, g, b = (s.channel(v.ir, c) for c in range(3))
    zero, one, six = s.const(0.0), s.const(1.0), s.const(6.0)
    r_lt_g = s.test("less", r, g)
    # (mask chain of TF's branches) -> sector, v_max, v_mid, v_min
    b_lt_r, b_gt_g = s.test("less", b, r), s.test("greater", b, g)
    b_lt_g, b_gt_r = s.test("less", b, g), s.test("greater", b, r)

    def branch(if_lt: tuple, if_ge: tuple) -> str:
        (l1, l2, l3), (g1, g2, g3) = if_lt, if_ge
        low = s.where(b_lt_r, l1, s.where(b_gt_g, l2, l3))
        high = s.where(b_lt_g, g1, s.where(b_gt_r, g2, g3))
        return s.where(r_lt_g, low, high)

    c = [s.const(float(i)) for i in range(6)]
    sector = branch((c[1], c[3], c[2]), (c[0], c[4], c[5]))
    v_max = branch((g, b, g), (r, b, r))
    v_mid = branch((r, g, b), (g, r, b))
    v_min = branch((b, r, r), (b, g, g))
    ratio = s("div", s("sub", v_mid, v_min), s("sub", v_max, v_min))
    even = _any(s, [s.test("equal", sector, c[i]) for i in (0, 2, 4)])
    hue = s("add", sector, s.where(even, ratio, s("sub", one, ratio)))
    hue = s.where(s.test("equal", v_max, v_min), zero, hue)
    hue = s("add", hue, s.factor(op.inputs[1], 6.0))
    hue = s.where(s.test("less", hue, zero), s("add", hue, six), hue)
    hue = s.where(s.test("greater_equal", hue, six), s("sub", hue, six), hue)
    sector = s("floor", hue)
    frac = s("sub", hue, sector)
    k = [s.test("equal", sector, c[i]) for i in range(6)]
    frac = s.where(_any(s, [k[0], k[2], k[4]]), frac, s("sub", one, frac))
    mid = s("add", v_min, s("mul", frac, s("sub", v_max, v_min)))
    red = _pick(s, [(k[0], v_max), (k[1], mid), (k[2], v_min), (k[3], v_min), (k[4], mid)], v_max)
    green = _pick(s, [(k[0], mid), (k[1], v_max), (k[2], v_max), (k[3], mid), (k[4], v_min)], v_min)
    blue = _pick(s, [(k[0], v_min), (k[1], v_min), (k[2], mid), (k[3], v_max), (k[4], v_max)], mid)
    ctx.set(op.outputs[0], s.join([red, green, blue]), v.perm)
