"""More nn ops: MaxPoolV2 (constant ksize/strides), MaxPoolWithArgmax (values and argmax),
DepthwiseConv2dNativeBackpropInput, FusedPadConv2D / FusedResizeAndPadConv2D (graph-transform fusions:
MirrorPad (after a bilinear resize) then Conv2D), the softmax cross-entropies (loss and backprop),
Dilation2D and Conv3DBackpropInput (V1)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.ir.lazy import contiguous
from tf_convert.convert.padding import PaddingError, output_hw, transposed_conv_crop
from tf_convert.convert.padding.rules import same_pads_1d

from ..context import NHWC_TO_NCHW, Context, NotConvertible, attr, fmt_perm
from ..table import tf_op
from .shape import pick_every
from .spatial import conv_pads, emit_conv, hw, nchw_out
from .spatial_3d import conv_transpose3d


def _max_pool(ctx: Context, op: Any, ksize: list[int], strides: list[int]) -> None:
    """TF's max pooling as the IR max_pool2d (pads from TF's rule; padded elements never win)."""
    fmt = attr(op, "data_format", "NHWC")
    x_ir = ctx.nchw(op.inputs[0], fmt)
    c_axis = 3 if fmt.startswith("NH") else 1
    if ksize[0] != 1 or strides[0] != 1 or ksize[c_axis] != 1 or strides[c_axis] != 1:
        raise NotConvertible("pooling over the batch or channel axis is not supported")
    kernel, stride = hw(ksize, fmt), hw(strides, fmt)
    in_hw = ctx.graph.shape(x_ir)[2:]
    pads = conv_pads(op, in_hw, kernel, stride, (1, 1), fmt)
    out_shape = nchw_out(ctx, op, fmt)
    if tuple(output_hw(in_hw, kernel, stride, (1, 1), pads)) != tuple(out_shape[2:]):
        raise NotConvertible(f"padding rule gives another output size than TF's {tuple(out_shape[2:])}")
    attrs = {"kernel": tuple(kernel), "stride": tuple(stride), "pads": tuple(pads),
             "padding": attr(op, "padding", "VALID")}  # SAME: the pads follow the input size
    out = ctx.emit("max_pool2d", op.name, [x_ir], out_shape, attrs, source_op=op.type)
    ctx.set(op.outputs[0], out, fmt_perm(fmt))


@tf_op("MaxPoolV2")
def max_pool_v2(ctx: Context, op: Any) -> None:
    ksize, strides = ([int(v) for v in np.asarray(ctx.const(t)).reshape(-1)] for t in op.inputs[1:3])
    _max_pool(ctx, op, ksize, strides)


@tf_op("MaxPoolWithArgmax")
def max_pool_with_argmax(ctx: Context, op: Any) -> None:
    """The pooled values, and where anything reads it the argmax: TF's flattened (y * W + x) * C + c
    positions (+ b * H * W * C with include_batch_in_index), the first maximum of each window in row order."""
    _max_pool(ctx, op, list(op.get_attr("ksize")), list(op.get_attr("strides")))
    if op.outputs[1].consumers():
        _argmax(ctx, op, list(op.get_attr("ksize"))[1:3], list(op.get_attr("strides"))[1:3])


def _argmax(ctx: Context, op: Any, kernel: list[int], stride: list[int]) -> None:
    """Each window offset (dy, dx) gives every output pixel one candidate (a strided view of the padded
    input) and its constant position; a running strict maximum keeps the first of equal values, as TF's
    kernel; padded cells (-inf) never win over a real one."""
    if op.inputs[0].dtype.name != "float32":
        raise NotConvertible(f"MaxPoolWithArgmax of {op.inputs[0].dtype.name}: only float32 images are supported")
    if kernel[0] * kernel[1] > 64:
        raise NotConvertible(f"MaxPoolWithArgmax's argmax over a {kernel[0]}x{kernel[1]} window (one candidate "
                             "per window cell, at most 64)")
    x = ctx.nchw(op.inputs[0], "NHWC")
    n, c, h, w = ctx.graph.shape(x)
    top, _, left, _ = conv_pads(op, (h, w), kernel, stride, (1, 1), "NHWC")
    out_shape = tuple(ctx.graph.shape(ctx.val(op.outputs[0]).ir))
    oh, ow = out_shape[2:]
    need_h, need_w = (oh - 1) * stride[0] + kernel[0], (ow - 1) * stride[1] + kernel[1]
    pads = ((0, 0), (0, 0), (top, max(0, need_h - h - top)), (left, max(0, need_w - w - left)))
    if any(pads[2] + pads[3]):
        x = ctx.emit("pad", f"{op.name}/argmax_pad", [x], (n, c, h + sum(pads[2]), w + sum(pads[3])),
                     {"pads": pads, "mode": "constant", "value": float("-inf")}, source_op=op.type)
    dtype = op.get_attr("Targmax").name
    batch = np.arange(n).reshape(n, 1, 1, 1) * (h * w * c) if bool(attr(op, "include_batch_in_index", False)) \
        else np.zeros((1, 1, 1, 1), np.int64)
    best = index = None
    for dy in range(kernel[0]):
        for dx in range(kernel[1]):
            part = f"{op.name}/argmax_{dy}_{dx}"
            full = tuple(ctx.graph.shape(x))
            view = ctx.emit("slice", f"{part}/from", [x], (n, c, full[2] - dy, full[3] - dx),
                            {"begin": (0, 0, dy, dx), "end": full}, source_op=op.type)
            view = pick_every(ctx, f"{part}/rows", view, 2, stride[0], oh, op.type)
            view = pick_every(ctx, f"{part}/cols", view, 3, stride[1], ow, op.type)
            ys = np.arange(oh).reshape(1, 1, oh, 1) * stride[0] + dy - top
            xs = np.arange(ow).reshape(1, 1, 1, ow) * stride[1] + dx - left
            where = (ys * w + xs) * c + np.arange(c).reshape(1, c, 1, 1) + batch
            spot = ctx.emit("const", f"{part}/index", [], where.shape, params={"value": where.astype(dtype)},
                            source_op=op.type, out_dtype=dtype)
            if best is None:
                best, index = view, spot
                continue
            better = ctx.emit("greater", f"{part}/better", [view, best], out_shape, source_op=op.type,
                              out_dtype="bool")
            best = ctx.emit("select", f"{part}/max", [better, view, best], out_shape, source_op=op.type,
                            out_dtype="float32")
            index_shape = tuple(np.broadcast_shapes(out_shape, ctx.graph.shape(spot), ctx.graph.shape(index)))
            index = ctx.emit("select", f"{part}/argmax", [better, spot, index], index_shape, source_op=op.type,
                             out_dtype=dtype)
    if tuple(ctx.graph.shape(index)) != out_shape:  # a 1x1 window over one image: the positions, broadcast
        zero = ctx.emit("const", f"{op.name}/argmax_zero", [], out_shape,
                        params={"value": np.zeros(out_shape, dtype)}, source_op=op.type, out_dtype=dtype)
        index = ctx.emit("add", f"{op.name}/argmax", [zero, index], out_shape, source_op=op.type)
    ctx.set(op.outputs[1], index, NHWC_TO_NCHW)


@tf_op("DepthwiseConv2dNativeBackpropInput")
def depthwise_conv_transpose(ctx: Context, op: Any) -> None:
    """The transposed depthwise conv: a grouped conv_transpose2d, one group per input channel (input
    channel c reads the multiplier's M output channels c * M .. c * M + M - 1)."""
    fmt = attr(op, "data_format", "NHWC")
    filt = np.asarray(ctx.const(op.inputs[1]))  # (kh, kw, C, M)
    kh, kw, channels, mult = filt.shape
    x_ir = ctx.nchw(op.inputs[2], fmt)
    out_shape = nchw_out(ctx, op, fmt)
    stride = hw(attr(op, "strides"), fmt)
    dilation = hw(attr(op, "dilations", [1, 1, 1, 1]), fmt)
    if dilation != (1, 1):
        raise NotConvertible("dilated transposed depthwise convolution is not supported")
    if attr(op, "padding", "VALID") == "EXPLICIT":
        raise NotConvertible("EXPLICIT padding of a transposed depthwise convolution is not supported")
    try:
        crop = transposed_conv_crop(out_shape[2:], (kh, kw), stride, dilation, attr(op, "padding", "VALID"), None)
    except PaddingError as e:
        raise NotConvertible(str(e)) from None
    # IOHW with I = C * M (channel c * M + m) and O / groups = 1
    weight = contiguous(filt.transpose(2, 3, 0, 1).reshape(channels * mult, 1, kh, kw), np.float32)
    attrs = {"kernel": (kh, kw), "stride": tuple(stride), "dilation": tuple(dilation), "groups": int(channels),
             "crop": tuple(crop), "output_size": tuple(out_shape[2:])}
    out = ctx.emit("conv_transpose2d", op.name, [x_ir], out_shape, attrs, {"weight": weight}, op.type)
    ctx.set(op.outputs[0], out, fmt_perm(fmt))


@tf_op("FusedPadConv2D", "FusedResizeAndPadConv2D")
def fused_pad_conv(ctx: Context, op: Any) -> None:
    """[ResizeBilinear ->] MirrorPad -> Conv2D, as TF's graph transforms fuse them (NHWC, dilation 1)."""
    resized = op.type == "FusedResizeAndPadConv2D"
    x = ctx.nchw(op.inputs[0], "NHWC")
    n, c, h, w = ctx.graph.shape(x)
    if resized:
        size = tuple(int(v) for v in np.asarray(ctx.const(op.inputs[1])).reshape(-1))
        coordinate = "align_corners" if op.get_attr("resize_align_corners") else "asymmetric"
        if size != (h, w):
            h, w = size
            x = ctx.emit("resize", f"{op.name}/resize", [x], (n, c, h, w),
                         {"mode": "bilinear", "coordinate": coordinate, "size": size}, source_op=op.type)
    paddings = np.asarray(ctx.const(op.inputs[2 if resized else 1])).astype(int).reshape(4, 2)
    pads = tuple((int(paddings[p][0]), int(paddings[p][1])) for p in NHWC_TO_NCHW)
    if any(v for pair in pads[:2] for v in pair):
        raise NotConvertible(f"{op.type} padding the batch or channel axis")
    if any(v for pair in pads for v in pair):
        h, w = h + sum(pads[2]), w + sum(pads[3])
        x = ctx.emit("pad", f"{op.name}/pad", [x], (n, c, h, w),
                     {"pads": pads, "mode": op.get_attr("mode").decode().lower(), "value": 0.0}, source_op=op.type)
    filt = np.asarray(ctx.const(op.inputs[3 if resized else 2]))  # HWIO
    weight = filt.transpose(3, 2, 0, 1)
    stride = hw(list(op.get_attr("strides")), "NHWC")
    pads_conv = conv_pads(op, (h, w), weight.shape[2:], stride, (1, 1), "NHWC")
    # fixed pads: the resize and pad before the conv tie it to the converted size anyway
    out = emit_conv(ctx, op.name, x, weight, c // filt.shape[2], stride, (1, 1), pads_conv,
                    nchw_out(ctx, op, "NHWC"), op.type, "EXPLICIT")
    ctx.set(op.outputs[0], out, NHWC_TO_NCHW)


def _cross_entropy(ctx: Context, op: Any, logits: str, labels: str) -> None:
    """loss = -sum(labels * log_softmax(logits)) per row; backprop = softmax(logits) - labels."""
    shape = tuple(ctx.graph.shape(logits))
    if len(shape) != 2 or tuple(ctx.graph.shape(labels)) != shape:
        raise NotConvertible(f"{op.type} of logits {shape} and labels {tuple(ctx.graph.shape(labels))}: "
                             "only equal (batch, classes) shapes are supported")
    # both outputs: the one nothing reads is pruned with the dead nodes
    log_p = ctx.emit("log_softmax", f"{op.name}/log_softmax", [logits], shape, {"axis": 1}, source_op=op.type)
    weighted = ctx.emit("mul", f"{op.name}/weighted", [labels, log_p], shape, source_op=op.type)
    total = ctx.emit("reduce_sum", f"{op.name}/sum", [weighted], shape[:1], {"axes": (1,), "keepdims": False},
                     source_op=op.type)
    ctx.set(op.outputs[0], ctx.emit("neg", op.name, [total], shape[:1], source_op=op.type))
    p = ctx.emit("softmax", f"{op.name}/softmax", [logits], shape, {"axis": 1}, source_op=op.type)
    ctx.set(op.outputs[1], ctx.emit("sub", f"{op.name}/backprop", [p, labels], shape, source_op=op.type))


@tf_op("SoftmaxCrossEntropyWithLogits")
def softmax_cross_entropy(ctx: Context, op: Any) -> None:
    _cross_entropy(ctx, op, ctx.tf_order(op.inputs[0]), ctx.tf_order(op.inputs[1]))


@tf_op("SparseSoftmaxCrossEntropyWithLogits")
def sparse_softmax_cross_entropy(ctx: Context, op: Any) -> None:
    """The labels (class ids; TF refuses ids outside [0, classes)) as one-hot rows."""
    logits = ctx.tf_order(op.inputs[0])
    batch, classes = ctx.graph.shape(logits)
    labels = ctx.emit("one_hot", f"{op.name}/one_hot", [ctx.tf_order(op.inputs[1])], (batch, classes),
                      {"depth": int(classes), "axis": 1, "on": 1.0, "off": 0.0}, source_op=op.type,
                      out_dtype="float32")
    _cross_entropy(ctx, op, logits, labels)


# ---- Dilation2D: a max over the window of x + filter -----------------------------------------------
_MAX_TAPS = 256  # one slice per filter position


@tf_op("Dilation2D")
def dilation2d(ctx: Context, op: Any) -> None:
    """max over (i, j) of x[y * s + i * r - pad, ...] + filter[i, j, c]: the input padded with -inf (TF skips
    positions outside it; SAME takes TF's asymmetric pads), one strided slice per filter position plus its
    filter value, a running maximum. Adds and maxima of the same float32 values as TF: exact."""
    n, h, w, c = ctx.shape(op.inputs[0])
    _, oh, ow, _ = ctx.shape(op.outputs[0])
    filt = np.asarray(ctx.const(op.inputs[1]), np.float32)  # (kh, kw, C)
    kh, kw, _ = filt.shape
    (_, sh, sw, _), (_, rh, rw, _) = (list(op.get_attr(a)) for a in ("strides", "rates"))
    if kh * kw > _MAX_TAPS:
        raise NotConvertible(f"a {kh}x{kw} dilation filter is {kh * kw} slices here (at most {_MAX_TAPS})")
    x = ctx.nchw(op.inputs[0], "NHWC")
    if op.get_attr("padding").decode() == "SAME":
        (t, b), (left, r) = same_pads_1d(h, kh, sh, rh), same_pads_1d(w, kw, sw, rw)
        if t or b or left or r:
            h, w = h + t + b, w + left + r
            x = ctx.emit("pad", f"{op.name}/pad", [x], (n, c, h, w),
                         {"pads": ((0, 0), (0, 0), (t, b), (left, r)), "mode": "constant", "value": -np.inf},
                         source_op=op.type)
    rows, cols = (oh - 1) * sh + 1, (ow - 1) * sw + 1
    out = None
    for i in range(kh):
        for j in range(kw):
            top, lft = i * rh, j * rw
            tap = f"{op.name}/tap{i}_{j}"
            y = ctx.emit("slice", tap, [x], (n, c, rows, cols),
                         {"begin": (0, 0, top, lft), "end": (n, c, top + rows, lft + cols)}, source_op=op.type)
            if sh > 1 and oh > 1:
                y = pick_every(ctx, f"{tap}/rows", y, 2, sh, oh, op.type)
            if sw > 1 and ow > 1:
                y = pick_every(ctx, f"{tap}/cols", y, 3, sw, ow, op.type)
            value = np.ascontiguousarray(filt[i, j].reshape(1, c, 1, 1))
            weight = ctx.emit("const", f"{tap}/filter", [], value.shape, params={"value": value}, source_op=op.type)
            y = ctx.emit("add", f"{tap}/plus", [y, weight], (n, c, oh, ow), source_op=op.type)
            last = i == kh - 1 and j == kw - 1
            out = y if out is None else ctx.emit("maximum", op.name if last else f"{tap}/max", [out, y],
                                                 (n, c, oh, ow), source_op=op.type)
    ctx.set(op.outputs[0], out, NHWC_TO_NCHW)


@tf_op("Conv3DBackpropInput")
def conv_transpose3d_v1(ctx: Context, op: Any) -> None:
    """V1 (removed at GraphDef version 10) takes the forward input itself, not its shape: its shape is the
    output's, which is all V2's handler reads of input_sizes."""
    conv_transpose3d(ctx, op)


@tf_op("NthElement")
def nth_element(ctx: Context, op: Any) -> None:
    """The n-th smallest value along the last axis (n-th largest with reverse): the last of the top n + 1
    values (of -x for the smallest, negated back: exact)."""
    n = int(np.asarray(ctx.const(op.inputs[1])).reshape(()))
    shape = tuple(ctx.shape(op.inputs[0]))
    x = ctx.tf_order(op.inputs[0])
    if not op.get_attr("reverse"):
        x = ctx.emit("neg", f"{op.name}/negated", [x], shape, source_op=op.type)
    top = shape[:-1] + (n + 1,)
    x = ctx.emit("top_k_values", f"{op.name}/top", [x], top, {"k": n + 1}, source_op=op.type)
    x = ctx.emit("slice", f"{op.name}/nth", [x], shape[:-1] + (1,),
                 {"begin": (0,) * (len(shape) - 1) + (n,), "end": top}, source_op=op.type)
    out_shape = shape[:-1]
    if not op.get_attr("reverse"):
        x = ctx.emit("neg", f"{op.name}/value", [x], shape[:-1] + (1,), source_op=op.type)
    ctx.set(op.outputs[0], ctx.emit("reshape", op.name, [x], out_shape, {"shape": out_shape}, source_op=op.type))
