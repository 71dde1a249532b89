"""3-D ops from TF graph sources (frozen .pb and SavedModel), every target vs TensorFlow.

The fixture is a tf.compat.v1 graph: Conv3D SAME stride 2 on odd sizes (asymmetric pads), MaxPool3D and
AvgPool3D SAME, conv3d_transpose SAME stride 2 back to the input size, BiasAdd and Relu on NDHWC. It is
frozen to a .pb and written as a SavedModel, parsed from each, emitted for every target and run in the
target's real runtime. Caffe has no 3-D layers and must refuse by name. Run with `-s` for the table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tf_convert import emitters
from tf_convert.emitters.base import EmitOptions

RTOL = 1e-5
TARGETS = ("torch", "onnx", "mxnet", "caffe")
REFUSED = {"caffe": "conv3d"}  # target -> the op it must name when refusing
SIZES = [(7, 9, 5), (6, 5, 8)]


def _body(tf, x, rng):
    def weight(*shape):
        return tf.constant(rng.normal(0, 0.3, shape).astype(np.float32))

    skip = tf.nn.relu(tf.nn.bias_add(tf.nn.conv3d(x, weight(3, 3, 3, 2, 4), [1] * 5, "SAME"), weight(4)))
    y = tf.nn.conv3d(skip, weight(3, 3, 3, 4, 6), [1, 2, 2, 2, 1], "SAME")
    y = tf.nn.max_pool3d(y, [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "SAME")
    y = tf.nn.avg_pool3d(y, [1, 3, 3, 3, 1], [1, 1, 1, 1, 1], "SAME")
    up = tf.nn.conv3d_transpose(y, weight(3, 3, 3, 4, 6), tf.shape(skip), [1, 2, 2, 2, 1], "SAME")
    y = tf.concat([skip, up], axis=4)
    y = tf.nn.conv3d(y, weight(2, 2, 2, 8, 3), [1, 1, 2, 1, 1], "VALID")
    pooled = tf.nn.avg_pool3d(y, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "SAME")
    return tf.identity(y, name="volume"), tf.identity(pooled, name="pooled")


def _save(directory: Path, size: tuple[int, int, int]) -> tuple[dict[str, Path], np.ndarray, list[np.ndarray]]:
    import tensorflow as tf

    feed = np.random.default_rng(1).normal(0, 1, (1, *size, 2)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [1, *size, 2], name="input")
        outputs = _body(tf, x, np.random.default_rng(0))
        with tf.compat.v1.Session(graph=graph) as sess:
            expected = sess.run(list(outputs), {x: feed})
            (directory / "frozen.pb").write_bytes(graph.as_graph_def().SerializeToString())
            tf.compat.v1.saved_model.simple_save(
                sess, str(directory / "saved_model"), inputs={"input": x},
                outputs={"volume": outputs[0], "pooled": outputs[1]},
            )
    return {"pb": directory / "frozen.pb", "saved_model": directory / "saved_model"}, feed, expected


def _rel(actual: np.ndarray, expected: np.ndarray) -> float:
    from tests.support.ir_cases import rel_error

    return rel_error(actual, expected)


@pytest.mark.parametrize("size", SIZES, ids=["x".join(map(str, s)) for s in SIZES])
@pytest.mark.parametrize("form", ["pb", "saved_model"])
def test_tf_volume_every_target(tmp_path, size, form):
    from tf_convert.convert import passes
    from tf_convert.parsers import tensorflow as tf_parser
    from tf_convert.parsers.base import ParseOptions

    paths, feed, expected = _save(tmp_path, size)
    graph = tf_parser.parse(paths[form], ParseOptions(outputs=["volume", "pooled"]))
    graph.validate()
    graph = passes.run_default_passes(graph)
    errors: dict[str, str] = {}
    for target in TARGETS:
        emitter = emitters.get(target)
        refused = emitter.unsupported(graph)
        if target in REFUSED:
            assert refused and any(u.op == REFUSED[target] for u in refused), (target, refused)
            errors[target] = f"refused: {refused[0].op} ({refused[0].node}): {refused[0].hint}"
            continue
        assert not refused, (target, refused)
        out = tmp_path / target
        out.mkdir()
        emitter.emit(graph, out, EmitOptions())
        actual = emitter.run(out, [feed])
        worst = max(_rel(np.asarray(a), b) for a, b in zip(actual, expected))
        errors[target] = f"{worst:.2e}"
        assert worst < RTOL, (target, worst)
    print(f"\nTF 3-D {form} {size}: " + "; ".join(f"{t} {e}" for t, e in errors.items()))


# ---- dilated Conv1D from a SavedModel: SpaceToBatchND -> ExpandDims -> Conv2D -> Squeeze -> BatchToSpaceND

CONV1D_CASES = [("same", 17, "saved_model.save"), ("causal", 16, "export"), ("same", 24, "export"),
                ("causal", 23, "saved_model.save")]
REFUSED_1D = {"caffe": "no Permute layer"}  # (N, L, C) <-> (N, C, L) transposes, as for Keras 1-D sources


def _dilated_conv1d(keras, length: int, padding: str):
    layers = keras.layers
    inp = keras.Input((length, 3))
    x = layers.Conv1D(5, 3, dilation_rate=2, padding=padding, activation="relu")(inp)
    x = layers.Conv1D(6, 2, dilation_rate=4, padding=padding)(x)
    x = layers.Conv1D(4, 3, dilation_rate=3, padding=padding, use_bias=False)(x)
    return keras.Model(inp, x)


@pytest.mark.parametrize("padding,length,how", CONV1D_CASES, ids=[f"{p}-{n}-{h}" for p, n, h in CONV1D_CASES])
def test_dilated_conv1d_saved_model_every_target(tmp_path, padding, length, how):
    import keras
    import tensorflow as tf

    from tf_convert.convert import passes
    from tf_convert.parsers import tensorflow as tf_parser
    from tf_convert.parsers.base import ParseOptions

    keras.utils.set_random_seed(22)
    model = _dilated_conv1d(keras, length, padding)
    directory = tmp_path / "saved_model"
    tf.saved_model.save(model, str(directory)) if how == "saved_model.save" else model.export(str(directory))
    feed = np.random.default_rng(2).normal(0, 1, (1, length, 3)).astype(np.float32)
    expected = np.asarray(model(feed, training=False))

    graph = passes.run_default_passes(tf_parser.parse(directory, ParseOptions()))
    assert {n.source_op for n in graph.nodes} >= {"SpaceToBatchND+ExpandDims+Conv2D+Squeeze+BatchToSpaceND"}
    assert sorted(n.attrs["dilation"] for n in graph.nodes if n.op == "conv2d") == [(1, 2), (1, 3), (1, 4)]
    errors: dict[str, str] = {}
    for target in TARGETS:
        emitter = emitters.get(target)
        refused = emitter.unsupported(graph)
        if target in REFUSED_1D:
            assert any(REFUSED_1D[target] in u.hint for u in refused), (target, refused)
            errors[target] = f"refused: {refused[0].op} ({refused[0].node}): {refused[0].hint}"
            continue
        assert not refused, (target, refused)
        out = tmp_path / target
        out.mkdir()
        emitter.emit(graph, out, EmitOptions())
        worst = _rel(np.asarray(emitter.run(out, [feed])[0]), expected)
        errors[target] = f"{worst:.2e}"
        assert worst < RTOL, (target, worst)
    print(f"\nTF dilated Conv1D {padding} L={length} ({how}): " + "; ".join(f"{t} {e}" for t, e in errors.items()))


def test_unknown_volume_size_asks_for_input_shape(tmp_path):
    import tensorflow as tf

    from tf_convert.convert.errors import UsageError
    from tf_convert.parsers import tensorflow as tf_parser
    from tf_convert.parsers.base import ParseOptions

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, None, None, None, 2], name="input")
        y = tf.nn.conv3d(x, tf.constant(np.ones((3, 3, 3, 2, 4), np.float32)), [1, 2, 2, 2, 1], "SAME")
        tf.identity(tf.nn.max_pool3d(y, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "SAME"), name="out")
    path = tmp_path / "dynamic.pb"
    path.write_bytes(graph.as_graph_def().SerializeToString())
    with pytest.raises(UsageError, match=r"Conv3D.*--input-shape"):
        tf_parser.parse(path, ParseOptions())
    parsed = tf_parser.parse(path, ParseOptions(input_shapes={"": (1, 9, 8, 7, 2)}))
    conv = next(n for n in parsed.nodes if n.op == "conv3d")
    assert conv.attrs["pads"] == (1, 1, 0, 1, 1, 1)  # D 9 -> 5, H 8 -> 4 (TF pads after), W 7 -> 4
