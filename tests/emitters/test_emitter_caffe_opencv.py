"""Caffe as OpenCV DNN runs it (--caffe-dialect opencv), and BVLC's exact integer-factor resizes, end to end
against TF in OpenCV DNN 4.x:

* the resize matrix (test_resize_matrix's cases) in the OpenCV dialect: each case exact (rel error <= 1e-5),
  or refused exactly when convert.sampling says neither OpenCV's Resize layer nor a Deconvolution is exact;
* the op samples in both dialects: every sample a dialect takes is exact; the OpenCV dialect takes every
  sample BVLC takes, and the transposes too;
* a ViT-style (patch-embedding and token-mixing transposes), a MobileViT-style (bilinear resizes inside) and a
  Keras Conv1D model through the CLI with --verify, in both dialects: BVLC refuses what needs a Permute (and
  says the OpenCV dialect writes it), converts the resizes as Deconvolutions; OpenCV's layers are exact;
* the option: --caffe-pad opencv implies the dialect; deploy.prototxt's dialect line; a BVLC file has neither
  the line nor an OpenCV-only layer.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from tests.emitters.test_resize_matrix import CASES, RTOL, build_pb
from tests.support import op_breadth, op_samples
from tests.support.ir_cases import rel_error
from tf_convert import cli, emitters
from tf_convert.app import verify
from tf_convert.convert.sampling import plan_resize
from tf_convert.convert.sampling.plans import CAFFE_OPENCV
from tf_convert.emitters.base import EmitOptions
from tf_convert.emitters.options import CaffeOptions

cv2 = pytest.importorskip("cv2")
tf = pytest.importorskip("tensorflow")
if int(cv2.__version__.split(".")[0]) >= 5:  # pragma: no cover
    pytest.skip("OpenCV 5.x has no Caffe importer", allow_module_level=True)

OPENCV = EmitOptions(caffe_dialect="opencv")
OPENCV_LAYERS = ("Permute", "Resize")
TOLERANCE = 1e-5
caffe = emitters.get("caffe")


# ---- the option ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("given,dialect,pad", [
    ({}, "bvlc", "auto"),
    ({"caffe_dialect": "opencv"}, "opencv", "opencv"),  # four pad values are free in OpenCV: its pad lowering
    ({"caffe_pad": "opencv"}, "opencv", "opencv"),  # the older spelling asks for the dialect
    ({"caffe_dialect": "opencv", "caffe_pad": "kernel"}, "opencv", "kernel"),
])
def test_caffe_pad_opencv_is_an_alias_of_the_dialect(given, dialect, pad):
    options = CaffeOptions(**given)
    assert (options.caffe_dialect, options.caffe_pad) == (dialect, pad)


# ---- the resize matrix in the OpenCV dialect --------------------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from tf_convert import parsers
    from tf_convert.convert import passes

    directory = tmp_path_factory.mktemp("resize_opencv")
    cache: dict = {}

    def get(case):
        if case.id not in cache:
            pb, x, y = build_pb(case, directory)
            cache[case.id] = (passes.run_default_passes(parsers.parse(pb)), x, y)
        return cache[case.id]

    return get


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_resize_matrix_in_opencv(case, built, tmp_path):
    graph, x, expected = built(case)
    plan = plan_resize(CAFFE_OPENCV, case.mode, case.coordinate, case.in_hw, case.out_hw)
    problems = caffe.unsupported(graph, OPENCV)
    if plan.kind == "unsupported":
        assert [(p.op, p.hint) for p in problems] == [("resize", plan.reason)]
        return
    assert not problems
    caffe.emit(graph, tmp_path, OPENCV)
    assert rel_error(np.asarray(caffe.run(tmp_path, [x])[0]), expected) <= RTOL
    written = (tmp_path / "deploy.prototxt").read_text()
    assert ('type: "Resize"' in written) == (plan.kind == "native")


@pytest.mark.parametrize("mode,coordinate,in_hw,out_hw,kind", [
    ("bilinear", "half_pixel", (5, 6), (10, 24), "deconv"),  # TF2's resize / UpSampling2D(bilinear): x2, x4
    ("bilinear", "asymmetric", (5, 6), (10, 12), "deconv"),  # TF1's legacy grid
    ("bilinear", "align_corners", (5, 6), (9, 21), "deconv"),  # out - 1 = 2 (in - 1), 4 (in - 1)
    ("nearest", "align_corners", (5, 6), (13, 11), "deconv"),  # rounding: a shifted repeat
    ("nearest", "half_pixel", (5, 6), (10, 18), "repeat"),
    ("bilinear", "half_pixel", (5, 6), (15, 18), "unsupported"),  # x3: TF's float32 weights do not repeat
])
def test_bvlc_integer_factor_resizes(mode, coordinate, in_hw, out_hw, kind):
    """The integer-factor upscalings with an exact BVLC form (the resize matrix runs them against TF)."""
    assert plan_resize("caffe", mode, coordinate, in_hw, out_hw).kind == kind


def test_refusals_say_when_the_opencv_dialect_can_do_it():
    plan = plan_resize("caffe", "bilinear", "align_corners", (5, 7), (8, 9))
    assert plan.kind == "unsupported" and "--caffe-dialect opencv writes it as OpenCV DNN's Resize" in plan.reason
    assert plan_resize(CAFFE_OPENCV, "bilinear", "align_corners", (5, 7), (8, 9)).kind == "native"
    plan = plan_resize("caffe", "bilinear", "half_pixel", (5, 7), (8, 9))  # OpenCV's half-pixel grid drifts too
    assert plan.kind == "unsupported" and "--caffe-dialect opencv" not in plan.reason
    assert plan_resize(CAFFE_OPENCV, "bilinear", "half_pixel", (5, 7), (8, 9)).kind == "unsupported"


# ---- the op samples in both dialects ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    pb, feeds, values = op_samples.build_graph(tmp_path_factory.mktemp("op_samples"))
    return op_breadth.parse_samples(pb).graph, feeds, values


def _split(graph, options) -> tuple[list[str], dict[str, str]]:
    by_node: dict[str, str] = {}
    for p in caffe.unsupported(graph, options):
        by_node.setdefault(p.node, f"{p.op}: {p.hint}")
    taken, refused = [], {}
    for out in graph.outputs:
        hints = [by_node[n] for n in sorted(op_breadth._ancestors(graph, out) | {out}) if n in by_node]
        if hints:
            refused[op_breadth.case_of(graph, out)] = hints[0]
        else:
            taken.append(out)
    return taken, refused


SPLITS: dict[str, tuple[list[str], dict[str, str]]] = {}


def _errors(graph, outputs, options, feeds, values, where) -> dict[str, float]:
    sub = op_breadth.trimmed(graph, outputs)
    where.mkdir()
    caffe.emit(sub, where, options)
    actual = caffe.run(where, op_breadth.ir_feeds(sub, feeds))
    errors = {}
    for out, got in zip(sub.outputs, actual):
        case = op_breadth.case_of(sub, out)
        errors[case] = verify.metrics(np.asarray(got), op_breadth.ir_expected(sub, out, values[case]))["max_rel"]
    return errors


FULL = pytest.mark.skipif(not os.environ.get("CONVERT_FULL_MATRIX"), reason="CONVERT_FULL_MATRIX=1 (make test-full)")


@pytest.mark.slow  # the op-sample graph takes minutes to build on a busy machine
@FULL
@pytest.mark.parametrize("dialect", ["bvlc", "opencv"])
def test_op_samples_exact_or_refused(samples, dialect, tmp_path):
    """BVLC: every sample it takes in one net. OpenCV: those again, then each sample only it takes in a
    net of its own (all of them in one net trip an OpenCV shape assertion in an activation layer, loudly)."""
    graph, feeds, values = samples
    options = EmitOptions(caffe_dialect=dialect)
    taken, refused = SPLITS[dialect] = _split(graph, options)
    assert all(refused.values())
    bvlc = SPLITS["bvlc"][0] if dialect == "opencv" and "bvlc" in SPLITS else taken
    errors = _errors(graph, [t for t in taken if t in bvlc], options, feeds, values, tmp_path / "net")
    written = (tmp_path / "net" / "deploy.prototxt").read_text()
    assert not any(f'type: "{t}"' in written for t in OPENCV_LAYERS)
    assert ("caffe-dialect" in written) == (dialect == "opencv")
    for i, out in enumerate(t for t in taken if t not in bvlc):
        errors.update(_errors(graph, [out], options, feeds, values, tmp_path / f"own{i}"))
    bad = {c: e for c, e in errors.items() if not e <= TOLERANCE}
    assert not bad, bad
    print(f"\n{dialect}: {len(taken)} samples exact, {len(refused)} refused")


@pytest.mark.slow
@FULL
def test_the_opencv_dialect_takes_what_bvlc_takes_and_the_transposes():
    if set(SPLITS) != {"bvlc", "opencv"}:
        pytest.skip("needs both op-sample runs")
    (bvlc, bvlc_refused), (opencv, opencv_refused) = SPLITS["bvlc"], SPLITS["opencv"]
    assert set(bvlc) < set(opencv)
    gained = set(bvlc_refused) - set(opencv_refused)
    assert gained and all("--caffe-dialect opencv" in bvlc_refused[c] for c in gained)
    assert any("Transpose" in c for c in gained)


# ---- real model shapes through the CLI ----------------------------------------------------------------------------

def _vit(keras):
    """Patch embedding (a strided conv, then NHWC -> tokens: a real transpose), token mixing (two Permutes)."""
    layers = keras.layers
    inp = keras.Input((16, 16, 3))
    x = layers.Conv2D(8, 4, strides=4, name="patch")(inp)
    x = layers.Reshape((16, 8), name="tokens")(x)
    x = layers.Dense(12, activation="gelu", name="embed")(x)
    x = layers.Permute((2, 1), name="mix")(x)
    x = layers.Dense(16, name="token_mlp")(x)
    x = layers.Permute((2, 1), name="unmix")(x)
    return keras.Model(inp, layers.Dense(5, name="head")(layers.Flatten()(x)))


def _mobilevit(keras):
    """A strided SAME conv pyramid with bilinear resizes inside (TF2's half-pixel grid), x2 twice."""
    layers = keras.layers
    inp = keras.Input((16, 16, 3))
    x = layers.Conv2D(8, 3, strides=2, padding="same", activation="swish")(inp)
    y = layers.Conv2D(8, 3, strides=2, padding="same")(x)
    y = layers.Resizing(8, 8, interpolation="bilinear", name="up")(y)
    x = layers.Concatenate()([x, y])
    x = layers.UpSampling2D(2, interpolation="bilinear", name="up2")(x)
    return keras.Model(inp, layers.Conv2D(4, 3, padding="same")(x))


def _conv1d(keras):
    """Keras Conv1D on (N, L, C): the IR moves NLC <-> NCL around each conv."""
    layers = keras.layers
    inp = keras.Input((20, 6))
    x = layers.Conv1D(8, 3, padding="same", activation="relu")(inp)
    x = layers.Conv1D(8, 5, strides=2, padding="same")(x)
    return keras.Model(inp, layers.Dense(3)(layers.MaxPooling1D(2)(x)))


MODELS = {"vit": _vit, "mobilevit": _mobilevit, "conv1d": _conv1d}
BVLC_REFUSES = {"vit": "Permute", "conv1d": "Permute"}  # the layer the message names


@pytest.fixture(scope="module")
def saved(keras, tmp_path_factory):
    work = tmp_path_factory.mktemp("caffe_opencv_models")
    paths = {}
    for name, build in MODELS.items():
        paths[name] = work / f"{name}.keras"
        build(keras).save(paths[name])
    return paths


def _cli(*args) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli.main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("dialect", ["bvlc", "opencv"])
@pytest.mark.parametrize("name", list(MODELS))
def test_models_verify_in_opencv(saved, name, dialect, tmp_path):
    out = tmp_path / "out"
    refused = dialect == "bvlc" and name in BVLC_REFUSES
    code, stdout, stderr = _cli("tf2caffe", saved[name], "-o", out, "--caffe-dialect", dialect, "--json",
                                *([] if refused else ["--verify"]))
    if refused:
        assert code == 3, stderr
        assert f"opencv writes it as OpenCV DNN's {BVLC_REFUSES[name]} layer" in stderr
        return
    assert code == 0, stderr
    doc = json.loads(stdout)
    assert doc["verify"]["passed"] and doc["verify"]["max_rel"] <= TOLERANCE, doc["verify"]
    written = (out / "deploy.prototxt").read_text()
    head = written.split("\nname:", 1)[0]
    if dialect == "bvlc":
        assert "caffe-dialect" not in head and 'type: "Deconvolution"' in written  # the resizes
    else:
        assert "# caffe-dialect: opencv" in head
        assert ('type: "Permute"' in written) == (name in BVLC_REFUSES)
        assert ('type: "Resize"' in written) == (name == "mobilevit")
    print(f"\n{name} {dialect}: max_rel {doc['verify']['max_rel']:.3g}")


def test_the_caffemodel_leaves_out_what_only_the_prototxt_may_carry(saved, tmp_path):
    """OpenCV reads the Resize layer's parameters from deploy.prototxt only; the caffemodel holds blobs."""
    from tf_convert.emitters.caffe.proto import messages

    out = tmp_path / "out"
    code, _, stderr = _cli("tf2caffe", saved["mobilevit"], "-o", out, "--caffe-dialect", "opencv")
    assert code == 0, stderr
    net = messages("opencv")["NetParameter"]()
    net.ParseFromString((out / "model.caffemodel").read_bytes())
    resizes = [layer for layer in net.layer if layer.type == "Resize"]
    assert resizes and not any(layer.HasField("resize_param") for layer in resizes)


# ---- reductions over a sequence axis (GlobalAveragePooling1D / GlobalMaxPooling1D) ---------------------------------

def _pooled_sequence(keras):
    """Means and maxima over the steps of (N, L, C): on the input itself and after a Conv1D (named, so that the
    refusal's text does not depend on how many layers the process made before)."""
    layers = keras.layers
    inp = keras.Input((12, 5), name="x")
    x = layers.Conv1D(8, 3, padding="same", activation="relu", name="conv")(inp)
    pooled = layers.Concatenate(name="cat")([layers.GlobalAveragePooling1D(name="mean")(x),
                                             layers.GlobalMaxPooling1D(name="max")(x)])
    return keras.Model(inp, [layers.GlobalAveragePooling1D(name="mean_in")(inp), layers.Dense(3, name="fc")(pooled)])


@pytest.mark.parametrize("dialect", ["bvlc", "opencv"])
def test_reductions_over_a_sequence_axis(keras, dialect, tmp_path):
    """OpenCV's dialect: a Permute moves the reduced axis last, a global pooling reduces it (exact in OpenCV
    DNN); BVLC keeps its refusal and names the dialect that writes it."""
    path = tmp_path / "pooled.keras"
    _pooled_sequence(keras).save(path)
    code, stdout, stderr = _cli("tf2caffe", path, "-o", tmp_path / "out", "--caffe-dialect", dialect, "--json",
                                *(["--verify"] if dialect == "opencv" else []))
    if dialect == "bvlc":
        assert code == 3 and "the reduced axes moved last" in stderr and "--caffe-dialect opencv" in stderr
        return
    assert code == 0, stderr
    doc = json.loads(stdout)
    assert doc["verify"]["passed"] and doc["verify"]["max_rel"] <= TOLERANCE, doc["verify"]
    print(f"\npooled sequence opencv: max_rel {doc['verify']['max_rel']:.3g}")
