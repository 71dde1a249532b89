"""Variables whose stored tensor has another shape or dtype than the graph declares: TensorFlow refuses to
restore them, so do we (exit 2, naming the variable) for checkpoints, SavedModels and Keras files. Read by
name as they are, both sides of --verify would read the same wrong values, and the check would say OK."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.support.verify_faults import run_cli


def _tf1_checkpoint(prefix: Path, shape: tuple[int, ...], dtype: str = "float32") -> Path:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [1, 8, 8, 3], name="input")
        w = tf.compat.v1.get_variable("w", initializer=np.ones(shape, dtype))
        kernel = tf.cast(w, tf.float32)[:, :, :3, :] if shape[2] != 3 else tf.cast(w, tf.float32)
        tf.nn.conv2d(x, kernel, 1, "SAME", name="out")
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver().save(sess, str(prefix))
    return prefix


def test_a_checkpoint_variable_of_another_shape_is_refused(tmp_path):
    good = _tf1_checkpoint(tmp_path / "good" / "model.ckpt", (3, 3, 3, 8))
    other = _tf1_checkpoint(tmp_path / "other" / "model.ckpt", (3, 3, 8, 8))
    for data in other.parent.glob("model.ckpt.*"):
        if not data.name.endswith(".meta"):
            shutil.copy(data, good.parent / data.name)
    code, _, err = run_cli("tf2onnx", good, "-o", tmp_path / "out")
    assert code == 2, err
    assert "variable 'w'" in err and "(3, 3, 8, 8)" in err and "(3, 3, 3, 8)" in err
    assert len(err.strip().splitlines()) == 1


def test_a_checkpoint_variable_of_another_dtype_is_refused(tmp_path):
    good = _tf1_checkpoint(tmp_path / "good" / "model.ckpt", (3, 3, 3, 8))
    other = _tf1_checkpoint(tmp_path / "other" / "model.ckpt", (3, 3, 3, 8), dtype="float64")
    for data in other.parent.glob("model.ckpt.*"):
        if not data.name.endswith(".meta"):
            shutil.copy(data, good.parent / data.name)
    code, _, err = run_cli("tf2onnx", good, "-o", tmp_path / "out")
    assert code == 2, err
    assert "variable 'w'" in err and "double" in err and "float" in err


def _saved_model(directory: Path, cin: int) -> Path:
    import tensorflow as tf

    class Conv(tf.Module):
        def __init__(self):
            super().__init__()
            self.kernel = tf.Variable(np.ones((3, 3, cin, 8), np.float32))

        @tf.function(input_signature=[tf.TensorSpec([1, 8, 8, 3], tf.float32)])
        def __call__(self, x):
            return tf.nn.conv2d(x, self.kernel[:, :, :3, :], 1, "SAME")

    module = Conv()
    tf.saved_model.save(module, str(directory), signatures=module.__call__)
    return directory


def test_a_saved_model_whose_variables_are_of_other_shapes_is_refused(tmp_path):
    """TF: `incompatible tensor with shape (3,3,8,8) ... variable with shape (3,3,3,8)`; --verify said OK."""
    good = _saved_model(tmp_path / "good", 3)
    other = _saved_model(tmp_path / "other", 8)
    shutil.rmtree(good / "variables")
    shutil.copytree(other / "variables", good / "variables")
    code, _, err = run_cli("tf2onnx", good, "-o", tmp_path / "out", "--verify")
    assert code == 2, err
    assert "variable '" in err and "(3, 3, 8, 8)" in err and "(3, 3, 3, 8)" in err


def _tf1_saved_model(directory: Path, cin: int) -> Path:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [1, 8, 8, 3], name="input")
        w = tf.compat.v1.get_variable("w", initializer=np.ones((3, 3, cin, 8), np.float32))
        y = tf.nn.conv2d(x, w[:, :, :3, :], 1, "SAME", name="out")
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.saved_model.simple_save(sess, str(directory), inputs={"input": x}, outputs={"out": y})
    return directory


def test_a_tf1_saved_model_whose_variables_are_of_other_shapes_is_refused(tmp_path):
    good = _tf1_saved_model(tmp_path / "good", 3)
    other = _tf1_saved_model(tmp_path / "other", 8)
    shutil.rmtree(good / "variables")
    shutil.copytree(other / "variables", good / "variables")
    code, _, err = run_cli("tf2onnx", good, "-o", tmp_path / "out", "--verify")
    assert code == 2, err
    assert "variable 'w'" in err and "(3, 3, 8, 8)" in err and "(3, 3, 3, 8)" in err


def test_a_keras_weight_of_another_shape_is_refused(tmp_path):
    import h5py
    import keras

    x = keras.Input((8, 8, 3))
    model = keras.Model(x, keras.layers.Conv2D(8, 3, padding="same", name="conv")(x))
    path = tmp_path / "model.h5"
    model.save(path)
    with h5py.File(path, "r+") as f:
        group = f["model_weights/conv/conv"] if "model_weights/conv/conv" in f else None
        if group is None:
            pytest.skip("this Keras writes another .h5 layout")
        name = next(k for k in group if k.startswith("kernel"))
        del group[name]
        group[name] = np.ones((3, 3, 8, 8), np.float32)
    code, _, err = run_cli("tf2onnx", path, "-o", tmp_path / "out")
    assert code == 2, err
    assert "kernel" in err and "(3, 3, 8, 8)" in err
