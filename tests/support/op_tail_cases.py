"""The op tail's cases (tests/parsers/test_op_tail.py), in the style of TF's own op tests: each op with its
parameters as constants and as placeholders fed at run time, rank 0, empty and odd sizes."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

Case = tuple[dict[str, np.ndarray], Callable[[dict[str, Any]], Any]]
f32, i32, i64 = np.float32, np.int32, np.int64


def _x(rng: np.random.Generator, shape=(3, 5, 4), dtype=np.float32) -> np.ndarray:
    return (rng.standard_normal(shape) * 4).astype(dtype)


def _conv(x):
    """A rank-4 NHWC activation the IR holds as NCHW (exact: 1x1, weights 2 * identity)."""
    import tensorflow as tf

    c = x.shape[-1]
    return tf.nn.conv2d(x, (2 * np.eye(c, dtype=np.float32)).reshape(1, 1, c, c), 1, "SAME")


def _qdq(version: int, **kw):
    import tensorflow as tf

    ops = {2: tf.raw_ops.QuantizeAndDequantizeV2, 4: tf.raw_ops.QuantizeAndDequantizeV4}
    return lambda p: ops[version](input=p["x"], input_min=p.get("lo", p.get("const_lo")),
                                  input_max=p.get("hi", p.get("const_hi")), range_given=True, **kw)


def cases() -> dict[str, Case]:
    """case -> (feeds: name -> value, the op on placeholders named like the feeds). A feed whose name starts
    with "const_" is baked into the graph as a constant: the same op with the parameter known at conversion."""
    import tensorflow as tf

    rng = np.random.default_rng(43)
    x, v, ints = _x(rng), _x(rng, (6,)), _x(rng, (4, 6), np.int32)
    square = _x(rng, (2, 3, 5, 5)) / 4 + 6 * np.eye(5, dtype=np.float32)  # diagonally dominant
    image = rng.uniform(0, 1, (2, 5, 6, 3)).astype(f32)
    image[0, 0, :3] = [[0.5, 0.5, 0.5], [0.2, 0.7, 0.7], [0.9, 0.1, 0.9]]  # grey and tied channels
    return {
        # colour adjustments whose factor the graph computes
        "hue": ({"img": image, "d": f32(0.3)}, lambda p: tf.image.adjust_hue(p["img"], p["d"])),
        "hue_negative": ({"img": image, "d": f32(-0.85)}, lambda p: tf.image.adjust_hue(_conv(p["img"]), p["d"])),
        "hue_const": ({"img": image, "const_d": f32(0.1)}, lambda p: tf.image.adjust_hue(p["img"], p["const_d"])),
        "saturation": ({"img": image, "s": f32(1.7)}, lambda p: tf.image.adjust_saturation(p["img"], p["s"])),
        "saturation_zero": ({"img": image, "s": f32(0.0)}, lambda p: tf.image.adjust_saturation(p["img"], p["s"])),
        # QuantizeAndDequantize with a range the graph computes (signed, unsigned, narrow, a range off zero)
        "qdq_v2": ({"x": x, "lo": f32(-3), "hi": f32(5)}, _qdq(2)),
        "qdq_v2_min_side": ({"x": x, "lo": f32(-7.5), "hi": f32(2)}, _qdq(2, num_bits=4)),
        "qdq_v2_half_up": ({"x": x, "lo": f32(-3), "hi": f32(5)}, _qdq(2, round_mode="HALF_UP")),
        "qdq_v2_unsigned": ({"x": x, "lo": f32(0), "hi": f32(6)}, _qdq(2, signed_input=False)),
        "qdq_v2_narrow": ({"x": x, "lo": f32(-4), "hi": f32(4)}, _qdq(2, narrow_range=True, num_bits=3)),
        "qdq_v2_positive": ({"x": x, "lo": f32(1), "hi": f32(3)}, _qdq(2)),
        "qdq_v2_zero": ({"x": x, "lo": f32(0), "hi": f32(0)}, _qdq(2)),
        "qdq_v4": ({"x": x, "lo": f32(-2), "hi": f32(9)}, _qdq(4)),
        "qdq_v4_const_low": ({"x": x, "const_lo": f32(-2), "hi": f32(9)}, _qdq(4)),
        "qdq_v4_const": ({"x": x, "const_lo": f32(-2), "const_hi": f32(9)}, _qdq(4)),
        # determinant and inverse of well-conditioned matrices (float32 LU: TOLERANCE in test_op_tail.py)
        "det": ({"s": square}, lambda p: tf.linalg.det(p["s"])),
        "det_one_matrix": ({"s": square[0, 0]}, lambda p: tf.linalg.det(p["s"])),
        "det_1x1": ({"s": square[:, :, :1, :1]}, lambda p: tf.linalg.det(p["s"])),
        "inverse": ({"s": square}, lambda p: tf.linalg.inv(p["s"])),
        "inverse_adjoint": ({"s": square[1]}, lambda p: tf.linalg.inv(p["s"], adjoint=True)),
        "inverse_const": ({"const_s": square[0, 1], "y": square[1, 2]}, lambda p: tf.linalg.inv(p["const_s"]) * p["y"]),
        # the wide dtypes: at the boundary, in casts and through copies (odd sizes, empty, rank 0)
        **{f"dtype_{d}_copies": ({"w": np.abs(_x(rng, (3, 5, 4)) * 9).astype(d)}, lambda p: tf.concat(
            [tf.transpose(p["w"], [2, 0, 1])[1:, :, ::2], tf.reshape(p["w"][:1, 1:4, :3], [1, 3, 3])], 0))
           for d in ("float64", "float16", "int16", "uint16", "uint32", "uint64")},
        "dtype_float64_to_float32": ({"w": _x(rng, (2, 3)).astype(np.float64) / 3},
                                     lambda p: tf.cast(p["w"], tf.float32) * 2.0),
        "dtype_float32_to_float64": ({"x": x}, lambda p: tf.cast(p["x"] * 3.0, tf.float64)),
        "dtype_float32_to_float16": ({"x": x}, lambda p: tf.cast(p["x"] * 300.0, tf.float16)),
        "dtype_float16_to_int16": ({"w": np.float16([[-3.7, 2.5, 700.0], [0, -0.2, 9]])},
                                   lambda p: tf.cast(tf.cast(p["w"], tf.int16), tf.int32) + 1),
        "dtype_uint16_to_float32": ({"w": np.uint16([0, 65535, 17])}, lambda p: tf.cast(p["w"], tf.float32) * 0.5),
        "dtype_int64_to_uint32": ({"k": i64([7, 2**32 + 5, -1])}, lambda p: tf.cast(p["k"], tf.uint32)),
        "dtype_float64_rank0": ({"w": np.float64(0.1)}, lambda p: tf.reshape(p["w"], [1, 1])),
        "dtype_float64_empty": ({"w": _x(rng, (2, 3, 3)).astype(np.float64)}, lambda p: tf.transpose(p["w"][:, :0])),
        "dtype_float64_one_hot": ({"ids": i32([[0, 3, -1], [5, 1, 2]])},
                                  lambda p: tf.one_hot(p["ids"], 4, on_value=np.float64(0.25), dtype=tf.float64)),
        "dtype_float16_one_hot": ({"ids": i32([2, 0])}, lambda p: tf.one_hot(p["ids"], 3, dtype=tf.float16)),
        # MaxPoolWithArgmax's argmax (odd sizes, SAME pads, ties: the first of equal values in row order)
        "argmax_same": ({"img": image}, lambda p: tf.nn.max_pool_with_argmax(p["img"], 2, 2, "SAME")[1]),
        "argmax_ties": ({"img": np.round(image * 2)}, lambda p: tf.nn.max_pool_with_argmax(
            p["img"], [3, 2], [1, 2], "SAME", include_batch_in_index=True)[1]),
        "argmax_valid_int32": ({"img": image}, lambda p: tf.nn.max_pool_with_argmax(
            _conv(p["img"]), 3, 2, "VALID", output_dtype=tf.int32)[1]),
        "argmax_both": ({"img": image}, lambda p: tf.add_n([tf.cast(a, tf.float32) for a in
                                                            tf.nn.max_pool_with_argmax(p["img"], 2, 1, "SAME")])),
        # segment reductions over ids the graph computes, a constant segment count (empty segments, an id
        # dropped for being negative, ids of rank 2, integer data)
        "unsorted_sum": ({"x": x, "s": i32([2, -1, 2])}, lambda p: tf.math.unsorted_segment_sum(p["x"], p["s"], 4)),
        "unsorted_sum_2d": ({"x": x, "s": i64(rng.integers(-1, 3, (3, 5)))},
                            lambda p: tf.math.unsorted_segment_sum(p["x"], p["s"], 3)),
        "unsorted_sum_int": ({"m": ints, "s": i32([1, 1, 0, 1])},
                             lambda p: tf.math.unsorted_segment_sum(p["m"], p["s"], 2)),
        "unsorted_sum_const": ({"x": x, "const_s": i32([2, -1, 2])},
                               lambda p: tf.math.unsorted_segment_sum(p["x"], p["const_s"], 4)),
        "unsorted_max": ({"x": x, "s": i32([0, 3, 0])}, lambda p: tf.math.unsorted_segment_max(p["x"], p["s"], 4)),
        "unsorted_max_int": ({"m": ints, "s": i32([1, 1, 0, 1])},
                             lambda p: tf.math.unsorted_segment_max(p["m"], p["s"], 3)),
        "unsorted_min": ({"x": x, "s": i32([1, 1, 1])}, lambda p: tf.math.unsorted_segment_min(p["x"], p["s"], 2)),
        "unsorted_prod": ({"x": x, "s": i32([1, 0, 1])}, lambda p: tf.math.unsorted_segment_prod(p["x"], p["s"], 3)),
        "unsorted_scalar_rows": ({"v": v, "s": i32([0, 2, 2, 1, 0, 2])},
                                 lambda p: tf.math.unsorted_segment_max(p["v"], p["s"], 3)),
        "sparse_segment_sum": ({"x": x, "i": i32([0, 2, 2, 1]), "s": i32([0, 0, 2, 3])},
                               lambda p: tf.sparse.segment_sum(p["x"], p["i"], p["s"], num_segments=5)),
        "sparse_segment_mean": ({"x": x, "i": i32([0, 2, 1]), "s": i32([0, 0, 2])},
                                lambda p: tf.sparse.segment_mean(p["x"], p["i"], p["s"], num_segments=4)),
        "sparse_segment_sqrt_n": ({"x": x, "i": i64([2, 1, 0, 1]), "s": i64([1, 1, 1, 2])},
                                  lambda p: tf.sparse.segment_sqrt_n(p["x"], p["i"], p["s"], num_segments=3)),
        "sparse_segment_vector": ({"v": v, "i": i32([5, 0, 3]), "const_s": i32([0, 1, 1])},
                                  lambda p: tf.sparse.segment_mean(p["v"], p["i"], p["const_s"], num_segments=2)),
    }
