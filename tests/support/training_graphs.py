"""Training graphs the way training scripts write them, saved with tf.compat.v1.train.Saver.

Each builder trains a small net 2 steps and writes `<dir>/model.ckpt{.meta,.index,.data-*}`. It
returns the prefix and a reference function `infer(x) -> y` that runs TF's own inference path: the
same net rebuilt with is_training=False (no dropout), restored from the checkpoint.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Callable

import numpy as np

BATCH = 4


@contextlib.contextmanager
def control_flow(v2: bool):
    """v1 (Switch/Merge) or v2 (If) control flow while building; restores the process default."""
    from tensorflow.python.ops import control_flow_util

    before = control_flow_util.ENABLE_CONTROL_FLOW_V2
    control_flow_util.ENABLE_CONTROL_FLOW_V2 = v2
    try:
        yield
    finally:
        control_flow_util.ENABLE_CONTROL_FLOW_V2 = before


def slim():
    """tf_slim, usable with TF 2.21: tf-slim 1.1.0 still names `ops.Tensor` and
    `control_flow_ops.cond`, which later TF moved (a test-fixture shim for that package only)."""
    import tensorflow as tf
    from tensorflow.python.framework import ops
    from tensorflow.python.ops import control_flow_ops

    if not hasattr(ops, "Tensor"):
        ops.Tensor = tf.Tensor
    if not hasattr(control_flow_ops, "cond"):
        control_flow_ops.cond = tf.compat.v1.cond
    import tf_slim

    return tf_slim


def _dataset(hw: tuple[int, int], channels: int, classes: int, seed: int):
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    images = rng.uniform(0, 1, (16, *hw, channels)).astype(np.float32)
    labels = rng.integers(0, classes, 16).astype(np.int64)
    ds = tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(BATCH)
    return tf.compat.v1.data.make_one_shot_iterator(ds).get_next()


def slim_net(images, is_training, keep_prob, classes: int, fused: bool = True):
    """Conv + slim batch norm (is_training may be a tensor: v1/v2 cond) + dropout + logits."""
    import tensorflow as tf
    slim_ = slim()

    bn = {"is_training": is_training, "decay": 0.9, "fused": fused, "scale": True, "updates_collections": None}
    with slim_.arg_scope([slim_.conv2d], normalizer_fn=slim_.batch_norm, normalizer_params=bn,
                        weights_regularizer=slim_.l2_regularizer(1e-4)):
        net = slim_.conv2d(images, 8, 3, stride=2, scope="conv1")
        net = slim_.conv2d(net, 12, 3, scope="conv2")
        net = tf.reduce_mean(net, [1, 2], name="pool")
        net = slim_.dropout(net, keep_prob=keep_prob, is_training=is_training, scope="dropout")
        logits = slim_.fully_connected(net, classes, activation_fn=None, scope="logits")
    return logits


def _train_and_save(graph, logits, labels, directory: Path, ema: bool = False, feed=None) -> Path:
    import tensorflow as tf
    slim_ = slim()

    with graph.as_default():
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        tf.compat.v1.summary.scalar("loss", loss)
        opt = tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)
        train_op = slim_.learning.create_train_op(loss, opt)
        if ema:
            averages = tf.compat.v1.train.ExponentialMovingAverage(0.5)
            with tf.control_dependencies([train_op]):
                train_op = averages.apply(tf.compat.v1.trainable_variables())
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for _ in range(3):
                sess.run(train_op, feed)
            directory.mkdir(parents=True, exist_ok=True)
            saver.save(sess, str(directory / "model.ckpt"))
    return directory / "model.ckpt"


def _reference(net_fn: Callable, prefix: Path, hw, channels: int, ema: bool = False) -> Callable:
    """TF's inference path: the net rebuilt with is_training=False, weights restored by name."""
    import tensorflow as tf

    def infer(x: np.ndarray) -> np.ndarray:
        graph = tf.Graph()
        with graph.as_default():
            images = tf.compat.v1.placeholder(tf.float32, [None, *hw, channels], name="images")
            logits = net_fn(images, False)
            if ema:
                averages = tf.compat.v1.train.ExponentialMovingAverage(0.5)
                var_list = averages.variables_to_restore()
            else:
                var_list = None
            saver = tf.compat.v1.train.Saver(var_list)
            with tf.compat.v1.Session() as sess:
                saver.restore(sess, str(prefix))
                return sess.run(logits, {images: x})

    return infer


def build_slim_cond(directory: Path, v2: bool, hw=(17, 17), classes: int = 5, ema: bool = False):
    """is_training / keep_prob as placeholder_with_default; tf.data input; Momentum; Saver."""
    import tensorflow as tf

    def net(images, training):
        return slim_net(images, training, 0.5 if training is True else 1.0, classes)

    graph = tf.Graph()
    with control_flow(v2), graph.as_default():
        images, labels = _dataset(hw, 3, classes, seed=1)
        is_training = tf.compat.v1.placeholder_with_default(False, [], name="is_training")
        keep_prob = tf.compat.v1.placeholder_with_default(1.0, [], name="keep_prob")
        logits = slim_net(images, is_training, keep_prob, classes)
        tf.nn.softmax(logits, name="probabilities")
        feed = {is_training: True, keep_prob: 0.5}
        prefix = _train_and_save(graph, logits, labels, directory, ema=ema, feed=feed)
    with control_flow(v2):
        return prefix, _reference(net, prefix, hw, 3, ema=ema)


def build_slim_training_true(directory: Path, hw=(15, 15), classes: int = 4, fused: bool = True):
    """training=True as a Python bool: batch norm in training mode, dropout in training form."""
    import tensorflow as tf

    def net(images, training):
        return slim_net(images, training, 0.5 if training else 1.0, classes, fused=fused)

    graph = tf.Graph()
    with graph.as_default():
        images = tf.compat.v1.placeholder(tf.float32, [None, *hw, 3], name="images")
        labels = tf.compat.v1.placeholder(tf.int64, [None], name="labels")
        logits = net(images, True)
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        opt = tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)
        slim_ = slim()

        train_op = slim_.learning.create_train_op(loss, opt)
        saver = tf.compat.v1.train.Saver()
        rng = np.random.default_rng(2)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for _ in range(3):
                sess.run(train_op, {images: rng.uniform(0, 1, (BATCH, *hw, 3)).astype(np.float32),
                                    labels: rng.integers(0, classes, BATCH)})
            directory.mkdir(parents=True, exist_ok=True)
            saver.save(sess, str(directory / "model.ckpt"))
    prefix = directory / "model.ckpt"
    return prefix, _reference(net, prefix, hw, 3)


def _resnet_arg_scope():
    """resnet_utils.resnet_arg_scope with in-place moving-average updates (updates_collections=None,
    as many slim training scripts set it; the UPDATE_OPS form needs tf_keras)."""
    slim_ = slim()
    bn = {"decay": 0.9, "epsilon": 1e-5, "scale": True, "updates_collections": None}
    with slim_.arg_scope([slim_.conv2d], weights_regularizer=slim_.l2_regularizer(1e-4),
                         activation_fn=__import__("tensorflow").nn.relu,
                         normalizer_fn=slim_.batch_norm, normalizer_params=bn):
        with slim_.arg_scope([slim_.batch_norm], **bn):
            with slim_.arg_scope([slim_.max_pool2d], padding="SAME") as scope:
                return scope


def build_slim_resnet(directory: Path, version: int = 1, hw=(35, 35), classes: int = 6):
    """A small tf-slim ResNet (v1 or v2, conv2d_same blocks), is_training placeholder, 2 steps."""
    import tensorflow as tf
    slim()
    from tf_slim.nets import resnet_v1, resnet_v2

    module = resnet_v1 if version == 1 else resnet_v2
    block = module.resnet_v1_block if version == 1 else module.resnet_v2_block
    blocks = [block("block1", base_depth=4, num_units=1, stride=2),
              block("block2", base_depth=8, num_units=1, stride=2)]
    scope = f"resnet_v{version}_tiny"

    def net(images, training):
        with tf.compat.v1.variable_scope("", reuse=tf.compat.v1.AUTO_REUSE), \
                slim().arg_scope(_resnet_arg_scope()):
            logits, _ = getattr(module, f"resnet_v{version}")(
                images, blocks, num_classes=classes, is_training=training, global_pool=True,
                scope=scope)
            logits = tf.squeeze(logits, [1, 2], name="SpatialSqueeze")
        return logits

    graph = tf.Graph()
    with control_flow(False), graph.as_default():
        images, labels = _dataset(hw, 3, classes, seed=3)
        is_training = tf.compat.v1.placeholder_with_default(False, [], name="is_training")
        logits = net(images, is_training)
        prefix = _train_and_save(graph, logits, labels, directory, feed={is_training: True})
    return prefix, _reference(net, prefix, hw, 3)


def _manual_bn(x, is_training, name: str):
    """Batch norm as TF1 scripts wrote it by hand: ref variables, tf.nn.moments, assign_sub updates
    under a cond (or directly when is_training is the Python bool True)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    with v1.variable_scope(name):
        c = x.shape[-1]
        beta = v1.get_variable("beta", [c], initializer=v1.zeros_initializer(), use_resource=False)
        gamma = v1.get_variable("gamma", [c], initializer=v1.ones_initializer(), use_resource=False)
        mm = v1.get_variable("moving_mean", [c], initializer=v1.zeros_initializer(), trainable=False,
                             use_resource=False)
        mv = v1.get_variable("moving_variance", [c], initializer=v1.ones_initializer(), trainable=False,
                             use_resource=False)

        def train():
            mean, var = tf.nn.moments(x, [0, 1, 2])
            updates = [v1.assign_sub(mm, (mm - mean) * 0.3), v1.assign_sub(mv, (mv - var) * 0.3)]
            with tf.control_dependencies(updates):
                return tf.nn.batch_normalization(x, mean, var, beta, gamma, 1e-3)

        def infer():
            return tf.nn.batch_normalization(x, mm, mv, beta, gamma, 1e-3)

        if is_training is True or is_training is False:
            return train() if is_training else infer()
        return v1.cond(is_training, train, infer)


def manual_net(images, is_training, keep_prob, classes: int):
    import tensorflow as tf

    v1 = tf.compat.v1
    init = v1.random_normal_initializer(stddev=0.3, seed=7)
    w1 = v1.get_variable("conv1/w", [3, 3, 3, 6], initializer=init, use_resource=False)
    net = tf.nn.relu(_manual_bn(tf.nn.conv2d(images, w1, 2, "SAME"), is_training, "bn1"))
    net = tf.reduce_mean(net, [1, 2])
    net = v1.nn.dropout(net, keep_prob=keep_prob)
    w2 = v1.get_variable("fc/w", [6, classes], initializer=init, use_resource=False)
    return tf.matmul(net, w2, name="logits")


def build_manual_ref_vars(directory: Path, python_training: bool = False, hw=(13, 13), classes: int = 3):
    """TF1-era ref variables, hand-written batch norm with assign_sub, keep_prob dropout, tf.data,
    Momentum; is_training a placeholder_with_default (v1 cond) or the Python bool True."""
    import tensorflow as tf

    def net(images, training):
        return manual_net(images, training, 0.5 if training is True else 1.0, classes)

    graph = tf.Graph()
    with control_flow(False), graph.as_default():
        images, labels = _dataset(hw, 3, classes, seed=5)
        if python_training:
            logits, feed = manual_net(images, True, 0.5, classes), None
        else:
            is_training = tf.compat.v1.placeholder_with_default(False, [], name="is_training")
            keep_prob = tf.compat.v1.placeholder_with_default(1.0, [], name="keep_prob")
            logits = manual_net(images, is_training, keep_prob, classes)
            feed = {is_training: True, keep_prob: 0.5}
        prefix = _train_and_save(graph, logits, labels, directory, feed=feed)
    with control_flow(False):
        return prefix, _reference(net, prefix, hw, 3)


def train_flagged(images, training, logits, directory: Path, rng, batch: int, hw: int, steps: int = 4):
    """In the current graph: train `steps` momentum steps feeding training=True (the moving-average updates
    run), save with Saver, and return (checkpoint prefix, an input, TF's output for it fed training=False)."""
    import tensorflow as tf

    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(tf.constant([1, 3], tf.int64), logits)
    with tf.control_dependencies(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)):
        train = tf.compat.v1.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for _ in range(steps):
            sess.run(train, {images: rng.normal(size=(batch, hw, hw, 3)).astype(np.float32), training: True})
        directory.mkdir(parents=True, exist_ok=True)
        tf.compat.v1.train.Saver().save(sess, str(directory / "model.ckpt"))
        x = rng.normal(size=(batch, hw, hw, 3)).astype(np.float32)
        return directory / "model.ckpt", x, sess.run(logits, {images: x, training: False})
