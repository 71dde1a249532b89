"""ONNX emitter: IR graphs -> model.onnx -> onnxruntime, compared with TensorFlow."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.ir_cases import build, matrix, rel_error
from tf_convert.convert import ir
from tf_convert.convert.errors import UnsupportedError, UsageError
from tf_convert.emitters.base import EmitOptions

onnx_emitter = pytest.importorskip("tf_convert.emitters.onnx")
tf = pytest.importorskip("tensorflow")

TOL = 1e-5
RNG = np.random.default_rng(7)


def emit_run(graph: ir.Graph, inputs: list[np.ndarray], out: Path, opset: int = 17, **extra):
    result = onnx_emitter.emit(graph, out, EmitOptions(opset=opset, extra=extra))
    return onnx_emitter.run(out, inputs), result


def nchw(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def nhwc(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def one_op(op: str, x_shape, out_shape, attrs=None, params=None, extra_inputs=()) -> ir.Graph:
    """x (and optional extra graph inputs / const nodes) -> op -> y."""
    g = ir.Graph(name=f"t_{op}")
    g.inputs = [g.add_tensor("x", x_shape)]
    names = ["x"]
    for i, item in enumerate(extra_inputs):
        if isinstance(item, np.ndarray):
            names.append(g.add_node("const", f"c{i}", [], item.shape, params={"value": item}))
        else:
            g.inputs.append(g.add_tensor(f"x{i}", item))
            names.append(f"x{i}")
    g.outputs = [g.add_node(op, "y", names, out_shape, attrs or {}, params or {})]
    g.validate()
    return g


def check(actual: np.ndarray, expected: np.ndarray) -> float:
    err = rel_error(actual, np.asarray(expected))
    assert err <= TOL, err
    return err


# ---- the padding matrix ------------------------------------------------------------------------


@pytest.mark.parametrize("case", matrix(), ids=lambda c: c.id)
def test_padding_matrix(case, tmp_path):
    built = build(case)
    (y,), result = emit_run(built.graph, [built.x_nchw], tmp_path)
    check(y, built.expected_nchw)
    assert result.pad_layers == []  # ONNX takes every pad natively
    assert result.files == ["model.onnx"]


# ---- spatial ops beyond the matrix -------------------------------------------------------------


@pytest.mark.parametrize("groups", [2, 4])
def test_grouped_conv(groups, tmp_path):
    x = RNG.standard_normal((1, 9, 10, 8)).astype(np.float32)
    w = RNG.standard_normal((3, 2, 8 // groups, 12)).astype(np.float32)
    y = tf.nn.conv2d(x, w, [1, 2, 1, 1], "SAME").numpy()
    from tf_convert.convert.padding import tf_pads

    pads = tuple(tf_pads((9, 10), (3, 2), (2, 1), (1, 1), "SAME"))
    attrs = {"kernel": (3, 2), "stride": (2, 1), "dilation": (1, 1), "groups": groups, "pads": pads}
    g = one_op("conv2d", (1, 8, 9, 10), nchw(y).shape, attrs, {"weight": w.transpose(3, 2, 0, 1)})
    (out,), _ = emit_run(g, [nchw(x)], tmp_path)
    check(out, nchw(y))


def test_zero_pad_then_max_pool_on_negative_input(tmp_path):
    """onnxruntime's PadFusion would fold a zero Pad into MaxPool (-inf pads): must not happen."""
    x = -np.abs(RNG.standard_normal((1, 5, 5, 2))).astype(np.float32) - 1.0
    xp = tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]])
    y = tf.nn.max_pool2d(xp, 3, 3, "VALID").numpy()
    g = ir.Graph(name="padpool")
    g.inputs = [g.add_tensor("x", (1, 2, 5, 5))]
    pads = ((0, 0), (0, 0), (1, 1), (1, 1))
    p = g.add_node("pad", "p", ["x"], (1, 2, 7, 7), {"pads": pads, "mode": "constant", "value": 0.0})
    pool = {"kernel": (3, 3), "stride": (3, 3), "pads": (0, 0, 0, 0)}
    g.outputs = [g.add_node("max_pool2d", "y", [p], nchw(y).shape, pool)]
    (out,), _ = emit_run(g, [nchw(x)], tmp_path)
    check(out, nchw(y))
    assert np.all(out[:, :, 0, :] == 0) and np.all(out[:, :, :, 0] == 0)  # windows on the zero border


@pytest.mark.parametrize("pool", ["max_pool2d", "avg_pool2d"])
def test_pool_pads_not_smaller_than_kernel_are_unsupported(pool):
    """A pool pad >= kernel leaves a window with no real element (TF never makes one; ORT refuses)."""
    attrs = {"kernel": (2, 2), "stride": (1, 1), "pads": (2, 0, 0, 1), "count_include_pad": False}
    g = one_op(pool, (1, 2, 4, 4), (1, 2, 5, 4), attrs)
    assert [p.node for p in onnx_emitter.unsupported(g)] == ["y"]


def test_avg_pool_count_include_pad_asymmetric(tmp_path):
    """count_include_pad=True (divide by the full window) with lopsided pads; numpy reference."""
    x = RNG.standard_normal((1, 2, 6, 7)).astype(np.float32)
    attrs = {"kernel": (3, 2), "stride": (2, 2), "pads": (0, 2, 1, 0), "count_include_pad": True}
    xp = np.pad(x, ((0, 0), (0, 0), (0, 2), (1, 0)))
    ref = np.lib.stride_tricks.sliding_window_view(xp, (3, 2), axis=(2, 3))[:, :, ::2, ::2].mean(axis=(-2, -1))
    g = one_op("avg_pool2d", x.shape, ref.shape, attrs)
    (out,), _ = emit_run(g, [x], tmp_path)
    check(out, ref)


@pytest.mark.parametrize(
    "kernel,stride,dilation,crop,out_hw",
    [((3, 2), (2, 1), (1, 2), (1, 1), (7, 4)), ((1, 2), (3, 1), (1, 2), (0, 1), (12, 4))],  # 2nd: zero tail rows
)
def test_conv_transpose_groups_dilation(kernel, stride, dilation, crop, out_hw, tmp_path):
    """Grouped, dilated transposed conv (TF's CPU kernel has neither): reference = the IR definition
    computed with torch (full output, zero tail rows, crop, then bias)."""
    import torch

    x = RNG.standard_normal((1, 4, 4, 4)).astype(np.float32)
    w = RNG.standard_normal((4, 3, *kernel)).astype(np.float32)  # IOHW, groups=2 -> 6 outputs
    bias = RNG.standard_normal(6).astype(np.float32)
    full = torch.nn.functional.conv_transpose2d(
        torch.from_numpy(x), torch.from_numpy(w), stride=stride, dilation=dilation, groups=2
    ).numpy()
    need_h, need_w = crop[0] + out_hw[0], crop[1] + out_hw[1]
    full = np.pad(full, ((0, 0), (0, 0), (0, max(0, need_h - full.shape[2])), (0, max(0, need_w - full.shape[3]))))
    ref = full[:, :, crop[0]:need_h, crop[1]:need_w] + bias.reshape(6, 1, 1)
    attrs = {"kernel": kernel, "stride": stride, "dilation": dilation, "groups": 2, "crop": crop, "output_size": out_hw}
    g = one_op("conv_transpose2d", x.shape, ref.shape, attrs, {"weight": w, "bias": bias})
    (out,), _ = emit_run(g, [x], tmp_path)
    check(out, ref)


@pytest.mark.parametrize("stride,dilation,out_hw", [((2, 2), (1, 1), (14, 9)), ((2, 1), (1, 2), (9, 9))])
def test_conv_transpose_beyond_reach_is_unsupported(stride, dilation, out_hw):
    """Output rows that need output_padding >= stride: onnxruntime refuses them (TF never asks)."""
    attrs = {"kernel": (3, 3), "stride": stride, "dilation": dilation, "groups": 1, "crop": (0, 0),
             "output_size": out_hw}
    g = one_op("conv_transpose2d", (1, 4, 4, 4), (1, 2, *out_hw), attrs, {"weight": np.zeros((4, 2, 3, 3), np.float32)})
    assert [p.node for p in onnx_emitter.unsupported(g)] == ["y"]


@pytest.mark.parametrize("mode", ["constant", "reflect", "symmetric"])
@pytest.mark.parametrize("opset", [13, 17])
def test_pad_modes(mode, opset, tmp_path):
    x = RNG.standard_normal((1, 3, 5, 6)).astype(np.float32)
    pads = ((0, 0), (1, 0), (2, 3), (0, 5 if mode != "reflect" else 4))
    if mode == "symmetric":
        pads = ((0, 0), (1, 2), (2, 5), (6, 1))  # up to the full axis length, as TF allows
    y = tf.pad(x, pads, mode=mode.upper(), constant_values=1.5).numpy()
    g = one_op("pad", x.shape, y.shape, {"pads": pads, "mode": mode, "value": 1.5})
    (out,), _ = emit_run(g, [x], tmp_path, opset)
    check(out, y)


def test_pad_too_wide_is_unsupported(tmp_path):
    g = one_op("pad", (1, 1, 3, 3), (1, 1, 3, 9), {"pads": ((0, 0), (0, 0), (0, 0), (3, 3)), "mode": "reflect"})
    problems = onnx_emitter.unsupported(g)
    assert [p.node for p in problems] == ["y"] and "wider" in problems[0].hint
    with pytest.raises(UnsupportedError):
        onnx_emitter.emit(g, tmp_path, EmitOptions())


# ---- normalisation -----------------------------------------------------------------------------


def test_channel_affine(tmp_path):
    x = RNG.standard_normal((2, 6, 5, 4)).astype(np.float32)
    mean, var = RNG.standard_normal(4), RNG.random(4) + 0.5
    gamma, beta = RNG.standard_normal(4), RNG.standard_normal(4)
    y = tf.nn.batch_normalization(x, mean, var, beta, gamma, 1e-3).numpy().astype(np.float32)
    scale = gamma / np.sqrt(var + 1e-3)
    shift = beta - mean * scale
    g = one_op("channel_affine", (2, 4, 6, 5), (2, 4, 6, 5), {"axis": 1},
               {"scale": scale.astype(np.float32), "shift": shift.astype(np.float32)})
    (out,), _ = emit_run(g, [nchw(x)], tmp_path)
    check(out, nchw(y))


@pytest.mark.parametrize("opset", [13, 17])
@pytest.mark.parametrize("tf_axes", [(-1,), (1, 2, 3)])
def test_layer_norm(tf_axes, opset, tmp_path):
    import keras

    x = (RNG.standard_normal((2, 4, 5, 6)) * 3 + 1).astype(np.float32)
    layer = keras.layers.LayerNormalization(axis=list(tf_axes), epsilon=1e-3)
    layer.build(x.shape)
    gamma = RNG.standard_normal(layer.gamma.shape).astype(np.float32)
    beta = RNG.standard_normal(layer.beta.shape).astype(np.float32)
    layer.set_weights([gamma, beta])
    y = np.asarray(layer(x))
    # NHWC axes -> NCHW axes; gamma/beta broadcast against NCHW x
    to_ir = {1: 2, 2: 3, 3: 1, -1: 1}
    axes = tuple(sorted(to_ir[a] for a in tf_axes))
    if tf_axes == (-1,):
        g_ir, b_ir = gamma.reshape(6, 1, 1), beta.reshape(6, 1, 1)
    else:
        g_ir, b_ir = gamma.transpose(2, 0, 1), beta.transpose(2, 0, 1)
    g = one_op("layer_norm", (2, 6, 4, 5), (2, 6, 4, 5), {"axes": axes, "epsilon": 1e-3}, {"gamma": g_ir, "beta": b_ir})
    (out,), _ = emit_run(g, [nchw(x)], tmp_path, opset)
    check(out, nchw(y))
    ops = {n.op_type for n in _load(tmp_path).graph.node}
    assert ("LayerNormalization" in ops) == (opset >= 17 and axes == (1, 2, 3))


def _load(out: Path):
    import onnx

    return onnx.load(str(out / "model.onnx"))


# ---- dense / shape -----------------------------------------------------------------------------


def test_linear(tmp_path):
    x = RNG.standard_normal((3, 10)).astype(np.float32)
    w = RNG.standard_normal((10, 7)).astype(np.float32)
    bias = RNG.standard_normal(7).astype(np.float32)
    y = (tf.matmul(x, w) + bias).numpy()
    g = one_op("linear", (3, 10), (3, 7), {}, {"weight": w.T.copy(), "bias": bias})
    (out,), _ = emit_run(g, [x], tmp_path)
    check(out, y)


def test_shape_ops(tmp_path):
    """transpose -> reshape -> slice -> concat with a second input, against the TF ops."""
    x = RNG.standard_normal((1, 4, 6, 3)).astype(np.float32)
    z = RNG.standard_normal((1, 2, 3)).astype(np.float32)
    t = tf.transpose(x, (0, 3, 1, 2))
    r = tf.reshape(t, (1, 12, 6))
    s = r[:, 2:10, 1:4]
    y = tf.concat([s, z], axis=1).numpy()
    g = ir.Graph(name="shapes")
    g.inputs = [g.add_tensor("x", x.shape), g.add_tensor("z", z.shape)]
    a = g.add_node("transpose", "t", ["x"], (1, 3, 4, 6), {"perm": (0, 3, 1, 2)})
    b = g.add_node("reshape", "r", [a], (1, 12, 6), {"shape": (1, 12, 6)})
    c = g.add_node("slice", "s", [b], (1, 8, 3), {"begin": (0, 2, 1), "end": (1, 10, 4)})
    g.outputs = [g.add_node("concat", "y", [c, "z"], y.shape, {"axis": 1})]
    (out,), _ = emit_run(g, [x, z], tmp_path)
    check(out, y)


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("op", ["reduce_mean", "reduce_max"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(op, keepdims, opset, tmp_path):
    x = RNG.standard_normal((2, 5, 4, 3)).astype(np.float32)
    fn = tf.reduce_mean if op == "reduce_mean" else tf.reduce_max
    y = fn(x, axis=(2, 3), keepdims=keepdims).numpy()
    g = one_op(op, x.shape, y.shape, {"axes": (2, 3), "keepdims": keepdims})
    (out,), _ = emit_run(g, [x], tmp_path, opset)
    check(out, y)


@pytest.mark.parametrize("axis", [1, -1])
def test_softmax(axis, tmp_path):
    x = (RNG.standard_normal((2, 5, 3)) * 4).astype(np.float32)
    y = tf.nn.softmax(x, axis=axis).numpy()
    g = one_op("softmax", x.shape, y.shape, {"axis": axis})
    (out,), _ = emit_run(g, [x], tmp_path)
    check(out, y)


# ---- elementwise -------------------------------------------------------------------------------

BINARY = {"add": tf.add, "sub": tf.subtract, "mul": tf.multiply, "div": tf.divide,
          "maximum": tf.maximum, "minimum": tf.minimum}


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("other", ["channel_const", "row_const", "input"])
def test_binary_broadcasting(op, other, tmp_path):
    x = RNG.standard_normal((2, 4, 3, 5)).astype(np.float32)
    if other == "channel_const":
        b = (RNG.random((4, 1, 1)) + 0.5).astype(np.float32)
        extra = [b]
    elif other == "row_const":
        b = (RNG.random(5) + 0.5).astype(np.float32)
        extra = [b]
    else:
        b = (RNG.random((1, 4, 1, 5)) + 0.5).astype(np.float32)
        extra = [b.shape]
    y = BINARY[op](x, b).numpy()
    g = one_op(op, x.shape, y.shape, extra_inputs=extra)
    (out,), _ = emit_run(g, [x] + ([b] if other == "input" else []), tmp_path)
    check(out, y)


def _hard_swish(x):
    return x * tf.nn.relu6(x + 3.0) / 6.0


ACTIVATIONS = {
    "relu": ({}, tf.nn.relu),
    "clip": ({"min": 0.0, "max": 6.0}, tf.nn.relu6),
    "leaky_relu": ({"alpha": 0.2}, lambda x: tf.nn.leaky_relu(x, 0.2)),
    "elu": ({"alpha": 1.0}, tf.nn.elu),
    "sigmoid": ({}, tf.sigmoid),
    "hard_sigmoid": ({"alpha": 1 / 6, "beta": 0.5}, lambda x: tf.nn.relu6(x + 3.0) / 6.0),
    "tanh": ({}, tf.tanh),
    "swish": ({}, tf.nn.silu),
    "hard_swish": ({}, _hard_swish),
    "gelu": ({"approximate": "none"}, lambda x: tf.nn.gelu(x, approximate=False)),
    "gelu_tanh": ({"approximate": "tanh"}, lambda x: tf.nn.gelu(x, approximate=True)),
    "exp": ({}, tf.exp),
    "sqrt": ({}, tf.sqrt),
    "rsqrt": ({}, tf.math.rsqrt),
    "square": ({}, tf.square),
    "neg": ({}, tf.negative),
    "identity": ({}, tf.identity),
}


@pytest.mark.parametrize("opset", [13, 17, 21])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations(name, opset, tmp_path):
    attrs, fn = ACTIVATIONS[name]
    x = (RNG.standard_normal((1, 3, 4, 5)) * 3).astype(np.float32)
    if name == "sqrt":
        x = np.abs(x)
    if name == "rsqrt":
        x = np.abs(x) + 0.1
    y = fn(x).numpy()
    g = one_op(name.split("_tanh")[0], x.shape, y.shape, attrs)
    (out,), _ = emit_run(g, [x], tmp_path, opset)
    check(out, y)


# ---- model-level behaviour ---------------------------------------------------------------------


def mixed_graph() -> tuple[ir.Graph, np.ndarray]:
    """conv -> hard_swish -> pool -> layer_norm -> gelu -> mean -> linear -> softmax; weights random."""
    r = np.random.default_rng(3)
    g = ir.Graph(name="mixed")
    g.inputs = [g.add_tensor("input:0", (1, 3, 9, 9))]
    g.source_names["input:0"] = "input:0"
    w = r.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3
    c = g.add_node("conv2d", "conv/Conv2D", ["input:0"], (1, 8, 5, 5),
                   {"kernel": (3, 3), "stride": (2, 2), "dilation": (1, 1), "groups": 1, "pads": (1, 1, 1, 1)},
                   {"weight": w, "bias": r.standard_normal(8).astype(np.float32)})
    h = g.add_node("hard_swish", "hs", [c], (1, 8, 5, 5))
    p = g.add_node("avg_pool2d", "pool", [h], (1, 8, 3, 3),
                   {"kernel": (2, 2), "stride": (2, 2), "pads": (0, 1, 0, 1), "count_include_pad": False})
    ln = g.add_node("layer_norm", "ln", [p], (1, 8, 3, 3), {"axes": (1,), "epsilon": 1e-3},
                    {"gamma": r.standard_normal((8, 1, 1)).astype(np.float32)})
    ge = g.add_node("gelu", "gelu", [ln], (1, 8, 3, 3), {"approximate": "tanh"})
    m = g.add_node("reduce_mean", "gap", [ge], (1, 8), {"axes": (2, 3), "keepdims": False})
    fc = g.add_node("linear", "fc", [m], (1, 5), {}, {"weight": r.standard_normal((5, 8)).astype(np.float32)})
    g.outputs = [g.add_node("softmax", "probs:0", [fc], (1, 5), {"axis": 1}), m]
    g.validate()
    return g, r.standard_normal((1, 3, 9, 9)).astype(np.float32)


def _numpy_mixed(g: ir.Graph, x: np.ndarray) -> list[np.ndarray]:
    """The mixed graph in TF eager (NCHW ops done in NHWC)."""
    conv = g.node("conv/Conv2D")
    y = tf.nn.conv2d(nhwc(x), conv.params["weight"].transpose(2, 3, 1, 0), 2, "SAME") + conv.params["bias"]
    y = _hard_swish(y)
    y = tf.nn.avg_pool2d(y, 2, 2, "SAME")
    mean, var = tf.nn.moments(y, axes=[-1], keepdims=True)
    y = (y - mean) * tf.math.rsqrt(var + 1e-3) * g.node("ln").params["gamma"].reshape(8)
    y = tf.nn.gelu(y, approximate=True)
    m = tf.reduce_mean(y, axis=(1, 2))
    logits = tf.matmul(m, g.node("fc").params["weight"].T)
    return [tf.nn.softmax(logits).numpy(), m.numpy()]


@pytest.mark.parametrize("opset", [13, 17, 21])
def test_mixed_graph_opsets(opset, tmp_path):
    import onnx

    g, x = mixed_graph()
    outs, result = emit_run(g, [x], tmp_path, opset)
    for out, ref in zip(outs, _numpy_mixed(g, x)):
        check(out, ref)
    model = _load(tmp_path)
    assert model.opset_import[0].version == opset
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    dims = inferred.graph.output[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["N", 5]  # any batch
    # names sanitised, recorded with shape and layout
    assert result.inputs == [{"name": "input_0", "shape": [1, 3, 9, 9], "layout": "NCHW"}]
    assert [o["name"] for o in result.outputs] == ["probs_0", "gap"]
    assert [i.name for i in model.graph.input] == ["input_0"]
    assert [o.name for o in model.graph.output] == ["probs_0", "gap"]


def test_external_data_branch(tmp_path):
    """The > 2 GB branch, forced with a tiny threshold: weights go to model.onnx.data."""
    x = RNG.standard_normal((2, 64)).astype(np.float32)
    w = RNG.standard_normal((64, 64)).astype(np.float32)
    g = one_op("linear", (2, 64), (2, 64), {}, {"weight": w})
    (out,), result = emit_run(g, [x], tmp_path, onnx_external_data_threshold=0)
    assert result.files == ["model.onnx", "model.onnx.data"]
    assert (tmp_path / "model.onnx.data").stat().st_size == w.nbytes
    assert (tmp_path / "model.onnx").stat().st_size < w.nbytes
    check(out, tf.matmul(x, w.T).numpy())


def test_const_and_input_outputs(tmp_path):
    """Graph outputs that are a const or a graph input still get their own tensors."""
    g = ir.Graph(name="edge")
    g.inputs = [g.add_tensor("x", (1, 2))]
    c = g.add_node("const", "k", [], (1, 2), params={"value": np.array([[1.0, 2.0]], np.float32)})
    s = g.add_node("add", "s", ["x", c], (1, 2))
    g.outputs = [s, c, "x"]
    x = np.array([[3.0, -1.0]], np.float32)
    outs, _ = emit_run(g, [x], tmp_path)
    check(outs[0], x + [[1.0, 2.0]])
    check(outs[1], np.array([[1.0, 2.0]]))
    check(outs[2], x)


def test_opset_out_of_range(tmp_path):
    g, _ = mixed_graph()
    with pytest.raises(UsageError):
        onnx_emitter.emit(g, tmp_path, EmitOptions(opset=12))


def test_every_ir_op_has_a_handler():
    from tf_convert.emitters.onnx.contract import TABLE

    refused = {op for op, spec in ir.OPS.items() if "onnx" in spec.refused}  # declared, with the reason
    assert sorted(set(ir.OPS) - refused) == sorted(TABLE.ops())


def test_names_that_sanitise_alike(tmp_path):
    """'k:0' and 'k_0' both become ONNX-safe names; their weights must not clash."""
    g = ir.Graph(name="names")
    g.inputs = [g.add_tensor("x", (2, 3))]
    w1, w2 = np.eye(3, dtype=np.float32), 2 * np.eye(3, dtype=np.float32)
    a = g.add_node("linear", "k:0", ["x"], (2, 3), params={"weight": w1})
    g.outputs = [g.add_node("linear", "k_0", [a], (2, 3), params={"weight": w2})]
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    (out,), result = emit_run(g, [x], tmp_path)
    check(out, 2 * x)
    assert result.outputs[0]["name"] == "k_0_1"  # 'k:0' took 'k_0' first
    assert len({i.name for i in _load(tmp_path).graph.initializer}) == 2
