"""TFLite builtins that move, compare and choose run-time values (PACK, UNPACK, SPLIT/SPLIT_V, SLICE,
GATHER/GATHER_ND, TILE, BROADCAST_TO, CUMSUM, CAST, BATCH_MATMUL of rank 4 with adjoints, comparisons and
logical ops, SELECT/SELECT_V2, IF on a run-time predicate, its branches reading weights the IF passes in),
each in a file TFLite's converter writes, run in every target against TFLite's interpreter on several inputs
(both branches of the IF)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tests.support.tflite_cases import interpreter_outputs
from tf_convert import emitters, parsers
from tf_convert.convert.passes import run_default_passes
from tf_convert.emitters.base import EmitOptions
from tf_convert.emitters.mxnet.runtime import run_many
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tflite.layout import TO_NCHW, TO_NHWC

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _functions() -> dict:
    """name -> (tf.function, builtins its file must hold)."""
    import tensorflow as tf

    f32 = tf.float32

    @tf.function(input_signature=[tf.TensorSpec((1, 5, 6), f32), tf.TensorSpec((1, 5, 6), f32)])
    def logic(x, y):
        m = (tf.logical_and(x >= 0.1, tf.logical_not(x < -0.5)) | tf.equal(x, y) | (x > y) & (y <= 0.3)
             | tf.not_equal(y, 0.2))
        return tf.where(m, x, y * 2.0), tf.where(x > 0, x, 0.5)

    @tf.function(input_signature=[tf.TensorSpec((1, 5, 6), f32)])
    def cond(x):
        return tf.cond(tf.reduce_mean(x) >= 0.0, lambda: x * 2.0 + 1.0, lambda: tf.tanh(x) - 1.0)

    weights = tf.constant(np.random.default_rng(1).standard_normal((30, 4)), f32)

    @tf.function(input_signature=[tf.TensorSpec((1, 5, 6), f32)])
    def cond_weights(x):  # a wake-word head: the score's flag, squeezed to a scalar, gates a dense layer
        flat = tf.reshape(x, (1, 30))
        score = tf.sigmoid(tf.reduce_mean(flat, axis=1, keepdims=True) * 8.0)
        return tf.cond(tf.squeeze(score >= 0.5), lambda: tf.matmul(flat, weights), lambda: score * 2.0 + flat[:, :4])

    @tf.function(input_signature=[tf.TensorSpec((1, 2, 5, 4), f32), tf.TensorSpec((1, 2, 6, 4), f32)])
    def batch_matmul(q, k):
        s = tf.matmul(q, k, transpose_b=True)
        return tf.matmul(s, k), tf.matmul(q, s, transpose_a=True)

    @tf.function(input_signature=[tf.TensorSpec((1, 5, 6), f32)])
    def pieces(x):
        a, b = tf.split(x, 2, axis=2)
        c, e, f = tf.split(x, [1, 3, 1], axis=1)
        u0, u1, u2 = tf.unstack(a, axis=2)
        return (tf.stack([a, b], axis=1), u0 + u1 * u2, tf.gather(x, [4, 0, 2], axis=2),
                tf.slice(x, [0, 1, 2], [1, 3, 3]), tf.tile(c, [2, 1, 3]),
                tf.cumsum(x, axis=2) + tf.cumsum(x, axis=1, exclusive=True, reverse=True),
                tf.broadcast_to(f[:, :, :2], [2, 3, 2]), tf.cast(tf.cast(x * 3.0, tf.int32), f32),
                tf.gather_nd(x, [[0, 1], [0, 3]]), e)

    @tf.function(input_signature=[tf.TensorSpec((1, 4, 6, 3), f32)])
    def pieces_4d(x):  # an image: the IR holds it NCHW, the operators' axes are TFLite's NHWC ones
        a, b, c = tf.split(x, 3, axis=3)
        return (tf.stack([a, b], axis=2), tf.tile(c, [1, 1, 2, 2]), tf.cumsum(x, axis=2), tf.gather(x, [2, 0], axis=3),
                tf.unstack(x, axis=1)[2], tf.slice(x, [0, 1, 1, 0], [1, 2, -1, 2]))

    return {"logic": logic, "cond": cond, "cond_weights": cond_weights, "batch_matmul": batch_matmul,
            "pieces": pieces, "pieces_4d": pieces_4d}


BUILTINS = {
    "logic": {"GREATER_EQUAL", "GREATER", "LESS_EQUAL", "EQUAL", "NOT_EQUAL", "LOGICAL_AND", "LOGICAL_OR",
              "SELECT", "SELECT_V2"},
    "cond": {"IF"},
    "cond_weights": {"IF", "RESHAPE", "BATCH_MATMUL"},  # RESHAPE to [] (its empty shape has no buffer)
    "batch_matmul": {"BATCH_MATMUL"},
    "pieces": {"PACK", "UNPACK", "SPLIT", "SPLIT_V", "SLICE", "GATHER", "GATHER_ND", "TILE", "BROADCAST_TO",
               "CUMSUM", "CAST"},
    "pieces_4d": {"PACK", "UNPACK", "SPLIT", "TILE", "CUMSUM", "GATHER", "SLICE"},
}
TARGETS = tuple(t for t in emitters.TARGETS if t != "caffe")  # Caffe: typed / gathered / running values, refused


def _input_sets(graph) -> list[list[np.ndarray]]:
    """Normal noise, and all-positive / all-negative draws (the IF takes each branch)."""
    rng = np.random.default_rng(0)
    base = [[rng.standard_normal(graph.shape(n)).astype(np.float32) for n in graph.inputs] for _ in range(2)]
    return [*base, [np.abs(x) + 0.1 for x in base[0]], [-np.abs(x) - 0.1 for x in base[1]]]


def _reference(path: Path, graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    feeds = [np.ascontiguousarray(x.transpose(TO_NHWC)) if x.ndim == 4 else x for x in inputs]
    return [y.transpose(TO_NCHW) if y.ndim == 4 else y for y in interpreter_outputs(path, feeds)]


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict[str, dict[str, float]]:
    """case -> target -> the largest |a - b| / max|b| over its outputs and input sets."""
    import tensorflow as tf

    from tf_convert.parsers.tflite.schema import read

    work = tmp_path_factory.mktemp("builtins")
    found: dict[str, dict[str, float]] = {}
    mxnet_jobs = []
    for name, fn in _functions().items():
        path = work / f"{name}.tflite"
        path.write_bytes(tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn).convert())
        held = {o.name for s in read(path).subgraphs for o in s.operators}
        assert BUILTINS[name] <= held, (name, held)
        graph = run_default_passes(parsers.parse(path, ParseOptions()))
        sets = _input_sets(graph)
        expected = [_reference(path, graph, inputs) for inputs in sets]
        found[name] = {}
        for target in TARGETS:
            out = work / name / target
            out.mkdir(parents=True)
            emitters.get(target).emit(graph, out, EmitOptions())
            if target == "mxnet":
                mxnet_jobs += [(name, out, inputs, want) for inputs, want in zip(sets, expected)]
                continue
            actual = emitters.get(target).run_sets(out, sets)
            found[name][target] = _worst(actual, expected)
    outputs = run_many([(out, inputs) for _, out, inputs, _ in mxnet_jobs])
    for (name, _, _, want), got in zip(mxnet_jobs, outputs):
        found[name]["mxnet"] = max(found[name].get("mxnet", 0.0), _worst([got], [want]))
    return found


def _worst(actual: list[list[np.ndarray]], expected: list[list[np.ndarray]]) -> float:
    worst = 0.0
    for got, want in zip(actual, expected):
        for a, b in zip(got, want):
            a = np.asarray(a).reshape(b.shape)
            assert a.shape == b.shape
            scale = float(np.max(np.abs(b), initial=0.0)) or 1.0
            worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - b), initial=0.0)) / scale)
    return worst


@pytest.mark.parametrize("name", list(BUILTINS))
def test_every_target_matches_the_interpreter(measured, name):
    print(name, {t: f"{e:.2e}" for t, e in measured[name].items()})
    # copies, comparisons and choices are exact; a matmul or a running sum within float32 rounding
    assert set(measured[name]) == set(TARGETS) and all(e <= 1e-6 for e in measured[name].values()), measured[name]
