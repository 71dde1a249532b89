"""MediaPipe's custom operators, as MediaPipe's own kernels compute them
(mediapipe/util/tflite/operations/*.cc).

`Convolution2DTransposeBias` (selfie segmentation, hair segmentation): TRANSPOSE_CONV plus a bias, inputs
(x NHWC, filter OHWI, bias), its options a C struct `TfLiteTransposeConvParams` stored as the custom options'
bytes: int32 padding (1 SAME, 2 VALID), stride_width, stride_height. Its output size and crop are its own,
not TF's: per axis, SAME removes max(0, k - (n - 1) % s - 1) rows from the full (n - 1) * s + k, the first
half of them (rounded down) at the start; VALID removes none. (TF's SAME gives n * s; the two agree only
where (n - 1) % s == s - 1, so the size is fixed at the file's.)"""

from __future__ import annotations

import struct

import numpy as np

from . import mediapipe_landmarks, mediapipe_pooling, mediapipe_transform  # noqa: F401 - MediaPipe's other operators register there
from .op import Op
from .table import CUSTOM
from .weights import float_weight

_PADDINGS = {1: "SAME", 2: "VALID"}  # TfLitePadding


def transpose_conv_bias_size(n: int, kernel: int, stride: int, padding: str) -> tuple[int, int]:
    """(output size, rows cropped at the start) along one axis, as MediaPipe's Prepare/Eval compute them."""
    total = max(0, kernel - (n - 1) % stride - 1) if padding == "SAME" else 0
    return stride * (n - 1) + kernel - total, total // 2


@CUSTOM.register("Convolution2DTransposeBias")
def convolution_2d_transpose_bias(op: Op) -> list[str]:
    if len(op.op.custom_options) < 12:
        raise op.unsupported(f"{len(op.op.custom_options)} bytes of options (TfLiteTransposeConvParams: 12)")
    code, stride_w, stride_h = struct.unpack_from("<3i", op.op.custom_options)
    padding = _PADDINGS.get(code)
    if padding is None or stride_w < 1 or stride_h < 1:
        raise op.unsupported(f"padding {code}, strides {stride_h}x{stride_w} (SAME/VALID and positive strides)")
    if len(op.op.inputs) != 3:
        raise op.unsupported(f"{len(op.op.inputs)} inputs (input, filter, bias)")
    filt = float_weight(op, 1, "filter")  # (O, H, W, I)
    bias = float_weight(op, 2, "bias").reshape(-1)
    x = op.x(0)
    shape = op.shape(x)
    if len(shape) != 4 or filt.ndim != 4 or filt.shape[3] != shape[1] or bias.size != filt.shape[0]:
        raise op.unsupported(f"filter {filt.shape} and bias {bias.shape} for an input of shape {shape} (NCHW)")
    n, _, h, w = shape
    kernel = tuple(int(k) for k in filt.shape[1:3])
    (oh, top), (ow, left) = (transpose_conv_bias_size(size, k, s, padding)
                             for size, k, s in zip((h, w), kernel, (stride_h, stride_w)))
    weight = np.ascontiguousarray(filt.transpose(3, 0, 1, 2))  # IOHW
    attrs = {"kernel": kernel, "stride": (stride_h, stride_w), "dilation": (1, 1), "groups": 1, "crop": (top, left),
             "output_size": (oh, ow)}  # no `padding`: the crop is MediaPipe's, fixed at this size
    return [op.add("conv_transpose2d", [x], (n, filt.shape[0], oh, ow), attrs, {"weight": weight, "bias": bias})]
