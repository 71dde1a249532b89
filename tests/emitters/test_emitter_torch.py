"""PyTorch emitter: every IR op against TensorFlow, the IR-level padding matrix, model.py hygiene."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import numpy as np
import pytest

import tf_convert.emitters.torch as et  # light: torch is imported inside its functions
from tests.support import ir_cases
from tests.support.sequence_cases import recurrent_node_spec
from tf_convert.convert import ir
from tf_convert.convert.ir.ops import RUN_TIME_SIZED
from tf_convert.emitters.base import EmitOptions

torch = pytest.importorskip("torch")
tf = pytest.importorskip("tensorflow")

TOL = 1e-5
RNG = np.random.default_rng(1)


def rand(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def emit_run(graph: ir.Graph, inputs: list[np.ndarray], out_dir: Path, nhwc: bool = False):
    graph.validate()
    assert et.unsupported(graph) == []
    result = et.emit(graph, out_dir, EmitOptions(nhwc=nhwc))
    return result, et.run(out_dir, inputs)


def check(graph: ir.Graph, inputs: list[np.ndarray], expected: list[np.ndarray], out_dir: Path, tol: float = TOL):
    result, outputs = emit_run(graph, inputs, out_dir)
    assert len(outputs) == len(expected)
    for got, ref in zip(outputs, expected):
        assert ir_cases.rel_error(got, np.asarray(ref)) <= tol
    return result


def unary_graph(op: str, shape: tuple[int, ...], attrs: dict | None = None, params: dict | None = None,
                out_shape: tuple[int, ...] | None = None) -> ir.Graph:
    g = ir.Graph(name=op)
    g.inputs = [g.add_tensor("x", shape)]
    g.outputs = [g.add_node(op, f"net/{op}/Op", ["x"], out_shape or shape, attrs, params)]
    return g


# ---- the padding matrix -------------------------------------------------------------------------

# The quick matrix (~680 cases, ~15 s) covers every op x padding x kernel/stride/size/dilation value.
# CONVERT_FULL_MATRIX=1 runs every valid case (~4200, ~90 s more).
MATRIX = ir_cases.matrix(full=bool(os.environ.get("CONVERT_FULL_MATRIX")))


@pytest.mark.parametrize("case", MATRIX, ids=[c.id for c in MATRIX])
def test_padding_matrix(case: ir_cases.Case, tmp_path: Path) -> None:
    built = ir_cases.build(case)
    result, (y,) = emit_run(built.graph, [built.x_nchw], tmp_path)
    assert ir_cases.rel_error(y, built.expected_nchw) <= TOL
    for layer in result.pad_layers:
        assert layer["node"] == "y" and len(layer["pads"]) == 4 and layer["reason"]


def test_asymmetric_pads_get_a_named_pad_layer(tmp_path: Path) -> None:
    case = ir_cases.Case("max_pool", (2, 2), (2, 2), (1, 1), (7, 7), "SAME")  # SAME pads (0, 1, 0, 1)
    built = ir_cases.build(case)
    result, (y,) = emit_run(built.graph, [built.x_nchw], tmp_path)
    assert ir_cases.rel_error(y, built.expected_nchw) <= TOL
    assert result.pad_layers == [{"node": "y", "pads": [0, 1, 0, 1], "reason": result.pad_layers[0]["reason"]}]
    code = (tmp_path / "model.py").read_text()
    assert "self.y_pad = nn.ConstantPad2d((0, 1, 0, 1), float('-inf'))  # asymmetric" in code


def test_symmetric_pads_fold_into_the_layer(tmp_path: Path) -> None:
    built = ir_cases.build(ir_cases.Case("conv", (3, 3), (1, 1), (1, 1), (8, 8), "SAME"))
    result, (y,) = emit_run(built.graph, [built.x_nchw], tmp_path)
    assert ir_cases.rel_error(y, built.expected_nchw) <= TOL
    assert result.pad_layers == []
    assert "nn.Conv2d(3, 4, kernel_size=3, padding=1)" in (tmp_path / "model.py").read_text()


# ---- standalone pad ------------------------------------------------------------------------------

PAD_CASES = [
    ("constant", 0.0, ((0, 0), (0, 0), (1, 2), (0, 3))),
    ("constant", 1.5, ((0, 0), (0, 0), (2, 0), (1, 1))),
    ("constant", -2.0, ((0, 0), (1, 2), (0, 1), (0, 0))),  # channel axis: functional pad
    ("reflect", 0.0, ((0, 0), (0, 0), (1, 3), (2, 0))),
    ("reflect", 0.0, ((0, 0), (2, 1), (1, 0), (0, 2))),  # channel axis: flip + cat
    ("symmetric", 0.0, ((0, 0), (0, 0), (1, 4), (3, 0))),  # up to the full axis size
    ("symmetric", 0.0, ((0, 1), (2, 0), (0, 1), (2, 2))),
]


@pytest.mark.parametrize("mode,value,pads", PAD_CASES)
def test_pad_modes(mode: str, value: float, pads, tmp_path: Path) -> None:
    x = rand(2, 3, 4, 5)
    kwargs = {"constant_values": value} if mode == "constant" else {}
    ref = tf.pad(x, pads, mode=mode.upper(), **kwargs).numpy()
    g = unary_graph("pad", x.shape, {"pads": pads, "mode": mode, "value": value}, out_shape=ref.shape)
    check(g, [x], [ref], tmp_path)


def test_pad_limits_are_reported() -> None:
    g = unary_graph("pad", (1, 3, 4, 4), {"pads": ((0, 0), (0, 0), (4, 0), (0, 0)), "mode": "reflect", "value": 0.0},
                    out_shape=(1, 3, 8, 4))
    [item] = et.unsupported(g)
    assert item.op == "pad" and item.node == "net/pad/Op" and "reflect" in item.hint


# ---- per-channel, normalisation, dense -----------------------------------------------------------


def test_channel_affine_from_batch_norm(tmp_path: Path) -> None:
    x = rand(1, 5, 6, 4)  # NHWC
    mean, var, beta, gamma = rand(4), np.abs(rand(4)) + 0.1, rand(4), rand(4)
    ref = tf.nn.batch_normalization(x, mean, var, beta, gamma, 1e-3).numpy().transpose(0, 3, 1, 2)
    scale = (gamma / np.sqrt(var + 1e-3)).astype(np.float32)
    shift = (beta - mean * scale).astype(np.float32)
    g = unary_graph("channel_affine", (1, 4, 5, 6), {"axis": 1}, {"scale": scale, "shift": shift})
    check(g, [x.transpose(0, 3, 1, 2).copy()], [ref], tmp_path)


def test_channel_affine_2d(tmp_path: Path) -> None:
    x, scale, shift = rand(3, 7), rand(7), rand(7)
    g = unary_graph("channel_affine", (3, 7), {"axis": 1}, {"scale": scale, "shift": shift})
    check(g, [x], [(tf.constant(x) * scale + shift).numpy()], tmp_path)


@pytest.mark.parametrize("axes,pshape,layer", [
    ((3,), (6,), "nn.LayerNorm(6, eps=1e-05)"),
    ((2, 3), (1, 1, 5, 6), "nn.LayerNorm([5, 6], eps=1e-05)"),
    ((1,), (1, 4, 1, 1), "nn.LayerNorm(4, eps=1e-05)"),  # channels-first: permuted around the layer
    ((1, 3), (4, 1, 6), "nn.LayerNorm([4, 6], eps=1e-05)"),
    ((2, 3), (1, 4, 1, 1), None),  # per-channel gamma over spatial axes: spelled out
    ((1,), None, "nn.LayerNorm(4, eps=1e-05, elementwise_affine=False)"),
])
def test_layer_norm(axes, pshape, layer, tmp_path: Path) -> None:
    x = rand(2, 4, 5, 6)
    gamma, beta = (rand(*pshape), rand(*pshape)) if pshape else (np.float32(1), np.float32(0))
    mean, var = tf.nn.moments(tf.constant(x), axes, keepdims=True)
    ref = tf.nn.batch_normalization(x, mean, var, beta, gamma, 1e-5).numpy()
    params = {"gamma": gamma, "beta": beta} if pshape else {}
    g = unary_graph("layer_norm", x.shape, {"axes": axes, "epsilon": 1e-5}, params)
    check(g, [x], [ref], tmp_path)
    source = (tmp_path / "model.py").read_text()
    assert (layer in source) if layer else ("nn.LayerNorm" not in source)


@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias: bool, tmp_path: Path) -> None:
    x, w, b = rand(2, 12), rand(12, 5), rand(5)  # TF MatMul weight (in, out)
    ref = tf.matmul(x, w) + (b if bias else 0)
    params = {"weight": w.T.copy(), **({"bias": b} if bias else {})}
    check(unary_graph("linear", x.shape, {}, params, (2, 5)), [x], [ref.numpy()], tmp_path)


# ---- shape ops -----------------------------------------------------------------------------------


def test_flatten_in_tf_order_then_dense(tmp_path: Path) -> None:
    """TF flattens NHWC; the IR transposes back to NHWC before the reshape so the numbers match."""
    x = rand(1, 3, 4, 5)  # NHWC
    w, b = rand(60, 6), rand(6)
    ref = (tf.matmul(tf.reshape(x, (1, 60)), w) + b).numpy()
    g = ir.Graph(name="head")
    g.inputs = [g.add_tensor("x", (1, 5, 3, 4))]
    t = g.add_node("transpose", "flatten/perm", ["x"], (1, 3, 4, 5), {"perm": (0, 2, 3, 1)})
    f = g.add_node("reshape", "flatten/Reshape", [t], (1, 60), {"shape": (1, 60)})
    g.outputs = [g.add_node("linear", "logits/MatMul", [f], (1, 6), {}, {"weight": w.T.copy(), "bias": b})]
    check(g, [x.transpose(0, 3, 1, 2).copy()], [ref], tmp_path)


def test_reshape_transpose_slice_concat(tmp_path: Path) -> None:
    a, b = rand(2, 3, 4, 5), rand(2, 2, 4, 5)
    ta, tb = tf.constant(a), tf.constant(b)
    cat = tf.concat([ta, tb], 1)
    sl = cat[:, 1:4, 0:3, 2:5]
    tr = tf.transpose(sl, (0, 2, 3, 1))
    rs = tf.reshape(tr, (2, 9, 3))
    rs2 = tf.reshape(rs, (6, 9))  # batch axis changes
    g = ir.Graph(name="shapes")
    g.inputs = [g.add_tensor("a", a.shape), g.add_tensor("b", b.shape)]
    c = g.add_node("concat", "cat/concat", ["a", "b"], cat.shape, {"axis": 1})
    s = g.add_node("slice", "cat/slice", [c], sl.shape, {"begin": (0, 1, 0, 2), "end": (2, 4, 3, 5)})
    t = g.add_node("transpose", "perm", [s], tr.shape, {"perm": (0, 2, 3, 1)})
    r = g.add_node("reshape", "reshape", [t], rs.shape, {"shape": (2, 9, 3)})
    g.outputs = [r, g.add_node("reshape", "reshape2", [r], rs2.shape, {"shape": (6, 9)})]
    check(g, [a, b], [rs.numpy(), rs2.numpy()], tmp_path)


@pytest.mark.parametrize("op,tf_fn", [("reduce_mean", tf.reduce_mean), ("reduce_max", tf.reduce_max)])
@pytest.mark.parametrize("axes,keepdims", [((2, 3), True), ((2, 3), False), ((1,), False)])
def test_reductions(op, tf_fn, axes, keepdims, tmp_path: Path) -> None:
    x = rand(2, 3, 4, 5)
    ref = tf_fn(x, axis=axes, keepdims=keepdims).numpy()
    check(unary_graph(op, x.shape, {"axes": axes, "keepdims": keepdims}, out_shape=ref.shape), [x], [ref], tmp_path)


@pytest.mark.parametrize("shape,axis", [((2, 10), 1), ((2, 3, 4, 5), 1), ((2, 3, 4, 5), -1)])
def test_softmax(shape, axis, tmp_path: Path) -> None:
    x = rand(*shape, scale=3.0)
    check(unary_graph("softmax", shape, {"axis": axis}), [x], [tf.nn.softmax(x, axis).numpy()], tmp_path)


# ---- elementwise ---------------------------------------------------------------------------------

BINARY = {
    "add": tf.add, "sub": tf.subtract, "mul": tf.multiply, "div": tf.divide,
    "maximum": tf.maximum, "minimum": tf.minimum,
}


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_broadcasting(op: str, tmp_path: Path) -> None:
    """Two inputs (SE-style broadcast), a const buffer operand and a scalar const operand."""
    a, b = rand(2, 3, 4, 5), rand(2, 3, 1, 1)
    c = (np.abs(rand(1, 4, 5)) + 0.5).astype(np.float32)
    s = np.float32(1.75)
    fn = BINARY[op]
    y1 = fn(a, b)
    y2 = fn(y1, c)
    y3 = fn(s, y2)
    g = ir.Graph(name=op)
    g.inputs = [g.add_tensor("a", a.shape), g.add_tensor("b", b.shape)]
    t1 = g.add_node(op, "se/op", ["a", "b"], a.shape)
    k = g.add_node("const", "se/const", [], c.shape, {}, {"value": c})
    t2 = g.add_node(op, "se/op2", [t1, k], a.shape)
    ks = g.add_node("const", "se/scalar", [], (), {}, {"value": np.array(s)})
    g.outputs = [g.add_node(op, "se/op3", [ks, t2], a.shape)]
    result = check(g, [a, b], [y3.numpy()], tmp_path)
    assert result.outputs[0]["name"] == "se_op3"
    state = torch.load(tmp_path / "model.pt")
    assert "se_const" in state  # array constants are buffers in the state_dict


def tf_hard_swish(x):
    return x * tf.nn.relu6(x + 3.0) / 6.0


UNARY = [
    ("relu", {}, tf.nn.relu),
    ("clip", {"min": 0.0, "max": 6.0}, tf.nn.relu6),
    ("clip", {"min": -0.5, "max": float("inf")}, lambda x: tf.maximum(x, -0.5)),
    ("leaky_relu", {"alpha": 0.2}, lambda x: tf.nn.leaky_relu(x, 0.2)),
    ("elu", {"alpha": 1.0}, tf.nn.elu),
    ("elu", {"alpha": 0.5}, lambda x: tf.where(x > 0, x, 0.5 * (tf.exp(x) - 1))),
    ("sigmoid", {}, tf.sigmoid),
    ("hard_sigmoid", {"alpha": 1 / 6, "beta": 0.5}, lambda x: tf.nn.relu6(x + 3.0) / 6.0),
    ("hard_sigmoid", {"alpha": 0.2, "beta": 0.5}, lambda x: tf.clip_by_value(0.2 * x + 0.5, 0.0, 1.0)),
    ("tanh", {}, tf.tanh),
    ("swish", {}, tf.nn.silu),
    ("hard_swish", {}, tf_hard_swish),
    ("gelu", {"approximate": "none"}, lambda x: tf.nn.gelu(x, approximate=False)),
    ("gelu", {"approximate": "tanh"}, lambda x: tf.nn.gelu(x, approximate=True)),
    ("exp", {}, tf.exp),
    ("sqrt", {}, lambda x: tf.sqrt(tf.abs(x))),
    ("rsqrt", {}, lambda x: tf.math.rsqrt(tf.abs(x))),
    ("square", {}, tf.square),
    ("neg", {}, tf.negative),
    ("identity", {}, tf.identity),
]


@pytest.mark.parametrize("op,attrs,tf_fn", UNARY, ids=[f"{u[0]}-{i}" for i, u in enumerate(UNARY)])
def test_unary(op, attrs, tf_fn, tmp_path: Path) -> None:
    x = rand(2, 3, 4, 5, scale=4.0)
    if op in ("sqrt", "rsqrt"):
        x = np.abs(x) + 0.1
    check(unary_graph(op, x.shape, attrs), [x], [tf_fn(tf.constant(x)).numpy()], tmp_path)


def test_every_ir_op_has_a_handler() -> None:
    from tf_convert.emitters.torch.contract import TABLE

    assert sorted(TABLE.ops()) == sorted(ir.OPS)


# ---- a small network: NHWC I/O, TorchScript, torch.export, readable source --------------------------


def small_net() -> tuple[ir.Graph, list[np.ndarray], list[np.ndarray]]:
    """conv SAME s2 (asymmetric pads) -> relu6 -> avg pool SAME (divisor map) ┐
       max pool SAME (asymmetric) ------------------------------------------┴ concat -> GAP -> dense"""
    x = rand(1, 9, 9, 3)  # NHWC
    w, bias = rand(3, 3, 3, 4, scale=0.5), rand(4)
    wd, bd = rand(7, 5), rand(5)
    a = tf.nn.relu6(tf.nn.bias_add(tf.nn.conv2d(x, w, 2, "SAME"), bias))
    a = tf.nn.avg_pool2d(a, 3, 1, "SAME")
    m = tf.nn.max_pool2d(x, 2, 2, "SAME")
    c = tf.concat([a, m], 3)
    gap = tf.reduce_mean(c, (1, 2))
    logits = tf.matmul(gap, wd) + bd

    g = ir.Graph(name="small")
    g.inputs = [g.add_tensor("input", (1, 3, 9, 9))]
    g.source_names["input"] = "input:0"
    conv = g.add_node("conv2d", "block1/conv/Conv2D", ["input"], (1, 4, 5, 5),
                      {"kernel": (3, 3), "stride": (2, 2), "dilation": (1, 1), "groups": 1, "pads": (1, 1, 1, 1)},
                      {"weight": w.transpose(3, 2, 0, 1).copy(), "bias": bias})
    relu = g.add_node("clip", "block1/conv/Relu6", [conv], (1, 4, 5, 5), {"min": 0.0, "max": 6.0})
    pool = g.add_node("avg_pool2d", "block1/pool/AvgPool", [relu], (1, 4, 5, 5),
                      {"kernel": (3, 3), "stride": (1, 1), "pads": (1, 1, 1, 1), "count_include_pad": False})
    mp = g.add_node("max_pool2d", "branch/MaxPool", ["input"], (1, 3, 5, 5),
                    {"kernel": (2, 2), "stride": (2, 2), "pads": (0, 1, 0, 1)})
    cat = g.add_node("concat", "concat", [pool, mp], (1, 7, 5, 5), {"axis": 1})
    gap_t = g.add_node("reduce_mean", "head/Mean", [cat], (1, 7), {"axes": (2, 3), "keepdims": False})
    out = g.add_node("linear", "head/logits/MatMul", [gap_t], (1, 5), {}, {"weight": wd.T.copy(), "bias": bd})
    g.outputs = [out, cat]
    g.source_layouts.update({"input": "NHWC", cat: "NHWC"})
    return g, [x.transpose(0, 3, 1, 2).copy()], [logits.numpy(), c.numpy().transpose(0, 3, 1, 2)]


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
@pytest.mark.parametrize("nhwc", [False, True])
def test_small_net_scripts_and_exports(nhwc: bool, tmp_path: Path) -> None:
    from tf_convert.emitters.torch.runner import import_model

    g, inputs, expected = small_net()
    result, outputs = emit_run(g, inputs, tmp_path, nhwc=nhwc)
    for got, ref in zip(outputs, expected):
        assert ir_cases.rel_error(got, ref) <= TOL
    assert [p["node"] for p in result.pad_layers] == ["branch/MaxPool"]
    model = import_model(tmp_path).load(str(tmp_path / "model.pt"))
    x = torch.from_numpy(inputs[0].transpose(0, 2, 3, 1).copy() if nhwc else inputs[0])
    with torch.no_grad():
        eager = model(x)
        scripted = torch.jit.script(model)(x)
        exported = torch.export.export(model, (x,)).module()(x)
        batch = model(torch.cat([x, 2 * x]))  # static shapes are not baked into the batch axis
    for got in (scripted, exported):
        for a, b in zip(got, eager):
            assert torch.allclose(a, b, rtol=0, atol=1e-6)
    for a, b in zip(batch, eager):
        assert torch.allclose(a[:1], b, rtol=0, atol=1e-6)


def test_unknown_op_is_reported() -> None:
    g, _, _ = small_net()
    g.nodes.append(ir.Node("weird/Op", "fancy_op", [g.outputs[0]], ["weird/Op"]))
    [item] = et.unsupported(g)
    assert (item.op, item.node) == ("fancy_op", "weird/Op")


def test_nhwc_io(tmp_path: Path) -> None:
    g, inputs, expected = small_net()
    result, outputs = emit_run(g, inputs, tmp_path, nhwc=True)
    assert result.inputs == [{"name": "input", "shape": [1, 9, 9, 3], "layout": "NHWC"}]
    assert [o["layout"] for o in result.outputs] == ["", "NHWC"]
    assert result.outputs[1]["shape"] == [1, 5, 5, 7]
    for got, ref in zip(outputs, expected):  # run() speaks IR layout whatever the model's I/O layout
        assert ir_cases.rel_error(got, ref) <= TOL
    from tf_convert.emitters.torch.runner import import_model

    model = import_model(tmp_path).load(str(tmp_path / "model.pt"))
    with torch.no_grad():
        _, cat = model(torch.from_numpy(inputs[0].transpose(0, 2, 3, 1).copy()))
    assert ir_cases.rel_error(cat.numpy(), expected[1].transpose(0, 2, 3, 1)) <= TOL


def test_model_py_is_standalone_and_readable(tmp_path: Path) -> None:
    g, _, _ = small_net()
    result = et.emit(g, tmp_path, EmitOptions())
    assert result.files == ["model.py", "model.pt"]
    source = (tmp_path / "model.py").read_text()
    tree = ast.parse(source)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"torch", "math"}
    top = {type(n).__name__ + ":" + getattr(n, "name", "") for n in tree.body}
    assert top == {"Expr:", "Import:", "ImportFrom:", "ClassDef:Model", "FunctionDef:load"}  # no globals
    # submodules named after the TF scopes; TF's op-type suffix dropped, clashes disambiguated
    for line in ("self.block1_conv = nn.Conv2d(", "self.block1_pool = nn.AvgPool2d(",
                 "self.branch_pad = nn.ConstantPad2d((0, 1, 0, 1), float('-inf'))",
                 "self.head_logits = nn.Linear(7, 5)", "def forward(self, input: torch.Tensor)"):
        assert line in source
    assert "block1_conv_relu6 = torch.clamp(block1_conv, min=0.0, max=6.0)" in source
    assert result.inputs[0]["name"] == "input" and result.outputs[0]["name"] == "head_logits"


def test_names_are_unique_identifiers() -> None:
    from tf_convert.emitters.torch.names import Namer

    namer = Namer({"forward", "eval"}, ("pad",))
    names = [namer.name(n) for n in ("block1/conv/Conv2D", "block1/conv/BiasAdd", "block1/conv/Conv2D_1",
                                     "forward", "1x1/conv", "class", "block1/conv_pad", "a-b:0",
                                     "Conv2d_1_depthwise/depthwise", "Conv2d_1_depthwise/Relu6", "dw/depthwise_1",
                                     "convnext_stem/convnext_stem_conv/convolution", "x/x/Relu")]
    assert names == ["block1_conv", "block1_conv_biasadd", "block1_conv_conv2d_1", "forward_1", "t_1x1_conv",
                     "class_1", "block1_conv_pad_1", "a_b", "conv2d_1_depthwise", "conv2d_1_depthwise_relu6", "dw",
                     "convnext_stem_conv", "x"]
    assert all(n.isidentifier() for n in names)


def test_shared_scope_prefix_is_dropped(tmp_path: Path) -> None:
    x = rand(1, 3, 6, 6)
    g = ir.Graph(name="prefixed")
    g.inputs = [g.add_tensor("input", x.shape)]
    r = g.add_node("relu", "MobilenetV1/Conv2d_0/Relu", ["input"], x.shape)
    g.outputs = [g.add_node("sigmoid", "MobilenetV1/Logits/Sigmoid", [r], x.shape)]
    result = check(g, [x], [tf.sigmoid(tf.nn.relu(x)).numpy()], tmp_path)
    assert result.outputs[0]["name"] == "logits"
    assert "conv2d_0 = torch.relu(input)" in (tmp_path / "model.py").read_text()


def every_op_chain() -> tuple[ir.Graph, np.ndarray]:
    """One graph touching every handler and lowering path (checked for script/export, not vs TF)."""
    from tf_convert.convert.padding import tf_pads

    g = ir.Graph(name="chain")
    g.inputs = [g.add_tensor("x", (1, 3, 8, 9))]

    def add(op, shape, inputs, attrs=None, params=None):
        return g.add_node(op, g.unique_name(f"chain/{op}/Op"), inputs, shape, attrs, params)

    t = add("pad", (1, 3, 11, 12), ["x"], {"pads": ((0, 0), (0, 0), (1, 2), (2, 1)), "mode": "symmetric", "value": 0.0})
    t = add("pad", (1, 4, 11, 12), [t], {"pads": ((0, 0), (1, 0), (0, 0), (0, 0)), "mode": "reflect", "value": 0.0})
    t = add("pad", (1, 5, 11, 12), [t], {"pads": ((0, 0), (0, 1), (0, 0), (0, 0)), "mode": "constant", "value": -1.0})
    t = add("channel_affine", (1, 5, 11, 12), [t], {"axis": 1}, {"scale": rand(5), "shift": rand(5)})
    for op, attrs in [("hard_swish", {}), ("gelu", {"approximate": "tanh"}), ("elu", {"alpha": 0.5}),
                      ("leaky_relu", {"alpha": 0.1}), ("hard_sigmoid", {"alpha": 0.2, "beta": 0.5}),
                      ("swish", {}), ("tanh", {}), ("sigmoid", {}), ("relu", {}), ("exp", {}), ("neg", {}),
                      ("square", {}), ("sqrt", {}), ("identity", {})]:
        t = add(op, (1, 5, 11, 12), [t], attrs)
    t = add("layer_norm", (1, 5, 11, 12), [t], {"axes": (1,), "epsilon": 1e-3},
            {"gamma": rand(1, 5, 1, 1), "beta": rand(1, 5, 1, 1)})
    pads = tuple(tf_pads((11, 12), (3, 3), (2, 2), padding="SAME"))  # (1, 1, 0, 1): divisor map
    t = add("avg_pool2d", (1, 5, 6, 6), [t],
            {"kernel": (3, 3), "stride": (2, 2), "pads": pads, "count_include_pad": False})
    t = add("conv_transpose2d", (1, 4, 11, 11), [t],  # TF SAME k4 s2 6 -> 11: needs a slice
            {"kernel": (4, 4), "stride": (2, 2), "dilation": (1, 1), "groups": 1, "crop": (1, 1),
             "output_size": (11, 11)},
            {"weight": rand(5, 4, 4, 4), "bias": rand(4)})
    mp = add("max_pool2d", (1, 4, 6, 6), [t], {"kernel": (2, 2), "stride": (2, 2), "pads": (0, 1, 0, 1)})
    t = add("conv2d", (1, 4, 6, 6), [mp], {"kernel": (3, 3), "stride": (1, 1), "dilation": (2, 2), "groups": 4,
                                           "pads": (2, 2, 2, 2)}, {"weight": rand(4, 1, 3, 3)})
    c = add("const", (1, 4, 1, 1), [], {}, {"value": rand(1, 4, 1, 1)})
    t = add("mul", (1, 4, 6, 6), [t, c])
    s = add("const", (), [], {}, {"value": np.array(0.5, np.float32)})
    t = add("add", (1, 4, 6, 6), [t, s])
    m = add("reduce_max", (1, 4, 1, 1), [t], {"axes": (2, 3), "keepdims": True})
    t = add("sub", (1, 4, 6, 6), [t, m])
    t = add("maximum", (1, 4, 6, 6), [t, mp])
    t = add("minimum", (1, 4, 6, 6), [t, c])
    t = add("abs", (1, 4, 6, 6), [t])
    clipped = add("clip", (1, 4, 6, 6), [t], {"min": 1.0, "max": 9.0})
    t = add("div", (1, 4, 6, 6), [t, add("rsqrt", (1, 4, 6, 6), [clipped])])
    t = add("softmax", (1, 4, 6, 6), [t], {"axis": 1})
    t = add("concat", (1, 8, 6, 6), [t, mp], {"axis": 1})
    t = add("slice", (1, 3, 5, 5), [t], {"begin": (0, 1, 0, 1), "end": (1, 4, 5, 6)})
    t = add("transpose", (1, 5, 5, 3), [t], {"perm": (0, 2, 3, 1)})
    t = add("reshape", (1, 75), [t], {"shape": (1, 75)})
    t = add("linear", (1, 10), [t], {}, {"weight": rand(10, 75), "bias": rand(10)})
    r = add("reduce_mean", (1, 4), [mp], {"axes": (2, 3), "keepdims": False})
    r = add("layer_norm", (1, 4), [r], {"axes": (1,), "epsilon": 1e-5}, {"gamma": rand(4), "beta": rand(4)})
    ln = add("layer_norm", (1, 4, 6, 6), [mp], {"axes": (2, 3), "epsilon": 1e-5},
             {"gamma": rand(1, 4, 1, 1), "beta": rand(1, 4, 1, 1)})  # the spelled-out form
    ln = add("lrn", (1, 4, 6, 6), [ln], {"radius": 1, "bias": 1.5, "alpha": 0.3, "beta": 0.75})
    ln = add("fake_quant", (1, 4, 6, 6), [ln], {"min": -1.0, "max": 2.0, "scale": 3 / 255, "step": 255 / 3,
                                                 "divide": False, "zero": 85.0})
    z = add("resize", (1, 4, 9, 8), [mp], {"mode": "bilinear", "coordinate": "asymmetric", "size": (9, 8)})  # gather
    z = add("resize", (1, 4, 18, 16), [z], {"mode": "nearest", "coordinate": "half_pixel", "size": (18, 16)})
    z = add("depth_to_space", (1, 4, 18, 16), [add("space_to_depth", (1, 16, 9, 8), [z], {"block_size": 2})],
            {"block_size": 2})
    z = add("matmul", (1, 4, 18, 18), [z, add("transpose", (1, 4, 16, 18), [z], {"perm": (0, 1, 3, 2)})])
    am = g.add_node("argmax", g.unique_name("chain/argmax/Op"), [z], (1, 18, 18), {"axis": 1, "keepdims": False},
                    out_dtype="int64")
    # token ids: casts, one-hot (both value forms), a gather from a table and of an activation
    ids = g.add_node("cast", g.unique_name("chain/cast/Op"), [am], (1, 18, 18), {"dtype": "int32"}, out_dtype="int32")
    oh = add("one_hot", (1, 4, 18, 18), [ids], {"depth": 4, "axis": 1, "on": 1.0, "off": 0.0})
    oh2 = add("one_hot", (1, 18, 18, 4), [ids], {"depth": 4, "axis": 3, "on": 2.0, "off": -1.0})
    table = add("const", (18, 4), [], {}, {"value": rand(18, 4)})
    emb = add("gather", (1, 18, 18, 4), [table, am], {"axis": 0})
    emb = add("gather", (1, 18, 2, 4), [emb, add("const", (2,), [], {}, {"value": np.array([3, 0], np.int64)})],
              {"axis": 2})
    f = add("cast", (1, 18, 2, 4), [emb], {"dtype": "float32"})
    # the 3-D ops on a volume made from mp (1, 4, 6, 6) -> (1, 4, 2, 3, 6)
    from tf_convert.convert.padding.nd import tf_pads_nd

    v = add("reshape", (1, 4, 2, 3, 6), [mp], {"shape": (1, 4, 2, 3, 6)})
    v = add("conv3d", (1, 3, 1, 3, 3), [v],
            {"kernel": (2, 2, 3), "stride": (2, 1, 2), "dilation": (1, 1, 1), "groups": 1,
             "pads": tf_pads_nd((2, 3, 6), (2, 2, 3), (2, 1, 2), (1, 1, 1), "SAME")},
            {"weight": rand(3, 4, 2, 2, 3), "bias": rand(3)})
    v = add("max_pool3d", (1, 3, 1, 2, 2), [v],
            {"kernel": (1, 2, 2), "stride": (1, 2, 2),
             "pads": tf_pads_nd((1, 3, 3), (1, 2, 2), (1, 2, 2), (1, 1, 1), "SAME")})
    v = add("avg_pool3d", (1, 3, 1, 1, 1), [v],
            {"kernel": (1, 2, 2), "stride": (1, 2, 2), "count_include_pad": False,
             "pads": tf_pads_nd((1, 2, 2), (1, 2, 2), (1, 2, 2), (1, 1, 1), "SAME")})
    v = add("conv_transpose3d", (1, 2, 2, 2, 1), [v], {"kernel": (2, 2, 2), "stride": (2, 2, 2), "dilation": (1, 1, 1),
                                                        "groups": 1, "crop": (0, 0, 0), "output_size": (2, 2, 1)},
            {"weight": rand(3, 2, 2, 2, 2), "bias": rand(2)})
    # UpSampling3D's repeat, Cropping3D's crop
    v = add("repeat", (1, 2, 4, 2, 3), [v], {"repeats": (1, 1, 2, 1, 3)})
    v = add("crop", (1, 1, 2, 1, 2), [v], {"crops": ((0, 0), (0, 1), (1, 1), (0, 1), (1, 0))})
    # sequence: torch's own nn.LSTM, the written-out GRU cell, nn.RNN's last state
    q = add("reshape", (1, 2, 2), [r], {"shape": (1, 2, 2)})
    attrs, params = recurrent_node_spec("lstm", 2, 3, go_backwards=True, sequence_order="input")
    q = add("lstm", (1, 2, 3), [q], attrs, params)
    attrs, params = recurrent_node_spec("gru", 3, 3, reset_after=False, recurrent_activation="hard_sigmoid")
    q = add("gru", (1, 2, 3), [q], attrs, params)
    attrs, params = recurrent_node_spec("rnn", 3, 2, output="last_h")
    q = add("rnn", (1, 2), [q], attrs, params)
    g.outputs = [t, r, ln, am, oh, oh2, f, v, q, _issue22_chain(g, add, mp), _bitwise_chain(g), _integer_chain(g),
                 *_detection_chain(g), _linalg_chain(add, mp)]
    return g, np.abs(rand(1, 3, 8, 9))


def _linalg_chain(add, mp: str) -> str:
    """Determinant and inverse of well-conditioned matrices made from mp (1, 4, 6, 6)."""
    diagonal = add("const", (6, 6), [], {}, {"value": (10 * np.eye(6)).astype(np.float32)})
    m = add("matrix_inverse", (1, 4, 6, 6), [add("add", (1, 4, 6, 6), [mp, diagonal])])
    return add("matrix_determinant", (1, 4), [m])


def _issue22_chain(g: ir.Graph, add, mp: str) -> str:
    """Every elementwise extra op, on values in each op's domain; one float32 output."""
    shape = (1, 4, 6, 6)
    u = add("sigmoid", shape, [mp])  # (0, 1)
    big = add("reciprocal", shape, [u])  # > 1
    acc = u
    for op in ("softplus", "softsign", "selu", "erf", "erfc", "floor", "ceil", "round", "sign", "log", "log1p",
               "expm1", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh"):
        acc = add("add", shape, [acc, add(op, shape, [u])])
    acc = add("add", shape, [acc, add("acosh", shape, [big])])
    for op in ("pow", "floor_div", "floor_mod", "truncate_mod", "div_no_nan", "atan2"):
        acc = add(op, shape, [acc, big])
    masks = [g.add_node(op, g.unique_name(f"chain/{op}/Op"), [acc, big], shape, out_dtype="bool")
             for op in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")]
    masks += [g.add_node(op, g.unique_name(f"chain/{op}/Op"), [acc], shape, out_dtype="bool")
              for op in ("is_nan", "is_inf", "is_finite")]
    mask = masks[0]
    for other in masks[1:]:
        mask = add("logical_or", shape, [add("logical_and", shape, [mask, other]), other])
    mask = add("logical_not", shape, [mask])
    acc = g.add_node("select", g.unique_name("chain/select/Op"), [mask, acc, big], shape, out_dtype="float32")
    ints = g.add_node("cast", g.unique_name("chain/cast/Op"), [acc], shape, {"dtype": "int32"}, out_dtype="int32")
    ints = add("truncate_div", shape, [ints, add("const", (), [], {}, {"value": np.array(2, np.int32)})])
    acc = add("add", shape, [acc, g.add_node("cast", g.unique_name("chain/cast/Op"), [ints], shape,
                                             {"dtype": "float32"}, out_dtype="float32")])
    for op, attrs in (("cumsum", {"axis": 1, "exclusive": True, "reverse": True}),
                      ("cumprod", {"axis": 3, "exclusive": False, "reverse": True}), ("log_softmax", {"axis": 1})):
        acc = add(op, shape, [acc], attrs)
    any_all = [g.add_node(op, g.unique_name(f"chain/{op}/Op"), [mask], (1, 4, 1, 1), {"axes": (2, 3), "keepdims": True},
                          out_dtype="bool") for op in ("reduce_all", "reduce_any")]
    both = add("logical_and", (1, 4, 1, 1), any_all)
    picked = g.add_node("select", g.unique_name("chain/select/Op"), [both, acc, big], shape, out_dtype="float32")
    small = (1, 4, 6, 1)
    for op in ("reduce_sum", "reduce_prod", "reduce_min"):
        picked = add("add", small, [add(op, small, [picked], {"axes": (3,), "keepdims": True}), picked])
    top = add("top_k_values", (1, 4, 6, 2), [picked], {"k": 2})
    index = g.add_node("top_k_indices", g.unique_name("chain/top_k_indices/Op"), [picked], (1, 4, 6, 2), {"k": 2},
                       out_dtype="int32")
    low = g.add_node("argmin", g.unique_name("chain/argmin/Op"), [top], (1, 4, 6), {"axis": 3, "keepdims": False},
                     out_dtype="int64")
    as_float = [g.add_node("cast", g.unique_name("chain/cast/Op"), [t], s_, {"dtype": "float32"}, out_dtype="float32")
                for t, s_ in ((index, (1, 4, 6, 2)), (low, (1, 4, 6)))]
    return add("add", (1, 4, 6, 2), [add("add", (1, 4, 6, 2), [top, as_float[0]]),
                                     add("reshape", (1, 4, 6, 1), [as_float[1]], {"shape": (1, 4, 6, 1)})])


def _bitwise_chain(g: ir.Graph) -> str:
    """The bitwise ops on x cast to int32; one float32 output."""
    shape = (1, 3, 8, 9)

    def node(op, inputs, attrs=None, dtype="int32", params=None):
        return g.add_node(op, g.unique_name(f"chain/{op}/Op"), inputs, shape if inputs else (), attrs, params,
                          out_dtype=dtype)

    acc = node("cast", ["x"], {"dtype": "int32"})
    three = node("const", [], params={"value": np.array(3, np.int32)})
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"):
        acc = node(op, [acc, three])
    return node("cast", [node("bitwise_not", [acc])], {"dtype": "float32"}, "float32")


def _integer_chain(g: ir.Graph) -> str:
    """TFLite's integer arithmetic on x: quantize, integer conv, requantize, integer pooling, a table, an integer
    softmax, an integer fully-connected layer, dequantize; one float32 output."""
    rng = np.random.default_rng(7)

    def node(op, inputs, shape, attrs, dtype, params=None):
        return g.add_node(op, g.unique_name(f"chain/{op}/Op"), inputs, shape, attrs, params, out_dtype=dtype)

    def requantize(inputs, channels):
        attrs = {"axis": 1, "zero_point": -2, "min": -128, "max": 127, "dtype": "int8"}
        scaling = {"multiplier": np.full(channels, 1_518_500_250, np.int32), "shift": np.full(channels, -7, np.int32)}
        return node("requantize", inputs, g.shape(inputs[0]), attrs, "int8", scaling)

    q = node("quantize", ["x"], (1, 3, 8, 9), {"scale": 0.05, "zero_point": 3, "dtype": "int8"}, "int8")
    acc = node("integer_conv2d", [q], (1, 4, 8, 9), {"kernel": (3, 3), "stride": (1, 1), "dilation": (1, 1),
                                                     "groups": 1, "edges": (1, 1, 1, 1), "input_zero_point": 3},
               "int32", {"weight": rng.integers(-127, 128, (4, 3, 3, 3), dtype=np.int8),
                         "bias": rng.integers(-500, 500, 4, dtype=np.int32)})
    pooled = node("integer_avg_pool2d", [requantize([acc], 4)], (1, 4, 4, 5),
                  {"kernel": (2, 2), "stride": (2, 2), "edges": (0, 0, 0, 1), "min": -128, "max": 127}, "int8")
    table = node("lookup", [pooled], (1, 4, 4, 5), {"low": -128}, "int8",
                 {"table": rng.integers(-128, 128, 256, dtype=np.int8)})
    exp = np.concatenate([[2 ** 31 - 1], np.sort(rng.integers(0, 2 ** 31 - 1, 255))[::-1]]).astype(np.int32)
    table = node("integer_softmax", [table], (1, 4, 4, 5), {"axis": 1, "min": -128, "max": 127, "dtype": "int8"},
                 "int8", {"exp": exp})
    flat = node("reshape", [table], (1, 80), {"shape": (1, 80)}, "int8")
    acc = node("integer_linear", [flat], (1, 5), {"input_zero_point": -2}, "int32",
               {"weight": rng.integers(-127, 128, (5, 80), dtype=np.int8),
                "bias": rng.integers(-500, 500, 5, dtype=np.int32)})
    return node("dequantize", [requantize([acc], 5)], (1, 5), {"scale": 0.1, "zero_point": -2}, "float32")


def _detection_chain(g: ir.Graph) -> list[str]:
    """Non-max suppression of boxes and scores read off x (54 boxes), and its data-dependent cut."""
    boxes = g.add_node("reshape", g.unique_name("chain/boxes"), ["x"], (54, 4), {"shape": (54, 4)})
    scores = g.add_node("slice", g.unique_name("chain/scores4"), [boxes], (54, 1), {"begin": (0, 0), "end": (54, 1)})
    scores = g.add_node("reshape", g.unique_name("chain/scores"), [scores], (54,), {"shape": (54,)})
    attrs = {"max_output_size": 10, "iou_threshold": 0.3, "score_threshold": 0.0}
    picked = {out: g.add_node("non_max_suppression", g.unique_name(f"chain/nms_{out}"), [boxes, scores],
                              () if out == "count" else (10,), {**attrs, "output": out},
                              out_dtype="float32" if out == "scores" else "int32")
              for out in ("indices", "scores", "count")}
    cut = g.add_node("prefix", g.unique_name("chain/prefix"), [picked["indices"], picked["count"]], (10,))
    image = g.add_node("reshape", g.unique_name("chain/image"), ["x"], (1, 6, 9, 4), {"shape": (1, 6, 9, 4)})
    crop_boxes = g.add_node("const", g.unique_name("chain/crop_boxes"), [], (2, 4),
                            params={"value": np.array([[0.1, 0.2, 0.8, 0.9], [-0.2, 0.5, 0.6, 1.3]], np.float32)})
    box_index = g.add_node("const", g.unique_name("chain/box_index"), [], (2,),
                           params={"value": np.zeros(2, np.int32)}, out_dtype="int32")
    crops = g.add_node("crop_and_resize", g.unique_name("chain/crops"), [image, crop_boxes, box_index], (2, 3, 3, 4),
                       {"size": (3, 3), "method": "bilinear", "extrapolation_value": 0.0})
    boxes4 = g.add_node("reshape", g.unique_name("chain/boxes4"), [boxes], (2, 27, 1, 4), {"shape": (2, 27, 1, 4)})
    class_scores = g.add_node("reshape", g.unique_name("chain/class_scores"), ["x"], (2, 27, 4), {"shape": (2, 27, 4)})
    combined = {"max_per_class": 3, "per_batch": 8, "iou_threshold": 0.4, "score_threshold": 0.0, "clip_boxes": True}
    best = [g.add_node("combined_non_max_suppression", g.unique_name(f"chain/combined_{out}"), [boxes4, class_scores],
                       {"boxes": (2, 8, 4), "count": (2,)}.get(out, (2, 8)), {**combined, "output": out},
                       out_dtype="int32" if out == "count" else "float32") for out in ("boxes", "classes", "count")]
    found = [g.add_node("nonzero", g.unique_name(f"chain/nonzero_{out}"), [scores], () if out == "count" else (54, 1),
                        {"output": out}, out_dtype="int32") for out in ("indices", "count")]
    return [picked["scores"], picked["count"], cut, crops, *best, *found]


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_every_op_scripts_and_exports(tmp_path: Path) -> None:
    from tf_convert.emitters.torch.runner import import_model

    g, x = every_op_chain()
    # the ops whose sizes follow run-time values: torch.export cannot follow those (tests/parsers/test_runtime_shapes.py
    # scripts them); nor the control ops' Python while/if (torch.export traces one path;
    # tests/parsers/test_tf_control_flow.py scripts them)
    assert {n.op for n in g.nodes} == set(ir.OPS) - RUN_TIME_SIZED - ir.ops_of_kind("control")
    result, outputs = emit_run(g, [x], tmp_path)
    assert all(np.isfinite(o).all() for o in outputs)
    kinds = sorted(p.get("kind", "pad") for p in result.pad_layers)
    assert kinds == ["crop", "crop", "pad", "pad", "pad", "pad"]  # 2-D: 1 crop, 2 pads; 3-D: 1 crop, 2 pads
    model = import_model(tmp_path).load(str(tmp_path / "model.pt"))
    xt = torch.from_numpy(x)
    with torch.no_grad():
        scripted = torch.jit.script(model)(xt)
        exported = torch.export.export(model, (xt,)).module()(xt)
    for got in (scripted, exported):
        for a, b in zip(got, outputs):
            assert np.allclose(a.numpy(), b, rtol=0, atol=1e-6)


def test_transposed_conv_tail_rows_get_the_bias(tmp_path: Path) -> None:
    """k=1 < s=3, SAME: TF's output runs past the full transposed output; those rows are bias only.

    torch's output_padding rows hold exactly that (zeros + bias)."""
    built = ir_cases.build(ir_cases.Case("conv_transpose", (1, 1), (3, 3), (1, 1), (9, 6), "SAME"))
    _, (y,) = emit_run(built.graph, [built.x_nchw], tmp_path)
    assert "output_padding=(0, 2)" in (tmp_path / "model.py").read_text()
    bias = built.graph.nodes[-1].params["bias"]
    assert np.array_equal(built.expected_nchw[0, :, :, -1], np.broadcast_to(bias[:, None], (4, 25)))
    assert ir_cases.rel_error(y, built.expected_nchw) <= TOL


def test_nhwc_keeps_tensors_the_source_had_as_nchw(tmp_path: Path) -> None:
    x = rand(1, 3, 4, 5)
    g = unary_graph("relu", x.shape)
    g.source_layouts["x"] = "NCHW"
    result, (y,) = emit_run(g, [x], tmp_path, nhwc=True)
    assert result.inputs[0]["layout"] == "NCHW" and result.outputs[0]["layout"] == "NHWC"
    assert np.array_equal(y, np.maximum(x, 0))


def test_generated_same_pad_helper_is_tfs_rule():
    """model.py's tf_same_pad restates TF's SAME rule in torch; it must equal the padding module's
    rule wherever the emitter uses it (window >= stride) for every size."""
    import torch

    from tf_convert.convert.padding.rules import same_pads_1d
    from tf_convert.emitters.torch.codegen import _SAME_PAD_HELPER

    scope: dict = {}
    exec("from typing import List\nimport torch\nfrom torch import nn\n" + _SAME_PAD_HELPER, scope)
    for window in range(1, 8):
        for stride in range(1, window + 1):
            for n in range(1, 20):
                x = torch.zeros(1, 1, n, n + 1)
                padded = scope["tf_same_pad"](x, [window, window], [stride, stride], 1.0)
                top, bottom = same_pads_1d(n, window, stride)
                left, right = same_pads_1d(n + 1, window, stride)
                assert padded.shape[2:] == (n + top + bottom, n + 1 + left + right), (window, stride, n)
                assert padded[0, 0, :top].eq(1).all() and padded[0, 0, top:top + n, left:left + n + 1].eq(0).all()


def test_runner_maps_weights_and_runs_an_older_load(tmp_path: Path) -> None:
    """The check runs model.py's own load(): memory-mapped where it offers `mmap` (no copy of
    the weights), plainly for a model.py written before it did; the same outputs either way."""
    from tf_convert.emitters.torch import runner

    g, inputs, expected = small_net()
    _, outputs = emit_run(g, inputs, tmp_path)
    model = runner.load_weights(runner.import_model(tmp_path), tmp_path)
    maps = Path("/proc/self/maps")
    if maps.exists():
        assert str((tmp_path / "model.pt").resolve()) in maps.read_text()
    del model
    source = (tmp_path / "model.py").read_text()
    older = source.replace("def load(path: str, mmap: bool = False) -> Model:", "def load(path: str) -> Model:")
    (tmp_path / "model.py").write_text(older.replace(", mmap=mmap)", ")"))
    assert (tmp_path / "model.py").read_text() != source
    for got, again, ref in zip(outputs, et.run(tmp_path, inputs), expected):
        assert np.array_equal(got, again)
        assert ir_cases.rel_error(got, ref) <= TOL
