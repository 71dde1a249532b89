"""MediaPipe's argmax pooling pair (hair segmentation's encoder/decoder), as its kernels compute them
(mediapipe/util/tflite/operations/max_pool_argmax.cc, max_unpooling.cc). Both take a `TfLitePoolParams` C
struct as the custom options' bytes: int32 padding (1 SAME, 2 VALID), stride_width, stride_height,
filter_width, filter_height, activation.

`MaxPoolingWithArgmax2D` (x) -> (max, index): the window's max (the first one in row-major order) after the
fused activation, and its place in the window as a float, `row * filter_width + column + 0.1`.
`MaxUnpooling2D` (x, index) -> each value written at its index's place in a zero output `filter` times the
input's size.

Converted where the windows tile the input (filter == stride, square, the size a multiple of it: SAME and
VALID then agree): the max is a max pool, the index an argmax over the window's elements (space_to_depth
lays them out in row-major order), the unpooling a select per place and depth_to_space. TFLite's XNNPACK
delegate (what the interpreter and MediaPipe run by default) takes the pair where it has no fused
activation, and computes the max and the unpooled output as MediaPipe's reference kernels do except at
infinities, which it keeps (the reference kernel clamps the max to +-FLT_MAX): the conversion follows
XNNPACK there, so that --verify agrees. Exact for every value but NaN (the kernels skip it, a pool passes it
on); with RELU, +inf stays +inf (the reference kernel: FLT_MAX). XNNPACK writes the index as its own uint32
in column-major window order: an index tensor a file exposes is MediaPipe's reference kernel's float here,
not the interpreter's, so a check of it against the interpreter fails (exit 4) rather than passing wrongly."""

from __future__ import annotations

import struct

import numpy as np

from .op import Op
from .table import CUSTOM

_PADDINGS = {1: "SAME", 2: "VALID"}  # TfLitePadding
# TfLiteFusedActivation -> what CalculateActivationRange's clamp is (none or any other: XNNPACK's, no clamp)
_ACTIVATIONS = {1: ("relu", {}), 2: ("clip", {"min": -1.0, "max": 1.0}), 3: ("clip", {"min": 0.0, "max": 6.0})}


def _block(op: Op, inputs: int, outputs: int) -> int:
    """The pooling window's side, from the options; a refusal unless the windows tile the input."""
    if len(op.op.custom_options) < 24:
        raise op.unsupported(f"{len(op.op.custom_options)} bytes of options (TfLitePoolParams: at least 24)")
    code, stride_w, stride_h, filter_w, filter_h, _ = struct.unpack_from("<6i", op.op.custom_options)
    if code not in _PADDINGS:
        raise op.unsupported(f"padding {code} (1 SAME, 2 VALID)")
    if len(op.op.inputs) != inputs or len(op.op.outputs) != outputs:
        raise op.unsupported(f"{len(op.op.inputs)} inputs and {len(op.op.outputs)} outputs "
                             f"({inputs} and {outputs})")
    n, c, h, w = _image(op, 0)
    if not (filter_h == filter_w == stride_h == stride_w > 0):
        raise op.unsupported(f"a {filter_h}x{filter_w} window with strides {stride_h}x{stride_w}: only "
                             "square windows that tile the input (filter == stride) are converted")
    if outputs == 2 and (h % filter_h or w % filter_w):
        raise op.unsupported(f"a {filter_h}x{filter_w} window over a {h}x{w} input: only sizes that are a "
                             "multiple of the window are converted (the windows tile the input)")
    return filter_h


def _image(op: Op, k: int) -> tuple[int, int, int, int]:
    shape = op.shape(op.x(k))
    if len(shape) != 4 or op.dtype(op.x(k)) != "float32":
        raise op.unsupported(f"input {k} of shape {shape}, {op.dtype(op.x(k))} (a float32 image, NHWC)")
    return shape


def _const(op: Op, value: np.ndarray, suffix: str) -> str:
    return op.add("const", [], value.shape, params={"value": np.ascontiguousarray(value)}, suffix=suffix,
                  out_dtype=str(value.dtype))


@CUSTOM.register("MaxPoolingWithArgmax2D")
def max_pooling_with_argmax_2d(op: Op) -> list[str]:
    block = _block(op, 1, 2)
    activation = struct.unpack_from("<6i", op.op.custom_options)[5]
    x = op.x(0)
    n, c, h, w = op.shape(x)
    out = (n, c, h // block, w // block)
    pooled = op.add("max_pool2d", [x], out, {"kernel": (block, block), "stride": (block, block),
                                             "pads": (0, 0, 0, 0), "padding": "VALID"})
    if activation in _ACTIVATIONS:
        ir_op, attrs = _ACTIVATIONS[activation]
        pooled = op.add(ir_op, [pooled], out, dict(attrs), suffix="/activation")
    windows = op.add("space_to_depth", [x], (n, c * block * block, *out[2:]), {"block_size": block},
                     suffix="/windows")
    by_place = (n, block * block, c, *out[2:])  # space_to_depth's channel (row * block + column) * C + c
    windows = op.add("reshape", [windows], by_place, {"shape": by_place}, suffix="/by_place")
    place = op.add("argmax", [windows], out, {"axis": 1, "keepdims": False}, suffix="/place", out_dtype="int64")
    place = op.add("cast", [place], out, {"dtype": "float32"}, suffix="/float", out_dtype="float32")
    tenth = _const(op, np.full((1, 1, 1, 1), 0.1, np.float32), "/tenth")  # the kernel's `+ 0.1f`
    return [pooled, op.add("add", [place, tenth], out, suffix="/index")]


@CUSTOM.register("MaxUnpooling2D")
def max_unpooling_2d(op: Op) -> list[str]:
    block = _block(op, 2, 1)
    x, index = op.x(0), op.x(1)
    n, c, h, w = op.shape(x)
    if _image(op, 1) != (n, c, h, w):
        raise op.unsupported(f"values of shape {(n, c, h, w)} and indices of shape {op.shape(index)} (NCHW): "
                             "the same shape")
    one = (n, 1, c, h, w)
    by_place = (n, block * block, c, h, w)
    place = op.add("cast", [index], (n, c, h, w), {"dtype": "int32"}, suffix="/place", out_dtype="int32")
    place = op.add("reshape", [place], one, {"shape": one}, suffix="/place_axis", out_dtype="int32")
    places = _const(op, np.arange(block * block, dtype=np.int32).reshape(1, -1, 1, 1, 1), "/places")
    here = op.add("equal", [place, places], by_place, suffix="/here", out_dtype="bool")
    values = op.add("reshape", [x], one, {"shape": one}, suffix="/values")
    zero = _const(op, np.zeros((1, 1, 1, 1, 1), np.float32), "/zero")
    placed = op.add("select", [here, values, zero], by_place, suffix="/placed", out_dtype="float32")
    flat = (n, block * block * c, h, w)
    placed = op.add("reshape", [placed], flat, {"shape": flat}, suffix="/flat", out_dtype="float32")
    return [op.add("depth_to_space", [placed], (n, c, h * block, w * block), {"block_size": block},
                   out_dtype="float32")]
