"""The MXNet handlers of the spatial family: convolutions, pooling and pad."""

from __future__ import annotations

import numpy as np

from tf_convert.convert.ir.lazy import contiguous
from tf_convert.convert.padding import Pads, Plan, with_kernel_taps
from tf_convert.emitters.base import NodeContext

from .contract import TABLE, Ctx, Fragment, Ref
from .symbol import symbol_dtype


def _pad_layer(f: Fragment, ctx: Ctx, x: Ref, plan: Plan) -> Ref:
    """The plan's separate constant `pad` operator (`<node>_pad`) in front of a layer run unpadded."""
    if plan.pad_layer is None:
        return x
    name = f"{ctx.name}_pad"
    f.pad_layers += [r.entry(ctx.node.name, f"Pad operator {name}") for r in plan.records]
    return f.op("Pad", name, [x], mode="constant", pad_width=(0, 0, 0, 0, *plan.pad_layer.pads),
                constant_value=plan.pad_layer.value)


def _crop(f: Fragment, name: str, x: Ref, shape: tuple[int, ...], begin: tuple[int, ...], size: tuple[int, ...]) -> Ref:
    """Keep x[..., begin:begin+size] on the trailing axes (static `slice`)."""
    lead = len(shape) - len(begin)
    # leading axes (batch, channels) unbounded: None keeps them whole at any batch size
    b = (None,) * lead + tuple(begin)
    e = (None,) * lead + tuple(s + n for s, n in zip(begin, size))
    return f.op("slice", name, [x], begin=b, end=e)


def _cropped(f: Fragment, ctx: Ctx, y: Ref, plan: Plan, what: str) -> None:
    """Slice the plan's crop away from the layer's output `y` (its full size: output + crop)."""
    c, (oh, ow) = plan.crop, ctx.out_shape[2:]
    f.pad_layers += [r.entry(ctx.node.name, what) for r in plan.records]
    full = (oh + c.top + c.bottom, ow + c.left + c.right)
    _crop(f, ctx.name, y, (*ctx.out_shape[:2], *full), (c.top, c.left), (oh, ow))


def _hw(pads: Pads) -> tuple[int, int]:
    return pads.top, pads.left  # MXNet layers pad symmetrically


@TABLE.register("conv2d")
def conv2d(ctx: Ctx) -> Fragment:
    a, p, f = ctx.attrs, ctx.node.params, Fragment()
    plan = ctx.plan()
    x = _pad_layer(f, ctx, ctx.inputs[0], plan)
    weight = with_kernel_taps(contiguous(p["weight"], np.float32), plan.kernel_taps)
    ins = [x, f.var(f"{ctx.name}_weight", weight)]
    if p.get("bias") is not None:
        ins.append(f.var(f"{ctx.name}_bias", p["bias"]))
    f.op("Convolution", ctx.name, ins, kernel=weight.shape[2:], stride=a["stride"], dilate=a["dilation"],
         pad=_hw(plan.layer_pads), num_filter=weight.shape[0],
         num_group=a["groups"], no_bias=len(ins) == 2)
    return f


@TABLE.register("max_pool2d")
def max_pool2d(ctx: Ctx) -> Fragment:
    a, f = ctx.attrs, Fragment()
    plan = ctx.plan()
    x = _pad_layer(f, ctx, ctx.inputs[0], plan)
    f.op("Pooling", ctx.name, [x], pool_type="max", kernel=a["kernel"], stride=a["stride"],
         pad=_hw(plan.layer_pads), pooling_convention="valid")
    return f


@TABLE.register("avg_pool2d")
def avg_pool2d(ctx: Ctx) -> Fragment:
    a, f = ctx.attrs, Fragment()
    plan = ctx.plan()
    if a.get("count_include_pad", False):
        # padded zeros count: a zero pad operator then a plain average is exactly that
        x = _pad_layer(f, ctx, ctx.inputs[0], plan)
        f.op("Pooling", ctx.name, [x], pool_type="avg", kernel=a["kernel"], stride=a["stride"],
             pad=_hw(plan.layer_pads), pooling_convention="valid", count_include_pad=True)
        return f
    pool_name = f"{ctx.name}_full" if not plan.crop.zero else ctx.name
    y = f.op("Pooling", pool_name, [ctx.inputs[0]], pool_type="avg", kernel=a["kernel"], stride=a["stride"],
             pad=_hw(plan.layer_pads), pooling_convention=plan.convention, count_include_pad=False)
    if not plan.crop.zero:
        _cropped(f, ctx, y, plan, f"Pooling {pool_name} + slice {ctx.name}")
    return f


def _transposed_limit(ctx: NodeContext) -> str | None:
    plan = ctx.plan()
    if any(adj >= s for adj, s in zip(plan.output_padding, ctx.attrs["stride"])):
        return "needs Deconvolution adj >= stride (dilated transposed conv), which MXNet rejects"
    return None


@TABLE.register("conv_transpose2d", limit=_transposed_limit)
def conv_transpose2d(ctx: Ctx) -> Fragment:
    a, p, f = ctx.attrs, ctx.node.params, Fragment()
    plan = ctx.plan()
    weight = contiguous(p["weight"], np.float32)  # IOHW == MXNet's Deconvolution layout
    ins = [ctx.inputs[0], f.var(f"{ctx.name}_weight", weight)]
    if p.get("bias") is not None:
        ins.append(f.var(f"{ctx.name}_bias", p["bias"]))
    name = f"{ctx.name}_full" if not plan.crop.zero else ctx.name
    # no_bias is always explicit: Deconvolution defaults to no_bias=True
    y = f.op("Deconvolution", name, ins, kernel=a["kernel"], stride=a["stride"], dilate=a["dilation"],
             pad=_hw(plan.layer_pads), adj=plan.output_padding, num_filter=weight.shape[1] * a["groups"],
             num_group=a["groups"], no_bias=len(ins) == 2)
    if not plan.crop.zero:
        _cropped(f, ctx, y, plan, f"slice {ctx.name} after Deconvolution {name}")
    return f


def _pad_limit(ctx: NodeContext) -> str | None:
    mode = ctx.attrs.get("mode", "constant")
    return None if mode in ("constant", "reflect", "symmetric") else f"pad mode {mode!r}"


@TABLE.register("pad", limit=_pad_limit)
def pad(ctx: Ctx) -> Fragment:
    a, f = ctx.attrs, Fragment()
    pads = [tuple(int(v) for v in pw) for pw in a["pads"]]
    shape, mode = ctx.in_shape(), a.get("mode", "constant")
    value = float(a.get("value", 0.0))
    native = len(shape) in (4, 5) and not any(pads[0] + pads[1]) and mode in ("constant", "reflect")
    if native:
        width = tuple(v for pw in pads for v in pw)
        f.op("Pad", ctx.name, [ctx.inputs[0]], mode=mode, pad_width=width, constant_value=value)
        return f
    # anything else: concatenate borders built from slices (reflect/symmetric) or constants
    x, cur = ctx.inputs[0], list(shape)
    for axis, (before, after) in enumerate(pads):
        if not before and not after:
            continue
        parts = []
        for side, count in (("b", before), ("a", after)):
            if not count:
                parts.append(None)
                continue
            tag = f"{ctx.name}_ax{axis}{side}"
            if mode == "constant":
                block = cur.copy()
                block[axis] = count
                held = symbol_dtype(ctx.graph.tensors[ctx.node.output].dtype)  # Concat takes one dtype: the input's
                parts.append(f.var(tag, np.full(block, value, held), dtype=held))
                continue
            n, skip = cur[axis], int(mode == "reflect")
            lo, hi = (skip, skip + count) if side == "b" else (n - count - skip, n - skip)
            edge = f.op("slice_axis", f"{tag}_slice", [x], axis=axis, begin=lo, end=hi)
            parts.append(f.op("reverse", f"{tag}_rev", [edge], axis=axis))
        ins = [r for r in (parts[0], x, parts[1]) if r is not None]
        cur[axis] += before + after
        last = all(not any(pw) for pw in pads[axis + 1:])
        x = f.op("Concat", ctx.name if last else f"{ctx.name}_ax{axis}", ins, dim=axis, num_args=len(ins))
    if x is ctx.inputs[0]:  # nothing to pad (Keras's ZeroPadding1D((0, 0))): the node still needs an output
        f.op("_copy", ctx.name, [x])
    return f
