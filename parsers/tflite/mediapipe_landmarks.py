"""MediaPipe's landmark operators (face landmarks with attention), as its kernels compute them
(mediapipe/util/tflite/operations/landmarks_to_transform_matrix.cc, transform_landmarks.cc), version 2: the
one on rank-3 landmarks (1, N, 3), which each version's Prepare tells apart by the input's rank.

`Landmarks2TransformMatrix` (landmarks) -> a (1, 4, 4) matrix: the rotation from the line through two
landmarks, the rotated bounding box of a subset of them, and the matrix shift * rotation * scale * shift
the kernel multiplies out; its options a flexbuffer map (subset_idxs, left_rotation_idx, right_rotation_idx,
target_rotation_radians, output_height, output_width, scale_x, scale_y). Each product is spelled with the
kernel's own float32 operations in its order (the zeros and ones of its matrices left out: they add or
multiply exactly); cos, sin and atan2 are each runtime's own, so the targets agree to float32 rounding,
not bit for bit.
`TransformLandmarks` (landmarks (1, N, D), matrix (1, 4, 4)) -> x' = m0 x + m1 y + m2 * 0 + m3, y' the same with
m4..m7, z kept: the first two rows of the matrix applied to (x, y, 0, 1), as the kernel's DotProduct sums.

Version 1 (rank-4 landmarks, other options) is refused by name."""

from __future__ import annotations

import numpy as np
from flatbuffers import flexbuffers

from .op import Op
from .table import CUSTOM

_V2_KEYS = ("subset_idxs", "left_rotation_idx", "right_rotation_idx", "target_rotation_radians",
            "output_height", "output_width", "scale_x", "scale_y")


def _landmarks(op: Op, k: int, dims: tuple[int, ...]) -> tuple[str, tuple[int, ...]]:
    """Input k (float32): a refusal naming version 1 where it is rank 4."""
    x = op.x(k)
    shape = op.shape(x)
    if len(shape) == 4:
        raise op.unsupported("version 1 (rank-4 landmarks): only version 2 (rank 3), the one MediaPipe's CPU "
                             "resolver registers, is converted")
    if len(shape) != 3 or shape[0] != 1 or shape[2] not in dims or op.dtype(x) != "float32":
        wanted = " or ".join(map(str, dims))
        raise op.unsupported(f"input {k} of shape {shape}, {op.dtype(x)} (float32 (1, N, {wanted}))")
    return x, shape


def _options(op: Op) -> dict:
    try:
        found = flexbuffers.Loads(bytes(op.op.custom_options))
    except Exception:  # noqa: BLE001 - whatever the flexbuffer reader raises on bytes that are not one
        found = None
    if not isinstance(found, dict) or any(key not in found for key in _V2_KEYS):
        raise op.unsupported(f"options that are not a flexbuffer map of {', '.join(_V2_KEYS)}")
    return found


class _Scalars:
    """(1, 1, 1) float32 tensors of one operator, with the kernel's float32 arithmetic."""

    def __init__(self, op: Op) -> None:
        self.op, self.count = op, 0

    def _add(self, ir_op: str, inputs: list[str], attrs: dict | None = None) -> str:
        self.count += 1
        return self.op.add(ir_op, inputs, (1, 1, 1), attrs, suffix=f"/s{self.count}", out_dtype="float32")

    def const(self, value: float) -> str:
        self.count += 1
        return self.op.add("const", [], (1, 1, 1), params={"value": np.full((1, 1, 1), value, np.float32)},
                           suffix=f"/c{self.count}", out_dtype="float32")

    def element(self, x: str, row: int, column: int) -> str:
        return self._add("slice", [x], {"begin": (0, row, column), "end": (1, row + 1, column + 1)})

    def __getattr__(self, name: str):
        if name in ("add", "sub", "mul", "div", "atan2", "cos", "sin", "neg"):
            return lambda *inputs: self._add(name, list(inputs))
        raise AttributeError(name)


@CUSTOM.register("Landmarks2TransformMatrix")
def landmarks_to_transform_matrix(op: Op) -> list[str]:
    landmarks, (_, count, _) = _landmarks(op, 0, (3,))
    options = _options(op)
    flat = [int(i) for i in options["subset_idxs"]]
    subset = flat + flat[-1:] if len(flat) % 2 else flat  # an odd count: the last one paired with itself
    picked = [int(options["left_rotation_idx"]), int(options["right_rotation_idx"]), *subset]
    if not subset or any(not 0 <= i < count for i in picked):
        raise op.unsupported(f"landmark indices {picked} for {count} landmarks")
    height, width = int(options["output_height"]), int(options["output_width"])
    if height <= 0 or width <= 0 or not (options["scale_x"] > 0 and options["scale_y"] > 0):
        raise op.unsupported(f"output {height}x{width}, scale {options['scale_x']}x{options['scale_y']} "
                             "(positive, as the kernel requires)")
    s = _Scalars(op)
    left, right = (int(options[k]) for k in ("left_rotation_idx", "right_rotation_idx"))
    # rotation = target - atan2(right.y - left.y, right.x - left.x)
    angle = s.atan2(s.sub(s.element(landmarks, right, 1), s.element(landmarks, left, 1)),
                    s.sub(s.element(landmarks, right, 0), s.element(landmarks, left, 0)))
    rotation = s.sub(s.const(options["target_rotation_radians"]), angle)
    cos, sin = s.cos(rotation), s.sin(rotation)
    # the subset, rotated: x' = cos x + (-sin) y, y' = sin x + cos y; its box's min and max
    points = op.add("gather", [landmarks, _index(op, subset)], (1, len(subset), 3), {"axis": 1},
                    suffix="/subset", out_dtype="float32")
    px, py = (op.add("slice", [points], (1, len(subset), 1), {"begin": (0, 0, k), "end": (1, len(subset), k + 1)},
                     suffix=f"/subset{k}", out_dtype="float32") for k in (0, 1))
    rx = _rows(op, "add", _rows(op, "mul", cos, px, "/rx0"), _rows(op, "mul", s.neg(sin), py, "/rx1"), "/rx")
    ry = _rows(op, "add", _rows(op, "mul", sin, px, "/ry0"), _rows(op, "mul", cos, py, "/ry1"), "/ry")
    max_x, min_x, max_y, min_y = (op.add(reduce, [r], (1, 1, 1), {"axes": (1,), "keepdims": True},
                                         suffix=f"/{reduce}_{axis}", out_dtype="float32")
                                  for axis, r in (("x", rx), ("y", ry)) for reduce in ("reduce_max", "reduce_min"))
    crop_w, crop_h = s.sub(max_x, min_x), s.sub(max_y, min_y)
    two = s.const(2.0)
    mid_x, mid_y = s.div(s.add(min_x, max_x), two), s.div(s.add(min_y, max_y), two)
    back = s.neg(rotation)  # t_rotation_inverse: cos(-r), -sin(-r); sin(-r), cos(-r)
    cos_back, sin_back = s.cos(back), s.sin(back)
    crop_x = s.add(s.mul(cos_back, mid_x), s.mul(s.neg(sin_back), mid_y))
    crop_y = s.add(s.mul(sin_back, mid_x), s.mul(cos_back, mid_y))
    # shift(crop) * rotation(-r) * scale * shift(-output / 2), multiplied out
    turn = s.neg(rotation)
    cos_t, sin_t = s.cos(turn), s.sin(turn)
    scale_x = s.div(s.mul(s.const(options["scale_x"]), crop_w), s.const(float(width)))
    scale_y = s.div(s.mul(s.const(options["scale_y"]), crop_h), s.const(float(height)))
    a, b = s.mul(cos_t, scale_x), s.mul(s.neg(sin_t), scale_y)
    c, d = s.mul(sin_t, scale_x), s.mul(cos_t, scale_y)
    shift_x, shift_y = s.const(-(width / 2.0)), s.const(-(height / 2.0))
    tx = s.add(s.add(s.mul(a, shift_x), s.mul(b, shift_y)), crop_x)
    ty = s.add(s.add(s.mul(c, shift_x), s.mul(d, shift_y)), crop_y)
    zero, one = s.const(0.0), s.const(1.0)
    entries = [a, b, zero, tx, c, d, zero, ty, zero, zero, one, zero, zero, zero, zero, one]
    row = op.add("concat", entries, (1, 1, 16), {"axis": 2}, suffix="/entries", out_dtype="float32")
    return [op.add("reshape", [row], (1, 4, 4), {"shape": (1, 4, 4)}, out_dtype="float32")]


def _index(op: Op, values: list[int]) -> str:
    value = np.asarray(values, np.int32)
    return op.add("const", [], value.shape, params={"value": value}, suffix="/indices", out_dtype="int32")


def _rows(op: Op, ir_op: str, a: str, b: str, suffix: str) -> str:
    shape = np.broadcast_shapes(op.shape(a), op.shape(b))
    return op.add(ir_op, [a, b], shape, suffix=suffix, out_dtype="float32")


@CUSTOM.register("TransformLandmarks")
def transform_landmarks(op: Op) -> list[str]:
    landmarks, (_, count, dims) = _landmarks(op, 0, (2, 3))
    matrix = op.x(1)
    if op.shape(matrix) != (1, 4, 4) or op.dtype(matrix) != "float32":
        raise op.unsupported(f"a matrix of shape {op.shape(matrix)}, {op.dtype(matrix)} (float32 (1, 4, 4))")
    s = _Scalars(op)
    zero = s.const(0.0)
    x, y = (op.add("slice", [landmarks], (1, count, 1), {"begin": (0, 0, k), "end": (1, count, k + 1)},
                   suffix=f"/axis{k}", out_dtype="float32") for k in (0, 1))
    out = []
    for row in (0, 1):  # DotProduct((m0, m1, m2, m3), (x, y, 0, 1)), summed left to right
        m = [s.element(matrix, row, k) for k in range(4)]
        total = _rows(op, "add", _rows(op, "mul", m[0], x, f"/m{row}0"), _rows(op, "mul", m[1], y, f"/m{row}1"),
                      f"/sum{row}")
        total = _rows(op, "add", total, s.mul(m[2], zero), f"/sum{row}z")
        out.append(_rows(op, "add", total, m[3], f"/axis{row}_out"))
    if dims == 3:
        out.append(op.add("slice", [landmarks], (1, count, 1), {"begin": (0, 0, 2), "end": (1, count, 3)},
                          suffix="/axis2", out_dtype="float32"))
    return [op.add("concat", out, (1, count, dims), {"axis": 2}, out_dtype="float32")]
