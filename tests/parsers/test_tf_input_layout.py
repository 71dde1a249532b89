"""A 4-D input the graph transposes to NHWC first is NCHW (Hugging Face's TF vision classes take `pixel_values`
NCHW): kept NCHW at the boundary, said in a note, exact on torch and ONNX at two sizes; `--input-layout`
overrides the guess. TensorFlow's own SavedModel signature is the reference."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tests.app.test_into import run_cli
from tf_convert import emitters, parsers
from tf_convert.app import verify
from tf_convert.convert import passes
from tf_convert.emitters.base import EmitOptions
from tf_convert.parsers.base import ParseOptions

tf = pytest.importorskip("tensorflow")


class _PixelModel(tf.Module):
    """pixel_values (N, 3, H, W) -> transpose to NHWC -> SAME stride-2 conv + bias -> relu; returns the map back
    in NCHW (as Hugging Face's TF vision models do) and its spatial mean."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(4)
        self.kernel = tf.Variable(rng.normal(0, 0.5, (3, 3, 3, 8)).astype(np.float32))
        self.bias = tf.Variable(rng.normal(0, 0.5, 8).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec((None, 3, None, None), tf.float32, name="pixel_values")])
    def serve(self, pixel_values):
        x = tf.transpose(pixel_values, (0, 2, 3, 1))
        y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, self.kernel, 2, "SAME"), self.bias))
        return {"last_hidden_state": tf.transpose(y, (0, 3, 1, 2)), "pooler_output": tf.reduce_mean(y, (1, 2))}


@pytest.fixture(scope="module")
def pixel_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("layout") / "pixels"
    model = _PixelModel()
    tf.saved_model.save(model, str(path), signatures={"serving_default": model.serve})
    return path


def _reference(path, x: np.ndarray) -> list[np.ndarray]:
    out = tf.saved_model.load(str(path)).signatures["serving_default"](pixel_values=tf.constant(x))
    return [out[k].numpy() for k in sorted(out)]


@pytest.mark.parametrize("size", [(2, 3, 16, 16), (1, 3, 17, 19)])
def test_transposed_input_is_nchw_and_exact(pixel_model, tmp_path, size):
    options = ParseOptions(input_shapes={"": size})
    graph = passes.run_default_passes(parsers.parse(parsers.open_source(pixel_model), options))
    assert [graph.shape(n) for n in graph.inputs] == [size]  # no permute at the boundary
    assert any("read as NCHW" in note for note in options.notes)
    x = np.random.default_rng(1).standard_normal(size).astype(np.float32)
    want = _reference(pixel_model, x)
    names = [graph.source_names[n] for n in graph.outputs]
    for target in ("torch", "onnx"):
        emitter = emitters.get(target)
        (tmp_path / target).mkdir()
        emitter.emit(graph, tmp_path / target, EmitOptions())
        got = emitter.run(tmp_path / target, [x])
        for name, g in zip(names, got):
            expected = want[0] if g.ndim == 4 else want[1]
            assert verify.metrics(np.asarray(g), expected)["max_rel"] < 1e-5, (target, name)


def test_input_layout_overrides_the_guess(pixel_model):
    options = ParseOptions(input_shapes={"": (2, 3, 16, 16)}, input_layout="nhwc")
    graph = parsers.parse(parsers.open_source(pixel_model), options)
    assert [graph.shape(n) for n in graph.inputs] == [(2, 16, 3, 16)]  # NHWC (2, 3, 16, 16) kept as NCHW
    assert not any("read as NCHW" in note for note in options.notes)


def test_cli_says_so_and_verifies(pixel_model, tmp_path):
    code, out, err = run_cli("tf2onnx", pixel_model, "--input-shape", "2,3,16,16", "--verify", "-o", tmp_path / "o")
    assert code == 0, err
    assert "input 'pixel_values:0' read as NCHW" in err and "--input-layout nhwc" in err
    doc = json.loads((tmp_path / "o" / "conversion.json").read_text())
    assert doc["inputs"][0]["shape"] == [2, 3, 16, 16]
    code, _, err = run_cli("tf2torch", pixel_model, "--input-shape", "2,3,16,16", "--input-layout", "nhwc",
                           "--verify", "-o", tmp_path / "t")
    assert code == 0, err
