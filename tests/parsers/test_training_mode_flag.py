"""A plain bool `is_training` Placeholder (no default) that only switches batch norm and dropout:
converted with no flags (taken as false, noted in conversion.json) and with `--set is_training=false`,
to every target, against TF's own inference run of the checkpoint (fed is_training=False).

tf.compat.v1.layers needs Keras 2 (tf_keras), which this environment lacks: `keras_v1_batch_norm`
builds the graph tf.compat.v1.layers.batch_normalization(fused=True) builds (a cond over the training
and inference FusedBatchNorm, resource variables, moving-average updates whose momentum is a cond
too); dropout is TF's own legacy `tf.compat.v1.layers.dropout` code; the slim net is tf-slim's.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.app.test_cli import run_cli
from tests.support import training_graphs as tg
from tests.support.every_target import errors_per_target
from tf_convert.app import pipeline
from tf_convert.convert.errors import UsageError

RTOL = 1e-4
BATCH, HW, CLASSES = 2, 9, 5
ERRORS: dict[str, dict[str, float]] = {}


def keras_v1_batch_norm(x, training, momentum: float = 0.9, eps: float = 1e-3):
    import tensorflow as tf

    c = x.shape[-1]
    variable = lambda name, init, trainable=True: tf.compat.v1.get_variable(  # noqa: E731
        name, [c], initializer=init, trainable=trainable, use_resource=True)
    with tf.compat.v1.variable_scope("batch_normalization"):
        gamma = variable("gamma", tf.compat.v1.ones_initializer())
        beta = variable("beta", tf.compat.v1.zeros_initializer())
        mean = variable("moving_mean", tf.compat.v1.zeros_initializer(), False)
        var = variable("moving_variance", tf.compat.v1.ones_initializer(), False)
        y, batch_mean, batch_var = tf.compat.v1.cond(
            training,
            lambda: tf.compat.v1.nn.fused_batch_norm(x, gamma, beta, epsilon=eps, is_training=True),
            lambda: tf.compat.v1.nn.fused_batch_norm(x, gamma, beta, mean, var, epsilon=eps, is_training=False))
        rate = tf.compat.v1.cond(training, lambda: tf.constant(momentum), lambda: tf.constant(1.0))
        for moving, stat in ((mean, batch_mean), (var, batch_var)):
            with tf.name_scope("AssignMovingAvg"):
                update = moving.assign_sub((moving.read_value() - stat) * (1.0 - rate))
                tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.UPDATE_OPS, update)
    return y


def keras_v1_net(x, training):
    import tensorflow as tf
    from tensorflow.python.keras.legacy_tf_layers import core as legacy_layers

    w = tf.compat.v1.get_variable("w", [3, 3, 3, 4], use_resource=True)
    y = tf.nn.relu(keras_v1_batch_norm(tf.nn.conv2d(x, w, 1, "SAME"), training))
    y = legacy_layers.dropout(tf.reshape(y, [BATCH, -1]), rate=0.5, training=training)
    return tf.matmul(y, tf.compat.v1.get_variable("dense", [HW * HW * 4, CLASSES], use_resource=True))


NETS = {"keras_v1": keras_v1_net, "slim": lambda x, training: tg.slim_net(x, training, 0.5, CLASSES)}


def build(directory: Path, net: str, v2: bool) -> tuple[Path, np.ndarray, np.ndarray]:
    """Train a few steps feeding is_training=True, save with Saver; TF's output for is_training=False."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    graph = tf.Graph()
    with tg.control_flow(v2), graph.as_default():
        tf.compat.v1.set_random_seed(0)
        images = tf.compat.v1.placeholder(tf.float32, [BATCH, HW, HW, 3], name="images")
        training = tf.compat.v1.placeholder(tf.bool, [], name="is_training")
        logits = tf.identity(NETS[net](images, training), name="output")
        return tg.train_flagged(images, training, logits, directory, rng, BATCH, HW)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    cache: dict[tuple[str, bool], tuple[Path, np.ndarray, np.ndarray]] = {}

    def get(net: str, v2: bool):
        if (net, v2) not in cache:
            cache[net, v2] = build(tmp_path_factory.mktemp(f"{net}_{'v2' if v2 else 'v1'}"), net, v2)
        return cache[net, v2]

    return get


CASES = [(net, v2, flags) for net in NETS for v2 in (False, True) for flags in ({}, {"is_training": "false"})]


@pytest.mark.parametrize("net,v2,settings", CASES, ids=lambda v: v if isinstance(v, str) else str(v))
def test_plain_training_flag_converts_to_every_target(built, net, v2, settings, tmp_path):
    prefix, x, expected = built(net, v2)
    graph, _, _, notes = pipeline.load_graph(pipeline.Request(source=prefix, target="ir", settings=settings))
    how = "--set" if settings else "inference default"
    assert any(n.startswith(f"flag is_training = false ({how}") for n in notes), notes
    errors = errors_per_target(graph, [np.transpose(x, (0, 3, 1, 2))], [expected], tmp_path)
    ERRORS[f"{net} {'v2' if v2 else 'v1'} cond, {'--set' if settings else 'no flags'}"] = errors
    assert max(errors.values()) <= RTOL, errors


def test_the_default_is_noted_in_conversion_json(built, tmp_path):
    prefix, _, _ = built("keras_v1", False)
    code, _, stderr = run_cli("tf2onnx", prefix, "-o", tmp_path / "out", "--verify")
    assert code == 0, stderr
    notes = json.loads((tmp_path / "out" / "conversion.json").read_text())["notes"]
    assert any("flag is_training = false (inference default" in n for n in notes), notes


def test_a_flag_that_steers_anything_else_still_needs_set(tmp_path):
    """A cond choosing relu or relu6, and arithmetic on the flag: the error says what it steers."""
    import tensorflow as tf

    for v2, steer in ((False, "cond"), (True, "cond"), (False, "cast")):
        graph = tf.Graph()
        with tg.control_flow(v2), graph.as_default():
            images = tf.compat.v1.placeholder(tf.float32, [1, 6, 6, 3], name="images")
            training = tf.compat.v1.placeholder(tf.bool, [], name="is_training")
            y = keras_v1_batch_norm(images, training)
            if steer == "cond":
                y = tf.compat.v1.cond(training, lambda y=y: tf.nn.relu(y), lambda y=y: tf.nn.relu6(y))
            else:
                y = y * tf.cast(training, tf.float32)
            tf.identity(y, name="output")
            with tf.compat.v1.Session() as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                directory = tmp_path / f"{steer}_{v2}"
                directory.mkdir()
                tf.compat.v1.train.Saver().save(sess, str(directory / "model.ckpt"))
        why = "that are not batch norm or dropout" if steer == "cond" else r"\(Cast\) computes with it"
        with pytest.raises(UsageError, match=rf"placeholder 'is_training' .*{why}.*--set is_training=false"):
            pipeline.load_graph(pipeline.Request(source=directory / "model.ckpt", target="ir"))


def teardown_module(module) -> None:
    """The figures for the issue note: max relative error vs TF's inference run per target."""
    for name, errors in ERRORS.items():
        print(f"\n{name}: " + ", ".join(f"{t} {e:.1e}" for t, e in errors.items()))
