"""One conversion, exact at every input size: a fully convolutional TF graph converted at
one size runs at others (odd/even, smaller/larger) in PyTorch -- eager, scripted and exported with
dynamic H/W -- and matches TF run at those sizes; a size-bound graph refuses other sizes clearly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.tf_models import rel_err, run_frozen, save_frozen

tf = pytest.importorskip("tensorflow")
torch = pytest.importorskip("torch")

CONVERT_HW = (32, 32)
OTHER_HW = [(31, 33), (17, 18), (45, 50), (64, 63), (23, 23)]
TOL = 1e-4


def _fully_conv(x):
    rng = np.random.default_rng(0)

    def w(*shape):
        return tf.constant(rng.standard_normal(shape).astype(np.float32) * 0.3)

    y = tf.nn.relu6(tf.nn.conv2d(x, w(3, 3, 3, 8), 2, "SAME"))
    y = tf.nn.depthwise_conv2d(y, w(3, 3, 8, 1), [1, 2, 2, 1], "SAME")
    y = tf.nn.max_pool2d(y, 3, 2, "SAME")
    y = tf.nn.conv2d(y, w(1, 1, 8, 8), 2, "SAME") + tf.nn.avg_pool2d(y, 2, 2, "SAME")
    y = tf.nn.avg_pool2d(y, 3, 1, "SAME") + tf.nn.avg_pool2d(y, 2, 1, "SAME")
    y = tf.nn.conv2d(y, w(4, 4, 8, 4), 1, "SAME")
    return tf.identity(y, name="out")


def _sized(x):
    y = tf.nn.conv2d(x, tf.ones((3, 3, 3, 4)) * 0.1, 2, "SAME")
    y = tf.reshape(y, [-1, 16 * 16 * 4])
    return tf.identity(tf.matmul(y, tf.ones((16 * 16 * 4, 2)) * 0.01), name="out")


@pytest.fixture(scope="module")
def frozen(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("dyn")
    return {"fully_conv": save_frozen(d / "fc.pb", _fully_conv, [None, None, None, 3]),
            "sized": save_frozen(d / "sized.pb", _sized, [None, 32, 32, 3])}


def tf_run(pb: str, x_nhwc: np.ndarray) -> np.ndarray:
    return run_frozen(pb, {"input:0": x_nhwc})


def convert(pb: str, out: Path, *flags: str, shape: str = "1,32,32,3",
            target: str = "torch") -> subprocess.CompletedProcess:
    path = [os.environ.get("PYTHONPATH"), str(Path(__file__).resolve().parents[2])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, path)))
    cmd = [sys.executable, "-m", "tf_convert.cli", f"tf2{target}", pb, "-o", str(out), "--input-shape", shape, *flags]
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def load(out: Path):
    from tf_convert.emitters.torch.runner import import_model

    return import_model(out).load(str(out / "model.pt"))


def inputs(hw, batch=1):
    return np.random.default_rng(hw[0] * 100 + hw[1]).standard_normal((batch, *hw, 3)).astype(np.float32)


def as_torch(x_nhwc):
    return torch.from_numpy(np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2)))


def test_fully_convolutional_net_is_exact_at_every_size(frozen, tmp_path: Path) -> None:
    out = tmp_path / "t"
    r = convert(frozen["fully_conv"], out)
    assert r.returncode == 0, r.stderr
    source = (out / "model.py").read_text()
    assert "def tf_same_pad(" in source
    model = load(out)
    scripted = torch.jit.script(model)
    H, W = (torch.export.Dim(n, min=17, max=512) for n in "HW")
    x0 = as_torch(inputs(CONVERT_HW, batch=2))
    exported = torch.export.export(model, (x0,), dynamic_shapes=({0: torch.export.Dim("N", max=64), 2: H, 3: W},))
    for hw in [CONVERT_HW, *OTHER_HW]:
        x = inputs(hw, batch=3 if hw == (17, 18) else 1)
        ref = tf_run(frozen["fully_conv"], x).transpose(0, 3, 1, 2)
        with torch.no_grad():
            for name, m in (("eager", model), ("scripted", scripted), ("exported", exported.module())):
                got = m(as_torch(x)).numpy()
                assert got.shape == ref.shape, (name, hw)
                assert rel_err(got, ref) <= TOL, (name, hw, rel_err(got, ref))


def test_static_shapes_bakes_pads_and_checks_the_size(frozen, tmp_path: Path) -> None:
    out = tmp_path / "s"
    r = convert(frozen["fully_conv"], out, "--static-shapes")
    assert r.returncode == 0, r.stderr
    assert "tf_same_pad" not in (out / "model.py").read_text()
    model = load(out)
    x = inputs(CONVERT_HW, batch=3)
    with torch.no_grad():
        got = model(as_torch(x)).numpy()
        assert rel_err(got, tf_run(frozen["fully_conv"], x).transpose(0, 3, 1, 2)) <= TOL
        with pytest.raises(ValueError, match=r"converted for size \[3, 32, 32\].*--static-shapes"):
            model(as_torch(inputs((33, 32))))


def test_size_bound_model_refuses_another_size(frozen, tmp_path: Path) -> None:
    out = tmp_path / "b"
    r = convert(frozen["sized"], out)
    assert r.returncode == 0, r.stderr
    model = load(out)
    with torch.no_grad():
        x = inputs((32, 32), batch=3)
        assert rel_err(model(as_torch(x)).numpy(), tf_run(frozen["sized"], x)) <= TOL
        for m in (model, torch.jit.script(model)):  # scripted raises torch.jit.Error with the same text
            with pytest.raises(Exception, match=r"converted for size \[3, 32, 32\] .*reshape.*--input-shape"):
                m(as_torch(inputs((40, 40))))


# ---- the padding matrix at two more sizes -------------------------------------------------------

from tests.support.ir_cases import matrix  # noqa: E402

MATRIX = [c for c in matrix() if c.op != "conv_transpose"]  # TF's transposed conv bakes its output size


def _extra_sizes(hw):
    return [(hw[0] + 1, hw[1] + 2), (hw[0] + 6, hw[1] + 5)]  # parity flips (pads change), and larger


@pytest.fixture(scope="module")
def matrix_refs(tmp_path_factory):
    """case id -> (pb, [(NCHW input, NCHW TF output) at each extra size]); TF run once per session."""
    from tests.support.tf_cases import build_pb

    directory = tmp_path_factory.mktemp("dyn_matrix")
    cache: dict = {}

    def get(case):
        if case.id not in cache:
            pb = build_pb(case, directory).pb
            graph_def = tf.compat.v1.GraphDef.FromString(pb.read_bytes())
            refs = []
            with tf.Graph().as_default() as g:
                x = tf.compat.v1.placeholder(tf.float32, [None, None, None, None], name="free")
                tf.compat.v1.import_graph_def(graph_def, input_map={"x:0": x}, name="")
                with tf.compat.v1.Session(graph=g) as sess:
                    for hw in _extra_sizes(case.in_hw):
                        c = graph_def_channels(graph_def)
                        xv = np.random.default_rng(1).standard_normal((2, *hw, c)).astype(np.float32)
                        try:
                            y = sess.run("y:0", {x: xv})
                        except tf.errors.InvalidArgumentError:
                            # the SpaceToBatchND spelling of a dilated depthwise bakes its size into the
                            # graph; TF's answer at this size is its own dilated depthwise op built for it
                            y = _dilated_depthwise_reference(graph_def, case, xv)
                        refs.append((xv.transpose(0, 3, 1, 2).copy(), y.transpose(0, 3, 1, 2)))
            cache[case.id] = (pb, refs)
        return cache[case.id]

    return get


def _dilated_depthwise_reference(graph_def, case, x_nhwc: np.ndarray) -> np.ndarray:
    """tf.nn.depthwise_conv2d with the case's dilation at the size of `x_nhwc`, same filter."""
    assert case.op.startswith("depthwise") and case.dilation != (1, 1), case.id
    const = next(n for n in graph_def.node if n.name == "depthwise/filter_in")
    filt = tf.make_ndarray(const.attr["value"].tensor)
    t, b, l, r = case.explicit_pads  # noqa: E741 - pad sides; padded as tests/tf_cases.build_pb does
    pad_list = [[0, 0], [t, b], [l, r], [0, 0]]
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        x, padding = tf.constant(x_nhwc), case.padding
        if padding == "PAD_VALID":
            x, padding = tf.pad(x, pad_list), "VALID"
        y = tf.nn.depthwise_conv2d(x, filt, [1, *case.stride, 1], pad_list if padding == "EXPLICIT" else padding,
                                   dilations=case.dilation)
        return sess.run(y)


def graph_def_channels(graph_def) -> int:
    node = next(n for n in graph_def.node if n.name == "x")
    return node.attr["shape"].shape.dim[3].size


@pytest.mark.parametrize("case", MATRIX, ids=lambda c: c.id)
def test_padding_matrix_at_other_sizes_torch(case, matrix_refs, tmp_path: Path) -> None:
    from tf_convert import emitters, parsers
    from tf_convert.convert import passes
    from tf_convert.convert.padding.sizes import size_bound
    from tf_convert.parsers.base import ParseOptions

    pb, refs = matrix_refs(case)
    assert len(refs) == len(_extra_sizes(case.in_hw))
    graph = passes.run_default_passes(parsers.parse(pb, ParseOptions()))
    emitters.get("torch").emit(graph, tmp_path)
    model = load(tmp_path)
    with torch.no_grad():
        if size_bound(graph) is not None:  # a SAME window narrower than its stride (k2 s3): refuses
            assert "narrower than its stride" in size_bound(graph)
            with pytest.raises(ValueError, match="converted for size"):
                model(torch.from_numpy(refs[0][0]))
            return
        for x, ref in refs:
            got = model(torch.from_numpy(x)).numpy()
            assert got.shape == ref.shape and rel_err(got, ref) <= 1e-5, (x.shape, rel_err(got, ref))


def onnx_run(out: Path, x_nchw: np.ndarray) -> np.ndarray:
    from tf_convert import emitters

    return emitters.get("onnx").run(out, [x_nchw])[0]


def test_fully_convolutional_net_onnx_at_every_size(frozen, tmp_path: Path) -> None:
    import onnx

    out = tmp_path / "o"
    r = convert(frozen["fully_conv"], out, "--verify", target="onnx")
    assert r.returncode == 0, r.stderr
    assert "any H x W" in r.stdout + r.stderr and "at 3 sizes" in r.stdout + r.stderr  # --verify: TF re-run
    dims = onnx.load(str(out / "model.onnx")).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims][0:2] == ["N", 3]
    for hw in [CONVERT_HW, *OTHER_HW]:
        x = inputs(hw, batch=3)
        ref = tf_run(frozen["fully_conv"], x).transpose(0, 3, 1, 2)
        got = onnx_run(out, x.transpose(0, 3, 1, 2).copy())
        assert got.shape == ref.shape and rel_err(got, ref) <= TOL, (hw, rel_err(got, ref))


def test_onnx_static_shapes_refuses_other_sizes_but_not_batches(frozen, tmp_path: Path) -> None:
    out = tmp_path / "os"
    r = convert(frozen["fully_conv"], out, "--static-shapes", target="onnx")
    assert r.returncode == 0, r.stderr
    x = inputs(CONVERT_HW, batch=3)
    got = onnx_run(out, x.transpose(0, 3, 1, 2).copy())
    assert rel_err(got, tf_run(frozen["fully_conv"], x).transpose(0, 3, 1, 2)) <= TOL
    with pytest.raises(Exception, match="(?i)dimension"):
        onnx_run(out, inputs((33, 32)).transpose(0, 3, 1, 2).copy())


@pytest.mark.parametrize("case", MATRIX, ids=lambda c: c.id)
def test_padding_matrix_at_other_sizes_onnx(case, matrix_refs, tmp_path: Path) -> None:
    from tf_convert import emitters, parsers
    from tf_convert.convert import passes
    from tf_convert.convert.padding.sizes import size_bound
    from tf_convert.parsers.base import ParseOptions

    pb, refs = matrix_refs(case)
    assert len(refs) == len(_extra_sizes(case.in_hw))
    graph = passes.run_default_passes(parsers.parse(pb, ParseOptions()))
    emitters.get("onnx").emit(graph, tmp_path)
    for x, ref in refs:
        if size_bound(graph) is not None:
            with pytest.raises(Exception, match="(?i)dimension"):
                onnx_run(tmp_path, x)
            return
        got = onnx_run(tmp_path, x)
        assert got.shape == ref.shape and rel_err(got, ref) <= 1e-5, (x.shape, rel_err(got, ref))


# ---- batch 3 in every target ---------------------------------------------------------------------


@pytest.mark.parametrize("target", ["torch", "onnx", "caffe", "mxnet"])
@pytest.mark.parametrize("model", ["fully_conv", "sized"])
def test_batch_of_three_in_every_target(target, model, frozen, tmp_path: Path) -> None:
    """Converted at batch 1, run at batch 3: Reshape/Flatten keep the batch free (Caffe dim: 0,
    MXNet/ONNX 0); Caffe and MXNet record the size their baked pads are for."""
    import json

    from tf_convert import emitters

    out = tmp_path / target
    r = convert(frozen[model], out, target=target)
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "conversion.json").read_text())
    if target in ("caffe", "mxnet"):
        assert doc["input_sizes"]["spatial"] == "conversion size only"
        assert "fixed size" in r.stdout + r.stderr
    if target == "caffe":
        assert "converted for input size" in (out / "deploy.prototxt").read_text()
    if target == "mxnet":
        assert "__converted_for__" in (out / "model-symbol.json").read_text()
    x = inputs(CONVERT_HW, batch=3)
    ref = tf_run(frozen[model], x)
    ref = ref.transpose(0, 3, 1, 2) if ref.ndim == 4 else ref
    got = emitters.get(target).run(out, [x.transpose(0, 3, 1, 2).copy()])[0]
    assert got.shape == ref.shape and rel_err(got, ref) <= TOL, rel_err(got, ref)


@pytest.mark.parametrize("target", ["caffe", "mxnet"])
@pytest.mark.parametrize("hw", [(33, 33), (31, 32), (32, 31)])
def test_baked_targets_refuse_another_size(target, hw, frozen, tmp_path: Path) -> None:
    """Caffe and MXNet bake TF's SAME pads for the conversion's size, and their runtimes would run a
    fully convolutional net at any size with those pads, silently wrong: the model itself refuses another
    size, at any batch (even the same element count with H and W swapped)."""
    from tf_convert import emitters

    out = tmp_path / target
    r = convert(frozen["fully_conv"], out, target=target, shape="1,32,31,3")
    assert r.returncode == 0, r.stderr
    x = inputs((32, 31), batch=2)
    ref = tf_run(frozen["fully_conv"], x).transpose(0, 3, 1, 2)
    got = emitters.get(target).run(out, [x.transpose(0, 3, 1, 2).copy()])[0]
    assert rel_err(got, ref) <= TOL
    other = inputs(hw, batch=1).transpose(0, 3, 1, 2).copy()
    if hw == (32, 31):  # the conversion's own size runs
        emitters.get(target).run(out, [other])
        return
    with pytest.raises(Exception):  # noqa: B017 - each runtime raises its own error type
        emitters.get(target).run(out, [other])


# ---- Keras: --input-shape other than the file's fixed size ----------------------------------------


def _keras_model(path: Path, dense: bool) -> str:
    import keras

    inp = keras.Input((32, 32, 3), name="image")
    y = keras.layers.Conv2D(4, 3, strides=2, padding="same", name="c1")(inp)
    y = keras.layers.AveragePooling2D(3, 2, padding="same", name="p1")(y)
    if dense:
        y = keras.layers.Dense(2, name="d")(keras.layers.Flatten(name="f")(y))
    else:
        y = keras.layers.Conv2DTranspose(3, 3, strides=2, padding="same", name="up")(y)
    keras.Model(inp, y).save(path)
    return str(path)


def test_keras_fixed_input_converted_at_another_size(tmp_path: Path) -> None:
    pb = _keras_model(tmp_path / "fc.keras", dense=False)
    r = convert(pb, tmp_path / "o", "--verify", shape="1,37,41,3")
    assert r.returncode == 0, r.stderr
    assert "OK" in r.stdout + r.stderr and "at 3 sizes" in r.stdout + r.stderr and "any H x W" in r.stdout + r.stderr


def test_keras_fixed_input_that_bakes_its_size_exits_2(tmp_path: Path) -> None:
    pb = _keras_model(tmp_path / "d.keras", dense=True)
    r = convert(pb, tmp_path / "o", "--verify", shape="1,37,41,3")
    assert r.returncode == 2, r.stderr
    assert "fixed at (32, 32, 3)" in r.stderr and "--input-shape 1,32,32,3" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


# ---- what the zoo found: --verify at other sizes on sources that are not fully free ------------


def test_keras_normalization_is_kept_when_verified_at_other_sizes(tmp_path: Path) -> None:
    """A fixed-input Keras model with a Normalization layer (EfficientNet's stem) verifies at three sizes:
    the size-free copy the reference runs must rebuild the layer's mean/variance from its variables,
    which Keras's set_weights does not (it normalized with 0 and 1: max_rel 0.18 on EfficientNetB0)."""
    import keras

    inp = keras.Input((32, 32, 3), name="image")
    norm = keras.layers.Normalization(name="norm")  # state in variables, as adapt() leaves it
    norm.adapt(np.random.default_rng(0).normal([0.5, -1.0, 2.0], [2.0, 0.5, 3.0], (64, 8, 8, 3)).astype(np.float32))
    y = keras.layers.Conv2D(4, 3, strides=2, padding="same", name="c1")(norm(inp))
    y = keras.layers.Dense(2, name="d")(keras.layers.GlobalAveragePooling2D(name="gap")(y))
    path = tmp_path / "norm.keras"
    keras.Model(inp, y).save(path)
    r = convert(str(path), tmp_path / "o", "--verify")
    assert r.returncode == 0, r.stderr
    assert "OK" in r.stdout and "at 3 sizes" in r.stdout and "any H x W" in r.stdout


def _batch_baked(x):
    """Squeeze-and-excite as Keras traces it at batch 1: the Reshape's shape is the constant [1, 1, 1, C]."""
    y = tf.nn.conv2d(x, tf.ones((3, 3, 3, 4)) * 0.1, 2, "SAME")
    s = tf.reshape(tf.reduce_mean(y, axis=[1, 2]), [1, 1, 1, 4])
    return tf.identity(y * tf.sigmoid(s), name="out")


def test_source_that_bakes_batch_1_is_verified_at_batch_1(tmp_path: Path) -> None:
    """TF cannot run a graph whose Reshape bakes batch 1 at batch 2: the other sizes are checked at the
    conversion's batch instead (before: TF's InvalidArgumentError, exit 1)."""
    pb = save_frozen(tmp_path / "se.pb", _batch_baked, [None, None, None, 3])
    r = convert(pb, tmp_path / "o", "--verify", "--json")
    assert r.returncode == 0, r.stderr
    import json

    sizes = json.loads(r.stdout)["verify"]["sizes"]
    assert [s["input_shapes"][0][0] for s in sizes] == [1, 1] and all(s["passed"] for s in sizes)



def test_a_size_tf_cannot_run_is_reported_not_compared(tmp_path: Path) -> None:
    """When the reference refuses every attempt at another size, that size is listed as skipped (why),
    the check rests on the sizes compared, and the summary line names what was left out."""
    from tests.support import ir_cases
    from tf_convert import emitters
    from tf_convert.app import report, verify
    from tf_convert.convert.ir.reference import evaluate
    from tf_convert.emitters.base import EmitOptions

    graph = ir_cases.build(next(c for c in matrix() if c.op == "conv" and c.padding == "SAME")).graph
    emitters.get("onnx").emit(graph, tmp_path, EmitOptions())
    conversion = tuple(graph.shape(graph.inputs[0]))

    def reference(_source, g, inputs):  # a source that only runs at its conversion shape
        if inputs[0].shape != conversion:
            raise ValueError("Input to reshape is a tensor with 64 values, but the requested shape has 32")
        return [evaluate(g, inputs)[g.outputs[0]]]

    result = verify.verify(tmp_path, graph, emitters.get("onnx"), tmp_path, run_reference=reference, size_free=True)
    assert result["passed"] and len(result["sizes"]) == 2
    assert all("Input to reshape" in s["skipped"] and "max_rel" not in s for s in result["sizes"])
    line = report.summary_line({"target": "onnx", "verify": result, "seconds": {}, "pad_layers": []})
    assert "OK" in line and " at 3 sizes" not in line and "(not at " in line and "TensorFlow cannot run" in line


# a resize to a size computed from the input's shape follows the input; one to a size of constants alone
# (tf_keras's bilinear UpSampling2D in a SavedModel: its traced static shape folded to `Const * Const`) is
# that size in TF at any input size, so the conversion is bound to it
RESIZE_SIZES = [
    ("from_shape", lambda x: tf.shape(x)[1:3] * 2, None),
    ("literal", lambda x: tf.constant([16, 16], tf.int32), "fixed in the source graph"),
    ("folded_constants", lambda x: tf.constant([8, 8], tf.int32) * tf.constant([2, 2], tf.int32),
     "fixed in the source graph"),
]


@pytest.mark.parametrize("name, size, bound", RESIZE_SIZES, ids=[c[0] for c in RESIZE_SIZES])
def test_a_resize_to_a_constant_size_is_bound_to_it(name, size, bound, tmp_path: Path) -> None:
    from tf_convert import parsers
    from tf_convert.convert.padding.sizes import size_bound
    from tf_convert.parsers.base import ParseOptions

    pb = save_frozen(tmp_path / f"{name}.pb", lambda x: tf.identity(
        tf.compat.v1.image.resize_bilinear(x, size(x), half_pixel_centers=True), name="out"), [None, None, None, 3])
    graph = parsers.parse(Path(pb), ParseOptions(input_shapes={"": (1, 8, 8, 3)}))
    found = size_bound(graph)
    assert (found is None) if bound is None else (bound in found), found
