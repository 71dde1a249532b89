"""The ops of real networks beyond classifiers, one TF graph each, through parser -> passes ->
emitter -> real runtime on every target vs TF: DepthToSpace / SpaceToDepth, MatMul and
BatchMatMul of two activations, ArgMax over NHWC channels, tf.image.resize (TF2's grid) and the
TF1 resize_bilinear(align_corners=True). A target without an exact form refuses the node (exit 3
material), and resizes TF has no exact target form for (bicubic, area, antialias) are refused by
the parser naming the op. The full resize table is tests/emitters/test_resize_matrix.py."""

from __future__ import annotations

import numpy as np
import pytest

from tests.app.test_cli import _check_error
from tests.support.ir_cases import rel_error
from tf_convert import emitters
from tf_convert.emitters.base import EmitOptions

tf = pytest.importorskip("tensorflow")


def _w(rng, *shape):
    return tf.constant(rng.standard_normal(shape).astype(np.float32) * 0.5)


def _depth_space(x):
    y = tf.nn.depth_to_space(tf.nn.conv2d(x, _w(np.random.default_rng(1), 1, 1, 3, 12), 1, "SAME"), 2)
    return tf.identity(tf.nn.space_to_depth(tf.nn.relu(y), 3) * 2.0, name="y")


def _matmuls(x):
    tokens = tf.reshape(x, [1, 36, 3])
    scores = tf.linalg.matmul(tokens, tokens, transpose_b=True)  # BatchMatMulV2, adj_y
    mixed = tf.linalg.matmul(tf.nn.softmax(scores), tokens)
    flat = tf.reshape(mixed, [36, 3])
    return tf.identity(tf.matmul(flat, flat, transpose_a=True), name="y")  # MatMul of two activations


def _argmax(x):
    return tf.math.argmax(tf.nn.conv2d(x, _w(np.random.default_rng(2), 3, 3, 3, 7), 2, "SAME"), axis=3, name="y")


def _tf2_resize(x):
    up = tf.image.resize(x, [13, 17], method="bilinear")
    down = tf.image.resize(up, [5, 4], method="nearest")
    return tf.identity(down, name="y")


def _tf1_align_corners(x):
    return tf.identity(tf.compat.v1.image.resize_bilinear(x, [11, 11], align_corners=True), name="y")


# name -> (graph body, targets that refuse it: {target: words of the hint})
GRAPHS = {
    "depth_space": (_depth_space, {}),
    "matmuls": (_matmuls, {"caffe": ["matmul"]}),
    "argmax": (_argmax, {"caffe": ["argmax"]}),
    "tf2_resize": (_tf2_resize, {"caffe": ["bilinear"]}),
    "tf1_align_corners": (_tf1_align_corners, {}),  # 6 -> 11 with align_corners: a factor of 2, Caffe's Deconvolution
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from tf_convert import parsers
    from tf_convert.convert import passes

    root = tmp_path_factory.mktemp("real_net_ops")
    x_value = np.random.default_rng(0).standard_normal((1, 6, 6, 3)).astype(np.float32)
    result = {}
    for name, (body, _) in GRAPHS.items():
        graph = tf.Graph()
        with graph.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [1, 6, 6, 3], name="x")
            y = body(x)
            with tf.compat.v1.Session(graph=graph) as session:
                expected = session.run(y, {x: x_value})
        pb = root / f"{name}.pb"
        pb.write_bytes(graph.as_graph_def().SerializeToString())
        ir_graph = passes.run_default_passes(parsers.parse(pb))
        if expected.ndim == 4 and ir_graph.source_layouts.get(ir_graph.outputs[0]) == "NHWC":
            expected = expected.transpose(0, 3, 1, 2)
        result[name] = (pb, ir_graph, x_value.transpose(0, 3, 1, 2).copy(), expected)
    return result


@pytest.mark.parametrize("target", emitters.TARGETS)
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_exact_or_refused(built, name, target, tmp_path):
    pb, graph, x, expected = built[name]
    emitter = emitters.get(target)
    problems = emitter.unsupported(graph)
    refusal = GRAPHS[name][1].get(target)
    if refusal:
        assert problems and all(w in " ".join(f"{p.op} {p.hint}" for p in problems) for w in refusal), problems
        return
    assert not problems, problems
    emitter.emit(graph, tmp_path, EmitOptions())
    actual = np.asarray(emitter.run(tmp_path, [x])[0])
    assert actual.shape == expected.shape
    assert rel_error(actual, expected) <= 1e-5


@pytest.mark.parametrize("method,op", [("bicubic", "ResizeBicubic"), ("area", "ResizeArea"),
                                       ("lanczos3", "ScaleAndTranslate"), ("antialias", "ScaleAndTranslate")])
def test_inexact_resizes_are_refused_naming_the_op(tmp_path, method, op):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [1, 6, 6, 3], name="x")
        if method == "antialias":
            y = tf.image.resize(x, [3, 3], method="bilinear", antialias=True)
        else:
            y = tf.image.resize(x, [9, 9], method=method)
        tf.identity(y, name="y")
    pb = tmp_path / "resize.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    _check_error(["tf2onnx", pb], 3, [op, "antialias=False"], tmp_path / "out")
