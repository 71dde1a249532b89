"""MediaPipe's `TransformTensorBilinear` (face landmarks with attention: a crop of a feature map along a run-time
matrix), as its kernel computes it (mediapipe/util/tflite/operations/transform_tensor_bilinear.cc).

Inputs (x NHWC, matrix (1, 4, 4)); options a flexbuffer map: version 2 `output_height`, `output_width`
(its kernel first shifts the matrix's translation by `m0 / 2 + m1 / 2 - 1/2`, in double: align corners),
version 1 `output_size` (no shift). Each output pixel (ox, oy) reads the input at
`tc = (m0 ox + m1 oy + m2 * 0 + m3, m4 ox + m5 oy + m6 * 0 + m7)` (float32, summed left to right); outside
[0, W-1] x [0, H-1] it is 0, else the bilinear mix of the four neighbours at floor(tc) (a neighbour past the
edge reads 0), mixed in double and rounded to float32 as the kernel's `1.0 - contrib` makes it.

Converted with the same operations: the read positions as a gather on the flattened image (indices clamped
into it, the neighbours past the edge masked to 0), the mix in float64. A NaN position reads 0 here (the kernel
gives NaN)."""

from __future__ import annotations

import numpy as np
from flatbuffers import flexbuffers

from .op import Op
from .table import CUSTOM


def _sizes(op: Op) -> tuple[int, int, bool]:
    """(output height, output width, align corners) from the options: version 2's keys or version 1's."""
    try:
        found = flexbuffers.Loads(bytes(op.op.custom_options))
    except Exception:  # noqa: BLE001 - whatever the flexbuffer reader raises on bytes that are not one
        found = None
    if isinstance(found, dict) and "output_size" not in found and {"output_height", "output_width"} <= set(found):
        return int(found["output_height"]), int(found["output_width"]), True
    if isinstance(found, dict) and "output_size" in found and len(found["output_size"]) == 2 \
            and found.get("mode", "bilinear") == "bilinear":
        return int(found["output_size"][0]), int(found["output_size"][1]), False
    raise op.unsupported("options that are not a flexbuffer map of output_height and output_width (version 2) "
                         "or of output_size and mode bilinear (version 1)")


class _Nodes:
    """The operator's IR nodes, each named after it with a running suffix."""

    def __init__(self, op: Op) -> None:
        self.op, self.count = op, 0

    def __call__(self, ir_op: str, inputs: list[str], shape, attrs: dict | None = None,
                 dtype: str = "float32") -> str:
        self.count += 1
        return self.op.add(ir_op, inputs, tuple(shape), attrs, suffix=f"/t{self.count}", out_dtype=dtype)

    def const(self, value: np.ndarray) -> str:
        self.count += 1
        return self.op.add("const", [], value.shape, params={"value": np.ascontiguousarray(value)},
                           suffix=f"/c{self.count}", out_dtype=str(value.dtype))

    def binary(self, ir_op: str, a: str, b: str, dtype: str = "float32") -> str:
        shape = np.broadcast_shapes(self.op.shape(a), self.op.shape(b))
        return self(ir_op, [a, b], shape, dtype=dtype)

    def cast(self, x: str, dtype: str) -> str:
        return self("cast", [x], self.op.shape(x), {"dtype": dtype}, dtype=dtype)


@CUSTOM.register("TransformTensorBilinear")
def transform_tensor_bilinear(op: Op) -> list[str]:
    out_h, out_w, align_corners = _sizes(op)
    if len(op.op.inputs) != 2 or len(op.op.outputs) != 1:
        raise op.unsupported(f"{len(op.op.inputs)} inputs, {len(op.op.outputs)} outputs (image and matrix; one)")
    x, matrix = op.x(0), op.x(1)
    shape = op.shape(x)
    if len(shape) != 4 or shape[0] != 1 or op.dtype(x) != "float32":
        raise op.unsupported(f"an image of shape {shape}, {op.dtype(x)} (float32, batch 1)")
    if op.shape(matrix) != (1, 4, 4) or op.dtype(matrix) != "float32":
        raise op.unsupported(f"a matrix of shape {op.shape(matrix)}, {op.dtype(matrix)} (float32 (1, 4, 4))")
    if out_h <= 0 or out_w <= 0 or tuple(op.tensors[op.op.outputs[0]].shape) != (1, out_h, out_w, shape[1]):
        raise op.unsupported(f"an output of {out_h}x{out_w} where the file's output is "
                             f"{list(op.tensors[op.op.outputs[0]].shape)} (1, H, W, the input's channels)")
    _, channels, height, width = shape
    n = _Nodes(op)
    one = (1, 1, 1, 1)
    flat = n("reshape", [matrix], (1, 1, 1, 16), {"shape": (1, 1, 1, 16)})
    m = [n("slice", [flat], one, {"begin": (0, 0, 0, k), "end": (1, 1, 1, k + 1)}) for k in range(8)]
    if align_corners:  # m3 += m0 * 0.5 + m1 * 0.5 - 0.5, in double, rounded once
        half = n.const(np.full(one, 0.5, np.float64))
        for k in (3, 7):
            shift = n.binary("add", n.binary("mul", n.cast(m[k - 3], "float64"), half, "float64"),
                             n.binary("mul", n.cast(m[k - 2], "float64"), half, "float64"), "float64")
            shift = n.binary("sub", shift, half, "float64")
            m[k] = n.cast(n.binary("add", n.cast(m[k], "float64"), shift, "float64"), "float32")
    ox = n.const(np.arange(out_w, dtype=np.float32).reshape(1, 1, 1, out_w))
    oy = n.const(np.arange(out_h, dtype=np.float32).reshape(1, 1, out_h, 1))
    zero = n.const(np.zeros(one, np.float32))
    tx, ty = (_dot(n, m[k:k + 4], ox, oy, zero) for k in (0, 4))
    inside = _and(n, [n.binary("greater_equal", tx, zero, "bool"), n.binary("greater_equal", ty, zero, "bool"),
                      n.binary("less_equal", tx, n.const(np.full(one, width - 1, np.float32)), "bool"),
                      n.binary("less_equal", ty, n.const(np.full(one, height - 1, np.float32)), "bool")])
    # positions of reads: 0 where the pixel reads nothing (outside, NaN), so that the gather stays inside
    grid = (1, 1, out_h, out_w)
    fx, fy = (n("floor", [n("select", [inside, t, zero], grid)], grid) for t in (tx, ty))
    right, lower = n.binary("sub", tx, fx), n.binary("sub", ty, fy)
    pixels = n("reshape", [x], (1, channels, height * width), {"shape": (1, channels, height * width)})
    corners = {}
    for dy in (0, 1):
        for dx in (0, 1):
            row, column = (n.binary("add", f, n.const(np.full(one, d, np.float32))) if d else f
                           for f, d in ((fy, dy), (fx, dx)))
            edge = _and(n, [n.binary("less_equal", row, n.const(np.full(one, height - 1, np.float32)), "bool"),
                            n.binary("less_equal", column, n.const(np.full(one, width - 1, np.float32)), "bool")])
            row = n("clip", [row], (1, 1, out_h, out_w), {"min": 0.0, "max": float(height - 1)})
            column = n("clip", [column], (1, 1, out_h, out_w), {"min": 0.0, "max": float(width - 1)})
            index = n.binary("add", n.binary("mul", row, n.const(np.full(one, width, np.float32))), column)
            index = n("reshape", [n.cast(index, "int32")], (out_h * out_w,), {"shape": (out_h * out_w,)},
                      dtype="int32")
            value = n("gather", [pixels, index], (1, channels, out_h * out_w), {"axis": 2})
            value = n("reshape", [value], (1, channels, out_h, out_w), {"shape": (1, channels, out_h, out_w)})
            corners[dy, dx] = n.cast(n("select", [edge, value, zero], (1, channels, out_h, out_w)), "float64")
    one64 = n.const(np.ones(one, np.float64))
    right64, lower64 = n.cast(right, "float64"), n.cast(lower, "float64")
    keep_right, keep_lower = n.binary("sub", one64, right64, "float64"), n.binary("sub", one64, lower64, "float64")
    upper, bottom = (n.cast(n.binary("add", n.binary("mul", keep_right, corners[dy, 0], "float64"),
                                     n.binary("mul", right64, corners[dy, 1], "float64"), "float64"), "float32")
                     for dy in (0, 1))
    mixed = n.binary("add", n.binary("mul", lower64, n.cast(bottom, "float64"), "float64"),
                     n.binary("mul", keep_lower, n.cast(upper, "float64"), "float64"), "float64")
    return [op.add("select", [inside, n.cast(mixed, "float32"), zero], (1, channels, out_h, out_w),
                   out_dtype="float32")]


def _dot(n: _Nodes, row: list[str], ox: str, oy: str, zero: str) -> str:
    """DotProduct(row, (ox, oy, 0, 1)), summed left to right in float32."""
    total = n.binary("add", n.binary("mul", row[0], ox), n.binary("mul", row[1], oy))
    return n.binary("add", n.binary("add", total, n.binary("mul", row[2], zero)), row[3])


def _and(n: _Nodes, masks: list[str]) -> str:
    found = masks[0]
    for mask in masks[1:]:
        found = n.binary("logical_and", found, mask, "bool")
    return found
