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
