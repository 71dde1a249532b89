"""The reference run reads its weights a few at a time (parsers/tensorflow/weight_stream.py): each
read waits for the uses of the weight WINDOW before it, never in a way that could deadlock, and the outputs
stay bit for bit those of the unordered run."""

from __future__ import annotations

import numpy as np
import pytest

from tf_convert.parsers.tensorflow.weight_stream import WINDOW, stream_weights

tf = pytest.importorskip("tensorflow")


def _read(value: np.ndarray):
    """A weight read as the reference run makes it: an op without inputs, run when TF schedules it."""
    out = tf.compat.v1.py_func(lambda: value, [], tf.float32, stateful=False)
    out.set_shape(value.shape)
    return out


def _chain(n: int, reuse_first_at_end: bool = False):
    """x @ w0 @ w1 ... (through Identity, as a frozen graph's `w/read`); optionally w0 used again at the end."""
    rng = np.random.default_rng(0)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, (2, 8), name="x")
        reads = [_read(rng.standard_normal((8, 8)).astype(np.float32)) for _ in range(n)]
        y = x
        for k, w in enumerate(reads):
            y = tf.matmul(y, tf.identity(w, name=f"w{k}_read"), name=f"layer{k}")
        if reuse_first_at_end:
            y = tf.matmul(y, reads[0], name="again")
    return graph, x, reads, y


def _run(graph, x, y, value):
    config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=60_000)  # a deadlock fails instead of hanging
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        return sess.run(y, {x: value})


@pytest.mark.parametrize("n", [1, WINDOW, 6])
def test_each_read_waits_for_the_uses_of_the_weight_window_before_it(n):
    graph, x, reads, y = _chain(n)
    value = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    unordered = _run(graph, x, y, value)
    added = stream_weights(graph, reads)
    assert added == max(0, n - WINDOW)
    for k, w in enumerate(reads):
        waits = {op.name for op in w.op.control_inputs}
        assert waits == ({f"layer{k - WINDOW}"} if k >= WINDOW else set())  # the use, past the Identity
    assert np.array_equal(_run(graph, x, y, value), unordered)


def test_a_wait_that_could_deadlock_is_left_out():
    """w0 is used again after w3: making w2 wait for that use would wait for w2 itself (a cycle)."""
    graph, x, reads, y = _chain(4, reuse_first_at_end=True)
    value = np.ones((2, 8), np.float32)
    unordered = _run(graph, x, y, value)
    stream_weights(graph, reads)
    assert {op.name for op in reads[2].op.control_inputs} == {"layer0"}  # "again" depends on w2: left out
    assert np.array_equal(_run(graph, x, y, value), unordered)


def test_a_graph_with_a_tf1_loop_is_left_as_it_is():
    """A TF1 while loop is a cycle (NextIteration -> Merge): no order to follow, nothing added."""
    v2 = tf.compat.v1.control_flow_v2_enabled()
    tf.compat.v1.disable_control_flow_v2()  # the loops of TF1 graphs (frozen .pb, .meta)
    try:
        graph = tf.Graph()
        with graph.as_default():
            reads = [_read(np.ones((2, 2), np.float32)) for _ in range(WINDOW + 2)]
            v = tf.ones((2, 2))
            for w in reads:
                v = tf.compat.v1.while_loop(lambda i, v: i < 3, lambda i, v, w=w: (i + 1, tf.matmul(v, w)),
                                            [tf.constant(0), v])[1]
    finally:
        if v2:
            tf.compat.v1.enable_control_flow_v2()
    assert any(op.type == "NextIteration" for op in graph.get_operations())
    assert stream_weights(graph, reads) == 0
