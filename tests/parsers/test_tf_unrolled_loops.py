"""TF While loops with a static trip count, unrolled, in every target vs TensorFlow.

Fixtures, built here with random weights at two odd sequence lengths (7 and 13):
- Keras RNNs exported as SavedModels (`model.export()`): LSTM with return_sequences, GRU (both
  reset_after modes), SimpleRNN with go_backwards, Bidirectional LSTM, stacked layers;
  and one saved with `tf.saved_model.save` (its trace spells the recurrent bias add differently);
- TF1 `tf.compat.v1.nn.dynamic_rnn` graphs saved as checkpoint + .meta, with an LSTM cell and a GRU cell
  written as tf.compat.v1's rnn_cell writes them (Keras 3 hides those classes), both as TF2 writes the
  loop (While, TensorLists) and as TF 1.x did (control-flow frames, TensorArrayV3);
- a plain `tf.compat.v1.while_loop` accumulating x[:, t] @ w into a state, and one whose body runs
  another while_loop (unrolled on a second round), frozen to .pb files.
Each is parsed (the loop unrolled, its TensorLists lowered), emitted for every target and run in the
target's own runtime against TF's output on the same input. Run with `-s` for the table.
A loop whose body is a known cell (Keras LSTM/GRU/SimpleRNN, dynamic_rnn's LSTM/GRU in TF2's
form) becomes one IR lstm/gru/rnn node instead (RECURRENT_NODES, a note says so); dynamic_rnn cells
mutated slightly (a peephole, relu6 as the candidate's activation, a scaled new state) and TF 1.x
frame loops (TensorArrayV3) stay unrolled.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tests.support.every_target import errors_per_target
from tf_convert import emitters

RTOL = 1e-5
FEATURES = 3
LENGTHS = (7, 13)
TABLE: dict[tuple[str, int], dict[str, float]] = {}


def _keras_export(build):
    """A builder that exports a Keras model (made by `build(keras, layers, length)`) as a SavedModel."""
    def save(directory: Path, length: int, feed: np.ndarray) -> tuple[Path, dict, np.ndarray]:
        import keras

        keras.utils.set_random_seed(length)
        model = build(keras, keras.layers, length)
        model.export(str(directory / "saved"), verbose=False)
        return directory / "saved", {}, np.asarray(model(feed))
    return save


def _keras_tf_saved(directory: Path, length: int, feed: np.ndarray) -> tuple[Path, dict, np.ndarray]:
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(length)
    x = keras.Input((length, FEATURES))
    model = keras.Model(x, keras.layers.LSTM(5, return_sequences=True)(x))
    tf.saved_model.save(model, str(directory / "saved"))
    return directory / "saved", {}, np.asarray(model(feed))


class _Cell:
    """An RNN cell as tf.compat.v1.nn.rnn_cell writes LSTMCell (gates i, j, f, o; forget bias 1) and
    GRUCell (gates r, u; candidate from r * h), for dynamic_rnn. `mutation` changes the cell slightly
    (no recurrent IR op can hold it: the loop must be unrolled): 'peephole' (c feeds the forget gate),
    'relu6' (the LSTM candidate's activation), 'scaled' (the GRU's new state times 0.5)."""

    def __init__(self, kind: str, units: int, mutation: str = ""):
        self.kind, self.units, self.mutation = kind, units, mutation

    @property
    def state_size(self):
        return (self.units, self.units) if self.kind == "lstm" else self.units

    @property
    def output_size(self):
        return self.units

    def zero_state(self, batch, dtype):
        import tensorflow as tf

        zeros = tf.zeros((batch, self.units), dtype)
        return (zeros, zeros) if self.kind == "lstm" else zeros

    def __call__(self, x, state, scope=None):
        import tensorflow as tf

        def weight(name, shape):
            return tf.compat.v1.get_variable(name, shape, initializer=tf.compat.v1.random_normal_initializer(0, 0.5))

        n = self.units
        if self.kind == "lstm":
            c, h = state
            w, b = weight("kernel", (x.shape[-1] + n, 4 * n)), weight("bias", (4 * n,))
            i, j, f, o = tf.split(tf.nn.bias_add(tf.matmul(tf.concat([x, h], 1), w), b), 4, axis=1)
            if self.mutation == "peephole":
                f = f + c * weight("w_f_diag", (n,))
            candidate = tf.nn.relu6(j) if self.mutation == "relu6" else tf.tanh(j)
            c = c * tf.sigmoid(f + 1.0) + tf.sigmoid(i) * candidate
            h = tf.tanh(c) * tf.sigmoid(o)
            return h, (c, h)
        gates = tf.sigmoid(tf.matmul(tf.concat([x, state], 1), weight("gates", (x.shape[-1] + n, 2 * n))))
        r, u = tf.split(gates, 2, axis=1)
        candidate = tf.tanh(tf.matmul(tf.concat([x, r * state], 1), weight("candidate", (x.shape[-1] + n, n))))
        h = u * state + (1 - u) * candidate
        if self.mutation == "scaled":
            h = h * 0.5
        return h, h


def _dynamic_rnn(kind: str, frames: bool = False, mutation: str = ""):
    """dynamic_rnn of a `kind` cell (_Cell's `mutation`); `frames`: written as TF 1.x wrote it (control flow
    v2 off: Enter/Merge/Switch/LoopCond/Exit frames with TensorArrayV3 ops), else as TF2 writes it (While,
    TensorLists)."""
    def save(directory: Path, length: int, feed: np.ndarray) -> tuple[Path, dict, np.ndarray]:
        import tensorflow as tf

        if frames:
            tf.compat.v1.disable_control_flow_v2()
        try:
            return _write(tf, directory, length, feed)
        finally:
            tf.compat.v1.enable_control_flow_v2()

    def _write(tf, directory: Path, length: int, feed: np.ndarray) -> tuple[Path, dict, np.ndarray]:
        graph = tf.Graph()
        with graph.as_default():
            tf.compat.v1.set_random_seed(length)
            x = tf.compat.v1.placeholder(tf.float32, (1, length, FEATURES), name="x")
            outputs, _ = tf.compat.v1.nn.dynamic_rnn(_Cell(kind, 5, mutation), x, dtype=tf.float32)
            y = tf.identity(outputs, name="y")
            with tf.compat.v1.Session() as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                expected = sess.run(y, {x: feed})
                tf.compat.v1.train.Saver().save(sess, str(directory / "model.ckpt"))
        return directory / "model.ckpt", {"inputs": ["x"], "outputs": ["y"]}, expected
    return save


def _accumulating_loop(directory: Path, length: int, feed: np.ndarray) -> tuple[Path, dict, np.ndarray]:
    """tf.compat.v1.while_loop over the time axis: h <- tanh(h @ u + x[:, t] @ w), frozen to a .pb."""
    import tensorflow as tf

    rng = np.random.default_rng(length)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, (1, length, FEATURES), name="x")
        w = tf.constant(rng.normal(0, 0.5, (FEATURES, 4)).astype(np.float32))
        u = tf.constant(rng.normal(0, 0.5, (4, 4)).astype(np.float32))

        def body(t, h, total):
            h = tf.tanh(tf.matmul(h, u) + tf.matmul(x[:, t], w))
            return t + 1, h, total + h

        _, h, total = tf.compat.v1.while_loop(lambda t, h, total: t < length, body,
                                              [tf.constant(0), tf.zeros((1, 4)), tf.zeros((1, 4))])
        y = tf.identity(tf.concat([h, total], axis=1), name="y")
        with tf.compat.v1.Session() as sess:
            expected = sess.run(y, {x: feed})
    (directory / "loop.pb").write_bytes(graph.as_graph_def().SerializeToString())
    return directory / "loop.pb", {"inputs": ["x"], "outputs": ["y"]}, expected


def _nested_loops(directory: Path, length: int, feed: np.ndarray) -> tuple[Path, dict, np.ndarray]:
    """A while_loop over time whose body runs a 3-step while_loop that reads its counter as data."""
    import tensorflow as tf

    rng = np.random.default_rng(length)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, (1, length, FEATURES), name="x")
        w = tf.constant(rng.normal(0, 0.5, (FEATURES, 4)).astype(np.float32))

        def outer(t, h):
            def inner(s, g):
                return s + 1, tf.tanh(g + tf.matmul(x[:, t], w) * tf.cast(s, tf.float32))
            return t + 1, tf.compat.v1.while_loop(lambda s, g: s < 3, inner, [tf.constant(0), h])[1]

        _, h = tf.compat.v1.while_loop(lambda t, h: t < length, outer, [tf.constant(0), tf.zeros((1, 4))])
        y = tf.identity(h, name="y")
        with tf.compat.v1.Session() as sess:
            expected = sess.run(y, {x: feed})
    (directory / "nested.pb").write_bytes(graph.as_graph_def().SerializeToString())
    return directory / "nested.pb", {"inputs": ["x"], "outputs": ["y"]}, expected


MODELS = {
    "lstm_sequences": _keras_export(lambda keras, L, n: keras.Model(
        x := keras.Input((n, FEATURES)), L.LSTM(5, return_sequences=True)(x))),
    "gru_last": _keras_export(lambda keras, L, n: keras.Model(
        x := keras.Input((n, FEATURES)), L.GRU(4)(x))),
    "gru_reset_before": _keras_export(lambda keras, L, n: keras.Model(
        x := keras.Input((n, FEATURES)), L.GRU(4, reset_after=False, return_sequences=True)(x))),
    "simple_rnn_backwards": _keras_export(lambda keras, L, n: keras.Model(
        x := keras.Input((n, FEATURES)), L.SimpleRNN(6, return_sequences=True, go_backwards=True)(x))),
    "bidirectional_lstm": _keras_export(lambda keras, L, n: keras.Model(
        x := keras.Input((n, FEATURES)), L.Dense(2)(L.Bidirectional(L.LSTM(4, return_sequences=True))(x)))),
    "stacked_gru_lstm": _keras_export(lambda keras, L, n: keras.Model(
        x := keras.Input((n, FEATURES)), L.LSTM(3, return_sequences=True)(L.GRU(5, return_sequences=True)(x)))),
    "lstm_tf_saved_model": _keras_tf_saved,
    "dynamic_rnn_lstm": _dynamic_rnn("lstm"),
    "dynamic_rnn_gru": _dynamic_rnn("gru"),
    "tf1_frames_dynamic_rnn_lstm": _dynamic_rnn("lstm", frames=True),
    "tf1_frames_dynamic_rnn_gru": _dynamic_rnn("gru", frames=True),
    "while_loop_accumulating": _accumulating_loop,
    "nested_while_loops": _nested_loops,
    "dynamic_rnn_lstm_peephole": _dynamic_rnn("lstm", mutation="peephole"),
    "dynamic_rnn_lstm_relu6": _dynamic_rnn("lstm", mutation="relu6"),
    "dynamic_rnn_gru_scaled": _dynamic_rnn("gru", mutation="scaled"),
}
# the loops whose body is a known cell become recurrent IR nodes (recurrent_loops.py), this
# many per model; every other loop (a mutated cell, a plain while_loop) is unrolled
RECURRENT_NODES = {
    "lstm_sequences": 1, "gru_last": 1, "gru_reset_before": 1, "simple_rnn_backwards": 1,
    "bidirectional_lstm": 2, "stacked_gru_lstm": 2, "lstm_tf_saved_model": 1, "dynamic_rnn_lstm": 1,
    "dynamic_rnn_gru": 1,
}


@pytest.fixture(scope="module", autouse=True)
def _table():
    yield
    if TABLE:
        print("\nunrolled loops: max relative error vs TF")
        for (model, length), errors in sorted(TABLE.items()):
            row = "  ".join(f"{t} {errors[t]:.1e}" if t in errors else f"{t} refused" for t in emitters.TARGETS)
            print(f"  {model:28s} T={length:<3d} {row}")


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("model", list(MODELS))
def test_unrolled_loop_every_target(tmp_path, model, length):
    pytest.importorskip("tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from tf_convert.convert import passes
    from tf_convert.parsers import tensorflow as tf_parser
    from tf_convert.parsers.base import ParseOptions

    feed = np.random.default_rng(length).normal(0, 1, (1, length, FEATURES)).astype(np.float32)
    path, names, expected = MODELS[model](tmp_path, length, feed)
    options = ParseOptions(**names)
    graph = tf_parser.parse(path, options)
    assert not any(n.op.startswith(("while", "tensor_list", "tensor_array")) for n in graph.nodes)
    recurrent = [n for n in graph.nodes if n.op in ("lstm", "gru", "rnn")]
    assert len(recurrent) == RECURRENT_NODES.get(model, 0), [n.op for n in graph.nodes]
    assert sum("not unrolled" in note for note in options.notes) == len(recurrent), options.notes
    if recurrent:  # one cell, not one copy per step
        assert sum(n.op == "linear" for n in graph.nodes) <= 1, [n.op for n in graph.nodes]
    graph = passes.run_default_passes(graph)
    if recurrent:  # TF's loop runs its traced trip count at any length: the model is bound to it, loudly
        from tf_convert.convert.padding.sizes import size_bound

        assert "fixed trip count" in (size_bound(graph) or ""), size_bound(graph)
    work = tmp_path / "targets"
    work.mkdir()
    caffe_refuses = emitters.get("caffe").unsupported(graph)  # BVLC Caffe: no constant layer, ...
    assert all(u.node for u in caffe_refuses), caffe_refuses  # by name
    errors = errors_per_target(graph, [feed], [expected], work, refused=("caffe",) if caffe_refuses else ())
    TABLE[(model, length)] = errors
    assert all(e <= RTOL for e in errors.values()), errors
