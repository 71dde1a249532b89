"""Shape functions: windows (conv, pool; SAME/VALID/EXPLICIT via convert/padding/rules.py), batch
norm, resizes, block moves and matmuls."""

from __future__ import annotations

import math

from tf_convert.convert.padding.rules import output_size_1d, same_pads_1d

from ..static import ShapeError
from .base import Dims, Node, broadcast, merge, shape_fn, show

# ---- windows -----------------------------------------------------------------------------------

def _spatial(fmt: str) -> tuple[int, int, int]:
    """(H axis, W axis, C axis) of a rank-4 tensor in `fmt`."""
    return (1, 2, 3) if not fmt.startswith("NC") else (2, 3, 1)


def window_size(n: int | None, k: int, s: int, d: int, padding: str, explicit: tuple[int, int]) -> int | None:
    """TF's output length of a window op along one axis."""
    if n is None:
        return None
    if padding == "SAME":
        before, after = same_pads_1d(n, k, s, d)
    elif padding == "EXPLICIT":
        before, after = explicit
    elif padding == "VALID":
        before, after = 0, 0
    else:
        raise ShapeError(f"unknown padding {padding!r}")
    out = output_size_1d(n, k, s, d, before, after)
    if out < 0:
        raise ShapeError(f"computed output size would be negative: input {n}, window {(k - 1) * d + 1}, "
                         f"stride {s}, {padding} padding")
    return out


def _explicit(node: Node, axis: int) -> tuple[int, int]:
    flat = node.attr("explicit_paddings", []) or []
    return (int(flat[2 * axis]), int(flat[2 * axis + 1])) if len(flat) == 8 else (0, 0)


def _windowed(node: Node, x: Dims, kernel: tuple[int, int], channels: int | None, fmt: str) -> Dims:
    if x is None:
        return [None] * 4
    if len(x) != 4:
        raise ShapeError(f"{node.op.type} needs a rank-4 input, got {show(x)}")
    h, w, c = _spatial(fmt)
    strides = node.attr("strides") or [1, 1, 1, 1]
    dilations = node.attr("dilations") or [1, 1, 1, 1]
    padding = node.attr("padding", "VALID")
    out = list(x)
    for axis, k in zip((h, w), kernel):
        out[axis] = window_size(x[axis], k, int(strides[axis]), int(dilations[axis]), padding,
                                _explicit(node, axis))
    out[c] = channels
    return out


@shape_fn("Conv2D", "DepthwiseConv2dNative")
def _conv(node: Node) -> list:
    x, f = node.dims(0), node.dims(1)
    fmt = node.attr("data_format", "NHWC")
    if f is None:
        return [_windowed(node, x, (1, 1), None, fmt) if x is not None else [None] * 4]
    if len(f) != 4:
        raise ShapeError(f"{node.op.type} needs a rank-4 filter, got {show(f)}")
    kh, kw, ci, co = f
    c_in = x[_spatial(fmt)[2]] if x is not None and len(x) == 4 else None
    if node.op.type == "Conv2D":
        if c_in is not None and ci is not None and (ci == 0 or c_in % ci):
            raise ShapeError(f"Conv2D: the input depth {c_in} is not a multiple of the filter's depth {ci}")
        channels = co
    else:
        if c_in is not None and ci is not None and c_in != ci:
            raise ShapeError(f"DepthwiseConv2dNative: input depth {c_in} differs from the filter's {ci}")
        channels = None if ci is None or co is None else ci * co
    if kh is None or kw is None:
        return [[x[0] if x else None, None, None, None]]
    return [_windowed(node, x, (kh, kw), channels, fmt)]


@shape_fn("MaxPool", "AvgPool")
def _pool(node: Node) -> list:
    x = node.dims(0)
    fmt = node.attr("data_format", "NHWC")
    h, w, c = _spatial(fmt)
    ksize = node.attr("ksize")
    return [_windowed(node, x, (int(ksize[h]), int(ksize[w])), x[c] if x is not None else None, fmt)]


@shape_fn("Conv2DBackpropInput")
def _conv_transpose(node: Node) -> list:
    sizes = node.ints(0)
    if sizes is not None:
        return [sizes]
    return [[None] * 4]


def _volume(fmt: str) -> tuple[tuple[int, int, int], int]:
    """((D, H, W) axes, C axis) of a rank-5 tensor in `fmt` (NDHWC or NCDHW)."""
    return ((2, 3, 4), 1) if fmt.startswith("NC") else ((1, 2, 3), 4)


def _windowed_3d(node: Node, x: Dims, kernel, channels: int | None) -> Dims:
    if x is None:
        return [None] * 5
    if len(x) != 5:
        raise ShapeError(f"{node.op.type} needs a rank-5 input, got {show(x)}")
    spatial, c = _volume(node.attr("data_format", "NDHWC"))
    strides = node.attr("strides") or [1] * 5
    dilations = node.attr("dilations") or [1] * 5
    padding = node.attr("padding", "VALID")
    out = list(x)
    for axis, k in zip(spatial, kernel):
        out[axis] = None if k is None else window_size(x[axis], int(k), int(strides[axis]),
                                                       int(dilations[axis]), padding, (0, 0))
    out[c] = channels
    return out


@shape_fn("Conv3D")
def _conv3d(node: Node) -> list:
    x, f = node.dims(0), node.dims(1)  # filter (kd, kh, kw, in, out)
    if f is not None and len(f) != 5:
        raise ShapeError(f"Conv3D needs a rank-5 filter, got {show(f)}")
    kernel = f[:3] if f is not None else (None, None, None)
    return [_windowed_3d(node, x, kernel, f[4] if f is not None else None)]


@shape_fn("MaxPool3D", "AvgPool3D")
def _pool3d(node: Node) -> list:
    x = node.dims(0)
    spatial, c = _volume(node.attr("data_format", "NDHWC"))
    ksize = node.attr("ksize")
    return [_windowed_3d(node, x, [ksize[a] for a in spatial], x[c] if x is not None and len(x) == 5 else None)]


@shape_fn("Conv3DBackpropInputV2")
def _conv3d_transpose(node: Node) -> list:
    sizes = node.ints(0)
    return [sizes if sizes is not None else [None] * 5]


@shape_fn("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def _batch_norm(node: Node) -> list:
    x = node.dims(0)
    c = None
    if x is not None and len(x) == 4:
        c = x[_spatial(node.attr("data_format", "NHWC"))[2]]
    return [x] + [[c]] * 4 + [None] * (node.n_out - 5)


@shape_fn("ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic", "ResizeArea", "ScaleAndTranslate")
def _resize(node: Node) -> list:
    x, size = node.dims(0), node.ints(1)
    hw = size if size is not None else [None, None]
    return [[x[0], hw[0], hw[1], x[3]] if x is not None else [None, hw[0], hw[1], None]]


@shape_fn("ResizeBicubicGrad")
def _resize_grad(node: Node) -> list:
    return [node.dims(1)]


@shape_fn("DepthToSpace", "SpaceToDepth")
def _depth_space(node: Node) -> list:
    x = node.dims(0)
    if x is None:
        return [[None] * 4]
    b = int(node.attr("block_size"))
    h, w, c = _spatial(node.attr("data_format", "NHWC"))
    out = list(x)
    grow = node.op.type == "DepthToSpace"
    for axis in (h, w):
        out[axis] = None if x[axis] is None else (x[axis] * b if grow else x[axis] // b)
    out[c] = None if x[c] is None else (x[c] // (b * b) if grow else x[c] * b * b)
    return [out]


@shape_fn("SpaceToBatchND")
def _space_to_batch(node: Node) -> list:
    x, block, pads = node.dims(0), node.ints(1), node.value(2)
    if x is None or block is None or pads is None:
        return [None if x is None else [None] * len(x)]
    pads = pads.reshape(-1, 2)
    out = list(x)
    out[0] = None if x[0] is None else x[0] * math.prod(block)
    for i, b in enumerate(block, 1):
        n = x[i]
        out[i] = None if n is None else (n + int(pads[i - 1][0]) + int(pads[i - 1][1])) // b
    return [out]


@shape_fn("BatchToSpaceND")
def _batch_to_space(node: Node) -> list:
    x, block, crops = node.dims(0), node.ints(1), node.value(2)
    if x is None or block is None or crops is None:
        return [None if x is None else [None] * len(x)]
    crops = crops.reshape(-1, 2)
    out = list(x)
    out[0] = None if x[0] is None else x[0] // math.prod(block)
    for i, b in enumerate(block, 1):
        n = x[i]
        out[i] = None if n is None else n * b - int(crops[i - 1][0]) - int(crops[i - 1][1])
    return [out]


# ---- matmul ------------------------------------------------------------------------------------

def _check_inner(op: str, k1: int | None, k2: int | None) -> None:
    if k1 is not None and k2 is not None and k1 != k2:
        raise ShapeError(f"{op}: inner dimensions differ ({k1} vs {k2})")


@shape_fn("MatMul")
def _matmul(node: Node) -> list:
    a, b = node.dims(0), node.dims(1)
    a = a if a is not None else [None, None]
    b = b if b is not None else [None, None]
    if len(a) != 2 or len(b) != 2:
        raise ShapeError(f"MatMul needs rank-2 operands, got {show(a)} and {show(b)}")
    m, k1 = a[::-1] if node.attr("transpose_a", False) else a
    k2, n = b[::-1] if node.attr("transpose_b", False) else b
    _check_inner("MatMul", k1, k2)
    return [[m, n]]


@shape_fn("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def _batch_matmul(node: Node) -> list:
    a, b = node.dims(0), node.dims(1)
    if a is None or b is None:
        return [None]
    m, k1 = a[-2:][::-1] if node.attr("adj_x", False) else a[-2:]
    k2, n = b[-2:][::-1] if node.attr("adj_y", False) else b[-2:]
    _check_inner(node.op.type, k1, k2)
    batch = broadcast(a[:-2], b[:-2]) if node.op.type != "BatchMatMul" else merge(a[:-2], b[:-2])
    return [batch + [m, n]]


# ---- image patches -----------------------------------------------------------------------------
@shape_fn("ExtractImagePatches")
def _extract_image_patches(node: Node) -> list:
    """NHWC windows like a pool's (rates dilate them); depth kh*kw*C."""
    x = node.dims(0)
    if x is None:
        return [[None] * 4]
    if len(x) != 4:
        raise ShapeError(f"ExtractImagePatches needs a rank-4 input, got {show(x)}")
    ksizes, strides, rates = (node.attr(a) for a in ("ksizes", "strides", "rates"))
    padding = node.attr("padding", "VALID")
    out = [x[0]]
    for axis in (1, 2):
        out.append(window_size(x[axis], int(ksizes[axis]), int(strides[axis]), int(rates[axis]), padding, (0, 0)))
    out.append(None if x[3] is None else int(ksizes[1]) * int(ksizes[2]) * x[3])
    return [out]


# ---- Einsum (attention, EinsumDense) -------------------------------------------------

def _einsum_labels(term: str, rank: int, ellipsis_rank: int) -> list[str]:
    """The term's labels, "..." spelled as digits aligned from the right (the ellipsis axes broadcast)."""
    if "..." not in term:
        return list(term)
    head, tail = term.split("...")
    own = rank - len(head) - len(tail)
    return list(head) + [str(ellipsis_rank - own + i) for i in range(own)] + list(tail)


@shape_fn("Einsum")
def _einsum(node: Node) -> list:
    equation = str(node.attr("equation", "")).replace(" ", "")
    operands = [node.dims(i) for i in range(len(node.op.inputs))]
    if "->" not in equation or any(d is None for d in operands):
        return [None]
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    ellipsis_rank = max((len(d) - len(t.replace("...", "")) for t, d in zip(terms, operands) if "..." in t), default=0)
    size: dict[str, int | None] = {}
    for term, dims in zip(terms, operands):
        for label, dim in zip(_einsum_labels(term, len(dims), ellipsis_rank), dims):
            if size.get(label) in (None, 1):  # a known size other than 1 wins (1 broadcasts)
                size[label] = dim if dim is not None or label not in size else size[label]
    labels = _einsum_labels(out, len(out.replace("...", "")) + ellipsis_rank, ellipsis_rank)
    return [[size.get(label) for label in labels]]


# ---- SparseMatMul and the fused recurrent cells ----------------------------------
@shape_fn("SparseMatMul")
def _sparse_matmul(node: Node) -> list:
    return _matmul(node)


@shape_fn("LSTMBlockCell", "GRUBlockCell")
def _block_cell(node: Node) -> list:
    """Each output is (batch, units): h_prev's shape (LSTM: input 2; GRU: input 1)."""
    h = node.dims(2 if node.op.type == "LSTMBlockCell" else 1)
    return [h] * node.n_out


@shape_fn("BlockLSTM", "BlockLSTMV2")
def _block_lstm(node: Node) -> list:
    x, h = node.dims(1), node.dims(3)
    if x is None or h is None:
        return [None] * node.n_out
    return [[x[0], x[1], h[1]]] * node.n_out


@shape_fn("SpaceToBatch", "BatchToSpace")
def _space_batch_v1(node: Node) -> list:
    """The ND forms' rules with the one block size on H and W."""
    x, pads, b = node.dims(0), node.value(1), int(node.attr("block_size"))
    if x is None or pads is None:
        return [None if x is None else [None] * len(x)]
    pads = pads.reshape(-1, 2)
    if node.op.type == "SpaceToBatch":
        size = [None if d is None else (d + int(p[0]) + int(p[1])) // b for d, p in zip(x[1:3], pads)]
        return [[None if x[0] is None else x[0] * b * b, *size, x[3]]]
    size = [None if d is None else d * b - int(p[0]) - int(p[1]) for d, p in zip(x[1:3], pads)]
    return [[None if x[0] is None else x[0] // (b * b), *size, x[3]]]


@shape_fn("Conv")
def _generic_conv(node: Node) -> list:
    """2-D only (CHANNELS_LAST or CHANNELS_FIRST): Conv2D's rule."""
    x, f = node.dims(0), node.dims(1)
    fmt = "NHWC" if node.attr("data_format", "CHANNELS_LAST") == "CHANNELS_LAST" else "NCHW"
    if x is None or f is None or len(x) != 4:
        return [None]
    return [_windowed(node, x, (f[0], f[1]), f[3], fmt)]


@shape_fn("TridiagonalMatMul")
def _tridiagonal_matmul(node: Node) -> list:
    return [node.dims(3)]
