"""deepcut 0.7's Keras 2 text CNN (tf.keras): embedding, Conv1D of widths 1..n each followed by a
TimeDistributed Dense and a ZeroPadding1D((0, width - 1)) back to the full length (width 1 pads
nothing), Maximum, Concatenate, BatchNormalization, Flatten, Dense. Saved by tf_keras as .h5 and
converted to MXNet against tf_keras (the zero-width pad had no MXNet output: exit 1)."""

from __future__ import annotations

import numpy as np

from tests.support.verify_faults import run_cli


def text_cnn(K, n_gram: int = 11, widths: int = 4):
    ids = K.Input((n_gram,), name="ids")
    kinds = K.Input((n_gram,), name="kinds")
    a = K.layers.Embedding(40, 8, input_length=n_gram)(ids)
    a = K.layers.BatchNormalization()(a)
    units = []
    for width in range(1, widths + 1):
        u = K.layers.Conv1D(6, width, padding="valid", activation="relu")(a)
        u = K.layers.TimeDistributed(K.layers.Dense(5))(u)
        units.append(K.layers.ZeroPadding1D((0, width - 1))(u))
    b = K.layers.Embedding(12, 4, input_length=n_gram)(kinds)
    x = K.layers.Concatenate(axis=-1)([a, K.layers.Maximum()(units), b])
    x = K.layers.BatchNormalization()(x)
    x = K.layers.Dense(7, activation="relu")(K.layers.Flatten()(x))
    model = K.Model([ids, kinds], K.layers.Dense(1, activation="sigmoid")(x))
    rng = np.random.default_rng(0)
    for layer in model.layers:
        if isinstance(layer, K.layers.BatchNormalization):
            layer.set_weights([rng.uniform(0.5, 1.5, w.shape).astype("float32") for w in layer.weights])
    return model


def test_text_cnn_to_mxnet(tmp_path):
    import tf_keras

    text_cnn(tf_keras).save(tmp_path / "cnn.h5")
    # batch 3: a (1, 1) sigmoid is one number, which --verify cannot judge
    code, out, err = run_cli("tf2mxnet", tmp_path / "cnn.h5", "-o", tmp_path / "out", "--verify",
                             "--input-shape", "ids:3,11", "--input-shape", "kinds:3,11")
    assert code == 0, err
    assert "mxnet  OK" in out + err
