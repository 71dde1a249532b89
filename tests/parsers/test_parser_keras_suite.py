"""The generated Keras layer suite (tests/support/keras_layer_suite.py): each built-in layer with random
arguments, saved by Keras 3 (.keras, legacy .h5) and tf_keras (.h5; SavedModel in the slow run), must
convert to Keras's numbers or be refused with exit 3 -- the same verdict from every form. A parser
exception (exit 1) or a bad-file verdict (exit 2) on a file Keras wrote is a bug this suite finds.

The default run takes a sample of layers (keras_layer_suite.DEFAULT); `make test-keras-files` runs every
layer in every form."""

from __future__ import annotations

import os

import pytest

from tests.support import keras_layer_suite as suite
from tests.support import keras_suite_targets as targets
from tests.support.verify_faults import run_cli

FAST_FORMS = ("keras", "h5_keras3", "h5_tf_keras")


def _outcomes(name: str, forms, tmp_path) -> dict[str, suite.Outcome]:
    seed = [c.name for c in suite.CASES].index(name)
    found = {}
    for form in forms:
        work = tmp_path / form
        work.mkdir()
        path, refs = suite.save(suite.case(name), form, work, seed)
        found[form] = suite.convert(path, suite.case(name), refs, seed)
    return found


def _check(found: dict[str, suite.Outcome]) -> None:
    for form, out in found.items():
        # a file Keras wrote and loads is never a bad file (exit 2), and the parser never crashes on it (exit 1)
        assert out.verdict != "error 2", f"{form}: a file Keras wrote was called corrupt: {out.detail}"
        assert out.verdict in ("exact", "refused"), f"{form}: {out.verdict}: {out.detail}"
    keras_forms = {f: o.verdict for f, o in found.items() if not f.startswith("saved_model")}
    assert len(set(keras_forms.values())) == 1, found


@pytest.mark.parametrize("name", suite.DEFAULT)
def test_sampled_layer_every_form(name, tmp_path):
    _check(_outcomes(name, FAST_FORMS, tmp_path))


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("CONVERT_KERAS_FILES"), reason="every layer, every form: make test-keras-files")
@pytest.mark.parametrize("name", [c.name for c in suite.CASES])
def test_every_layer_every_form(name, tmp_path):
    _check(_outcomes(name, suite.FORMS, tmp_path))


def _dot_and_exp(K):
    a, b = K.Input((7, 5), name="a"), K.Input((5, 7), name="b")
    c, d = K.Input((6,), name="c"), K.Input((6,), name="d")
    crossed = K.layers.Activation("exponential")(K.layers.Dot(axes=(2, 1), normalize=True)([a, b]))
    rows = K.layers.Dot(axes=1, normalize=True)([a, a])  # (7, 5).(7, 5) over the 7 -> (5, 5)
    return K.Model([a, b, c, d], [crossed, rows, K.layers.Dot(axes=-1, normalize=True)([c, d])])


@pytest.mark.parametrize("target", ["tf2torch", "tf2onnx", "tf2mxnet"])
@pytest.mark.parametrize("library,ext", [("keras", "keras"), ("tf_keras", "h5")])
def test_dot_and_exponential_on_every_target(library, ext, target, tmp_path):
    """Dot (axes, normalize) and Activation('exponential'), run by each target against Keras."""
    import importlib

    K = importlib.import_module(library)
    path = tmp_path / f"dot.{ext}"
    _dot_and_exp(K).save(path)
    # batch 3: the (1, 1) vector dot is one number, which --verify cannot judge
    shapes = [arg for spec in ("a:3,7,5", "b:3,5,7", "c:3,6", "d:3,6") for arg in ("--input-shape", spec)]
    code, out, err = run_cli(target, path, "-o", tmp_path / "out", "--verify", *shapes)
    assert code == 0, err
    assert "OK" in out + err, out + err


# a few suite layers, each in one saved form, through the CLI to every target runtime against Keras
# (tests/support/keras_suite_targets.py; `make test-keras-targets` sweeps every layer x form x target)
# (LeakyReLU and bilinear UpSampling2D in a tf_keras SavedModel were exit 1 and a --verify failure at other sizes)
TARGET_SAMPLE = (("Conv2D", "h5_tf_keras"), ("SeparableConv2D", "keras"), ("BatchNormalization", "h5_keras3"),
                 ("LeakyReLU", "saved_model_tf_keras"), ("UpSampling2D", "saved_model_tf_keras"))


@pytest.mark.parametrize("name,form", TARGET_SAMPLE)
def test_sampled_layer_on_every_target(name, form, tmp_path):
    cells = targets.sweep([name], (form,), work=tmp_path)
    assert set(t for _, _, t in cells) == set(targets.TARGETS)
    failed = {key: cell for key, cell in cells.items() if cell.failed}
    assert not failed, targets.table(cells)
