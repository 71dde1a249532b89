"""TF graphs that once ended in an internal error (exit 1): an `--inputs` placeholder the chosen outputs never
read (refused with exit 2 naming it; a serving signature's argument the model ignores is left out with a note),
a 5-D (NDHWC) fused batch norm, and a Pix2Pix U-Net generator built with tf_keras and saved as a SavedModel
(`model.save(dir)`, and through a signature that also takes a `training` flag it ignores): each converts and
is verified against TF."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.verify_faults import run_cli
from tf_convert import emitters


def _save(path: Path, build) -> Path:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        build(tf)
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return path


@pytest.fixture(scope="module")
def graphs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("former_crashes")
    rng = np.random.default_rng(0)

    def two_inputs(tf):
        a = tf.compat.v1.placeholder(tf.float32, [1, 4], name="a")
        b = tf.compat.v1.placeholder(tf.float32, [1, 4], name="b")
        tf.identity(a * 2.0, name="out")
        tf.identity(b + 1.0, name="out_b")

    def batch_norm(training: bool):
        def build(tf):
            x = tf.compat.v1.placeholder(tf.float32, [1, 3, 4, 5, 6], name="x")
            channel = [tf.constant(rng.standard_normal(6).astype(np.float32)) for _ in range(4)]
            mean, var = (None, None) if training else (channel[2], tf.abs(channel[3]) + 0.5)
            y, _, _ = tf.compat.v1.nn.fused_batch_norm(x, channel[0], channel[1], mean, var, epsilon=1e-3,
                                                       is_training=training, data_format="NDHWC", name="bn")
            tf.identity(tf.nn.relu(y), name="out")
        return build

    return {"two_inputs": _save(root / "two.pb", two_inputs),
            "bn5d": _save(root / "bn5d.pb", batch_norm(False)),
            "bn5d_batch_stats": _save(root / "bn5d_stats.pb", batch_norm(True))}


@pytest.mark.parametrize("inputs, outputs", [("a,b", "out"), ("b", "out"), ("a,b", "out_b")])
def test_an_input_the_outputs_never_read_is_exit_2_naming_it(graphs, inputs, outputs, tmp_path):
    code, _, err = run_cli("tf2onnx", graphs["two_inputs"], "-o", tmp_path / "out", "--inputs", inputs,
                           "--outputs", outputs)
    unread = "b:0" if outputs == "out" else "a:0"
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and f"--inputs {unread}" in err and "never read" in err
    assert not (tmp_path / "out").exists()


MXNET = (Path(emitters.__file__).parents[1] / ".venv-mxnet").exists()


@pytest.mark.parametrize("target", ["torch", "onnx", pytest.param("mxnet", marks=pytest.mark.skipif(
    not MXNET, reason="no .venv-mxnet (run `make mxnet-env`)"))])
@pytest.mark.parametrize("graph", ["bn5d", "bn5d_batch_stats"])
def test_5d_fused_batch_norm_converts_and_verifies(graphs, graph, target, tmp_path):
    code, _, err = run_cli(f"tf2{target}", graphs[graph], "-o", tmp_path / "out", "--verify")
    assert code == 0, err


# The TF tutorial's Pix2Pix generator (downsample: Conv2D stride 2 [+ BatchNorm] + LeakyReLU; upsample:
# Conv2DTranspose stride 2 + BatchNorm [+ Dropout] + ReLU; concatenated skips; a tanh Conv2DTranspose head),
# small: 32x32 input, four levels, few filters. Built and saved in a child (tf_keras beside Keras 3).
_PIX2PIX = """
import sys
import numpy as np
import tensorflow as tf
import tf_keras as keras

L = keras.layers
keras.utils.set_random_seed(3)


def downsample(filters, batchnorm=True):
    block = keras.Sequential()
    block.add(L.Conv2D(filters, 4, strides=2, padding="same", use_bias=False))
    if batchnorm:
        block.add(L.BatchNormalization())
    block.add(L.LeakyReLU())
    return block


def upsample(filters, dropout=False):
    block = keras.Sequential()
    block.add(L.Conv2DTranspose(filters, 4, strides=2, padding="same", use_bias=False))
    block.add(L.BatchNormalization())
    if dropout:
        block.add(L.Dropout(0.5))
    block.add(L.ReLU())
    return block


inputs = L.Input(shape=[32, 32, 3])
x, skips = inputs, []
for down in (downsample(4, False), downsample(8), downsample(8), downsample(8)):
    x = down(x)
    skips.append(x)
for up, skip in zip((upsample(8, True), upsample(8), upsample(4)), reversed(skips[:-1])):
    x = L.Concatenate()([up(x), skip])
generator = keras.Model(inputs, L.Conv2DTranspose(3, 4, strides=2, padding="same", activation="tanh")(x))
rng = np.random.default_rng(0)
for layer in generator.layers:  # batch-norm statistics away from 0/1
    for inner in getattr(layer, "layers", []):
        if isinstance(inner, L.BatchNormalization):
            inner.set_weights([rng.uniform(0.5, 1.5, w.shape).astype("float32") for w in inner.weights])
generator.save(sys.argv[1])


class Served(tf.Module):
    def __init__(self, model):
        self.model = model

    @tf.function(input_signature=[tf.TensorSpec([1, 32, 32, 3]), tf.TensorSpec([], tf.bool)])
    def serve(self, image, training):
        return {"output": self.model(image, training=False)}


served = Served(generator)
tf.saved_model.save(served, sys.argv[2], signatures=served.serve)
"""


@pytest.fixture(scope="module")
def pix2pix(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("pix2pix")
    paths = {"model_save": root / "generator", "with_training_flag": root / "served"}
    subprocess.run([sys.executable, "-c", _PIX2PIX, str(paths["model_save"]), str(paths["with_training_flag"])],
                   check=True, capture_output=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return paths


@pytest.mark.parametrize("saved", ["model_save", "with_training_flag"])
def test_pix2pix_saved_model_inspects_and_converts(pix2pix, saved, tmp_path):
    code, _, err = run_cli("inspect", pix2pix[saved])
    assert code == 0, err
    if saved == "with_training_flag":
        assert "inputs never read by the outputs, left out: training:0" in err
    code, _, err = run_cli("tf2onnx", pix2pix[saved], "-o", tmp_path / "out", "--verify")
    assert code == 0, err
