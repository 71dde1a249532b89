"""A one-element output (a wake-word probability, a face-presence score) verified across the check's inputs:
a right conversion passes, a planted fault fails (exit 4), and only an output that no input moves stays
"cannot tell", with advice that is true of it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tf_convert import cli


def _score_files(directory: Path) -> dict[str, Path]:
    """score: a conv, a global pool and Dense(1, sigmoid); dead: a second output that is 0 for every input."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    inp = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(4, 3, padding="same", activation="relu")(inp)
    x = keras.layers.GlobalAveragePooling2D()(x)
    score = keras.layers.Dense(1, activation="sigmoid", name="score")(x)
    dead = keras.layers.ReLU(name="dead")(keras.layers.Lambda(lambda t: -tf.abs(t) - 1.0)(x))
    files = {}
    for name, outputs in (("score", score), ("score_and_dead", [score, dead])):
        model = keras.Model(inp, outputs)
        path = directory / f"{name}.tflite"
        path.write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
        files[name] = path
    return files


@pytest.fixture(scope="module")
def score_files(tmp_path_factory):
    return _score_files(tmp_path_factory.mktemp("scores"))


def _cli(*args):
    return CliRunner().invoke(cli.main, [*map(str, args)])


def _plant(out: Path) -> None:
    """The Dense layer's weights in the written ONNX model scaled by 1.01: a wrong model of the same shape."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(out / "model.onnx"))
    dense = next(t for t in model.graph.initializer if numpy_helper.to_array(t).shape == (1, 4))
    dense.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(dense) * np.float32(1.01), dense.name))
    onnx.save(model, str(out / "model.onnx"))


def test_a_score_is_verified_and_a_wrong_one_fails(score_files, tmp_path):
    out = tmp_path / "onnx"
    result = _cli("tf2onnx", score_files["score"], "-o", out, "--verify", "--json")
    assert result.exit_code == 0, result.output
    row = json.loads((out / "conversion.json").read_text())["verify"]["outputs"][0]
    assert row["verdict"] == "ok" and row["inputs"] >= 2 and row["max_rel"] < 1e-4, row
    _plant(out)
    again = _cli("verify", out)
    assert again.exit_code == 4 and "verification failed" in again.output, again.output


def test_an_output_no_input_moves_cannot_tell(score_files, tmp_path):
    result = _cli("tf2torch", score_files["score_and_dead"], "-o", tmp_path / "torch", "--verify")
    assert result.exit_code == 4, result.output
    assert "cannot tell" in result.output and "all zeros on all" in result.output, result.output
    assert "--outputs" in result.output and "another --seed" not in result.output
