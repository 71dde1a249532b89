"""TFLite's run-time control flow: a WHILE whose condition reads loop values and an IF whose predicate is computed
at run time become IR while_loop / cond nodes with nested graphs (the TF graphs' path), as TFLite's own converter
writes them from tf.while_loop / tf.cond. Each file runs in TFLite's interpreter (as --verify runs it), in PyTorch
and onnxruntime at two inputs that give different trip counts (branches); MXNet runs the conditional (both
branches, `where`) and refuses a loop by name.

Fixtures: `counted` (a counter bounded by an input scalar, both loop values read), `image` (an NHWC image grown
by a conv until its sum passes a limit), `cond` (two outputs, a matmul branch and an elementwise one),
`cond_loop` (a branch holding a data-dependent loop that would never end if it ran when not taken)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from click.testing import CliRunner

from tf_convert import cli, emitters, parsers
from tf_convert.convert.ir import check
from tf_convert.convert.ir.subgraph import walk
from tf_convert.convert.passes import run_default_passes
from tf_convert.emitters.base import EmitOptions
from tf_convert.emitters.mxnet.runtime import run_many
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tflite.reference import run_reference_sets

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

RTOL = 1e-5  # a conv or matmul within float32 rounding of TFLite's kernels; copies and counters equal
W = np.linspace(-0.6, 0.5, 16, dtype=np.float32).reshape(4, 4)
KERNEL = np.linspace(-0.3, 0.4, 36, dtype=np.float32).reshape(3, 3, 2, 2)
X_SMALL = np.array([[0.1, 0.3, -0.2, 0.4]], np.float32)
X_LARGE = np.array([[1.5, 2.0, 0.5, 1.0]], np.float32)
IMAGE = np.random.default_rng(5).standard_normal((1, 2, 5, 6)).astype(np.float32)  # NCHW, as the IR takes it


def _functions() -> dict:
    """name -> (tf.function, the builtin the file must hold)."""
    import tensorflow as tf

    vector = tf.TensorSpec((1, 4), tf.float32)

    @tf.function(input_signature=[vector, tf.TensorSpec((), tf.int32)])
    def counted(x, n):
        i, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 2, y * 1.25 + 0.5), [tf.constant(1), x])
        return y, i

    @tf.function(input_signature=[tf.TensorSpec((1, 5, 6, 2), tf.float32)])
    def image(x):  # the sum grows by at least 15 a step: the loop ends for any input
        step = lambda y: (y + tf.abs(tf.nn.conv2d(y, KERNEL, 1, "SAME")) * 0.125 + 0.25,)  # noqa: E731
        return tf.while_loop(lambda y: tf.reduce_sum(y) < 40.0, step, [x])[0]

    @tf.function(input_signature=[vector])
    def cond(x):
        return tf.cond(tf.reduce_sum(x) > 1.0, lambda: (tf.matmul(x, W) + 1.0, x * 3.0),
                       lambda: (x * 2.0 - 1.0, tf.tanh(x)))

    @tf.function(input_signature=[vector])
    def cond_loop(x):  # for sum(x) <= 0 the loop would never end: only a real conditional is exact
        grow = lambda: tf.while_loop(lambda y: tf.reduce_sum(y) < 10.0, lambda y: (y * 1.5 + 0.25,), [x])[0]  # noqa: E731
        return tf.cond(tf.reduce_sum(x) > 0.0, grow, lambda: x - 1.0)

    return {"counted": (counted, "WHILE"), "image": (image, "WHILE"), "cond": (cond, "IF"),
            "cond_loop": (cond_loop, "IF")}


# name -> two input sets (IR layout) giving different trip counts / branches
FEEDS = {
    "counted": [[X_SMALL, np.int32(2)], [X_SMALL, np.int32(9)]],
    "image": [[IMAGE], [IMAGE * 0.1]],
    "cond": [[X_SMALL], [X_LARGE]],
    "cond_loop": [[X_SMALL], [-X_LARGE]],
}


def _close(got: np.ndarray, want: np.ndarray) -> bool:
    got = np.asarray(got).reshape(want.shape)  # MXNet returns a scalar as (1,)
    scale = float(np.max(np.abs(want), initial=0.0)) or 1.0
    return float(np.max(np.abs(got.astype(np.float64) - want), initial=0.0)) <= RTOL * scale


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> dict:
    """name -> (graph, written targets' folders, TFLite's outputs per input set); "files": their folder."""
    import tensorflow as tf

    from tf_convert.parsers.tflite.schema import read

    work = tmp_path_factory.mktemp("tflite_control")
    found = {}
    for name, (fn, builtin) in _functions().items():
        path = work / f"{name}.tflite"
        path.write_bytes(tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn).convert())
        assert builtin in {o.name for s in read(path).subgraphs for o in s.operators}, name
        graph = run_default_passes(parsers.parse(path, ParseOptions()))
        expected = run_reference_sets(path, graph, FEEDS[name])  # --verify's reference (a 0-d input stays 0-d)
        outs = {}
        for target in ("torch", "onnx", "mxnet"):
            if emitters.get(target).unsupported(graph):
                continue
            outs[target] = work / name / target
            outs[target].mkdir(parents=True)
            emitters.get(target).emit(graph, outs[target], EmitOptions())
        found[name] = (graph, outs, expected)
    found["files"] = work
    return found


@pytest.mark.parametrize("name", list(FEEDS))
def test_torch_and_onnx_match_the_interpreter(converted, name):
    graph, outs, expected = converted[name]
    assert {"while_loop", "cond"} & {n.op for n in graph.nodes} and check.problems(graph) == []
    assert any(not np.array_equal(a, b) for a, b in zip(*expected))  # different trip counts / branches
    for target in ("torch", "onnx"):
        actual = emitters.get(target).run_sets(outs[target], FEEDS[name])
        for got, want in zip(actual, expected):
            assert all(np.asarray(g).dtype == w.dtype and _close(g, w) for g, w in zip(got, want)), (target, got, want)


def test_mxnet_runs_the_conditional_and_refuses_a_loop_by_name(converted):
    jobs = [(name, inputs, want) for name in FEEDS if "mxnet" in converted[name][1]
            for inputs, want in zip(FEEDS[name], converted[name][2])]
    assert {name for name, _, _ in jobs} == {"cond"}
    for (_, _, want), got in zip(jobs, run_many([(converted[n][1]["mxnet"], x) for n, x, _ in jobs])):
        assert all(_close(g, w) for g, w in zip(got, want))
    symbol = (converted["cond"][1]["mxnet"] / "model-symbol.json").read_text()
    # the cond's two outputs come from one expansion: one predicate reshape, each branch op once
    assert symbol.count('"op": "Reshape"') == 1 and symbol.count('"act_type": "tanh"') == 1, symbol
    for name in ("counted", "image", "cond_loop"):
        graph = converted[name][0]
        assert any(n.op == "while_loop" for n in walk(graph))
        problems = emitters.get("mxnet").unsupported(graph)
        assert problems and all("while_loop" in f"{p.op} {p.hint}" for p in problems), problems


def test_a_loop_read_for_two_values_is_one_while(converted):
    graph, outs, _ = converted["counted"]
    assert sum(n.op == "while_loop" for n in graph.nodes) == 2
    assert (outs["torch"] / "model.py").read_text().count("while True:") == 1


def test_cli_verifies_a_run_time_loop(converted, tmp_path):
    """`convert tf2onnx FILE.tflite --verify`: the loop's model checked against the interpreter on random inputs."""
    result = CliRunner().invoke(cli.main, ["tf2onnx", str(converted["files"] / "image.tflite"), "-o",
                                           str(tmp_path / "out"), "--verify"])
    assert result.exit_code == 0 and "OK" in result.output, result.output
