"""Spatial TF ops: convolutions (plain, depthwise, transposed), pooling and pads.

Dilated convolutions in TF's phase spelling: SpaceToBatchND -> Conv2D / DepthwiseConv2dNative
(stride 1) -> BatchToSpaceND, as `tf.nn.depthwise_conv2d(dilations=...)`, `tf.nn.atrous_conv2d` and
`tf.nn.convolution(dilation_rate=...)` write them (DeepLab, dilated MobileNets), become one IR conv2d
(dilation = block_shape, pads from S2B's paddings and B2S's crops; the arithmetic is
convert.padding.space_to_batch_conv). The batch-folded tensors between them have no IR value: the
SpaceToBatchND handler only checks the pattern, the conv handler leaves a conv fed by SpaceToBatchND
alone, and the BatchToSpaceND handler emits the conv.

A dilated 1-D conv (`tf.nn.conv1d` / Keras Conv1D with dilation_rate) is the same pattern on (N, L, C)
with the conv1d's own ExpandDims / Squeeze inside it: SpaceToBatchND -> ExpandDims(axis 1) -> Conv2D ->
Squeeze(axis 1) -> BatchToSpaceND. It becomes one conv2d on (N, C, 1, L) with dilation (1, block);
the ExpandDims / Squeeze inside are skipped too (`inside_dilated_conv`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tf_convert.convert.errors import UsageError
from tf_convert.convert.ir.lazy import contiguous
from tf_convert.convert.padding import PaddingError, output_hw, space_to_batch_conv, tf_pads, transposed_conv_crop

from .. import runtime_shapes, space_batch
from ..context import Context, NotConvertible, attr, fmt_perm, permute_shape
from ..table import tf_op

_CONVS = ("Conv2D", "DepthwiseConv2dNative")


_PATTERN = ("SpaceToBatchND -> [ExpandDims ->] Conv2D/DepthwiseConv2dNative (stride 1) [-> Squeeze] "
            "-> BatchToSpaceND")


@dataclass(frozen=True)
class Atrous:
    s2b: Any
    conv: Any
    b2s: Any
    fmt: str
    block: tuple[int, int]  # (H, W)
    paddings: tuple[tuple[int, int], tuple[int, int]]  # ((top, bottom), (left, right))
    crops: tuple[tuple[int, int], tuple[int, int]]
    expand: Any = None  # the 1-D spelling's ExpandDims (N, L, C) -> (N, 1, L, C), and its Squeeze back
    squeeze: Any = None


def _only_consumer(t: Any) -> Any | None:
    users = t.consumers()
    return users[0] if len(users) == 1 else None


def _spatial(ctx: Context, op: Any, fmt: str) -> tuple[tuple[int, int], list[tuple[int, int]]]:
    """(block (H, W), [(before, after) for H, W]) of a SpaceToBatchND / BatchToSpaceND, which act on
    TF axes 1..M; every axis other than the conv's H and W must be untouched."""
    block = [int(b) for b in np.atleast_1d(ctx.const(op.inputs[1]))]
    pairs = [tuple(int(v) for v in p) for p in ctx.const(op.inputs[2]).reshape(-1, 2)]
    h_axis = 1 if fmt.startswith("NH") else 2
    spatial = (h_axis, h_axis + 1)
    if len(pairs) != len(block) or len(block) + 1 < h_axis + 2:
        raise NotConvertible(f"{op.type} block_shape {block} does not cover H and W ({fmt})")
    for axis, (b, p) in enumerate(zip(block, pairs), start=1):
        if axis not in spatial and (b != 1 or p != (0, 0)):
            raise NotConvertible(f"{op.type} moves TF axis {axis}, not only H and W of the {fmt} conv")
    at = [a - 1 for a in spatial]
    return (block[at[0]], block[at[1]]), [pairs[at[0]], pairs[at[1]]]


def _spatial_1d(ctx: Context, op: Any) -> tuple[tuple[int, int], list[tuple[int, int]]]:
    """(block (1, L), [(0, 0), (before, after)]) of a SpaceToBatchND / BatchToSpaceND on (N, L, C)."""
    block = [int(b) for b in np.atleast_1d(ctx.const(op.inputs[1]))]
    pairs = [tuple(int(v) for v in p) for p in ctx.const(op.inputs[2]).reshape(-1, 2)]
    if len(block) != 1 or len(pairs) != 1:
        raise NotConvertible(f"{op.type} block_shape {block} on a rank-3 tensor must cover the length only")
    return (1, block[0]), [(0, 0), pairs[0]]


def _through(t: Any, op_type: str) -> tuple[Any | None, Any | None]:
    """(the op of `op_type` that is `t`'s only consumer or None, the only consumer after it)."""
    user = _only_consumer(t)
    if user is not None and user.type == op_type:
        return user, _only_consumer(user.outputs[0])
    return None, user


def _fed_by_s2b(conv: Any) -> bool:
    src = conv.inputs[0].op
    if src.type == "ExpandDims":
        src = src.inputs[0].op
    return src.type == "SpaceToBatchND"


def inside_dilated_conv(op: Any) -> bool:
    """An ExpandDims / Squeeze of a dilated 1-D conv's phase spelling: BatchToSpaceND emits the conv."""
    if op.type == "ExpandDims":
        return op.inputs[0].op.type == "SpaceToBatchND"
    if op.type == "Squeeze":
        conv = op.inputs[0].op
        return conv.type in _CONVS and _fed_by_s2b(conv)
    return False


def _check_1d(ctx: Context, a: Atrous) -> None:
    """The ExpandDims / Squeeze must add and drop the NHWC H axis, so the length is W."""
    if a.fmt != "NHWC":
        raise NotConvertible(f"a dilated 1-D conv in {a.fmt} ({a.conv.name}); only NHWC is supported")
    phase, expanded = ctx.shape(a.expand.inputs[0]), ctx.shape(a.expand.outputs[0])
    conv_out, squeezed = ctx.shape(a.conv.outputs[0]), ctx.shape(a.squeeze.outputs[0])
    if (tuple(expanded) != (phase[0], 1, *phase[1:]) or conv_out[1] != 1
            or tuple(squeezed) != (conv_out[0], *conv_out[2:])):
        raise NotConvertible(f"the ExpandDims / Squeeze around {a.conv.name} must add and remove axis 1 "
                             f"({_PATTERN})")


def match(ctx: Context, s2b: Any) -> Atrous:
    """The pattern starting at `s2b`, or NotConvertible saying what differs."""
    expand, conv = _through(s2b.outputs[0], "ExpandDims")
    fed = (expand or s2b).outputs[0].name
    if conv is None or conv.type not in _CONVS or conv.inputs[0].name != fed:
        raise NotConvertible(f"SpaceToBatchND is only supported as a dilated convolution ({_PATTERN})")
    squeeze, b2s = _through(conv.outputs[0], "Squeeze") if expand is not None else (None, _only_consumer(
        conv.outputs[0]))
    if b2s is None or b2s.type != "BatchToSpaceND" or (expand is None) != (squeeze is None):
        raise NotConvertible(f"the conv after SpaceToBatchND must feed only a BatchToSpaceND ({_PATTERN})")
    if not all(ctx.is_const(t) for t in b2s.inputs[1:]):  # not evaluated: B2S is not in the graph
        raise UsageError(
            f"an output lies inside the dilated convolution {s2b.name} -> {conv.name} -> {b2s.name}, "
            f"whose inner tensors are batch-folded phases with no equivalent; use '{b2s.name}'"
        )
    fmt = attr(conv, "data_format", "NHWC")
    if hw(attr(conv, "strides"), fmt) != (1, 1):
        raise NotConvertible(f"a strided conv between SpaceToBatchND and BatchToSpaceND ({conv.name})")
    spatial = (lambda op: _spatial_1d(ctx, op)) if expand is not None else (lambda op: _spatial(ctx, op, fmt))
    block, paddings = spatial(s2b)
    b2s_block, crops = spatial(b2s)
    if b2s_block != block:
        raise NotConvertible(f"BatchToSpaceND block {b2s_block} differs from SpaceToBatchND's {block}")
    a = Atrous(s2b, conv, b2s, fmt, block, tuple(paddings), tuple(crops), expand, squeeze)
    if expand is not None:
        _check_1d(ctx, a)
    return a


@tf_op("SpaceToBatchND")
def space_to_batch(ctx: Context, op: Any) -> None:
    """Checked here (so a stray one is reported at its own node); BatchToSpaceND emits the conv."""
    ctx.shape(op.inputs[0])  # an unknown spatial size -> ask for --input-shape
    expand, conv = _through(op.outputs[0], "ExpandDims")
    if conv is None or conv.type not in _CONVS or conv.inputs[0].name != (expand or op).outputs[0].name:
        space_batch.space_to_batch(ctx, op)  # on its own: the moves themselves
        return
    match(ctx, op)


@tf_op("BatchToSpaceND")
def batch_to_space(ctx: Context, op: Any) -> None:
    conv = op.inputs[0].op
    if conv.type == "Squeeze":  # the 1-D spelling
        conv = conv.inputs[0].op
    if conv.type not in _CONVS or not _fed_by_s2b(conv):
        space_batch.batch_to_space(ctx, op)  # on its own: the moves themselves
        return
    s2b = conv.inputs[0].op
    a = match(ctx, s2b.inputs[0].op if s2b.type == "ExpandDims" else s2b)
    x = a.s2b.inputs[0]
    weight, groups = conv_weight(ctx, a.conv)
    kernel = tuple(int(k) for k in weight.shape[2:])
    phase_hw = hw(ctx.shape(a.conv.inputs[0]), a.fmt)
    inner_dilation = hw(attr(a.conv, "dilations", [1, 1, 1, 1]), a.fmt)
    inner_pads = conv_pads(a.conv, phase_hw, kernel, (1, 1), inner_dilation, a.fmt)
    plan = space_to_batch_conv(a.block, a.paddings, a.crops, inner_pads, inner_dilation)
    x_ir = ctx.nchw(x, a.fmt) if a.expand is None else _as_one_row(ctx, a)
    if any(plan.input_crop):  # crops beyond the padding: drop those input rows first
        n, c, h, w = ctx.graph.shape(x_ir)
        t, b, l, r = plan.input_crop  # noqa: E741 - pad sides t, b, l, r
        shape = (n, c, h - t - b, w - l - r)
        x_ir = ctx.emit("slice", f"{a.s2b.name}/crop", [x_ir], shape,
                        {"begin": (0, 0, t, l), "end": (n, c, h - b, w - r)}, source_op="SpaceToBatchND")
    source = f"SpaceToBatchND+{a.conv.type}+BatchToSpaceND"
    if a.expand is None:
        out = emit_conv(ctx, a.conv.name, x_ir, weight, groups, (1, 1), plan.dilation, plan.pads,
                        nchw_out(ctx, op, a.fmt), source, "EXPLICIT")
        ctx.set(op.outputs[0], out, fmt_perm(a.fmt))
        return
    n, length, c = ctx.shape(op.outputs[0])
    out = emit_conv(ctx, a.conv.name, x_ir, weight, groups, (1, 1), plan.dilation, plan.pads,
                    (n, c, 1, length), f"SpaceToBatchND+ExpandDims+{a.conv.type}+Squeeze+BatchToSpaceND", "EXPLICIT")
    out = ctx.emit("reshape", a.squeeze.name, [out], (n, c, length), {"shape": (n, c, length)},
                   source_op="Squeeze")
    ctx.set(op.outputs[0], out, _NLC_TO_NCL)


_NLC_TO_NCL = (0, 2, 1)


def _as_one_row(ctx: Context, a: Atrous) -> str:
    """The (N, L, C) input of a dilated 1-D conv as an (N, C, 1, L) IR tensor."""
    x_ncl = ctx.ir(a.s2b.inputs[0], _NLC_TO_NCL)
    n, c, length = ctx.graph.shape(x_ncl)
    return ctx.emit("reshape", a.expand.name, [x_ncl], (n, c, 1, length), {"shape": (n, c, 1, length)},
                    source_op="ExpandDims")


def hw(values: list[int], data_format: str) -> tuple[int, int]:
    """The (H, W) entries of a per-axis attribute given in `data_format` order."""
    return (values[1], values[2]) if data_format.startswith("NH") else (values[2], values[3])


def _explicit(op: Any, data_format: str) -> tuple[int, ...] | None:
    flat = attr(op, "explicit_paddings", []) or []
    if len(flat) != 8:
        return None
    pairs = [tuple(flat[i : i + 2]) for i in range(0, 8, 2)]
    h, w = (pairs[1], pairs[2]) if data_format.startswith("NH") else (pairs[2], pairs[3])
    return (h[0], h[1], w[0], w[1])


def conv_pads(op: Any, in_hw, kernel, stride, dilation, data_format: str):
    try:
        return tf_pads(in_hw, kernel, stride, dilation, attr(op, "padding", "VALID"),
                       _explicit(op, data_format))
    except PaddingError as e:
        raise NotConvertible(str(e)) from None


def nchw_out(ctx: Context, op: Any, data_format: str) -> tuple[int, ...]:
    return permute_shape(ctx.shape(op.outputs[0]), fmt_perm(data_format))


def _check_hw(in_hw, kernel, stride, dilation, pads, out_shape) -> None:
    got = output_hw(in_hw, kernel, stride, dilation, pads)
    if tuple(got) != tuple(out_shape[2:]):
        raise NotConvertible(f"padding rule gives output {got}, TF says {tuple(out_shape[2:])}")


def emit_conv(ctx: Context, name: str, x_ir: str, weight: np.ndarray, groups: int, stride, dilation,
              pads, out_shape, source: str, padding: str) -> str:
    """An IR conv2d on NCHW `x_ir`, after checking TF's output size against the pads. `padding` is the rule
    the pads came from (SAME: they follow the input size)."""
    kernel = tuple(int(k) for k in weight.shape[2:])
    _check_hw(ctx.graph.shape(x_ir)[2:], kernel, stride, dilation, pads, out_shape)
    attrs = {"kernel": kernel, "stride": tuple(stride), "dilation": tuple(dilation), "groups": groups,
             "pads": tuple(pads), "padding": padding}
    return ctx.emit("conv2d", name, [x_ir], out_shape, attrs,
                    {"weight": contiguous(weight, np.float32)}, source)


def _conv2d_weight(ctx: Context, op: Any) -> tuple[np.ndarray, int]:
    filt = ctx.const(op.inputs[1])  # HWIO
    fmt = attr(op, "data_format", "NHWC")
    in_c = ctx.shape(op.inputs[0])[3 if fmt.startswith("NH") else 1]
    return filt.transpose(3, 2, 0, 1), in_c // filt.shape[2]


def _depthwise_weight(ctx: Context, op: Any) -> tuple[np.ndarray, int]:
    filt = ctx.const(op.inputs[1])  # (kh, kw, in, multiplier)
    kh, kw, cin, mult = filt.shape
    # TF orders output channels as c * mult + m, which is exactly the row-major flattening.
    return filt.reshape(kh, kw, cin * mult).transpose(2, 0, 1)[:, None, :, :], int(cin)


_CONV_WEIGHTS = {"Conv2D": _conv2d_weight, "DepthwiseConv2dNative": _depthwise_weight}


def conv_weight(ctx: Context, op: Any) -> tuple[np.ndarray, int]:
    """(OIHW weight, groups) of a Conv2D / DepthwiseConv2dNative."""
    return _CONV_WEIGHTS[op.type](ctx, op)


@tf_op("Conv2D", "DepthwiseConv2dNative")
def conv(ctx: Context, op: Any) -> None:
    if _fed_by_s2b(op):
        return  # a dilated conv in TF's phase spelling: the BatchToSpaceND after it emits it (batch_to_space below)
    fmt = attr(op, "data_format", "NHWC")
    x = op.inputs[0]
    ctx.shape(op.outputs[0]), ctx.shape(x)  # unknown sizes -> ask for --input-shape, naming this node
    weight, groups = conv_weight(ctx, op)
    x_ir = ctx.nchw(x, fmt)
    kernel = tuple(int(k) for k in weight.shape[2:])
    stride = hw(attr(op, "strides"), fmt)
    dilation = hw(attr(op, "dilations", [1, 1, 1, 1]), fmt)
    pads = conv_pads(op, ctx.graph.shape(x_ir)[2:], kernel, stride, dilation, fmt)
    out_shape = nchw_out(ctx, op, fmt)
    out = emit_conv(ctx, op.name, x_ir, weight, groups, stride, dilation, pads, out_shape, op.type,
                    attr(op, "padding", "VALID"))
    ctx.set(op.outputs[0], out, fmt_perm(fmt))


@tf_op("Conv2DBackpropInput")
def conv_transpose(ctx: Context, op: Any) -> None:
    fmt = attr(op, "data_format", "NHWC")
    filt = ctx.const(op.inputs[1])  # (kh, kw, out_c, in_c)
    x_ir = ctx.nchw(op.inputs[2], fmt)
    out_shape = nchw_out(ctx, op, fmt)
    kernel = tuple(int(k) for k in filt.shape[:2])
    stride = hw(attr(op, "strides"), fmt)
    dilation = hw(attr(op, "dilations", [1, 1, 1, 1]), fmt)
    if dilation != (1, 1):
        raise NotConvertible("dilated transposed convolution is not supported")
    try:
        crop = transposed_conv_crop(out_shape[2:], kernel, stride, dilation,
                                    attr(op, "padding", "VALID"), _explicit(op, fmt))
    except PaddingError as e:
        raise NotConvertible(str(e)) from None
    attrs = {"kernel": kernel, "stride": tuple(stride), "dilation": tuple(dilation), "groups": 1,
             "crop": tuple(crop), "output_size": tuple(out_shape[2:])}
    weight = contiguous(filt.transpose(3, 2, 0, 1), np.float32)  # IOHW
    out = ctx.emit("conv_transpose2d", op.name, [x_ir], out_shape, attrs, {"weight": weight},
                   "Conv2DBackpropInput")
    ctx.set(op.outputs[0], out, fmt_perm(fmt))


def _pool(ctx: Context, op: Any, ir_op: str, extra: dict) -> None:
    fmt = attr(op, "data_format", "NHWC")
    ctx.shape(op.outputs[0]), ctx.shape(op.inputs[0])  # unknown sizes -> ask for --input-shape
    x_ir = ctx.nchw(op.inputs[0], fmt)
    in_shape = ctx.graph.shape(x_ir)
    ksize = attr(op, "ksize")
    strides = attr(op, "strides")
    if ksize[0] != 1 or strides[0] != 1 or ksize[3 if fmt.startswith("NH") else 1] != 1:
        raise NotConvertible("pooling over the batch or channel axis is not supported")
    kernel, stride = hw(ksize, fmt), hw(strides, fmt)
    pads = conv_pads(op, in_shape[2:], kernel, stride, (1, 1), fmt)
    out_shape = nchw_out(ctx, op, fmt)
    _check_hw(in_shape[2:], kernel, stride, (1, 1), pads, out_shape)
    attrs = {"kernel": tuple(kernel), "stride": tuple(stride), "pads": tuple(pads), **extra,
             "padding": attr(op, "padding", "VALID")}
    out = ctx.emit(ir_op, op.name, [x_ir], out_shape, attrs, source_op=op.type)
    ctx.set(op.outputs[0], out, fmt_perm(fmt))


@tf_op("MaxPool")
def max_pool(ctx: Context, op: Any) -> None:
    _pool(ctx, op, "max_pool2d", {})


@tf_op("AvgPool")
def avg_pool(ctx: Context, op: Any) -> None:
    _pool(ctx, op, "avg_pool2d", {"count_include_pad": False})


_PAD_MODES = {"Pad": "constant", "PadV2": "constant"}


@tf_op("Pad", "PadV2", "MirrorPad")
def pad(ctx: Context, op: Any) -> None:
    if runtime_shapes.follows(ctx, op, 1):
        runtime_shapes.pad(ctx, op)
        return
    x = op.inputs[0]
    v = ctx.val(x)
    rank = len(ctx.shape(x))
    if not rank:  # (0, 2) paddings, constant or not, pad nothing
        ctx.set(op.outputs[0], v.ir, v.perm)
        return
    paddings = ctx.const(op.inputs[1]).astype(int).reshape(rank, 2)
    perm = v.perm if v.perm is not None else tuple(range(rank))
    pads = tuple((int(paddings[p][0]), int(paddings[p][1])) for p in perm)  # IR axis order
    mode = _PAD_MODES.get(op.type) or attr(op, "mode", "REFLECT").lower()
    value = float(ctx.const(op.inputs[2]).reshape(())) if op.type == "PadV2" else 0.0
    out_shape = permute_shape(ctx.shape(op.outputs[0]), v.perm)
    out = ctx.emit("pad", op.name, [v.ir], out_shape, {"pads": pads, "mode": mode, "value": value},
                   source_op=op.type)
    ctx.set(op.outputs[0], out, v.perm)
