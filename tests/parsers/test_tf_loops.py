"""TF While loops: a loop whose trip count is static at the conversion's input shape
is unrolled and converts (exit 0, checked against TF by --verify); one whose trip count the data
decides converts to a run-time loop (model.py's `while`, checked against TF at chosen trip counts in
test_tf_control_flow.py) unless it carries a list of run-time length, which is refused by name (exit 3,
naming what its condition reads), never converted silently wrong; so is one that would unroll past the
size cap.

Fixtures: a Keras GRU exported as a SavedModel (functional While), TF1 graphs built with
tf.compat.v1.while_loop, one with a static trip count and one whose trip count is read from an
input, and SavedModels whose loop is bounded by a constant, an input, or a value computed from x.
The numbers of unrolled models in every target are checked in test_tf_unrolled_loops.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tf_convert import cli


def _convert(src: Path, out: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.main, ["tf2torch", str(src), "-o", str(out), *extra])
    return result.exit_code, result.output


def _tf1_loop(tf, path: Path, data_dependent: bool) -> Path:
    """An Elman RNN written as TF1 code writes it: a while_loop over the time axis of x (1, 5, 3)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, (1, 5, 3), name="x")
        steps = tf.compat.v1.placeholder(tf.int32, (), name="steps") if data_dependent else tf.constant(5)
        w = tf.compat.v1.get_variable("w", (3, 4))
        u = tf.compat.v1.get_variable("u", (4, 4))

        def body(t, h):
            return t + 1, tf.tanh(tf.matmul(x[:, t], w) + tf.matmul(h, u))

        _, h = tf.compat.v1.while_loop(lambda t, h: t < steps, body, [tf.constant(0), tf.zeros((1, 4))])
        tf.identity(h, name="y")
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver().save(sess, str(path / "model.ckpt"))
    return path / "model.ckpt"


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


@pytest.mark.parametrize("data_dependent", [False, True], ids=["static", "data_dependent"])
def test_tf1_while_loop_unrolled_or_refused_by_name(tf, tmp_path, data_dependent):
    src = _tf1_loop(tf, tmp_path, data_dependent)
    inputs = "x,steps" if data_dependent else "x"  # the trip count is an input: data decides it
    code, output = _convert(src, tmp_path / "out", "--inputs", inputs, "--outputs", "y", "--verify")
    assert "Traceback" not in output, output
    if not data_dependent:  # 5 steps at x's fixed shape: unrolled, and TF agrees
        assert code == 0 and "OK max_rel" in output, output
        return
    # the data decides the trip count: a run-time loop, verified (--verify feeds `steps` 0 or 1)
    assert code == 0 and "OK max_rel" in output, output
    assert "while True:" in (tmp_path / "out" / "model.py").read_text()


def test_keras_rnn_saved_model_unrolled(tf, tmp_path):
    import keras

    x = keras.Input((6, 3), batch_size=1)
    keras.Model(x, keras.layers.GRU(4)(x)).export(str(tmp_path / "saved"))
    code, output = _convert(tmp_path / "saved", tmp_path / "out", "--verify")
    assert code == 0 and "OK max_rel" in output, output
    assert "while" not in (tmp_path / "out" / "model.py").read_text().split("def forward")[1].split("\n")[0]


def test_loop_past_the_size_cap_refused_by_name(tf, tmp_path):
    """A loop of 20000 steps (past unroll.MAX_TRIPS): refused naming the loop and the cap, nothing written."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, (1, 4), name="x")
        _, y = tf.compat.v1.while_loop(lambda t, h: t < 20000, lambda t, h: (t + 1, h * 0.5 + x),
                                       [tf.constant(0), tf.zeros((1, 4))])
        tf.identity(y, name="y")
    (tmp_path / "long.pb").write_bytes(graph.as_graph_def().SerializeToString())
    code, output = _convert(tmp_path / "long.pb", tmp_path / "out", "--inputs", "x", "--outputs", "y")
    assert code == 3 and "While" in output and "cap on an unrolled loop" in output, output
    assert "Traceback" not in output and not (tmp_path / "out").exists()


def _saved_loop(tf, path: Path, condition: str) -> Path:
    """A SavedModel whose tf.function runs a while_loop over x (1, 5, 3): `condition` picks what
    bounds it: a constant, an input (`steps`), or a value the body computes from x."""
    w = tf.reshape(tf.linspace(-1.0, 1.0, 12), (3, 4))  # distinct columns: --verify needs a varying output

    def cond(t, h, steps):
        if condition == "computed":
            return tf.reduce_sum(h) < 10.0
        return t < (steps if condition == "input" else 5)

    def body(t, h, steps):
        return t + 1, h + tf.matmul(x_of(t), w), steps

    class Loop(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec((1, 5, 3), tf.float32), tf.TensorSpec((), tf.int32)])
        def __call__(self, x, steps):
            nonlocal x_of
            x_of = lambda t: tf.gather(x, tf.minimum(t, 4), axis=1)  # noqa: E731
            return {"y": tf.while_loop(cond, body, [tf.constant(0), tf.zeros((1, 4)), steps])[1]}

    x_of = None
    module = Loop()
    tf.saved_model.save(module, str(path / "saved"), signatures=module.__call__)
    return path / "saved"


@pytest.mark.parametrize("condition, data_dependent", [("constant", False), ("input", True), ("computed", True)])
def test_saved_model_loop_unrolled_or_run_time(tf, tmp_path, condition, data_dependent):
    src = _saved_loop(tf, tmp_path, condition)
    # a loop bounded by a value computed from random x may never end (in TF too): no --verify there
    verify = ("--verify",) if condition != "computed" else ()
    code, output = _convert(src, tmp_path / "out", "--inputs", "x,steps", *verify)
    assert "Traceback" not in output, output
    assert code == 0 and ("OK max_rel" in output or not verify), output
    forward = (tmp_path / "out" / "model.py").read_text().split("def forward")[1]
    assert ("while True:" in forward) == data_dependent, forward  # unrolled when the bound is a constant


@pytest.mark.parametrize("data_dependent", [False, True], ids=["static", "data_dependent"])
def test_tf1_control_flow_frames(tf, tmp_path, data_dependent):
    """A loop written with TF2's control flow turned off (Enter/Merge/Switch/LoopCond/Exit frames, as
    TF 1.x wrote while_loop): unrolled like a While when static, a run-time loop when the data bounds it."""
    tf.compat.v1.disable_control_flow_v2()
    try:
        src = _tf1_loop(tf, tmp_path, data_dependent)
    finally:
        tf.compat.v1.enable_control_flow_v2()
    inputs = "x,steps" if data_dependent else "x"
    code, output = _convert(src, tmp_path / "out", "--inputs", inputs, "--outputs", "y", "--verify")
    assert "Traceback" not in output, output
    if not data_dependent:
        assert code == 0 and "OK max_rel" in output, output
        return
    assert code == 0 and "OK max_rel" in output, output
    assert "while True:" in (tmp_path / "out" / "model.py").read_text()


def test_dynamic_rnn_sequence_length_refused_by_name(tf, tmp_path):
    """dynamic_rnn with a `sequence_length` input runs as many steps as the longest sequence: the data
    bounds the loop, so it is refused naming that input."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, (1, 6, 3), name="x")
        lengths = tf.compat.v1.placeholder(tf.int32, (1,), name="lengths")
        outputs, _ = tf.compat.v1.nn.dynamic_rnn(_ElmanCell(), x, sequence_length=lengths, dtype=tf.float32)
        tf.identity(outputs, name="y")
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    code, output = _convert(tmp_path / "model.ckpt", tmp_path / "out", "--inputs", "x,lengths", "--outputs", "y")
    assert code == 3 and "trip count depends on the data" in output and "lengths" in output, output
    assert "Traceback" not in output and not (tmp_path / "out").exists()


class _ElmanCell:
    state_size = output_size = 4

    def zero_state(self, batch, dtype):
        import tensorflow as tf

        return tf.zeros((batch, 4), dtype)

    def __call__(self, x, h, scope=None):
        import tensorflow as tf

        w = tf.compat.v1.get_variable("w", (x.shape[-1] + 4, 4))
        h = tf.tanh(tf.matmul(tf.concat([x, h], 1), w))
        return h, h


def test_tf1_nested_frames_refused_by_name(tf, tmp_path):
    """A TF1 while loop inside another (frames in frames) is not unrolled: exit 3 naming the loop."""
    tf.compat.v1.disable_control_flow_v2()
    try:
        graph = tf.Graph()
        with graph.as_default():
            x = tf.compat.v1.placeholder(tf.float32, (1, 4), name="x")

            def outer(t, h):
                _, inner = tf.compat.v1.while_loop(lambda s, g: s < 2, lambda s, g: (s + 1, tf.tanh(g + x)),
                                                   [tf.constant(0), h])
                return t + 1, inner

            _, y = tf.compat.v1.while_loop(lambda t, h: t < 3, outer, [tf.constant(0), tf.zeros((1, 4))])
            tf.identity(y, name="y")
    finally:
        tf.compat.v1.enable_control_flow_v2()
    (tmp_path / "nested.pb").write_bytes(graph.as_graph_def().SerializeToString())
    code, output = _convert(tmp_path / "nested.pb", tmp_path / "out", "--inputs", "x", "--outputs", "y")
    assert code == 3 and "nested TF1 loops" in output and "Traceback" not in output, output
    assert not (tmp_path / "out").exists()
