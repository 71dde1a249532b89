"""Shape functions of the nn extras (TF's own shape rules)."""

from __future__ import annotations

from .base import Node, broadcast, shape_fn
from .nn import window_size


def _window(node: Node, x: list | None, kernel, strides) -> list | None:
    """NHWC `x` through a window op (dilation 1, the node's padding), channels kept."""
    if x is None or len(x) != 4 or kernel is None or strides is None:
        return None
    out = list(x)
    for axis in (1, 2):
        out[axis] = window_size(x[axis], int(kernel[axis]), int(strides[axis]), 1, node.attr("padding", "VALID"),
                                (0, 0))
    return out


@shape_fn("MaxPoolV2")
def _max_pool_v2(node: Node) -> list:
    if node.attr("data_format", "NHWC") != "NHWC":
        return [None]
    return [_window(node, node.dims(0), node.ints(1), node.ints(2))]


@shape_fn("MaxPoolWithArgmax")
def _max_pool_with_argmax(node: Node) -> list:
    out = _window(node, node.dims(0), node.attr("ksize"), node.attr("strides"))
    return [out, None if out is None else list(out)]


@shape_fn("DepthwiseConv2dNativeBackpropInput")
def _depthwise_backprop_input(node: Node) -> list:
    sizes = node.ints(0)
    return [sizes if sizes is not None else [None] * 4]


def _padded(x: list | None, paddings) -> list | None:
    if x is None or paddings is None:
        return None
    return [None if n is None else n + int(paddings[2 * a]) + int(paddings[2 * a + 1]) for a, n in enumerate(x)]


@shape_fn("FusedPadConv2D", "FusedResizeAndPadConv2D")
def _fused_pad_conv(node: Node) -> list:
    resized = node.op.type == "FusedResizeAndPadConv2D"
    x = node.dims(0)
    if resized:
        size = node.ints(1)
        x = None if x is None or size is None else [x[0], size[0], size[1], x[3]]
    x = _padded(x, node.ints(2 if resized else 1))
    f = node.dims(3 if resized else 2)
    if f is None or x is None:
        return [None]
    out = _window(node, x, [1, f[0], f[1], 1], node.attr("strides"))
    out[3] = f[3]
    return [out]


@shape_fn("SoftmaxCrossEntropyWithLogits")
def _softmax_xent(node: Node) -> list:
    both = broadcast(node.dims(0), node.dims(1))
    return [None if both is None else both[:1], both]


@shape_fn("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_xent(node: Node) -> list:
    x = node.dims(0)
    return [None if x is None else x[:1], x]


@shape_fn("QuantizeAndDequantizeV2", "QuantizeAndDequantizeV3", "QuantizeAndDequantizeV4", "QuantizeAndDequantize")
def _quantize_dequantize(node: Node) -> list:
    return [node.dims(0)]


@shape_fn("Dilation2D")
def _dilation2d(node: Node) -> list:
    x, f = node.dims(0), node.dims(1)
    if x is None or f is None or len(x) != 4:
        return [None]
    strides, rates, padding = node.attr("strides"), node.attr("rates"), node.attr("padding", "VALID")
    out = list(x)
    for axis, k in ((1, f[0]), (2, f[1])):
        out[axis] = window_size(x[axis], int(k), int(strides[axis]), int(rates[axis]), padding, (0, 0))
    return [out]


@shape_fn("RGBToHSV", "HSVToRGB", "AdjustContrastv2", "AdjustSaturation", "AdjustHue", "AdjustContrast")
def _image_colour(node: Node) -> list:
    return [node.dims(0)]


@shape_fn("NthElement")
def _nth_element(node: Node) -> list:
    x = node.dims(0)
    return [None if x is None else list(x[:-1])]


@shape_fn("ExtractVolumePatches")
def _extract_volume_patches(node: Node) -> list:
    x = node.dims(0)
    if x is None or len(x) != 5:
        return [None]
    kernel, strides, padding = node.attr("ksizes"), node.attr("strides"), node.attr("padding", "VALID")
    out = [x[0]] + [window_size(x[a], int(kernel[a]), int(strides[a]), 1, padding, (0, 0)) for a in (1, 2, 3)]
    depth = None if x[4] is None else x[4] * int(kernel[1]) * int(kernel[2]) * int(kernel[3])
    return [out + [depth]]


@shape_fn("MatrixDeterminant", "BatchMatrixDeterminant")
def _matrix_determinant(node: Node) -> list:
    x = node.dims(0)
    return [None if x is None else x[:-2]]


@shape_fn("MatrixInverse", "BatchMatrixInverse")
def _matrix_inverse(node: Node) -> list:
    return [node.dims(0)]
