"""`convert verify OUT --layers` on a `.tflite` conversion: every converted tensor compared with TFLite's own
intermediate tensor (the interpreter keeps them all), a planted fault located at its layer, and a conversion
whose tensors the interpreter cannot expose refused (exit 2), never an empty comparison reported as a pass."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.support.tflite_cases import _two_signatures
from tf_convert import cli


def _files(directory: Path) -> dict[str, Path]:
    """convs: a stride-2 conv, a depthwise conv and a 1x1 conv; signature: two signatures' subgraphs."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    inp = keras.Input((9, 9, 3))
    x = keras.layers.Conv2D(4, 3, strides=2, padding="same", activation="relu")(inp)
    x = keras.layers.DepthwiseConv2D(3, padding="same", name="depthwise")(x)
    x = keras.layers.Conv2D(5, 1)(x)
    model = keras.Model(inp, x)
    (directory / "convs.tflite").write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())

    return {"convs": directory / "convs.tflite", "signature": _two_signatures(directory)}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return _files(tmp_path_factory.mktemp("layers"))


def _cli(*args):
    return CliRunner().invoke(cli.main, [*map(str, args)])


def _plant(out: Path) -> None:
    """The depthwise kernel in the written ONNX model scaled by 1.01."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(out / "model.onnx"))
    kernel = next(t for t in model.graph.initializer if numpy_helper.to_array(t).shape == (4, 1, 3, 3))
    kernel.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(kernel) * np.float32(1.01), kernel.name))
    onnx.save(model, str(out / "model.onnx"))


def test_layers_compares_tflites_own_tensors_and_finds_a_planted_fault(files, tmp_path):
    out = tmp_path / "onnx"
    assert _cli("tf2onnx", files["convs"], "-o", out, "--verify").exit_code == 0
    right = _cli("verify", out, "--layers", "--json")
    assert right.exit_code == 0, right.output
    doc, _ = json.JSONDecoder().raw_decode(right.output[right.output.index("{"):])  # warnings follow
    assert doc["compared"] >= 3 and doc["passed"], doc  # the convs, not just the output
    _plant(out)
    wrong = _cli("verify", out, "--layers")
    assert wrong.exit_code == 4 and "first divergence" in wrong.output and "depthwise" in wrong.output, wrong.output


def test_layers_refuses_when_nothing_can_be_compared(files, tmp_path):
    out = tmp_path / "sig"
    assert _cli("tf2torch", files["signature"], "--signature", "scale", "-o", out, "--verify").exit_code == 0
    refused = _cli("verify", out, "--layers")
    assert refused.exit_code == 2 and "no tensor" in refused.output and "no divergence" not in refused.output, \
        refused.output


def test_a_fixed_size_file_claims_only_its_size(files, tmp_path):
    """The convs alone follow any size, but the file fixes its own: TFLite never ran it at another size."""
    out = tmp_path / "onnx"
    assert _cli("tf2onnx", files["convs"], "-o", out, "--verify").exit_code == 0
    sizes = json.loads((out / "conversion.json").read_text())["input_sizes"]
    assert sizes["spatial"] == "conversion size only" and ".tflite file was not run" in sizes["why"], sizes
