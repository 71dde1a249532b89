"""MXNet emitter against TensorFlow, run in real MXNet 1.9.1 (.venv-mxnet) through both
`SymbolBlock.imports` and `mx.mod.Module`. Every model of a test group is written first and then
evaluated in ONE MXNet subprocess (importing mxnet costs about a second)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np
import pytest

from tests.support import ir_cases
from tests.support.ir_cases import rel_error
from tf_convert.convert import ir
from tf_convert.convert.errors import UnsupportedError, UsageError
from tf_convert.convert.padding import plan, tf_pads
from tf_convert.emitters.base import EmitOptions
from tf_convert.emitters.options import options_for

mxe = pytest.importorskip("tf_convert.emitters.mxnet")

try:
    mxe.mxnet_python()
    HAVE_MXNET = True
except UsageError:
    HAVE_MXNET = False
needs_mxnet = pytest.mark.skipif(not HAVE_MXNET, reason="no .venv-mxnet (run `make mxnet-env`)")

TOL = 1e-5
MODES = ("gluon", "module")


def _check(result: dict, expected: list[np.ndarray], tol: float = TOL) -> float:
    """Both runtimes ran, agree with each other, and match TF; returns the worst error."""
    assert "error" not in result, result.get("error")
    worst = 0.0
    gluon, module = result["outputs"]["gluon"], result["outputs"]["module"]
    assert len(gluon) == len(expected) == len(module)
    for g, m, e in zip(gluon, module, expected):
        assert rel_error(m, g) <= 1e-6, "SymbolBlock and Module disagree"
        err = rel_error(g, e)
        assert err <= tol, f"rel error {err:.3g} > {tol}"
        worst = max(worst, err)
    return worst


# ---- the IR padding matrix ---------------------------------------------------------------------

MATRIX = ir_cases.matrix()


@pytest.fixture(scope="module")
def matrix_results(tmp_path_factory):
    root = tmp_path_factory.mktemp("mx-matrix")
    built, emitted, jobs = {}, {}, []
    for case in MATRIX:
        b = ir_cases.build(case)
        out = root / case.id
        out.mkdir()
        emitted[case.id] = (out, mxe.emit(b.graph, out, EmitOptions()))
        built[case.id] = b
        jobs.append((out, [b.x_nchw]))
    results = mxe.evaluate(jobs, MODES) if HAVE_MXNET else [None] * len(jobs)
    return {c.id: (built[c.id], emitted[c.id], r) for c, r in zip(MATRIX, results)}


@needs_mxnet
@pytest.mark.parametrize("case", MATRIX, ids=[c.id for c in MATRIX])
def test_padding_matrix(case, matrix_results):
    built, (out, result), run = matrix_results[case.id]
    _check(run, [built.expected_nchw])
    node = built.graph.node("y")
    pads = node.attrs.get("pads")
    symbol = json.loads((out / "model-symbol.json").read_text())
    ops = [n["op"] for n in symbol["nodes"]]
    taps = not plan(node, built.graph, options_for("mxnet").plan_options()).kernel_taps.zero
    if taps:
        # asymmetric conv lowered with zero kernel taps (the measured-cheaper choice): no extra operator
        assert result.pad_layers == [] and "Pad" not in ops
    elif pads is not None and (pads[0], pads[2]) != (pads[1], pads[3]):
        # asymmetric: recorded, and lowered with a pad operator or the aligned-pad + slice recipe
        assert [p["node"] for p in result.pad_layers] == ["y"]
        assert result.pad_layers[0]["pads"] == list(pads)
        assert ("Pad" in ops) != (node.op == "avg_pool2d")
    elif node.op != "conv_transpose2d":
        assert result.pad_layers == []
        # the only Pad operator is the IR's own standalone pad node (explicit Pad + VALID)
        assert ops.count("Pad") == int(built.case.padding == "PAD_VALID")


@needs_mxnet
@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("CONVERT_FULL_MATRIX"), reason="CONVERT_FULL_MATRIX=1 (make test-full)")
def test_padding_matrix_full(tmp_path):
    """Every valid case of the matrix (4,195), in one MXNet process (about a minute)."""
    built, jobs = [], []
    for case in ir_cases.matrix(full=True):
        b = ir_cases.build(case)
        out = tmp_path / case.id
        out.mkdir()
        mxe.emit(b.graph, out)
        built.append(b)
        jobs.append((out, [b.x_nchw]))
    bad = []
    for b, result in zip(built, mxe.evaluate(jobs, MODES)):
        try:
            _check(result, [b.expected_nchw])
        except AssertionError as err:
            bad.append(f"{b.case.id}: {err}")
    assert not bad, f"{len(bad)} failing cases: " + "; ".join(bad[:10])


def test_matrix_covers_every_lowering():
    """The quick matrix still exercises every pad plan (fold, pad op, -inf pad op, avg recipe, slice)."""
    kinds = set()
    for case in MATRIX:
        if case.padding != "SAME":
            continue
        pads = tf_pads(case.in_hw, case.kernel, case.stride, case.dilation, "SAME")
        kinds.add((case.op, pads.symmetric))
    for op in ("conv", "depthwise", "max_pool", "avg_pool"):
        assert (op, True) in kinds and (op, False) in kinds


# ---- op families --------------------------------------------------------------------------------


@dataclass
class Family:
    name: str
    graph: ir.Graph
    inputs: list[np.ndarray]
    expected: list[np.ndarray]
    options: EmitOptions | None = None
    tol: float = TOL


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _single(op: str, x: np.ndarray, out: np.ndarray, attrs=None, params=None, extra_inputs=()) -> ir.Graph:
    """One op on input `x` (plus `extra_inputs` graph inputs); its output shape from `out`."""
    g = ir.Graph(name=op)
    names = [g.add_tensor("x", x.shape)] + [g.add_tensor(f"x{i + 1}", e.shape) for i, e in enumerate(extra_inputs)]
    g.inputs = list(names)
    g.outputs = [g.add_node(op, "y", names, out.shape, attrs, params)]
    g.validate()
    return g


def _families() -> list[Family]:
    import tensorflow as tf

    rng = _rng(1)
    x4 = rng.standard_normal((2, 6, 5, 7)).astype(np.float32) * 3
    pos4 = np.abs(x4) + 0.1
    fams: list[Family] = []

    def unary(name, op, fn, x=x4, **attrs):
        y = np.asarray(fn(tf.constant(x)), np.float32)
        fams.append(Family(name, _single(op, x, y, attrs), [x], [y]))

    unary("relu", "relu", tf.nn.relu)
    unary("relu6", "clip", tf.nn.relu6, min=0.0, max=6.0)
    unary("leaky_relu", "leaky_relu", lambda t: tf.nn.leaky_relu(t, 0.2), alpha=0.2)
    unary("elu", "elu", tf.nn.elu, alpha=1.0)
    unary("sigmoid", "sigmoid", tf.sigmoid)
    unary("tanh", "tanh", tf.tanh)
    unary("hard_sigmoid", "hard_sigmoid", lambda t: tf.clip_by_value(t / 6 + 0.5, 0, 1), alpha=1 / 6, beta=0.5)
    unary("swish", "swish", tf.nn.silu)
    unary("hard_swish", "hard_swish", lambda t: t * tf.nn.relu6(t + 3) / 6)
    unary("gelu", "gelu", lambda t: tf.nn.gelu(t, approximate=False), approximate="none")
    unary("gelu_tanh", "gelu", lambda t: tf.nn.gelu(t, approximate=True), approximate="tanh")
    unary("exp", "exp", tf.exp, x=x4 / 3)
    unary("sqrt", "sqrt", tf.sqrt, x=pos4)
    unary("rsqrt", "rsqrt", tf.math.rsqrt, x=pos4)
    unary("square", "square", tf.square)
    unary("neg", "neg", tf.negative)
    unary("identity", "identity", tf.identity)
    unary("softmax_c", "softmax", lambda t: tf.nn.softmax(t, axis=1), axis=1)
    unary("softmax_last", "softmax", lambda t: tf.nn.softmax(t, axis=-1), axis=-1)

    # binary ops, with a second graph input of the same shape and with broadcast constants
    other = rng.standard_normal(x4.shape).astype(np.float32)
    tf_bin = {"add": tf.add, "sub": tf.subtract, "mul": tf.multiply, "div": tf.divide,
              "maximum": tf.maximum, "minimum": tf.minimum}
    for op, fn in tf_bin.items():
        b = other if op != "div" else np.abs(other) + 0.5
        y = fn(x4, b).numpy()
        fams.append(Family(f"{op}_tensors", _single(op, x4, y, extra_inputs=[b]), [x4, b], [y]))
    consts = {"chan": rng.standard_normal((1, 6, 1, 1)), "row": rng.standard_normal((7,)) + 3,
              "scalar": np.array(2.5), "hw": rng.standard_normal((5, 7)) + 3}
    for op, fn in tf_bin.items():
        for cname, c in consts.items():
            c = c.astype(np.float32)
            y = fn(x4, c).numpy()
            g = ir.Graph(name=f"{op}_{cname}")
            g.inputs = [g.add_tensor("x", x4.shape)]
            k = g.add_node("const", "k", [], c.shape, params={"value": c})
            order = ["x", k]
            g.outputs = [g.add_node(op, "y", order, y.shape)]
            fams.append(Family(f"{op}_const_{cname}", g, [x4], [y]))
    # a rank-2 operand broadcast against a rank-4 tensor that is computed, not constant
    b2 = rng.standard_normal((5, 7)).astype(np.float32)
    y = (x4 + b2).astype(np.float32)
    fams.append(Family("add_rank2_tensor", _single("add", x4, y, extra_inputs=[b2]), [x4, b2], [y]))

    # channel_affine, both lowerings, and on a 2-D tensor
    scale = rng.standard_normal(6).astype(np.float32)
    shift = rng.standard_normal(6).astype(np.float32)
    y = (tf.constant(x4) * scale[None, :, None, None] + shift[None, :, None, None]).numpy()
    for style in ("batchnorm", "broadcast"):
        g = _single("channel_affine", x4, y, {"axis": 1}, {"scale": scale, "shift": shift})
        fams.append(Family(f"channel_affine_{style}", g, [x4], [y], EmitOptions(extra={"mxnet_affine": style})))
    x2 = rng.standard_normal((3, 6)).astype(np.float32)
    y = (tf.constant(x2) * scale + shift).numpy()
    fams.append(Family("channel_affine_2d",
                       _single("channel_affine", x2, y, {"axis": 1}, {"scale": scale, "shift": shift}), [x2], [y]))

    # layer norm: last axis (native LayerNorm), several axes (spelled out)
    def tf_ln(x, axes, eps, gamma, beta):
        mean, var = tf.nn.moments(tf.constant(x), axes, keepdims=True)
        return ((x - mean) * tf.math.rsqrt(var + eps) * gamma + beta).numpy()

    x3 = rng.standard_normal((2, 4, 10)).astype(np.float32) * 2 + 1
    gamma, beta = rng.standard_normal(10).astype(np.float32), rng.standard_normal(10).astype(np.float32)
    y = tf_ln(x3, [2], 1e-3, gamma, beta)
    fams.append(Family("layer_norm_last", _single("layer_norm", x3, y, {"axes": (2,), "epsilon": 1e-3},
                                                  {"gamma": gamma, "beta": beta}), [x3], [y]))
    g4 = rng.standard_normal((6, 5, 7)).astype(np.float32)
    y = tf_ln(x4, [1, 2, 3], 1e-5, g4, 0.0)
    fams.append(Family("layer_norm_chw", _single("layer_norm", x4, y, {"axes": (1, 2, 3), "epsilon": 1e-5},
                                                 {"gamma": g4}), [x4], [y]))

    # dense and shape ops
    w = rng.standard_normal((5, 10)).astype(np.float32)
    bias = rng.standard_normal(5).astype(np.float32)
    xd = rng.standard_normal((3, 10)).astype(np.float32)
    y = (tf.matmul(xd, w.T) + bias).numpy()
    fams.append(Family("linear", _single("linear", xd, y, params={"weight": w, "bias": bias}), [xd], [y]))
    y = tf.matmul(xd, w.T).numpy()
    fams.append(Family("linear_no_bias", _single("linear", xd, y, params={"weight": w}), [xd], [y]))
    y = tf.reshape(x4, (2, -1)).numpy()
    fams.append(Family("reshape", _single("reshape", x4, y, {"shape": y.shape}), [x4], [y]))
    y = tf.transpose(x4, (0, 2, 3, 1)).numpy()
    fams.append(Family("transpose", _single("transpose", x4, y, {"perm": (0, 2, 3, 1)}), [x4], [y]))
    y = tf.concat([x4, other], axis=1).numpy()
    fams.append(Family("concat", _single("concat", x4, y, {"axis": 1}, extra_inputs=[other]), [x4, other], [y]))
    y = x4[:, 1:4, 0:5, 2:7]
    fams.append(Family("slice", _single("slice", x4, y, {"begin": (0, 1, 0, 2), "end": (2, 4, 5, 7)}), [x4], [y]))
    for keep in (True, False):
        for axes in ((2, 3), (1,), (1, 2, 3)):
            for op, fn in (("reduce_mean", tf.reduce_mean), ("reduce_max", tf.reduce_max)):
                y = fn(x4, axis=axes, keepdims=keep).numpy()
                fams.append(Family(f"{op}_{''.join(map(str, axes))}_{'keep' if keep else 'drop'}",
                                   _single(op, x4, y, {"axes": axes, "keepdims": keep}), [x4], [y]))

    # standalone pads: every mode, on H/W (native Pad) and on other axes / ranks (concat recipe)
    xs = rng.standard_normal((1, 3, 5, 6)).astype(np.float32)
    for mode in ("constant", "reflect", "symmetric"):
        for pads in (((0, 0), (0, 0), (1, 2), (0, 3)), ((0, 0), (1, 2), (2, 0), (1, 1))):
            y = tf.pad(xs, pads, mode=mode.upper(), constant_values=1.5 if mode == "constant" else 0).numpy()
            attrs = {"pads": pads, "mode": mode, "value": 1.5}
            name = f"pad_{mode}_{'hw' if not any(pads[1]) else 'chw'}"
            fams.append(Family(name, _single("pad", xs, y, attrs), [xs], [y]))
    y = tf.pad(xd, ((1, 0), (2, 3))).numpy()
    attrs = {"pads": ((1, 0), (2, 3)), "mode": "constant", "value": 0.0}
    fams.append(Family("pad_2d", _single("pad", xd, y, attrs), [xd], [y]))
    fams.append(_network())
    fams.append(_name_clash(xd))
    return fams


def _name_clash(x: np.ndarray) -> Family:
    """IR names that collide with generated ones ('fc' makes 'fc_weight'; so does a node called so)."""
    rng = _rng(5)
    w1, w2 = rng.standard_normal((4, x.shape[1])).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    g = ir.Graph(name="clash")
    g.inputs = [g.add_tensor("x", x.shape)]
    h = g.add_node("linear", "fc", ["x"], (x.shape[0], 4), params={"weight": w1})
    g.outputs = [g.add_node("linear", "fc_weight", [h], (x.shape[0], 3), params={"weight": w2}), h]
    return Family("name_clash", g, [x], [x @ w1.T @ w2.T, x @ w1.T])


def _network() -> Family:
    """A small MobileNet-ish chain with two outputs, against TF in NHWC."""
    import tensorflow as tf

    rng = _rng(7)
    x = rng.standard_normal((1, 9, 10, 3)).astype(np.float32)
    w1 = rng.standard_normal((3, 3, 3, 8)).astype(np.float32) * 0.3
    scale, shift = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    wd = rng.standard_normal((3, 3, 8, 1)).astype(np.float32) * 0.3
    wf = rng.standard_normal((8, 5)).astype(np.float32)
    h = tf.nn.conv2d(x, w1, 2, "SAME")
    h = tf.nn.relu6(h * scale + shift)
    h = tf.nn.depthwise_conv2d(h, wd, [1, 1, 1, 1], "SAME")
    feat = h.numpy().transpose(0, 3, 1, 2)
    pooled = tf.reduce_mean(h, axis=(1, 2))
    logits = tf.nn.softmax(tf.matmul(pooled, wf))

    g = ir.Graph(name="net")
    g.inputs = [g.add_tensor("input/x:0", (1, 3, 9, 10))]
    p1 = tf_pads((9, 10), (3, 3), (2, 2), (1, 1), "SAME")
    t = g.add_node("conv2d", "block/conv", g.inputs, (1, 8, 5, 5),
                   {"kernel": (3, 3), "stride": (2, 2), "dilation": (1, 1), "groups": 1, "pads": tuple(p1)},
                   {"weight": w1.transpose(3, 2, 0, 1)})
    t = g.add_node("channel_affine", "block/bn", [t], (1, 8, 5, 5), {"axis": 1}, {"scale": scale, "shift": shift})
    t = g.add_node("clip", "block/relu6", [t], (1, 8, 5, 5), {"min": 0.0, "max": 6.0})
    p2 = tf_pads((5, 5), (3, 3), (1, 1), (1, 1), "SAME")
    t = g.add_node("conv2d", "block/dw", [t], (1, 8, 5, 5),
                   {"kernel": (3, 3), "stride": (1, 1), "dilation": (1, 1), "groups": 8, "pads": tuple(p2)},
                   {"weight": wd.reshape(3, 3, 8).transpose(2, 0, 1)[:, None]})
    p = g.add_node("reduce_mean", "head/mean", [t], (1, 8), {"axes": (2, 3), "keepdims": False})
    p = g.add_node("linear", "head/fc", [p], (1, 5), params={"weight": wf.T.copy()})
    p = g.add_node("softmax", "head/softmax", [p], (1, 5), {"axis": 1})
    g.outputs = [p, t]
    g.validate()
    return Family("network_two_outputs", g, [x.transpose(0, 3, 1, 2).copy()], [logits.numpy(), feat])


FAMILIES = None


def _family_list() -> list[Family]:
    global FAMILIES
    if FAMILIES is None:
        FAMILIES = _families()
    return FAMILIES


@pytest.fixture(scope="module")
def family_results(tmp_path_factory):
    root = tmp_path_factory.mktemp("mx-ops")
    jobs, emitted = [], {}
    for fam in _family_list():
        out = root / fam.name
        out.mkdir()
        emitted[fam.name] = mxe.emit(fam.graph, out, fam.options or EmitOptions())
        jobs.append((out, fam.inputs))
    results = mxe.evaluate(jobs, MODES)
    return {f.name: (f, emitted[f.name], r, root / f.name) for f, r in zip(_family_list(), results)}


def _all_family_names() -> list[str]:
    return [f.name for f in _family_list()]


@needs_mxnet
@pytest.mark.parametrize("name", _all_family_names())
def test_op_family(name, family_results):
    fam, _, result, _ = family_results[name]
    _check(result, fam.expected, fam.tol)


@needs_mxnet
def test_network_names_and_outputs(family_results):
    family, result, _, _ = family_results["network_two_outputs"]
    assert [i["name"] for i in result.inputs] == ["input_x_0"]
    assert [o["name"] for o in result.outputs] == ["head_softmax_output", "block_dw_output"]
    assert [o["shape"] for o in result.outputs] == [[1, 5], [1, 8, 5, 5]]
    conv = family.graph.node("block/conv")  # 9x10 stride 2: asymmetric pads (1, 1, 0, 1)
    if plan(conv, family.graph, options_for("mxnet").plan_options()).kernel_taps.zero:
        assert [(p["node"], p["pads"]) for p in result.pad_layers] == [("block/conv", [1, 1, 0, 1])]
    else:  # the measured-cheaper kernel taps: no pad operator
        assert result.pad_layers == []


@needs_mxnet
def test_batchnorm_stats_are_aux(family_results):
    _, _, _, out = family_results["channel_affine_batchnorm"]
    names = set(mxe.nd_load(out / "model-0000.params"))
    assert names == {"arg:y_gamma", "arg:y_beta", "aux:y_moving_mean", "aux:y_moving_var"}


@needs_mxnet
def test_bench_mode_gluon_fused_runs_and_agrees(tmp_path):
    """The benchmarks' Gluon with the MKLDNN backend (runner.py 'gluon-fused') gives TF's numbers too."""
    case = next(c for c in MATRIX if c.op == "depthwise" and c.padding == "SAME" and c.stride == (2, 2))
    built = ir_cases.build(case)
    mxe.emit(built.graph, tmp_path, EmitOptions())
    (result,) = mxe.evaluate([(tmp_path, [built.x_nchw])], ("gluon-fused", "module"), bench=2)
    assert "error" not in result, result.get("error")
    assert rel_error(result["outputs"]["gluon-fused"][0], built.expected_nchw) <= TOL
    assert set(result["ms"]) == {"gluon-fused", "module"}



@needs_mxnet
def test_streamed_weights_give_the_loaders_outputs_bit_for_bit(family_results):
    """A large model's check reads its weights an array at a time (runtime.STREAM_ABOVE_BYTES): every op
    family, forced through that path, matches TF, gives exactly what SymbolBlock.imports gives, and what
    mx.mod.Module gives up to the rounding of MKLDNN's fusion (the streamed executor is bound unfused)."""
    from tf_convert.emitters.mxnet.runtime import _loaders_agree

    names = _all_family_names()
    jobs = [(family_results[n][3], family_results[n][0].inputs) for n in names]
    for name, streamed in zip(names, mxe.evaluate(jobs, MODES, stream=True)):
        family, _, loaded, _ = family_results[name]
        assert "error" not in streamed, (name, streamed["error"])
        _check(streamed, family.expected, family.tol)
        for a, b in zip(streamed["outputs"]["gluon"], loaded["outputs"]["gluon"]):
            np.testing.assert_array_equal(a, b, err_msg=name)
        for a, b in zip(streamed["outputs"]["module"], loaded["outputs"]["module"]):
            assert _loaders_agree(a, b), name


@needs_mxnet
@pytest.mark.parametrize("change", ["missing", "extra"])
def test_streamed_weights_refuse_a_params_file_that_does_not_fit(tmp_path, change):
    """Streaming keeps the loaders' checks: a parameter missing from the file (it then reads as a second
    input), or one the symbol does not use, fails in both modes (Module itself lets an unused one pass)."""
    from tf_convert.emitters.mxnet import params

    case = next(c for c in MATRIX if c.op == "conv" and c.padding == "SAME" and c.stride == (2, 2))
    built = ir_cases.build(case)
    mxe.emit(built.graph, tmp_path, EmitOptions())
    path = tmp_path / "model-0000.params"
    arrays = params.load(path)
    if change == "missing":
        arrays.pop(next(iter(arrays)))
    else:
        arrays["arg:unused_weight"] = np.ones(3, np.float32)
    params.save(path, arrays)
    for mode in MODES:
        for stream in (True, False):
            (result,) = mxe.evaluate([(tmp_path, [built.x_nchw])], (mode,), stream=stream)
            lenient = change == "extra" and mode == "module" and not stream  # Module.set_params lets it through
            assert ("error" in result) != lenient, (mode, stream)

# ---- file formats ------------------------------------------------------------------------------


def test_params_roundtrip_pure():
    from tf_convert.emitters.mxnet import params

    arrays = {"arg:w": np.arange(24, dtype=np.float32).reshape(2, 3, 4), "aux:s": np.float32([1.5]),
              "arg:i": np.arange(5, dtype=np.int64)}
    back = params.decode(params.encode(arrays))
    assert list(back) == list(arrays)
    for k in arrays:
        np.testing.assert_array_equal(back[k], arrays[k])
        assert back[k].dtype == arrays[k].dtype


@needs_mxnet
def test_params_writer_matches_mxnet(tmp_path):
    from tf_convert.emitters.mxnet import params

    rng = _rng(3)
    arrays = {"arg:conv_weight": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
              "arg:fc_bias": rng.standard_normal(7).astype(np.float32),
              "aux:bn_moving_var": np.ones(4, np.float32),
              "arg:k": np.float32([[2.0]])}
    assert params.encode(arrays) == mxe.nd_save_bytes(arrays)  # byte-identical to mx.nd.save
    params.save(tmp_path / "x.params", arrays)
    loaded = mxe.nd_load(tmp_path / "x.params")
    assert list(loaded) == list(arrays)
    for k in arrays:
        np.testing.assert_array_equal(loaded[k], arrays[k])


@needs_mxnet
def test_symbol_json_is_what_mxnet_writes(family_results):
    """MXNet re-serialises our JSON to the same document (node_row_ptr, versions, attrs included)."""
    for name in ("channel_affine_batchnorm", "layer_norm_last", "gelu_tanh", "network_two_outputs"):
        out = family_results[name][3]
        ours = json.loads((out / "model-symbol.json").read_text())
        theirs = json.loads(mxe.mxnet_tojson(out / "model-symbol.json"))
        assert _canonical(theirs) == _canonical(ours)


def _canonical(doc: dict) -> dict:
    """A symbol document keyed by node name (MXNet writes its nodes in DFS order, we in IR order)."""
    nodes = doc["nodes"]
    names = [n["name"] for n in nodes]
    rows = doc["node_row_ptr"]
    return {
        "nodes": {n["name"]: (n["op"], n.get("attrs", {}), [(names[i], k, v) for i, k, v in n["inputs"]],
                              rows[j + 1] - rows[j]) for j, n in enumerate(nodes)},
        "args": sorted(names[i] for i in doc["arg_nodes"]),
        "heads": [(names[i], k, v) for i, k, v in doc["heads"]],
        "attrs": doc["attrs"],
    }


# ---- refusals and errors -----------------------------------------------------------------------


def test_unsupported_lists_every_node(tmp_path):
    g = ir.Graph(name="bad")
    g.inputs = [g.add_tensor("x", (1, 2, 4, 4))]
    g.add_tensor("a", (1, 2, 4, 4))
    g.add_tensor("b", (1, 2, 4, 4))
    g.nodes.append(ir.Node("weird1", "made_up_op", ["x"], ["a"]))
    g.nodes.append(ir.Node("weird2", "other_op", ["a"], ["b"]))
    g.outputs = ["b"]
    items = mxe.unsupported(g)
    assert [(i.op, i.node) for i in items] == [("made_up_op", "weird1"), ("other_op", "weird2")]
    with pytest.raises(UnsupportedError) as err:
        mxe.emit(g, tmp_path)
    assert err.value.exit_code == 3 and len(err.value.items) == 2


def test_every_ir_op_has_a_handler():
    from tf_convert.emitters.mxnet.contract import TABLE

    refused = {op for op, spec in ir.OPS.items() if "mxnet" in spec.refused}  # declared, with the reason
    assert sorted(set(ir.OPS) - set(TABLE.ops()) - refused) == []


def test_missing_runtime_is_a_usage_error(monkeypatch, tmp_path):
    monkeypatch.setenv("CONVERT_MXNET_PYTHON", str(tmp_path / "nope" / "python"))
    with pytest.raises(UsageError, match="make mxnet-env"):
        mxe.run(tmp_path, [np.zeros((1, 1), np.float32)])


def test_runner_killed_by_the_oom_killer_says_so(monkeypatch, tmp_path):
    """A runner process that dies of SIGKILL (what the out-of-memory killer sends) is named as such."""
    from tf_convert.emitters.mxnet import runtime

    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nkill -9 $$\n")
    python.chmod(0o755)
    monkeypatch.setenv(runtime.PYTHON_ENV, str(python))
    (result,) = runtime.evaluate([(tmp_path, [np.zeros((1, 1), np.float32)])])
    assert "out-of-memory killer" in result["error"]


@pytest.mark.parametrize("a,b,agree", [
    ([np.inf, 1.0], [np.inf, 1.0], True),      # the same infinity: a - b would be NaN
    ([np.nan, 1.0], [np.nan, 1.0], True),
    ([np.inf, 1.0], [-np.inf, 1.0], False),
    ([np.inf, 1.0], [1e30, 1.0], False),
    ([1e-5, 2e-5], [1e-5, 2.1e-5], False),    # a small output is judged at its own scale, not against 1
    ([1e-5, 2e-5], [1e-5, 2e-5], True),
    ([0.0, 0.0], [0.0, 1e-9], False),
])
def test_the_two_mxnet_loaders_must_agree_at_the_outputs_own_scale(a, b, agree):
    from tf_convert.emitters.mxnet.runtime import _loaders_agree

    assert _loaders_agree(np.asarray(a, np.float32), np.asarray(b, np.float32)) is agree


@needs_mxnet
def test_a_rank_0_output_records_the_shape_mxnet_returns(tmp_path):
    """MXNet 1.x has no 0-d arrays: conversion.json's row says what its runtime really returns."""
    x = _rng(3).standard_normal((3, 4)).astype(np.float32)
    g = ir.Graph(name="scalar")
    g.inputs = [g.add_tensor("x", x.shape)]
    g.outputs = [g.add_node("reduce_sum", "total", ["x"], (), {"axes": (0, 1), "keepdims": False}),
                 g.add_node("relu", "same", ["x"], x.shape)]
    result = mxe.emit(g, tmp_path, EmitOptions())
    assert [o.get("returns_shape") for o in result.outputs] == [[1], None]
    (total, same) = mxe.run(tmp_path, [x])
    assert total.shape == (1,) and np.allclose(total[0], x.sum(), rtol=1e-6) and same.shape == x.shape
