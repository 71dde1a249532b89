"""Caffe emitter: IR -> deploy.prototxt + model.caffemodel, run in OpenCV DNN 4.x, compared with TF.

* the padding matrix (tests/support/ir_cases.py, quick subset) in both lowerings ('layer': pad layer
  groups; 'kernel': zero taps added to conv/deconv kernels), rel error <= 1e-5;
* one test per op family against TensorFlow;
* every protobuf field the emitter writes exists in BVLC's caffe.proto with the same number,
  label and type (BVLC_EXCERPT below is copied from BVLC/caffe src/caffe/proto/caffe.proto).
"""

from __future__ import annotations

import functools
import math
import os
import re

import numpy as np
import pytest

from tests.support import ir_cases
from tf_convert.convert import ir
from tf_convert.convert.padding import Pads, caffe_plan_conv, caffe_plan_pool, caffe_plan_transposed
from tf_convert.convert.padding.caffe import caffe_pool_out_1d
from tf_convert.emitters.base import EmitOptions

cv2 = pytest.importorskip("cv2")
if int(cv2.__version__.split(".")[0]) >= 5:  # pragma: no cover
    pytest.skip("OpenCV 5.x has no Caffe importer", allow_module_level=True)

import tf_convert.emitters.caffe as caffe  # noqa: E402

TOL = 1e-5
CONV_OPS = ("conv", "depthwise", "depthwise_m2", "conv_transpose")


def _emit_run(graph: ir.Graph, inputs: list[np.ndarray], tmp_path, mode: str = "layer"):
    out = tmp_path / f"caffe-{mode}"
    out.mkdir()
    result = caffe.emit(graph, out, EmitOptions(caffe_pad=mode))
    return caffe.run(out, inputs), result, out


def _check(family: str, actual: np.ndarray, expected: np.ndarray, tol: float = TOL) -> float:
    err = ir_cases.rel_error(np.asarray(actual), np.asarray(expected, dtype=np.float32))
    assert err <= tol, f"{family}: rel error {err:.3g}"
    return err


# ---- the padding matrix ------------------------------------------------------------------------

CASES = ir_cases.matrix(full=bool(os.environ.get("CONVERT_FULL_MATRIX")))  # full: 4195 cases, ~1 min


@functools.cache
def _built(case: ir_cases.Case) -> ir_cases.Built:
    return ir_cases.build(case)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_padding_matrix_layer(case, tmp_path):
    built = _built(case)
    assert not caffe.unsupported(built.graph)
    (y,), result, _ = _emit_run(built.graph, [built.x_nchw], tmp_path, "layer")
    _check(f"matrix/{case.op}", y, built.expected_nchw)
    for entry in result.pad_layers:
        assert set(entry) == {"node", "pads", "reason"} and len(entry["pads"]) == 4 and entry["reason"]


KERNEL_CASES = [c for c in CASES if c.op in CONV_OPS]


@pytest.mark.parametrize("case", KERNEL_CASES, ids=[c.id for c in KERNEL_CASES])
def test_padding_matrix_kernel(case, tmp_path):
    built = _built(case)
    (y,), result, out = _emit_run(built.graph, [built.x_nchw], tmp_path, "kernel")
    _check(f"matrix-kernel/{case.op}", y, built.expected_nchw)
    if case.padding in ("SAME", "EXPLICIT") and case.dilation == (1, 1):
        # the kernel lowering never needs a pad layer group when the taps fit the dilation
        assert not [p for p in result.pad_layers if p["node"] == "y"]


SHIFT_CASES = [c for c in CASES if c.op in ("conv", "depthwise", "depthwise_m2")]


@pytest.mark.parametrize("case", SHIFT_CASES, ids=[c.id for c in SHIFT_CASES])
def test_padding_matrix_shift(case, tmp_path):
    built = _built(case)
    (y,), result, out = _emit_run(built.graph, [built.x_nchw], tmp_path, "shift")
    _check(f"matrix-shift/{case.op}", y, built.expected_nchw)
    for entry in result.pad_layers:  # the shift slices outputs; it never pads in front
        assert entry["node"] != "y" or entry.get("kind") == "crop" or entry["reason"].startswith("OpenCV")


@pytest.mark.parametrize("case", SHIFT_CASES, ids=[c.id for c in SHIFT_CASES])
def test_padding_matrix_opencv_four_sided(case, tmp_path):
    built = _built(case)
    (y,), result, out = _emit_run(built.graph, [built.x_nchw], tmp_path, "opencv")
    _check(f"matrix-opencv/{case.op}", y, built.expected_nchw)
    if case.padding == "SAME":  # the layer pads itself (lopsided EXPLICIT pads fall back to a pad group)
        assert not [p for p in result.pad_layers if p["node"] == "y"]
    four = bool(re.search(r"^\s+pad: \d+$", (out / "deploy.prototxt").read_text(), re.M))
    assert four == any(w.startswith("deploy.prototxt writes asymmetric conv pads") for w in result.warnings)


def test_pad_layer_group_is_recorded_and_named(tmp_path):
    built = _built(ir_cases.Case("conv", (3, 3), (2, 2), (1, 1), (8, 8), "SAME"))
    _, result, out = _emit_run(built.graph, [built.x_nchw], tmp_path)
    assert result.pad_layers == [{"node": "y", "pads": [0, 1, 0, 1], "reason": result.pad_layers[0]["reason"]}]
    text = (out / "deploy.prototxt").read_text()
    assert 'name: "y/pad' in text and "round_mode" not in text and "ceil_mode" not in text
    assert 'type: "Concat"' in text and 'type: "Slice"' not in text  # rows made by 1x1 convs (spatial_row)


# ---- plans (no runtime) ------------------------------------------------------------------------


def test_caffe_pool_rounds_up_and_clips():
    assert caffe_pool_out_1d(8, 3, 2, 0) == 4  # ceil(5/2)+1
    assert caffe_pool_out_1d(7, 3, 2, 1) == 4
    assert caffe_pool_out_1d(6, 2, 2, 1) == 4  # ceil(6/2)+1 = 4, last starts at 5 < 7


def test_window_shift_plan_slices_leading_outputs():
    # TF SAME, 3x3 stride 2 on 8: pads (0, 1); pad 2 starts window i+1 where TF starts window i
    plan = caffe_plan_conv((0, 1, 0, 1), mode="shift", kernel=(3, 3), in_hw=(8, 8), stride=(2, 2))
    assert plan.pad_group is None and plan.layer_pad == (2, 2) and plan.trim == Pads(1, 0, 1, 0)
    # stride 1, even kernel: pads (0, 1) -> pad 1, one leading output sliced
    plan = caffe_plan_conv((0, 1, 1, 1), mode="shift", kernel=(2, 3), in_hw=(5, 5), stride=(1, 1))
    assert plan.layer_pad == (1, 1) and plan.trim == Pads(1, 0, 0, 0)
    # more before than after: TF's alignment kept, surplus trailing outputs sliced
    plan = caffe_plan_conv((2, 0, 0, 0), mode="shift", kernel=(3, 1), in_hw=(6, 6), stride=(1, 1))
    assert plan.layer_pad == (2, 0) and plan.trim == Pads(0, 2, 0, 0)


def test_plans_follow_tf_pads():
    plan = caffe_plan_conv((0, 1, 0, 1))
    assert plan.pad_group == Pads(0, 1, 0, 1) and plan.layer_pad == (0, 0)
    plan = caffe_plan_conv((1, 2, 1, 2), mode="kernel")
    assert plan.pad_group is None and plan.layer_pad == (2, 2) and plan.kernel_taps == Pads(1, 0, 1, 0)
    plan = caffe_plan_conv((2, 2, 1, 1))
    assert plan.pad_group is None and plan.layer_pad == (2, 1)
    plan = caffe_plan_pool("avg_pool2d", (8, 8), (3, 3), (2, 2), (0, 1, 0, 1))
    assert plan.pad_group is None and plan.scale_map is None  # Caffe's clipped last window is TF's
    plan = caffe_plan_pool("max_pool2d", (8, 8), (2, 2), (1, 1), (0, 1, 0, 1))
    assert plan.pad_group == Pads(0, 1, 0, 1) and plan.pad_value < -1e38
    plan = caffe_plan_transposed((4, 4), (3, 3), (2, 2), (1, 1), (0, 0), (8, 8))
    assert plan.pad_group is None and plan.layer_pad == (0, 0) and plan.trim == Pads(0, 1, 0, 1)


# ---- op families against TensorFlow -------------------------------------------------------------


def _graph(x_shapes: dict[str, tuple[int, ...]]) -> ir.Graph:
    g = ir.Graph("t")
    g.inputs = [g.add_tensor(name, shape) for name, shape in x_shapes.items()]
    return g


def _rand(*shape, seed=0, scale=2.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


X = (1, 4, 5, 6)

ACTIVATIONS = {
    "relu": ({}, lambda tf, x: tf.nn.relu(x)),
    "clip": ({"min": 0.0, "max": 6.0}, lambda tf, x: tf.nn.relu6(x)),
    "leaky_relu": ({"alpha": 0.2}, lambda tf, x: tf.nn.leaky_relu(x, 0.2)),
    "elu": ({"alpha": 1.0}, lambda tf, x: tf.nn.elu(x)),
    "sigmoid": ({}, lambda tf, x: tf.sigmoid(x)),
    "tanh": ({}, lambda tf, x: tf.tanh(x)),
    "swish": ({}, lambda tf, x: x * tf.sigmoid(x)),
    "hard_swish": ({}, lambda tf, x: x * tf.nn.relu6(x + 3.0) / 6.0),
    "hard_sigmoid": ({"alpha": 1 / 6, "beta": 0.5}, lambda tf, x: tf.clip_by_value(x / 6 + 0.5, 0.0, 1.0)),
    "gelu": ({"approximate": "tanh"}, lambda tf, x: tf.nn.gelu(x, approximate=True)),
    "gelu_erf": ({"approximate": "none"}, lambda tf, x: tf.nn.gelu(x, approximate=False)),
    "exp": ({}, lambda tf, x: tf.exp(x)),
    "square": ({}, lambda tf, x: tf.square(x)),
    "neg": ({}, lambda tf, x: -x),
    "identity": ({}, lambda tf, x: x),
}


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
def test_activation(op, tmp_path):
    import tensorflow as tf

    attrs, ref = ACTIVATIONS[op]
    x = _rand(*X, scale=4.0)
    g = _graph({"x": X})
    g.outputs = [g.add_node(op.split("_erf")[0], "y", ["x"], X, attrs)]
    (y,), _, _ = _emit_run(g, [x], tmp_path)
    _check(f"act/{op}", y, ref(tf, tf.constant(x)).numpy())


def test_clip_is_exact_at_the_bounds(tmp_path):
    x = np.array([-7, -1e-8, 0, 1e-8, 1e-3, 5.9999995, 6, 6.0000005, 100], np.float32).reshape(1, 1, 1, 9)
    g = _graph({"x": x.shape})
    g.outputs = [g.add_node("clip", "y", ["x"], x.shape, {"min": 0.0, "max": 6.0})]
    (y,), _, out = _emit_run(g, [x], tmp_path)
    np.testing.assert_array_equal(y, np.clip(x, 0, 6))  # bit-exact, not 6 - (6 - x)
    assert "ReLU" in (out / "deploy.prototxt").read_text()


@pytest.mark.parametrize("op", ["sqrt", "rsqrt"])
def test_power_family(op, tmp_path):
    import tensorflow as tf

    x = np.abs(_rand(*X)) + 0.5
    g = _graph({"x": X})
    g.outputs = [g.add_node(op, "y", ["x"], X)]
    (y,), _, _ = _emit_run(g, [x], tmp_path)
    _check(f"act/{op}", y, getattr(tf.math, op)(x).numpy())


BINARY_REFS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "maximum": np.maximum, "minimum": np.minimum,
}


@pytest.mark.parametrize("op", sorted(BINARY_REFS))
@pytest.mark.parametrize("form", ["tensors", "broadcast", "const_channel", "const_first", "const_scalar"])
def test_binary(op, form, tmp_path):
    import tensorflow as tf

    tf_op = {"add": tf.add, "sub": tf.subtract, "mul": tf.multiply, "div": tf.divide,
             "maximum": tf.maximum, "minimum": tf.minimum}[op]
    x = _rand(*X, seed=1)
    g = _graph({"x": X})
    inputs = [x]
    if form == "tensors":
        other = _rand(*X, seed=2) + (3.0 if op == "div" else 0.0)
        g.inputs.append(g.add_tensor("z", X))
        operands, args = ["x", "z"], (x, other)
        inputs.append(other)
    elif form == "broadcast":  # SE block: (N, C, 1, 1) against (N, C, H, W)
        other = _rand(1, 4, 1, 1, seed=2) + (3.0 if op == "div" else 0.0)
        g.inputs.append(g.add_tensor("z", other.shape))
        operands, args = ["x", "z"], (x, other)
        inputs.append(other)
    else:
        shape = {"const_channel": (4, 1, 1), "const_first": (1, 4, 1, 1), "const_scalar": ()}[form]
        value = _rand(*shape, seed=3) + (3.0 if op == "div" else 0.0)
        if form == "const_first" and op == "div":
            x = np.abs(x) + 0.5
            inputs = [x]
        g.add_node("const", "c", [], np.shape(value), params={"value": value})
        operands = ["c", "x"] if form == "const_first" else ["x", "c"]
        args = (value, x) if form == "const_first" else (x, value)
    g.outputs = [g.add_node(op, "y", operands, X)]
    assert not caffe.unsupported(g), caffe.unsupported(g)
    (y,), _, _ = _emit_run(g, inputs, tmp_path)
    _check(f"binary/{op}", y, tf_op(*args).numpy())


SINGLE = {  # a one-element tensor operand: no axis span for Scale (OpenCV cannot Reshape to 0 axes)
    "after": ((1, 4, 5, 6), (1, 1, 1, 1)),
    "first": ((1, 1, 1, 1), (1, 4, 5, 6)),
    "batch2": ((2, 4, 5, 6), (1, 1, 1, 1)),  # no size-1 axis: a (1, total) view is scaled
    "rank2": ((3, 5), (1, 1)),
    "lower_rank": ((1, 1, 1, 1), (1,)),
}


@pytest.mark.parametrize("op", sorted(BINARY_REFS))
@pytest.mark.parametrize("form", list(SINGLE))
def test_binary_single_element_tensor(op, form, tmp_path):
    import tensorflow as tf

    tf_op = {"add": tf.add, "sub": tf.subtract, "mul": tf.multiply, "div": tf.divide,
             "maximum": tf.maximum, "minimum": tf.minimum}[op]
    sa, sb = SINGLE[form]
    a, b = np.abs(_rand(*sa, seed=1)) + 0.5, np.abs(_rand(*sb, seed=2)) + 0.5  # div-safe, any order
    a[..., ::2] *= -1.0
    g = _graph({"a": sa, "b": sb})
    out = np.broadcast_shapes(sa, sb)
    g.outputs = [g.add_node(op, "mul", ["a", "b"], out)]
    assert not caffe.unsupported(g), caffe.unsupported(g)
    (y,), _, _ = _emit_run(g, [a, b], tmp_path)
    assert y.shape == out
    _check(f"binary/{op}", y, tf_op(a, b).numpy())


def test_one_element_tensor_times_one_element_constant(tmp_path):
    """The reported case: (1,1,1,1) tensor * (1,1,1,1) constant, alone and after a reduction."""
    import tensorflow as tf

    x, z = _rand(*X, seed=1), _rand(1, 1, 5, 6, seed=2)
    c = np.full((1, 1, 1, 1), -1.5, np.float32)
    g = _graph({"x": X, "z": (1, 1, 5, 6)})
    m = g.add_node("reduce_mean", "m", ["z"], (1, 1, 1, 1), {"axes": (2, 3), "keepdims": True})
    k = g.add_node("const", "k", [], c.shape, params={"value": c})
    s = g.add_node("mul", "mul", [m, k], (1, 1, 1, 1))
    g.outputs = [s, g.add_node("mul", "y", ["x", s], X)]
    assert not caffe.unsupported(g), caffe.unsupported(g)
    (ys, y), _, _ = _emit_run(g, [x, z], tmp_path)
    ref = tf.reduce_mean(z, axis=(2, 3), keepdims=True) * c
    _check("binary/mul", ys, ref.numpy())
    _check("binary/mul", y, (x * ref).numpy())


def test_channel_affine_linear_flatten_softmax(tmp_path):
    import tensorflow as tf

    x = _rand(*X)
    scale, shift = _rand(4, seed=4), _rand(4, seed=5)
    w, bias = _rand(10, 4 * 5 * 6, seed=6, scale=0.1), _rand(10, seed=7)
    g = _graph({"x": X})
    a = g.add_node("channel_affine", "bn", ["x"], X, {"axis": 1}, {"scale": scale, "shift": shift})
    f = g.add_node("reshape", "flat", [a], (1, 120), {"shape": (1, 120)})
    fc = g.add_node("linear", "fc", [f], (1, 10), {}, {"weight": w, "bias": bias})
    g.outputs = [fc, g.add_node("softmax", "prob", [fc], (1, 10), {"axis": -1})]
    (y_fc, y_prob), _, _ = _emit_run(g, [x], tmp_path)
    ref_a = x * scale[None, :, None, None] + shift[None, :, None, None]
    ref_fc = tf.matmul(ref_a.reshape(1, -1), w.T) + bias
    _check("affine+linear", y_fc, ref_fc.numpy())
    _check("softmax", y_prob, tf.nn.softmax(ref_fc).numpy())


def test_concat_slice_reduce_transpose(tmp_path):
    import tensorflow as tf

    x, z = _rand(*X, seed=1), _rand(1, 2, 5, 6, seed=2)
    g = _graph({"x": X, "z": (1, 2, 5, 6)})
    c = g.add_node("concat", "cat", ["x", "z"], (1, 6, 5, 6), {"axis": 1})
    s = g.add_node("slice", "crop", [c], (1, 6, 3, 4), {"begin": (0, 0, 1, 2), "end": (1, 6, 4, 6)})
    m = g.add_node("reduce_mean", "gap", [c], (1, 6), {"axes": (2, 3), "keepdims": False})
    mx = g.add_node("reduce_max", "gmp", [c], (1, 6, 1, 1), {"axes": (-2, -1), "keepdims": True})
    t = g.add_node("transpose", "t", [mx], (1, 1, 1, 6), {"perm": (0, 2, 3, 1)})
    g.outputs = [s, m, t]
    ys, _, _ = _emit_run(g, [x, z], tmp_path)
    cat = tf.concat([x, z], axis=1).numpy()
    _check("concat+slice", ys[0], cat[:, :, 1:4, 2:6])
    _check("reduce_mean", ys[1], tf.reduce_mean(cat, axis=[2, 3]).numpy())
    _check("reduce_max+transpose", ys[2], tf.transpose(tf.reduce_max(cat, [2, 3], keepdims=True), (0, 2, 3, 1)).numpy())


@pytest.mark.parametrize("shape, repeats", [((2, 5, 6, 4, 3), (1, 2, 3, 1, 1)),  # Keras UpSampling3D
                                             ((1, 3, 1, 7), (1, 1, 4, 2))])
def test_repeat_is_numpy_repeat_on_every_axis(shape, repeats, tmp_path):
    x = _rand(*shape, seed=3)
    out_shape = tuple(n * r for n, r in zip(shape, repeats))
    g = _graph({"x": shape})
    g.outputs = [g.add_node("repeat", "up", ["x"], out_shape, {"repeats": repeats})]
    (y,), _, _ = _emit_run(g, [x], tmp_path)
    expected = x
    for axis, times in enumerate(repeats):
        expected = np.repeat(expected, times, axis=axis)
    assert np.array_equal(y, expected)


@pytest.mark.parametrize("mode", ["constant", "reflect", "symmetric"])
def test_pad_node(mode, tmp_path):
    import tensorflow as tf

    x = _rand(*X)
    pads = ((0, 0), (0, 0), (2, 1), (0, 3))
    g = _graph({"x": X})
    g.outputs = [g.add_node("pad", "p", ["x"], (1, 4, 8, 9), {"pads": pads, "mode": mode, "value": 0.5})]
    (y,), result, _ = _emit_run(g, [x], tmp_path)
    ref = tf.pad(x, pads, mode=mode.upper(), constant_values=0.5).numpy()
    _check(f"pad/{mode}", y, ref)
    assert result.pad_layers[0]["pads"] == [2, 1, 0, 3]


def test_layer_norm(tmp_path):
    import tensorflow as tf

    x = _rand(*X)
    gamma, beta = _rand(1, 4, 1, 1, seed=8), _rand(1, 4, 1, 1, seed=9)
    g = _graph({"x": X})
    g.outputs = [g.add_node("layer_norm", "ln", ["x"], X, {"axes": (1,), "epsilon": 1e-6},
                            {"gamma": gamma, "beta": beta})]
    (y,), _, _ = _emit_run(g, [x], tmp_path)
    mean, var = tf.nn.moments(tf.constant(x), axes=[1], keepdims=True)
    _check("layer_norm", y, ((x - mean) / tf.sqrt(var + 1e-6) * gamma + beta).numpy())


def test_small_network_two_inputs_two_outputs(tmp_path):
    """conv (SAME, stride 2) -> relu6 -> depthwise (SAME) -> SE multiply -> add; max pool branch."""
    import tensorflow as tf

    x = _rand(1, 9, 11, 3, seed=1)  # NHWC for TF
    w1 = _rand(3, 3, 3, 8, seed=2, scale=0.3)
    dw = _rand(3, 3, 8, 1, seed=3, scale=0.3)
    se = np.abs(_rand(1, 1, 1, 8, seed=4)) * 0.1
    conv = tf.nn.relu6(tf.nn.conv2d(x, w1, 2, "SAME"))
    dwc = tf.nn.depthwise_conv2d(conv, dw, [1, 1, 1, 1], "SAME")
    y1 = (dwc * se + conv).numpy()
    y2 = tf.nn.max_pool2d(conv, 2, 2, "SAME").numpy()

    def nchw(a):
        return a.transpose(0, 3, 1, 2).copy()

    g = _graph({"x": (1, 3, 9, 11), "se": (1, 8, 1, 1)})
    c = g.add_node("conv2d", "conv", ["x"], (1, 8, 5, 6),
                   {"kernel": (3, 3), "stride": (2, 2), "dilation": (1, 1), "groups": 1, "pads": (1, 1, 1, 1)},
                   {"weight": w1.transpose(3, 2, 0, 1)})
    r = g.add_node("clip", "relu6", [c], (1, 8, 5, 6), {"min": 0.0, "max": 6.0})
    d = g.add_node("conv2d", "dw", [r], (1, 8, 5, 6),
                   {"kernel": (3, 3), "stride": (1, 1), "dilation": (1, 1), "groups": 8, "pads": (1, 1, 1, 1)},
                   {"weight": dw.reshape(3, 3, 8).transpose(2, 0, 1)[:, None]})
    m = g.add_node("mul", "se_mul", [d, "se"], (1, 8, 5, 6))
    a = g.add_node("add", "res", [m, r], (1, 8, 5, 6))
    p = g.add_node("max_pool2d", "pool", [r], (1, 8, 3, 3), {"kernel": (2, 2), "stride": (2, 2), "pads": (0, 1, 0, 0)})
    g.outputs = [a, p]
    g.validate()
    for mode in ("layer", "kernel"):
        sub = tmp_path / mode
        sub.mkdir()
        (o1, o2), result, out = _emit_run(g, [nchw(x), nchw(se)], sub, mode)
        _check("network", o1, nchw(y1))
        _check("network", o2, nchw(y2))
        assert [o["name"] for o in result.outputs] == ["res", "pool"]


def test_ir_names_win_over_intermediate_names(tmp_path):
    """A TF scope can hold `conv` and `conv/pad_h`: intermediate layers never take IR names."""
    x = _rand(1, 3, 8, 8)
    w = _rand(4, 3, 3, 3, seed=1)
    g = _graph({"x": x.shape})
    c = g.add_node("conv2d", "conv", ["x"], (1, 4, 4, 4),
                   {"kernel": (3, 3), "stride": (2, 2), "dilation": (1, 1), "groups": 1, "pads": (0, 1, 0, 1)},
                   {"weight": w})
    r = g.add_node("relu", "conv/pad_h", [c], (1, 4, 4, 4))
    g.outputs = [g.add_node("neg", "conv/pad_w", [r], (1, 4, 4, 4))]
    (y,), _, out = _emit_run(g, [x], tmp_path)
    import torch

    ref = torch.nn.functional.conv2d(torch.nn.functional.pad(torch.tensor(x), (0, 1, 0, 1)), torch.tensor(w), stride=2)
    _check("names", y, -np.maximum(ref.numpy(), 0))
    text = (out / "deploy.prototxt").read_text()
    assert text.count('top: "conv/pad_h"\n') == 1 and text.count('name: "conv"\n') == 1


@pytest.mark.parametrize("groups,dilation", [(1, 2), (2, 1), (4, 2)])
@pytest.mark.parametrize("mode", ["layer", "kernel"])
def test_grouped_and_dilated_transposed_conv(groups, dilation, mode, tmp_path):
    """TF's CPU kernels reject dilated transposed convs; the IR's definition (torch's) is the reference."""
    import torch

    x = _rand(1, 4, 5, 5)
    w, bias = _rand(4, 8 // groups, 3, 3, seed=1), _rand(8, seed=2)
    full = torch.nn.functional.conv_transpose2d(torch.tensor(x), torch.tensor(w), torch.tensor(bias), 2, 0, 0,
                                                groups, dilation).numpy()
    crop, size = (1, 0), (9, 10)
    ref = np.zeros((1, 8, *size), np.float32) + bias[None, :, None, None]
    rows = full[:, :, crop[0]:crop[0] + size[0], crop[1]:crop[1] + size[1]]
    ref[:, :, :rows.shape[2], :rows.shape[3]] = rows
    g = _graph({"x": x.shape})
    g.outputs = [g.add_node("conv_transpose2d", "y", ["x"], (1, 8, *size),
                            {"kernel": (3, 3), "stride": (2, 2), "dilation": (dilation, dilation), "groups": groups,
                             "crop": crop, "output_size": size}, {"weight": w, "bias": bias})]
    (y,), _, _ = _emit_run(g, [x], tmp_path, mode)
    _check("conv_transpose/grouped+dilated", y, ref)


def test_opencv_dilated_depthwise_pad1_quirk_is_avoided(tmp_path):
    import tensorflow as tf

    x = _rand(1, 9, 9, 4)
    w = _rand(3, 3, 4, 1, seed=1)
    ref = tf.nn.depthwise_conv2d(tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]]), w, [1, 1, 1, 1], "VALID",
                                 dilations=(2, 2)).numpy().transpose(0, 3, 1, 2)
    g = _graph({"x": (1, 4, 9, 9)})
    g.outputs = [g.add_node("conv2d", "y", ["x"], ref.shape,
                            {"kernel": (3, 3), "stride": (1, 1), "dilation": (2, 2), "groups": 4, "pads": (1, 1, 1, 1)},
                            {"weight": w.reshape(3, 3, 4).transpose(2, 0, 1)[:, None]})]
    (y,), result, _ = _emit_run(g, [x.transpose(0, 3, 1, 2).copy()], tmp_path)
    _check("matrix/depthwise", y, ref)
    assert result.pad_layers and "OpenCV" in result.pad_layers[0]["reason"]


# ---- unsupported -------------------------------------------------------------------------------


def test_unsupported_lists_every_node_with_a_hint():
    g = _graph({"x": X})
    t = g.add_node("transpose", "nhwc", ["x"], (1, 5, 6, 4), {"perm": (0, 2, 3, 1)})
    e = g.add_node("reduce_mean", "mean_c", [t], (1, 5, 6, 1), {"axes": (3,), "keepdims": True})
    c = g.add_node("const", "k", [], (1, 5, 6, 1), params={"value": np.ones((1, 5, 6, 1), np.float32)})
    g.outputs = [g.add_node("concat", "cat", [e, c], (1, 10, 6, 1), {"axis": 1})]
    items = caffe.unsupported(g)
    assert sorted(i.node for i in items) == ["k", "mean_c", "nhwc"]
    assert all(i.hint for i in items)


# ---- the proto subset against BVLC's caffe.proto -----------------------------------------------

# Copied from BVLC/caffe src/caffe/proto/caffe.proto (comments and unrelated fields removed).
BVLC_EXCERPT = """
syntax = "proto2";
package caffe;
message BlobShape { repeated int64 dim = 1 [packed = true]; }
message CropParameter {
  optional int32 axis = 1 [default = 2];
  repeated uint32 offset = 2;
}
message BlobProto {
  optional BlobShape shape = 7;
  repeated float data = 5 [packed = true];
  repeated float diff = 6 [packed = true];
  repeated double double_data = 8 [packed = true];
  repeated double double_diff = 9 [packed = true];
  optional int32 num = 1 [default = 0];
  optional int32 channels = 2 [default = 0];
  optional int32 height = 3 [default = 0];
  optional int32 width = 4 [default = 0];
}
message NetParameter {
  optional string name = 1;
  repeated string input = 3;
  repeated BlobShape input_shape = 8;
  repeated int64 input_dim = 4;
  optional bool force_backward = 5 [default = false];
  optional bool debug_info = 7 [default = false];
  repeated LayerParameter layer = 100;
}
message LayerParameter {
  optional string name = 1;
  optional string type = 2;
  repeated string bottom = 3;
  repeated string top = 4;
  repeated float loss_weight = 5;
  repeated BlobProto blobs = 7;
  repeated bool propagate_down = 11;
  optional BatchNormParameter batch_norm_param = 139;
  optional BiasParameter bias_param = 141;
  optional ConcatParameter concat_param = 104;
  optional ConvolutionParameter convolution_param = 106;
  optional CropParameter crop_param = 144;
  optional EltwiseParameter eltwise_param = 110;
  optional ELUParameter elu_param = 140;
  optional ExpParameter exp_param = 111;
  optional FlattenParameter flatten_param = 135;
  optional InnerProductParameter inner_product_param = 117;
  optional InputParameter input_param = 143;
  optional PoolingParameter pooling_param = 121;
  optional PowerParameter power_param = 122;
  optional LRNParameter lrn_param = 118;
  optional ReLUParameter relu_param = 123;
  optional ReshapeParameter reshape_param = 133;
  optional ScaleParameter scale_param = 142;
  optional SigmoidParameter sigmoid_param = 124;
  optional SoftmaxParameter softmax_param = 125;
  optional SliceParameter slice_param = 126;
  optional TanHParameter tanh_param = 127;
}
message ConcatParameter {
  optional int32 axis = 2 [default = 1];
  optional uint32 concat_dim = 1 [default = 1];
}
message ConvolutionParameter {
  optional uint32 num_output = 1;
  optional bool bias_term = 2 [default = true];
  repeated uint32 pad = 3;
  repeated uint32 kernel_size = 4;
  repeated uint32 stride = 6;
  repeated uint32 dilation = 18;
  optional uint32 pad_h = 9 [default = 0];
  optional uint32 pad_w = 10 [default = 0];
  optional uint32 kernel_h = 11;
  optional uint32 kernel_w = 12;
  optional uint32 stride_h = 13;
  optional uint32 stride_w = 14;
  optional uint32 group = 5 [default = 1];
  optional int32 axis = 16 [default = 1];
  optional bool force_nd_im2col = 17 [default = false];
}
message EltwiseParameter {
  enum EltwiseOp { PROD = 0; SUM = 1; MAX = 2; }
  optional EltwiseOp operation = 1 [default = SUM];
  repeated float coeff = 2;
  optional bool stable_prod_grad = 3 [default = true];
}
message ELUParameter { optional float alpha = 1 [default = 1]; }
message ExpParameter {
  optional float base = 1 [default = -1.0];
  optional float scale = 2 [default = 1.0];
  optional float shift = 3 [default = 0.0];
}
message InnerProductParameter {
  optional uint32 num_output = 1;
  optional bool bias_term = 2 [default = true];
  optional int32 axis = 5 [default = 1];
  optional bool transpose = 6 [default = false];
}
message InputParameter { repeated BlobShape shape = 1; }
message PoolingParameter {
  enum PoolMethod { MAX = 0; AVE = 1; STOCHASTIC = 2; }
  optional PoolMethod pool = 1 [default = MAX];
  optional uint32 pad = 4 [default = 0];
  optional uint32 pad_h = 9 [default = 0];
  optional uint32 pad_w = 10 [default = 0];
  optional uint32 kernel_size = 2;
  optional uint32 kernel_h = 5;
  optional uint32 kernel_w = 6;
  optional uint32 stride = 3 [default = 1];
  optional uint32 stride_h = 7;
  optional uint32 stride_w = 8;
  optional bool global_pooling = 12 [default = false];
}
message PowerParameter {
  optional float power = 1 [default = 1.0];
  optional float scale = 2 [default = 1.0];
  optional float shift = 3 [default = 0.0];
}
message ReLUParameter { optional float negative_slope = 1 [default = 0]; }
message ReshapeParameter {
  optional BlobShape shape = 1;
  optional int32 axis = 2 [default = 0];
  optional int32 num_axes = 3 [default = -1];
}
message ScaleParameter {
  optional int32 axis = 1 [default = 1];
  optional int32 num_axes = 2 [default = 1];
  optional bool bias_term = 4 [default = false];
}
message SliceParameter {
  optional int32 axis = 3 [default = 1];
  repeated uint32 slice_point = 2;
  optional uint32 slice_dim = 1 [default = 1];
}
message SoftmaxParameter { optional int32 axis = 2 [default = 1]; }
message LRNParameter {
  optional uint32 local_size = 1 [default = 5];
  optional float alpha = 2 [default = 1.];
  optional float beta = 3 [default = 0.75];
  enum NormRegion {
    ACROSS_CHANNELS = 0;
    WITHIN_CHANNEL = 1;
  }
  optional NormRegion norm_region = 4 [default = ACROSS_CHANNELS];
  optional float k = 5 [default = 1.];
  enum Engine {
    DEFAULT = 0;
    CAFFE = 1;
    CUDNN = 2;
  }
  optional Engine engine = 6 [default = DEFAULT];
}
"""


def _messages(text: str) -> dict:
    """Message name -> DescriptorProto, as the shared .proto reader reads `text` (an excerpt)."""
    from tf_convert.convert.protobuf import parse

    return {m.name: m for m in parse(text, strict=False).message_type}


def _bvlc():
    return {name: {f.name: f for f in m.field} for name, m in _messages(BVLC_EXCERPT).items()}


def test_proto_subset_matches_bvlc_numbers_and_types():
    from tf_convert.emitters.caffe.proto import PROTO_PATH

    bvlc, full = _bvlc(), _messages(BVLC_EXCERPT)
    ours = _messages(PROTO_PATH.read_text())
    for msg in ours.values():
        assert msg.name in bvlc, msg.name
        for f in msg.field:
            ref = bvlc[msg.name].get(f.name)
            assert ref is not None, f"{msg.name}.{f.name} not in BVLC"
            assert (f.number, f.label, f.type, f.type_name) == (ref.number, ref.label, ref.type, ref.type_name), \
                f"{msg.name}.{f.name}"
            assert f.default_value == ref.default_value, f"{msg.name}.{f.name} default"
            assert f.options.packed == ref.options.packed, f"{msg.name}.{f.name} packed"
        refs = {e.name: e for e in full[msg.name].enum_type}
        assert all(e == refs[e.name] for e in msg.enum_type), msg.name
    names = {f.name for f in ours["PoolingParameter"].field}
    assert "round_mode" not in names and "ceil_mode" not in names


def _walk(message, seen: set) -> None:
    for fd, value in message.ListFields():
        seen.add((message.DESCRIPTOR.name, fd.name, fd.number, fd.type))
        items = value if hasattr(value, "__len__") and not isinstance(value, (str, bytes)) else [value]
        if fd.message_type is not None:
            for item in items:
                _walk(item, seen)


def test_every_emitted_field_is_bvlc(tmp_path):
    """Every field present in the written caffemodel (and so the prototxt) exists in BVLC's proto
    with that number and a wire-compatible type."""
    from google.protobuf import descriptor_pb2, text_format

    from tf_convert.emitters.caffe.proto import messages

    g = _graph({"x": X})
    c = g.add_node("conv2d", "conv", ["x"], (1, 4, 2, 3),
                   {"kernel": (3, 3), "stride": (2, 2), "dilation": (1, 1), "groups": 4, "pads": (0, 1, 0, 1)},
                   {"weight": _rand(4, 1, 3, 3), "bias": _rand(4)})
    p = g.add_node("avg_pool2d", "pool", [c], (1, 4, 1, 2),
                   {"kernel": (2, 2), "stride": (2, 2), "pads": (0, 1, 0, 1), "count_include_pad": False})
    r = g.add_node("hard_swish", "hs", [p], (1, 4, 1, 2))
    e = g.add_node("elu", "elu", [r], (1, 4, 1, 2), {"alpha": 1.0})
    x2 = g.add_node("exp", "exp", [e], (1, 4, 1, 2))
    gp = g.add_node("reduce_mean", "gap", [x2], (1, 4), {"axes": (2, 3), "keepdims": False})
    a = g.add_node("channel_affine", "bn", [gp], (1, 4), {"axis": 1}, {"scale": _rand(4), "shift": _rand(4)})
    fc = g.add_node("linear", "fc", [a], (1, 3), {}, {"weight": _rand(3, 4), "bias": _rand(3)})
    g.outputs = [g.add_node("softmax", "prob", [fc], (1, 3), {"axis": 1}),
                 g.add_node("tanh", "t", [e], (1, 4, 1, 2))]
    # a second graph for the remaining layer kinds and fields
    g2 = _graph({"x": X, "z": X})
    s = g2.add_node("sub", "sub", ["x", "z"], X)
    lr = g2.add_node("leaky_relu", "lrelu", [s], X, {"alpha": 0.1})
    dc = g2.add_node("conv2d", "dil", [lr], (1, 4, 5, 6),
                     {"kernel": (3, 3), "stride": (1, 1), "dilation": (2, 1), "groups": 1, "pads": (2, 2, 1, 1)},
                     {"weight": _rand(4, 4, 3, 3)})
    ap = g2.add_node("avg_pool2d", "ap", [dc], (1, 4, 5, 6),
                     {"kernel": (2, 2), "stride": (1, 1), "pads": (0, 1, 0, 1), "count_include_pad": False})
    ct = g2.add_node("conv_transpose2d", "up", [ap], (1, 2, 10, 12),
                     {"kernel": (3, 3), "stride": (2, 2), "dilation": (1, 1), "groups": 1, "crop": (1, 1),
                      "output_size": (10, 12)}, {"weight": _rand(4, 2, 3, 3), "bias": _rand(2)})
    cat = g2.add_node("concat", "cat", [ct, ct], (1, 4, 10, 12), {"axis": 1})
    g2.outputs = [g2.add_node("slice", "crop", [cat], (1, 4, 8, 12), {"begin": (0, 0, 1, 0), "end": (1, 4, 9, 12)})]
    P = messages()
    seen: set = set()
    for i, graph in enumerate((g, g2)):
        out = tmp_path / f"m{i}"
        out.mkdir()
        caffe.emit(graph, out, EmitOptions())
        net = P["NetParameter"]()
        net.ParseFromString((out / "model.caffemodel").read_bytes())
        _walk(net, seen)
        text_net = text_format.Parse((out / "deploy.prototxt").read_text(), P["NetParameter"]())
        _walk(text_net, seen)
    out = tmp_path / "m0"
    bvlc = _bvlc()
    F = descriptor_pb2.FieldDescriptorProto
    wire = {F.TYPE_UINT32: F.TYPE_UINT64, F.TYPE_INT32: F.TYPE_INT64}  # same varint wire type in BVLC's older spellings
    for msg, fname, number, _ in seen:
        ref = bvlc[msg][fname]
        ours = P[msg].DESCRIPTOR.fields_by_name[fname]
        assert ref.number == number, (msg, fname)
        assert wire.get(ref.type, ref.type) == wire.get(ours.type, ours.type), (msg, fname, ref.type, ours.type)
    messages_seen = {m for m, *_ in seen}
    assert messages_seen >= {"ScaleParameter", "PoolingParameter", "SliceParameter", "EltwiseParameter",
                             "ConvolutionParameter", "ReLUParameter", "ConcatParameter", "ReshapeParameter"}
    assert ("ConvolutionParameter", "dilation", 18, 13) in seen and ("EltwiseParameter", "coeff", 2, 2) in seen
    (prob, t), = [caffe.run(out, [_rand(*X)])]
    assert prob.shape == (1, 3) and t.shape == (1, 4, 1, 2) and math.isclose(float(prob.sum()), 1.0, rel_tol=1e-5)
