"""--verify's inputs must exercise the model: the record says whether each output moves when
the input's last row and column change, and an output that does not depend on the input at all is a
warning (conversion.json and stderr), since a check on it says nothing about the conversion."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from tests.support.tf_models import save_frozen
from tf_convert import cli


def _run(*args):
    result = CliRunner().invoke(cli.main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _live(x):
    import tensorflow as tf

    w = tf.constant(np.random.default_rng(0).standard_normal((3, 3, 3, 4)).astype(np.float32))
    tf.nn.conv2d(x, w, 2, "SAME", name="output")  # pads 0/1: the last row and column reach the output


def _blind_border(x):
    import tensorflow as tf

    w = tf.constant(np.random.default_rng(0).standard_normal((3, 3, 3, 4)).astype(np.float32))
    tf.nn.conv2d(x, w, 2, "VALID", name="output")  # 16 -> 7: row and column 15 are never read


def _dead(x):
    import tensorflow as tf

    w = tf.constant(np.random.default_rng(0).standard_normal((3, 3, 3, 4)).astype(np.float32))
    bias = tf.constant(np.random.default_rng(1).standard_normal((1, 8, 8, 4)).astype(np.float32))
    y = tf.nn.relu(tf.nn.conv2d(x, w, 2, "SAME") - 1e6)  # every unit dead: zeros whatever the input
    tf.add(y, bias, name="output")


@pytest.mark.parametrize("build,border,depends", [
    (_live, True, None),            # the border moves the output: the whole input is not re-tried
    (_blind_border, False, True),   # not the border, but the rest of the input does
    (_dead, False, False),          # nothing moves it: warned
])
def test_sensitivity_is_recorded_and_a_dead_output_warned(tmp_path, build, border, depends):
    pb = save_frozen(tmp_path / "model.pb", build, [1, 16, 16, 3])
    code, _, err = _run("tf2torch", pb, "-o", tmp_path / "out", "--verify")
    assert code == 0, err
    doc = json.loads((tmp_path / "out" / "conversion.json").read_text())
    (row,) = doc["verify"]["sensitivity"]
    assert row["border"] is border and row.get("input") is depends
    warned = [w for w in doc["warnings"] if "does not depend on the input" in w]
    assert len(warned) == (depends is False)
    assert ("warning: output 'output:0' does not depend on the input" in err) == (depends is False)
    if depends is False:  # `convert verify` says it again
        code, _, err = _run("verify", tmp_path / "out")
        assert code == 0 and "does not depend on the input" in err


def test_a_token_model_depends_on_its_ids(tmp_path):
    """A text model's only input is integer ids: the whole-input probe redraws them in their range (kept
    unchanged, the output looked dead and was warned)."""
    import keras

    ids = keras.Input((11,), dtype="int32", name="ids")
    y = keras.layers.Embedding(20, 6)(ids)
    y = keras.layers.Conv1D(4, 3, strides=2, padding="valid")(y)  # 11 -> 5: the last id is never read
    y = keras.layers.GlobalMaxPooling1D()(y)
    keras.Model(ids, y).save(tmp_path / "text.keras")
    code, _, err = _run("tf2onnx", tmp_path / "text.keras", "-o", tmp_path / "out", "--verify")
    assert code == 0, err
    doc = json.loads((tmp_path / "out" / "conversion.json").read_text())
    assert doc["verify"]["sensitivity"][0].get("input") is True
    assert not [w for w in doc["warnings"] if "does not depend on the input" in w]
