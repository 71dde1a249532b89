"""Keras models that exercise every call-argument form Keras writes into a model config, built with
Keras 3 and with tf_keras (tests/parsers/test_parser_keras_call_forms.py).

Each builder takes the Keras module (`keras` or `tf_keras`) and returns a model; odd sizes keep SAME
pads asymmetric.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def operators_net(K):
    """tf_keras: operators and TF functions on layer outputs (TFOpLambda / SlicingOpLambda)."""
    import tensorflow as tf

    x = K.Input((9, 7, 3))
    a = K.layers.Conv2D(4, 3, padding="same")(x)
    b = K.layers.Conv2D(4, 3, strides=1, padding="same")(x)
    s = a + b
    s = tf.nn.relu6(s) * 2.0 - a
    s = tf.math.maximum(s, b) / 3.0
    s = tf.image.resize(s, (11, 9))
    s = tf.nn.bias_add(s, np.arange(4, dtype="float32"))
    m = tf.reduce_mean(s, axis=[1, 2], keepdims=True)
    s = s * tf.math.sigmoid(m)
    r = tf.reshape(s, (-1, 11, 36))
    r = r[:, 1:, ::2]
    r = r[..., None]
    c = tf.concat([r, -r], axis=-1)
    c = tf.compat.v1.transpose(c, [0, 2, 1, 3])
    h, w = tf.split(c, 2, axis=-1)
    out = tf.squeeze(h + w * 0.5, axis=-1)
    return K.Model(x, out)


def constants_net(K):
    """Keras 3: tensors computed eagerly (a table, a numpy array) as layer and op arguments."""
    x = K.Input((5, 6))
    d = K.layers.Dense(6)(x)
    table = K.ops.convert_to_tensor(np.linspace(-1, 1, 30, dtype="float32").reshape(1, 5, 6))
    y = K.layers.Add()([d, table])
    y = K.layers.Multiply()([y, np.linspace(0.5, 1.5, 30, dtype="float32").reshape(1, 5, 6)])
    y = K.ops.add(y, np.arange(6, dtype="float32"))
    y = K.ops.multiply(K.ops.convert_to_tensor(np.linspace(1, 2, 30, dtype="float32").reshape(5, 6)), y)
    y = y * 2.0 + 1.0
    return K.Model(x, y)


def shared_net(K):
    """A layer called three times (node_index 1, 2), a nested Functional model called twice, a nested
    Sequential, a layer with two outputs (tensor_index 1) and several model outputs."""
    inner_in = K.Input((7, 7, 4))
    p = K.layers.Conv2D(4, 3, padding="same", name="inner_conv")(inner_in)
    q = K.layers.MaxPooling2D(2, padding="same")(p)
    inner = K.Model(inner_in, [p, q], name="inner")
    seq = K.Sequential([K.layers.Conv2D(3, 2, padding="same"), K.layers.ReLU()], name="seq")
    x1 = K.Input((7, 7, 4))
    x2 = K.Input((7, 7, 4))
    conv = K.layers.Conv2D(4, 3, padding="same", name="shared")
    a, b, c = conv(x1), conv(x2), conv(conv(x1))
    p1, q1 = inner(a)
    p2, q2 = inner(b)
    s = K.layers.Add()([p1, p2, c])
    t = K.layers.Concatenate()([q1, q2])
    return K.Model([x1, x2], [seq(s), t, K.layers.Flatten()(q2)])


KERAS3: dict[str, Callable] = {"constants": constants_net, "shared": shared_net}
TF_KERAS: dict[str, Callable] = {"operators": operators_net, "shared": shared_net}
