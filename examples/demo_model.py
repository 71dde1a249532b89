"""The bundled example: a small MobileNet-style TF1 network saved as a checkpoint (+ .meta).

64x64 input, so every stride-2 SAME layer pads asymmetrically (0 top/left, 1 bottom/right):
exactly where a naive converter gets the numbers wrong.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def build(directory: Path, size: int = 64, seed: int = 0) -> Path:
    """Write `directory/model.ckpt{.meta,.index,.data-*}`; return the checkpoint prefix."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    graph = tf.Graph()
    with graph.as_default():

        def var(name, shape, scale=0.3):
            return tf1.get_variable(name, initializer=(rng.standard_normal(shape) * scale).astype(np.float32))

        def batch_norm(x, scope):
            c = x.shape[-1]
            with tf1.variable_scope(scope):
                gamma = var("gamma", [c], 0.1) + 1.0
                beta, mean = var("beta", [c]), var("moving_mean", [c])
                variance = tf1.get_variable("moving_variance", initializer=rng.uniform(0.5, 1.5, c).astype(np.float32))
            y, _, _ = tf1.nn.fused_batch_norm(x, gamma, beta, mean, variance, epsilon=1e-3, is_training=False)
            return y

        x = tf1.placeholder(tf.float32, [1, size, size, 3], name="input")
        with tf1.variable_scope("stem"):
            y = tf.nn.conv2d(x, var("weights", [3, 3, 3, 16]), 2, "SAME")
            y = tf.nn.relu6(batch_norm(y, "bn"))
        for i, (stride, out_c) in enumerate([(1, 24), (2, 32), (2, 48)]):
            with tf1.variable_scope(f"block{i + 1}"):
                dw = var("depthwise_weights", [3, 3, y.shape[-1], 1])
                y = tf.nn.relu6(batch_norm(tf.nn.depthwise_conv2d(y, dw, [1, stride, stride, 1], "SAME"), "dw_bn"))
                y = tf.nn.conv2d(y, var("pointwise_weights", [1, 1, y.shape[-1], out_c]), 1, "SAME")
                y = tf.nn.relu6(batch_norm(y, "pw_bn"))
        y = tf.nn.max_pool2d(y, 3, 2, "SAME", name="pool")
        y = tf.nn.avg_pool2d(y, 2, 1, "SAME", name="smooth")
        y = tf.reduce_mean(y, [1, 2], name="global_pool")
        with tf1.variable_scope("logits"):
            y = tf.nn.bias_add(tf.matmul(y, var("weights", [48, 10])), var("biases", [10]))
        tf.nn.softmax(y, name="probabilities")
        saver = tf1.train.Saver()
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            prefix = saver.save(session, str(directory / "model.ckpt"))
    return Path(prefix)
