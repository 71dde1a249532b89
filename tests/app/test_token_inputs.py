"""app.verify.token_inputs: the value range --verify feeds an integer input, read off the IR."""

from __future__ import annotations

import numpy as np
import pytest

from tf_convert.app import verify
from tf_convert.app.verify import token_inputs
from tf_convert.convert import ir


def _graph(path: str) -> ir.Graph:
    """ids (2, 5) int32 -> [path] ; path: 'gather' (table 11 rows, after a reshape), 'one_hot' (depth 3),
    'both' (gather of 11 and one_hot of 7: the tighter wins), 'mask' (cast to float only)."""
    g = ir.Graph("tokens")
    g.inputs = [g.add_tensor("ids", (2, 5), "int32")]
    flat = g.add_node("reshape", "flat", ["ids"], (10,), {"shape": (10,)}, out_dtype="int32")
    outs = []
    if path in ("gather", "both"):
        table = g.add_node("const", "table", [], (11, 4), params={"value": np.zeros((11, 4), np.float32)})
        outs.append(g.add_node("gather", "emb", [table, flat], (10, 4), {"axis": 0}))
    if path in ("one_hot", "both"):
        depth = 3 if path == "one_hot" else 7
        outs.append(g.add_node("one_hot", "oh", ["ids"], (2, 5, depth), {"depth": depth, "axis": 2, "on": 1.0,
                                                                       "off": 0.0}))
    if path == "mask":
        outs.append(g.add_node("cast", "m", ["ids"], (2, 5), {"dtype": "float32"}, out_dtype="float32"))
    g.outputs = outs
    return g


@pytest.mark.parametrize("path, expected", [("gather", (0, 11)), ("one_hot", (0, 3)), ("both", (0, 7)),
                                            ("mask", (0, 2))])
def test_integer_range(path, expected):
    g = _graph(path)
    assert token_inputs.integer_range(g, "ids") == expected
    (ids,) = verify.make_inputs(g, seed=3)
    assert ids.dtype == np.int32 and ids.min() >= expected[0] and ids.max() < expected[1]


def test_recorded_range_wins():
    """A re-run (`convert verify OUT`) has only the skeleton graph: the range comes from conversion.json."""
    g = _graph("mask")
    g.metadata[token_inputs.RANGES] = {"ids": (0, 50)}
    assert token_inputs.integer_range(g, "ids") == (0, 50)


def test_float_ids_cast_to_int_get_the_ids_range():
    """A Keras 2 text model takes float ids and casts them: --verify feeds whole numbers below the table
    size; a float input that is not ids stays standard normal."""
    g = ir.Graph("float ids")
    g.inputs = [g.add_tensor("ids", (2, 5)), g.add_tensor("x", (2, 5, 4))]
    ids = g.add_node("cast", "ids_int", ["ids"], (2, 5), {"dtype": "int32"}, out_dtype="int32")
    table = g.add_node("const", "table", [], (13, 4), params={"value": np.zeros((13, 4), np.float32)})
    g.outputs = [g.add_node("add", "y", [g.add_node("gather", "emb", [table, ids], (2, 5, 4), {"axis": 0}), "x"],
                            (2, 5, 4))]
    assert token_inputs.value_range(g, "ids") == (0, 13) and token_inputs.value_range(g, "x") is None
    fed_ids, x = verify.make_inputs(g, seed=1)
    assert fed_ids.dtype == np.float32 and np.array_equal(fed_ids, np.round(fed_ids))
    assert fed_ids.min() >= 0 and fed_ids.max() < 13 and x.min() < 0


# ---- every source kind: the range comes from what the ids index, whatever the source's graph looks like ----

VOCAB, DEPTH, COLUMNS = 1000, 50, 300


def _tf1_sources(directory) -> dict:
    """A TF1 graph (embedding lookup of VOCAB rows, one_hot of DEPTH, a gather along axis 1 of COLUMNS) as a
    checkpoint, a frozen .pb and a SavedModel."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        ids = tf.compat.v1.placeholder(tf.int32, [2, 64], name="ids")
        classes = tf.compat.v1.placeholder(tf.int32, [2, 64], name="classes")
        columns = tf.compat.v1.placeholder(tf.int32, [64], name="columns")
        table = tf.compat.v1.get_variable("table", initializer=np.random.default_rng(0).random((VOCAB, 4),
                                                                                            np.float32))
        wide = tf.compat.v1.get_variable("wide", initializer=np.ones((2, COLUMNS), np.float32))
        out = (tf.reduce_sum(tf.nn.embedding_lookup(table, ids), -1) + tf.reduce_sum(tf.one_hot(classes, DEPTH), -1)
               + tf.gather(wide, columns, axis=1))
        out = tf.identity(out, name="out")
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            (directory / "ckpt").mkdir()
            tf.compat.v1.train.Saver().save(sess, str(directory / "ckpt" / "model.ckpt"))
            frozen = tf.compat.v1.graph_util.convert_variables_to_constants(sess, graph.as_graph_def(), ["out"])
            (directory / "frozen.pb").write_bytes(frozen.SerializeToString())
            tf.compat.v1.saved_model.simple_save(sess, str(directory / "saved_model"),
                                                 inputs={"ids": ids, "classes": classes, "columns": columns},
                                                 outputs={"out": out})
    return {"checkpoint": directory / "ckpt" / "model.ckpt", "frozen_pb": directory / "frozen.pb",
            "saved_model_tf1": directory / "saved_model"}


def _keras_sources(directory) -> dict:
    """A Keras Embedding of VOCAB rows as .keras, as .h5 and exported to a SavedModel (where Keras wraps
    negative ids with a select before its gather)."""
    import keras

    x = keras.Input((64,), dtype="int32", name="ids")
    model = keras.Model(x, keras.layers.Dense(3)(keras.layers.Embedding(VOCAB, 4)(x)))
    model.save(directory / "model.keras")
    model.save(directory / "model.h5")
    model.export(directory / "exported")
    return {"keras_v3": directory / "model.keras", "keras_h5": directory / "model.h5",
            "saved_model_keras": directory / "exported"}


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict:
    directory = tmp_path_factory.mktemp("id_ranges")
    return {**_tf1_sources(directory), **_keras_sources(directory)}


EXPECTED = {"ids": VOCAB, "classes": DEPTH, "columns": COLUMNS}


@pytest.mark.parametrize("kind", ["checkpoint", "frozen_pb", "saved_model_tf1", "keras_v3", "keras_h5",
                                  "saved_model_keras"])
def test_ids_cover_the_whole_range_of_what_they_index(sources, kind):
    """Token ids drawn across the table's rows (not [0, 2): a wrong mapping past row 1 would pass)."""
    from tf_convert.app import pipeline

    graph, *_ = pipeline.load_graph(pipeline.Request(source=sources[kind], target="onnx"))
    drawn = dict(zip(graph.inputs, verify.make_inputs(graph, seed=0)))
    assert drawn
    for name, values in drawn.items():
        source_name = graph.source_names.get(name, name).split(":")[0].split("/")[-1]
        high = next((h for key, h in EXPECTED.items() if key in source_name or key in name), VOCAB)
        assert token_inputs.value_range(graph, name) == (0, high), (kind, name)
        assert values.min() >= 0 and values.max() < high and values.max() >= high * 0.7, (kind, name)
