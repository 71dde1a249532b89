"""The padding matrix at the IR level: single-op IR graphs with TensorFlow reference outputs.

Each `Case` is one spatial op with one padding configuration. `build(case)` runs the op in
TensorFlow (the reference) and returns the equivalent hand-built IR graph, so an emitter can be
checked against TF without the parser. `tests/emitters/test_padding_matrix.py` runs the same table through
the whole pipeline (TF graph -> parser -> emitter) for every target.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.padding import effective_kernel, output_hw, tf_pads, transposed_conv_crop

OPS = ("conv", "depthwise", "depthwise_m2", "conv_transpose", "max_pool", "avg_pool")
PADDINGS = ("SAME", "VALID", "EXPLICIT", "PAD_VALID")
IN_CHANNELS = 3
OUT_CHANNELS = 4


@dataclass(frozen=True)
class Case:
    op: str
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    in_hw: tuple[int, int]
    padding: str

    @property
    def id(self) -> str:
        k, s, d, n = self.kernel, self.stride, self.dilation, self.in_hw
        return f"{self.op}-k{k[0]}x{k[1]}-s{s[0]}x{s[1]}-d{d[0]}x{d[1]}-in{n[0]}x{n[1]}-{self.padding}"

    @property
    def explicit_pads(self) -> tuple[int, int, int, int]:
        """Deliberately lopsided pads for EXPLICIT / PAD_VALID (top, bottom, left, right)."""
        kh, kw = self.kernel
        return (min(1, kh - 1), kh - 1, kw // 2, min(kw - 1, 2))

    @property
    def is_pool(self) -> bool:
        return self.op in ("max_pool", "avg_pool")


def _valid(case: Case) -> bool:
    k, s, d, n = case.kernel, case.stride, case.dilation, case.in_hw
    if case.is_pool or case.op == "conv_transpose":
        if d != (1, 1):  # TF pooling has no dilation; CPU transposed conv rejects it
            return False
        if case.padding == "EXPLICIT":
            return False
    if d != (1, 1) and s != (1, 1):  # TF rejects stride > 1 together with dilation > 1
        return False
    if case.op.startswith("depthwise") and s[0] != s[1]:  # TF's CPU kernel needs equal strides
        return False
    if case.op == "conv_transpose" and case.padding == "PAD_VALID":
        return False
    if case.is_pool and case.padding == "SAME" and any(k_ > n_ for k_, n_ in zip(k, n)):
        return True
    pads = case.explicit_pads if case.padding in ("EXPLICIT", "PAD_VALID") else (0, 0, 0, 0)
    for axis in (0, 1):
        e = effective_kernel(k[axis], d[axis])
        if case.padding != "SAME" and n[axis] + pads[2 * axis] + pads[2 * axis + 1] < e:
            return False
    return True


def matrix(full: bool = False, ops: tuple[str, ...] = OPS, seed: int = 0) -> list[Case]:
    """Every valid case (full) or a fixed sample that still covers every value of every axis."""
    kernels = [(k, k) for k in range(1, 8)] + [(2, 3), (3, 1), (1, 4)]
    strides = [(1, 1), (2, 2), (3, 3), (2, 1), (1, 3)]
    dilations = [(1, 1), (2, 2), (1, 2)]
    sizes = [(7, 7), (8, 8), (9, 6), (10, 11)]
    cases = [
        Case(op, k, s, d, n, p)
        for op, k, s, d, n, p in itertools.product(ops, kernels, strides, dilations, sizes, PADDINGS)
    ]
    cases = [c for c in cases if _valid(c)]
    if full:
        return cases
    rng = random.Random(seed)
    chosen: dict[str, Case] = {}
    # Every (op, padding, kernel) and (op, padding, stride, size) pair appears at least once, plus
    # every even kernel at stride 1 with SAME (the asymmetric-at-stride-1 case people forget).
    groups: dict[tuple, list[Case]] = {}
    for c in cases:
        groups.setdefault((c.op, c.padding, c.kernel), []).append(c)
        groups.setdefault((c.op, c.padding, c.stride, c.in_hw), []).append(c)
        groups.setdefault((c.op, c.padding, c.dilation), []).append(c)
    for key in sorted(groups, key=repr):
        c = rng.choice(groups[key])
        chosen[c.id] = c
    for c in cases:
        if c.padding == "SAME" and c.stride == (1, 1) and c.kernel[0] % 2 == 0 and c.dilation == (1, 1):
            chosen.setdefault(c.id, c)
    return sorted(chosen.values(), key=lambda c: c.id)


# ---- TF reference + hand-built IR ---------------------------------------------------------------


@dataclass
class Built:
    case: Case
    graph: ir.Graph
    x_nchw: np.ndarray
    expected_nchw: np.ndarray


def _transposed_out_hw(case: Case) -> tuple[int, int]:
    out = []
    for axis in (0, 1):
        n, k, s = case.in_hw[axis], case.kernel[axis], case.stride[axis]
        if case.padding == "SAME":
            # alternate between the longest and the shortest size with ceil(o / s) == n
            out.append(n * s if n % 2 == 0 else n * s - (s - 1))
        else:
            out.append((n - 1) * s + effective_kernel(k, 1) + (n % s))
    return out[0], out[1]


def build(case: Case, seed: int = 0) -> Built:
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    h, w = case.in_hw
    kh, kw = case.kernel
    x = rng.standard_normal((1, h, w, IN_CHANNELS)).astype(np.float32)
    pads = case.explicit_pads
    tf_pad_list = [[0, 0], [pads[0], pads[1]], [pads[2], pads[3]], [0, 0]]
    x_in = x
    padding = case.padding
    if padding == "PAD_VALID":
        x_in = tf.pad(x, tf_pad_list).numpy()
        padding = "VALID"
    tf_padding = tf_pad_list if padding == "EXPLICIT" else padding
    strides = [1, *case.stride, 1]
    dil = [1, *case.dilation, 1]
    params: dict[str, np.ndarray] = {}

    if case.op == "conv":
        filt = rng.standard_normal((kh, kw, IN_CHANNELS, OUT_CHANNELS)).astype(np.float32)
        bias = rng.standard_normal(OUT_CHANNELS).astype(np.float32)
        y = tf.nn.bias_add(tf.nn.conv2d(x_in, filt, strides, tf_padding, dilations=dil), bias).numpy()
        params = {"weight": filt.transpose(3, 2, 0, 1), "bias": bias}
        op, groups = "conv2d", 1
    elif case.op in ("depthwise", "depthwise_m2"):
        mult = 2 if case.op == "depthwise_m2" else 1
        filt = rng.standard_normal((kh, kw, IN_CHANNELS, mult)).astype(np.float32)
        y = tf.nn.depthwise_conv2d(x_in, filt, strides, tf_padding, dilations=case.dilation).numpy()
        params = {"weight": filt.reshape(kh, kw, IN_CHANNELS * mult).transpose(2, 0, 1)[:, None]}
        op, groups = "conv2d", IN_CHANNELS
    elif case.op == "conv_transpose":
        filt = rng.standard_normal((kh, kw, OUT_CHANNELS, IN_CHANNELS)).astype(np.float32)
        bias = rng.standard_normal(OUT_CHANNELS).astype(np.float32)
        oh, ow = _transposed_out_hw(case)
        y = tf.nn.conv2d_transpose(x_in, filt, [1, oh, ow, OUT_CHANNELS], strides, padding)
        y = tf.nn.bias_add(y, bias).numpy()
        params = {"weight": filt.transpose(3, 2, 0, 1), "bias": bias}
        op, groups = "conv_transpose2d", 1
    elif case.op == "max_pool":
        y = tf.nn.max_pool2d(x_in, case.kernel, case.stride, padding).numpy()
        op, groups = "max_pool2d", 1
    elif case.op == "avg_pool":
        y = tf.nn.avg_pool2d(x_in, case.kernel, case.stride, padding).numpy()
        op, groups = "avg_pool2d", 1
    else:
        raise ValueError(case.op)

    graph = ir.Graph(name=case.id.replace("-", "_"))
    graph.inputs = [graph.add_tensor("x", (1, IN_CHANNELS, h, w))]
    graph.source_names["x"] = "x:0"
    graph.source_layouts["x"] = "NHWC"
    src, in_hw = "x", (h, w)
    if case.padding == "PAD_VALID":
        padded = (1, IN_CHANNELS, h + pads[0] + pads[1], w + pads[2] + pads[3])
        src = graph.add_node(
            "pad", "pad", [src], padded,
            {"pads": ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])), "mode": "constant", "value": 0.0},
            source_op="Pad",
        )
        in_hw = padded[2:]
    out_shape = (1, y.shape[3], y.shape[1], y.shape[2])
    if op == "conv_transpose2d":
        crop = transposed_conv_crop((y.shape[1], y.shape[2]), case.kernel, case.stride, (1, 1), padding)
        attrs = {
            "kernel": case.kernel, "stride": case.stride, "dilation": (1, 1), "groups": 1,
            "crop": crop, "output_size": (y.shape[1], y.shape[2]),
        }
    else:
        explicit = pads if padding == "EXPLICIT" else None
        node_pads = tf_pads(in_hw, case.kernel, case.stride, case.dilation, padding, explicit)
        attrs = {"kernel": case.kernel, "stride": case.stride, "pads": tuple(node_pads)}
        if op == "conv2d":
            attrs.update(dilation=case.dilation, groups=groups)
        if op == "avg_pool2d":
            attrs["count_include_pad"] = False
        dilation = case.dilation if op == "conv2d" else (1, 1)
        assert output_hw(in_hw, case.kernel, case.stride, dilation, node_pads) == out_shape[2:]
    graph.outputs = [graph.add_node(op, "y", [src], out_shape, attrs, params, source_op=case.op)]
    graph.source_names["y"] = "y:0"
    graph.source_layouts["y"] = "NHWC"
    graph.validate()
    return Built(case, graph, x.transpose(0, 3, 1, 2).copy(), y.transpose(0, 3, 1, 2).copy())


def rel_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """max|a-b| / max|ref|: the error against the reference's own scale (never a floor of 1, which would
    pass anything on small outputs; app/verify/metric.py is the product's full judgement). An all-zero
    reference gives the absolute error."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        raise AssertionError(f"shape {actual.shape} != expected {expected.shape}")
    if not expected.size:
        return 0.0
    scale = float(np.max(np.abs(expected.astype(np.float64))))
    error = float(np.max(np.abs(actual.astype(np.float64) - expected)))
    return error / scale if scale > 0 else error
