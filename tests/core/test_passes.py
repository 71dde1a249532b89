"""IR passes: each rewrite keeps the numbers (checked against TensorFlow, or against the graph before
the pass) and the graph valid, and leaves alone what it must not touch."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tests.support.tf_models import (
    build_mobilenet_v1_tiny,
    build_resnet_v1_tiny,
    reference_input,
    rel_err,
)
from tf_convert import parsers
from tf_convert.convert import ir
from tf_convert.convert.passes import (
    DEFAULT_PASSES,
    GraphIndex,
    PassError,
    drop_identities,
    fold_affine_into_conv,
    fold_constants,
    fold_flatten_into_linear,
    fold_pad_into_conv,
    graph_pass,
    merge_duplicates,
    run_default_passes,
    run_passes,
    transpose_to_reshape,
)
from tf_convert.parsers.base import ParseOptions

RTOL = 1e-5


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    pytest.importorskip("tensorflow")
    root = tmp_path_factory.mktemp("passmodels")
    return {
        "mobilenet": build_mobilenet_v1_tiny(root / "mobilenet", input_hw=(31, 32)),
        "resnet": build_resnet_v1_tiny(root / "resnet", input_hw=(32, 33)),
    }


@pytest.mark.parametrize("model", ["mobilenet", "resnet"])
def test_default_passes_on_networks(models, model):
    m = models[model]
    graph = parsers.parse(m["ckpt"], ParseOptions(outputs=["logits/BiasAdd", m["output_name"]]))
    x = reference_input(graph.shape(graph.inputs[0]))
    ref = parsers.run_reference(m["ckpt"], graph, [x])
    out_names = list(graph.outputs)
    sources = [graph.source_names[o] for o in out_names]
    graph = run_default_passes(graph)
    graph.validate()
    assert graph.outputs == out_names  # outputs keep their names
    assert [graph.source_names[o] for o in graph.outputs] == sources
    ops = [n.op for n in graph.nodes]
    assert "pad" not in ops and "channel_affine" not in ops and "transpose" not in ops
    assert "identity" not in ops
    got = ir.evaluate(graph, [x])
    for name, r in zip(graph.outputs, ref):
        assert rel_err(got[name], r) <= RTOL


def test_fixed_padding_folds_into_conv(models):
    graph = run_default_passes(parsers.parse(models["resnet"]["pb"]))
    conv1 = graph.node("conv1/Conv2D")
    assert conv1.attrs["pads"] == (2, 2, 2, 2) and conv1.attrs["stride"] == (2, 2)
    assert "bias" in conv1.params  # batch norm folded in


# ---- hand-built IR graphs -------------------------------------------------------------------------


def _conv_graph(pad_attrs=None, consumers=1, after=None):
    """input -> [pad] -> conv2d 3x3 -> [after] -> outputs."""
    rng = np.random.default_rng(0)
    g = ir.Graph("t")
    g.add_tensor("x", (1, 3, 7, 6))
    g.inputs.append("x")
    src = "x"
    if pad_attrs is not None:
        pads = pad_attrs["pads"]
        shape = tuple(d + a + b for d, (a, b) in zip(g.shape("x"), pads))
        src = g.add_node("pad", "pad", ["x"], shape, pad_attrs)
    h, w = g.shape(src)[2:]
    conv = g.add_node("conv2d", "conv", [src], (1, 4, h - 2, w - 2),
                      {"kernel": (3, 3), "stride": (1, 1), "dilation": (1, 1), "groups": 1, "pads": (0, 0, 0, 0)},
                      {"weight": rng.standard_normal((4, 3, 3, 3)).astype(np.float32)})
    out = conv
    if after == "affine":
        out = g.add_node("channel_affine", "bn", [conv], g.shape(conv), {"axis": 1},
                         {"scale": rng.uniform(0.5, 2, 4).astype(np.float32),
                          "shift": rng.standard_normal(4).astype(np.float32)})
    elif after in ("mul", "add", "sub"):
        c = g.add_node("const", "c", [], (1, 4, 1, 1),
                       params={"value": rng.uniform(0.5, 2, (1, 4, 1, 1)).astype(np.float32)})
        out = g.add_node(after, "arith", [conv, c], g.shape(conv))
    g.outputs.append(out)
    if consumers == 2:
        g.outputs.append(g.add_node("relu", "side", [src if pad_attrs is not None else conv],
                                    g.shape(src if pad_attrs is not None else conv)))
    g.validate()
    return g


def _same_numbers(before: ir.Graph, after: ir.Graph) -> None:
    """Both graphs give the same outputs (by the IR's reference evaluator) on a random input."""
    feeds = [reference_input(before.shape(name), seed) for seed, name in enumerate(before.inputs)]
    want, got = ir.evaluate(before, feeds), ir.evaluate(after, feeds)
    assert after.outputs == before.outputs
    for name in before.outputs:
        assert rel_err(got[name], want[name]) <= RTOL, name


def _copy(g: ir.Graph) -> ir.Graph:
    import copy

    return copy.deepcopy(g)


def test_zero_pad_folds():
    g = _conv_graph({"pads": ((0, 0), (0, 0), (1, 2), (0, 1)), "mode": "constant", "value": 0.0})
    before = _copy(g)
    assert fold_pad_into_conv(g)
    g.validate()
    assert g.node("conv").attrs["pads"] == (1, 2, 0, 1) and g.node("conv").inputs == ["x"]
    _same_numbers(before, g)


def test_zero_pad_of_nhwc_folds_through_its_transpose():
    """SegFormer's patch embeddings: tokens reshaped to (N, H, W, C), zero-padded, turned NCHW, convolved."""
    rng = np.random.default_rng(0)
    g = ir.Graph("t")
    g.add_tensor("x", (1, 7, 6, 3))
    g.inputs.append("x")
    pad = g.add_node("pad", "pad", ["x"], (1, 8, 9, 3),
                     {"pads": ((0, 0), (1, 0), (1, 2), (0, 0)), "mode": "constant", "value": 0.0})
    turned = g.add_node("transpose", "turn", [pad], (1, 3, 8, 9), {"perm": (0, 3, 1, 2)})
    g.outputs.append(g.add_node("conv2d", "conv", [turned], (1, 4, 6, 7),
                                {"kernel": (3, 3), "stride": (1, 1), "dilation": (1, 1), "groups": 1,
                                 "pads": (0, 0, 0, 0)},
                                {"weight": rng.standard_normal((4, 3, 3, 3)).astype(np.float32)}))
    g.validate()
    before = _copy(g)
    assert fold_pad_into_conv(g)
    g.validate()
    assert g.node("conv").attrs["pads"] == (1, 0, 1, 2) and g.shape("turn") == (1, 3, 7, 6)
    _same_numbers(before, g)


@pytest.mark.parametrize("attrs,consumers", [
    ({"pads": ((0, 0), (0, 0), (1, 1), (1, 1)), "mode": "constant", "value": 1.0}, 1),  # value != 0
    ({"pads": ((0, 0), (0, 0), (1, 1), (1, 1)), "mode": "reflect", "value": 0.0}, 1),
    ({"pads": ((0, 0), (1, 0), (1, 1), (1, 1)), "mode": "constant", "value": 0.0}, 1),  # channel pad
    ({"pads": ((0, 0), (0, 0), (1, 1), (1, 1)), "mode": "constant", "value": 0.0}, 2),  # pad used twice
])
def test_pad_not_folded(attrs, consumers):
    g = _conv_graph(attrs, consumers)
    assert not fold_pad_into_conv(g)
    assert any(n.op == "pad" for n in g.nodes)


@pytest.mark.parametrize("after", ["affine", "mul", "add", "sub"])
def test_affine_folds_into_conv(after):
    g = _conv_graph(after=after)
    before = _copy(g)
    assert fold_affine_into_conv(g)
    g.prune()
    g.validate()
    assert [n.op for n in g.nodes] == ["conv2d"]
    assert g.outputs == before.outputs  # the graph output keeps its name
    _same_numbers(before, g)


def test_affine_not_folded_when_conv_is_shared():
    g = _conv_graph(after="affine", consumers=2)
    assert not fold_affine_into_conv(g)


def _graph_identity_dropped_and_output_name_kept() -> ir.Graph:
    g = ir.Graph("t")
    g.add_tensor("x", (1, 2))
    g.inputs.append("x")
    a = g.add_node("relu", "a", ["x"], (1, 2))
    b = g.add_node("identity", "b", [a], (1, 2))
    c = g.add_node("sigmoid", "c", [b], (1, 2))
    d = g.add_node("identity", "out", [c], (1, 2))
    e = g.add_node("identity", "x_out", ["x"], (1, 2))  # input passed straight out: must stay
    g.outputs += [d, e]
    g.source_names.update({d: "out:0", e: "x_out:0"})
    return g


def test_identity_dropped_and_output_name_kept():
    g = _graph_identity_dropped_and_output_name_kept()
    before = _copy(g)
    run_default_passes(g)
    assert [n.op for n in g.nodes] == ["relu", "sigmoid", "identity"]
    assert g.outputs == ["out", "x_out"] and g.node("out").op == "sigmoid"
    _same_numbers(before, g)


def _graph_transpose_of_unit_axes_is_reshape() -> ir.Graph:
    g = ir.Graph("t")
    g.add_tensor("x", (1, 5, 1, 1))
    g.inputs.append("x")
    t = g.add_node("transpose", "t", ["x"], (1, 1, 1, 5), {"perm": (0, 2, 3, 1)})
    g.outputs.append(g.add_node("reshape", "r", [t], (1, 5), {"shape": (1, 5)}))
    return g


def test_transpose_of_unit_axes_is_reshape():
    g = _graph_transpose_of_unit_axes_is_reshape()
    before = _copy(g)
    assert transpose_to_reshape(g)
    assert g.node("t").op == "reshape"
    run_default_passes(g)
    assert [n.op for n in g.nodes] == ["reshape"]
    _same_numbers(before, g)


def _graph_flatten_transpose_folds_into_linear() -> ir.Graph:
    rng = np.random.default_rng(1)
    g = ir.Graph("t")
    g.add_tensor("x", (2, 3, 4, 5))
    g.inputs.append("x")
    t = g.add_node("transpose", "t", ["x"], (2, 4, 5, 3), {"perm": (0, 2, 3, 1)})
    r = g.add_node("reshape", "r", [t], (2, 60), {"shape": (2, 60)})
    g.outputs.append(g.add_node("linear", "fc", [r], (2, 7), {},
                                {"weight": rng.standard_normal((7, 60)).astype(np.float32)}))
    return g


def test_flatten_transpose_folds_into_linear():
    g = _graph_flatten_transpose_folds_into_linear()
    before = _copy(g)
    assert fold_flatten_into_linear(g)
    g.prune()
    g.validate()
    assert [n.op for n in g.nodes] == ["reshape", "linear"]
    _same_numbers(before, g)


def _graph_constant_folding() -> ir.Graph:
    g = ir.Graph("t")
    g.add_tensor("x", (1, 3, 2, 2))
    g.inputs.append("x")
    a = g.add_node("const", "a", [], (3,), params={"value": np.array([1, 4, 9], np.float32)})
    s = g.add_node("rsqrt", "s", [a], (3,))
    r = g.add_node("reshape", "r", [s], (1, 3, 1, 1), {"shape": (1, 3, 1, 1)})
    g.outputs.append(g.add_node("mul", "m", ["x", r], (1, 3, 2, 2)))
    return g


def test_constant_folding():
    g = _graph_constant_folding()
    before = _copy(g)
    assert fold_constants(g)
    g.prune()
    consts = [n for n in g.nodes if n.op == "const"]
    assert len(consts) == 1 and np.allclose(consts[0].params["value"].ravel(), [1, 0.5, 1 / 3])
    _same_numbers(before, g)


def _graph_swish_fused_and_neutral_mul_dropped() -> ir.Graph:
    g = ir.Graph("t")
    g.add_tensor("x", (1, 3, 2, 2))
    g.inputs.append("x")
    one = g.add_node("const", "one", [], (1, 1, 1, 1), params={"value": np.ones((1, 1, 1, 1), np.float32)})
    xb = g.add_node("mul", "xb", ["x", one], (1, 3, 2, 2))
    s = g.add_node("sigmoid", "s", [xb], (1, 3, 2, 2))
    g.outputs.append(g.add_node("mul", "sw", ["x", s], (1, 3, 2, 2)))
    return g


def test_swish_fused_and_neutral_mul_dropped():
    g = _graph_swish_fused_and_neutral_mul_dropped()
    before = _copy(g)
    run_default_passes(g)
    assert [n.op for n in g.nodes] == ["swish"] and g.outputs == ["sw"]
    _same_numbers(before, g)


def test_drop_identity_keeps_graph_valid_when_unused():
    g = _conv_graph()
    assert not drop_identities(g)
    g.validate()


def _graph_reduce_then_reshape_becomes_keepdims() -> ir.Graph:
    g = ir.Graph("t")
    g.add_tensor("x", (1, 3, 4, 5))
    g.inputs.append("x")
    m = g.add_node("reduce_mean", "m", ["x"], (1, 3), {"axes": (2, 3), "keepdims": False})
    r = g.add_node("reshape", "r", [m], (1, 3, 1, 1), {"shape": (1, 3, 1, 1)})
    g.outputs.append(g.add_node("mul", "out", ["x", r], (1, 3, 4, 5)))
    return g


def test_reduce_then_reshape_becomes_keepdims():
    g = _graph_reduce_then_reshape_becomes_keepdims()
    before = _copy(g)
    run_default_passes(g)
    assert [n.op for n in g.nodes] == ["reduce_mean", "mul"]
    assert g.node("m").attrs["keepdims"] is True and g.shape("m") == (1, 3, 1, 1)
    _same_numbers(before, g)


def _graph_hard_swish_fused(spelling) -> ir.Graph:
    g = ir.Graph("t")
    g.add_tensor("x", (1, 3, 2, 2))
    g.inputs.append("x")
    shape = (1, 3, 2, 2)
    three = g.add_node("const", "three", [], (), params={"value": np.array(3.0, np.float32)})
    k = 6.0 if spelling == "div" else 1 / 6
    six = g.add_node("const", "six", [], (), params={"value": np.array(k, np.float32)})
    a = g.add_node("add", "a", ["x", three], shape)
    c = g.add_node("clip", "c", [a], shape, {"min": 0.0, "max": 6.0})
    h = g.add_node(spelling, "h", [c, six], shape)
    g.outputs.append(g.add_node("mul", "hs", ["x", h], shape))
    return g


@pytest.mark.parametrize("spelling", ["div", "mul"])
def test_hard_swish_fused(spelling):
    g = _graph_hard_swish_fused(spelling)
    before = _copy(g)
    run_default_passes(g)
    assert [n.op for n in g.nodes] == ["hard_swish"] and g.outputs == ["hs"]
    _same_numbers(before, g)


def _graph_mul_add_per_channel_becomes_affine() -> ir.Graph:
    rng = np.random.default_rng(3)
    g = ir.Graph("t")
    g.add_tensor("x", (1, 3, 4, 4))
    g.inputs.append("x")
    r = g.add_node("relu", "r", ["x"], (1, 3, 4, 4))
    s = g.add_node("const", "s", [], (1, 3, 1, 1),
                   params={"value": rng.uniform(0.5, 2, (1, 3, 1, 1)).astype(np.float32)})
    b = g.add_node("const", "b", [], (3, 1, 1), params={"value": rng.standard_normal((3, 1, 1)).astype(np.float32)})
    m = g.add_node("mul", "m", [s, r], (1, 3, 4, 4))
    g.outputs.append(g.add_node("add", "bn", [m, b], (1, 3, 4, 4)))
    return g


def test_mul_add_per_channel_becomes_affine():
    g = _graph_mul_add_per_channel_becomes_affine()
    before = _copy(g)
    run_default_passes(g)
    assert [n.op for n in g.nodes] == ["relu", "channel_affine"] and g.outputs == ["bn"]
    _same_numbers(before, g)


def _graph_dense_per_pixel_becomes_1x1_conv_and_transposes_cancel() -> ir.Graph:
    rng = np.random.default_rng(4)
    g = ir.Graph("t")
    g.add_tensor("x", (1, 3, 4, 5))
    g.inputs.append("x")
    t = g.add_node("transpose", "t", ["x"], (1, 4, 5, 3), {"perm": (0, 2, 3, 1)})
    r = g.add_node("reshape", "r", [t], (20, 3), {"shape": (20, 3)})
    lin = g.add_node("linear", "fc", [r], (20, 6), {}, {"weight": rng.standard_normal((6, 3)).astype(np.float32),
                                                        "bias": rng.standard_normal(6).astype(np.float32)})
    back = g.add_node("reshape", "back", [lin], (1, 4, 5, 6), {"shape": (1, 4, 5, 6)})
    act = g.add_node("gelu", "act", [back], (1, 4, 5, 6), {"approximate": "none"})
    nchw = g.add_node("transpose", "nchw", [act], (1, 6, 4, 5), {"perm": (0, 3, 1, 2)})
    g.outputs.append(g.add_node("relu", "out", [nchw], (1, 6, 4, 5)))
    return g


def test_dense_per_pixel_becomes_1x1_conv_and_transposes_cancel():
    """The Keras Dense-on-4D chain the TF parser emits (Tensordot): no transpose survives."""
    g = _graph_dense_per_pixel_becomes_1x1_conv_and_transposes_cancel()
    before = _copy(g)
    run_default_passes(g)
    assert [n.op for n in g.nodes] == ["conv2d", "gelu", "relu"] and g.outputs == ["out"]
    _same_numbers(before, g)


def test_parsed_and_optimised_graph_survives_ir_save_load(models, tmp_path):
    graph = run_default_passes(parsers.parse(models["resnet"]["pb"]))
    ir.save(graph, tmp_path / "ir")
    loaded = ir.load(tmp_path / "ir")
    loaded.validate()
    assert [n.attrs for n in loaded.nodes] == [n.attrs for n in graph.nodes]
    _same_numbers(graph, loaded)


def _graph_layer_norm_fused(affine) -> ir.Graph:
    rng = np.random.default_rng(5)
    g = ir.Graph("t")
    shape, red = (1, 4, 3, 2), (1, 1, 3, 2)
    g.add_tensor("x", shape)
    g.inputs.append("x")

    def const(name, value):
        return g.add_node("const", name, [], value.shape, params={"value": value.astype(np.float32)})

    mean = g.add_node("reduce_mean", "mean", ["x"], red, {"axes": (1,), "keepdims": True})
    d = g.add_node("sub", "d", ["x", mean], shape)
    sq = g.add_node("square", "sq", [d], shape)
    var = g.add_node("reduce_mean", "var", [sq], red, {"axes": (1,), "keepdims": True})
    v = g.add_node("add", "v", [var, const("eps", np.array(1e-3))], red)
    m = g.add_node("rsqrt", "r", [v], red)
    if affine:
        m = g.add_node("mul", "m", [m, const("gamma", rng.uniform(0.5, 2, (1, 4, 1, 1)))], shape)
    scaled = g.add_node("mul", "scaled", ["x", m], shape)
    neg = g.add_node("neg", "neg", [mean], red)
    centred = g.add_node("mul", "centred", [neg, m], shape if affine else red)
    if affine:
        centred = g.add_node("add", "shift", [centred, const("beta", rng.standard_normal((1, 4, 1, 1)))], shape)
    g.outputs.append(g.add_node("add", "ln", [scaled, centred], shape))
    return g


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_fused(affine):
    """Keras 3's LayerNormalization over channels, as the TF parser emits it."""
    g = _graph_layer_norm_fused(affine)
    before = _copy(g)
    run_default_passes(g)
    assert [n.op for n in g.nodes] == ["layer_norm"] and g.outputs == ["ln"]
    assert sorted(g.node("ln").params) == (["beta", "gamma"] if affine else [])
    _same_numbers(before, g)


# ---- common subexpressions --------------------------------------------------------------------------


def test_duplicates_merged_numbers_unchanged_in_torch(tmp_path):
    """Keras NASNet spelling: the same Relu / conv / constant op repeated per reader."""
    tf = pytest.importorskip("tensorflow")
    import tf_convert.emitters.torch as et
    from tests.support.tf_models import save_frozen
    from tf_convert.emitters.base import EmitOptions

    rng = np.random.default_rng(3)
    w = rng.standard_normal((3, 3, 3, 3)).astype(np.float32) * 0.5

    def body(x):
        branches = []
        for i in range(3):  # three identical relu -> conv -> *2 chains, each its own TF nodes
            r = tf.nn.relu(x, name=f"relu{i}")
            c = tf.nn.conv2d(r, tf.constant(w), 1, "SAME", name=f"conv{i}")
            branches.append(c * tf.constant(2.0, name=f"two{i}"))
        a = tf.nn.relu(x, name="relu_a") + tf.nn.sigmoid(branches[0])
        b = tf.nn.sigmoid(branches[1]) * tf.nn.relu(x, name="relu_b")
        return tf.identity(tf.concat([a, b, branches[2][..., :2]], axis=3), name="out")

    path = save_frozen(tmp_path / "dup.pb", body, [1, 7, 6, 3])
    graph = parsers.parse(path)
    x = reference_input(graph.shape(graph.inputs[0]))
    ref = parsers.run_reference(path, graph, [x])
    count = {op: sum(n.op == op for n in graph.nodes) for op in ("relu", "conv2d", "sigmoid")}
    assert count == {"relu": 5, "conv2d": 3, "sigmoid": 2}
    run_default_passes(graph)
    assert {op: sum(n.op == op for n in graph.nodes) for op in count} == {"relu": 1, "conv2d": 1, "sigmoid": 1}
    assert graph.outputs == ["out"]
    out_dir = tmp_path / "torch"
    out_dir.mkdir()
    et.emit(graph, out_dir, EmitOptions())
    (got,) = et.run(out_dir, [x])
    assert rel_err(got, ref[0]) <= RTOL


def _graph_duplicates_differing_or_outputs_not_merged() -> ir.Graph:
    g = ir.Graph("t")
    g.add_tensor("x", (1, 2, 3, 3))
    g.inputs.append("x")
    w = np.arange(8, dtype=np.float32).reshape(2, 2, 1, 2)
    conv = {"kernel": (1, 2), "stride": (1, 1), "dilation": (1, 1), "groups": 1, "pads": (0, 0, 0, 1)}
    c1 = g.add_node("conv2d", "c1", ["x"], (1, 2, 3, 3), conv, {"weight": w})
    c2 = g.add_node("conv2d", "c2", ["x"], (1, 2, 3, 3), conv, {"weight": w.copy()})  # same: merged
    c3 = g.add_node("conv2d", "c3", ["x"], (1, 2, 3, 3), conv, {"weight": w + 1})  # other weight
    c4 = g.add_node("conv2d", "c4", ["x"], (1, 2, 3, 3), {**conv, "pads": (0, 0, 1, 0)}, {"weight": w})
    k1 = g.add_node("const", "k1", [], (1, 2, 1, 1), params={"value": np.ones((1, 2, 1, 1), np.float32)})
    k2 = g.add_node("const", "k2", [], (1, 2, 1, 1), params={"value": np.ones((1, 2, 1, 1), np.float64)})
    m1 = g.add_node("mul", "m1", [c2, k1], (1, 2, 3, 3))
    m2 = g.add_node("mul", "m2", [c1, k2], (1, 2, 3, 3))  # constant of another dtype: kept apart
    r1 = g.add_node("relu", "r1", [m1], (1, 2, 3, 3))
    r2 = g.add_node("relu", "r2", [m1], (1, 2, 3, 3))  # a graph output: never merged away
    s = g.add_node("add", "s", [r1, c3], (1, 2, 3, 3))
    s = g.add_node("add", "s2", [s, c4], (1, 2, 3, 3))
    s = g.add_node("add", "s3", [s, m2], (1, 2, 3, 3))
    g.outputs += [s, r2]
    return g


def test_duplicates_differing_or_outputs_not_merged():
    g = _graph_duplicates_differing_or_outputs_not_merged()
    before = _copy(g)
    assert merge_duplicates(g)
    g.validate()
    names = [n.name for n in g.nodes]
    assert "c2" not in names and {"c1", "c3", "c4", "k1", "k2", "m1", "m2", "r1", "r2"} <= set(names)
    assert g.node("m1").inputs == ["c1", "k1"] and g.outputs == ["s3", "r2"]
    assert not merge_duplicates(g)
    _same_numbers(before, g)


_READS: list[int] = []


def _counted_read(value):
    _READS.append(1)
    return value


def test_duplicate_constants_read_once_and_compared_as_array_equal():
    """Same-shaped lazy constants are read once per pass, not once per comparison (70 biases were
    4830 checkpoint reads); -0.0 and 0.0 still count as equal, as np.array_equal counts them."""
    from tf_convert.convert.ir.lazy import LazyArray

    g = ir.Graph("consts")
    values = [np.full((1, 4), float(k), np.float32) for k in range(6)] + [np.array([[-0.0] * 4], np.float32)]
    lazy = [LazyArray((1, 4), np.float32, _counted_read, (v,)) for v in values]
    names = [g.add_node("const", f"k{k}", [], (1, 4), params={"value": v}) for k, v in enumerate(lazy)]
    g.outputs += names
    _READS.clear()
    assert not merge_duplicates(g)  # graph outputs: compared, never merged
    assert len(_READS) <= len(values) + 2  # each read for its digest, the pair 0.0 / -0.0 once more to confirm
    g = ir.Graph("zeros")
    a = g.add_node("const", "a", [], (1, 4), params={"value": np.zeros((1, 4), np.float32)})
    b = g.add_node("const", "b", [], (1, 4), params={"value": np.array([[-0.0] * 4], np.float32)})
    g.outputs.append(g.add_node("add", "s", [a, b], (1, 4)))
    assert merge_duplicates(g) and [n.name for n in g.nodes] == ["a", "s"]


# ---- every pass keeps the evaluator's output, on every small graph ------------------------------------

ZERO_PAD = {"pads": ((0, 0), (0, 0), (1, 2), (0, 1)), "mode": "constant", "value": 0.0}
GRAPHS = {
    "pad_conv": lambda: _conv_graph(ZERO_PAD),
    "pad_conv_shared": lambda: _conv_graph(ZERO_PAD, consumers=2),
    "reflect_pad_conv": lambda: _conv_graph({**ZERO_PAD, "mode": "reflect"}),
    "conv_affine": lambda: _conv_graph(after="affine"),
    "conv_affine_shared": lambda: _conv_graph(after="affine", consumers=2),
    "conv_mul": lambda: _conv_graph(after="mul"),
    "conv_add": lambda: _conv_graph(after="add"),
    "conv_sub": lambda: _conv_graph(after="sub"),
    "identities": _graph_identity_dropped_and_output_name_kept,
    "unit_transpose": _graph_transpose_of_unit_axes_is_reshape,
    "flatten_linear": _graph_flatten_transpose_folds_into_linear,
    "constants": _graph_constant_folding,
    "swish_neutral_mul": _graph_swish_fused_and_neutral_mul_dropped,
    "reduce_reshape": _graph_reduce_then_reshape_becomes_keepdims,
    "hard_swish_div": lambda: _graph_hard_swish_fused("div"),
    "hard_swish_mul": lambda: _graph_hard_swish_fused("mul"),
    "mul_add_affine": _graph_mul_add_per_channel_becomes_affine,
    "dense_per_pixel": _graph_dense_per_pixel_becomes_1x1_conv_and_transposes_cancel,
    "layer_norm": lambda: _graph_layer_norm_fused(True),
    "layer_norm_plain": lambda: _graph_layer_norm_fused(False),
    "duplicates": _graph_duplicates_differing_or_outputs_not_merged,
}


@pytest.mark.parametrize("graph_name", sorted(GRAPHS))
@pytest.mark.parametrize("one_pass", DEFAULT_PASSES, ids=lambda p: p.__name__)
def test_every_pass_keeps_the_evaluators_output(one_pass, graph_name):
    g = GRAPHS[graph_name]()
    before = _copy(g)
    run_passes(g, [one_pass], check=True)  # that pass alone, to its fixed point, validated after each run
    _same_numbers(before, g)


@pytest.mark.parametrize("graph_name", sorted(GRAPHS))
def test_default_passes_keep_the_evaluators_output(graph_name):
    g = GRAPHS[graph_name]()
    before = _copy(g)
    run_default_passes(g, check=True)
    _same_numbers(before, g)


# ---- check mode names the pass that broke the graph; the index stays exact ---------------------------


def drop_first_node_badly(graph: ir.Graph) -> bool:
    """A deliberately broken pass: removes a node its readers still need."""
    graph.nodes.pop(0)
    return True


@graph_pass
def rewire_behind_the_index(ix: GraphIndex) -> bool:
    """A deliberately broken pass: edits inputs directly, so the shared index goes stale."""
    node = next(n for n in ix.graph.nodes if len(n.inputs) == 1 and n.inputs != ix.graph.inputs)
    node.inputs = list(ix.graph.inputs)
    return False


@pytest.mark.parametrize("broken", [drop_first_node_badly, rewire_behind_the_index], ids=lambda p: p.__name__)
def test_check_mode_names_the_broken_pass(broken):
    g = _conv_graph(ZERO_PAD, after="affine")
    with pytest.raises(PassError, match=f"IR pass '{broken.__name__}' broke the graph") as info:
        run_passes(g, [fold_constants, broken, fold_pad_into_conv], check=True)
    assert info.value.pass_name == broken.__name__


def test_check_mode_from_the_environment(monkeypatch):
    monkeypatch.setenv("CONVERT_CHECK_PASSES", "0")
    monkeypatch.delenv("CONVERT_DEBUG", raising=False)
    run_passes(_conv_graph(after="affine"), [rewire_behind_the_index])  # unchecked: goes unnoticed
    monkeypatch.setenv("CONVERT_DEBUG", "1")
    with pytest.raises(PassError, match="rewire_behind_the_index"):
        run_passes(_conv_graph(after="affine"), [rewire_behind_the_index])


def test_index_follows_rewrites():
    g = _graph_identity_dropped_and_output_name_kept()
    ix = GraphIndex(g)
    assert ix.producer("a").name == "a" and [n.name for n in ix.readers("a")] == ["b"]
    ix.bypass(g.node("b"), "a")
    assert [n.name for n in ix.readers("a")] == ["c"] and ix.producer("b") is None
    assert ix.single_reader("c") is g.node("out")
    ix.remove_after(g.node("c"), g.node("out"))  # out is a graph output: c takes its name
    assert ix.producer("out").op == "sigmoid" and ix.single_reader("a") is ix.producer("out")
    ix.verify()
    ix.flush()
    assert [n.name for n in g.nodes] == ["a", "out", "x_out"]
    g.validate()
