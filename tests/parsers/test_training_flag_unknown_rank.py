"""TF 1.x's `is_training = tf.placeholder(tf.bool)` declares no shape (unknown rank), as musicnn 0.1.0's
shipped checkpoints do: a flag that steers only the conds of tf.compat.v1.layers batch norm (fused on
images, non-fused -- tf.nn.moments through a cond -- on a dense layer) and dropout folds to inference by
default (noted) and with --set, and converts exactly against TF's run fed is_training=False.

The musicnn checkpoints themselves: `make test-real-models` (tests/zoo/test_musicnn.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support import training_graphs as tg
from tests.support.verify_faults import run_cli
from tf_convert.app import pipeline
from tf_convert.convert import ir

BATCH, HW, CLASSES = 2, 9, 4


def _build(directory: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    import tensorflow as tf
    from tf_keras.src.legacy_tf_layers import convolutional, core, normalization

    rng = np.random.default_rng(0)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        images = tf.compat.v1.placeholder(tf.float32, [BATCH, HW, HW, 3], name="images")
        training = tf.compat.v1.placeholder(tf.bool, name="is_training")  # no shape: unknown rank
        y = convolutional.conv2d(images, 4, 3, padding="same")
        y = tf.nn.relu(normalization.batch_normalization(y, training=training))
        y = tf.reshape(y, [BATCH, -1])
        y = core.dense(y, 6)
        y = normalization.batch_normalization(y, training=training)  # non-fused: tf.nn.moments
        y = core.dropout(tf.nn.relu(y), rate=0.5, training=training)
        logits = tf.identity(core.dense(y, CLASSES), name="output")
        return tg.train_flagged(images, training, logits, directory, rng, BATCH, HW)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("unknown_rank_flag"))


@pytest.mark.parametrize("settings", [{}, {"is_training": "false"}], ids=["default", "set"])
def test_unknown_rank_flag_folds_to_inference(built, settings):
    prefix, x, expected = built
    graph, _, _, notes = pipeline.load_graph(pipeline.Request(source=prefix, target="ir", settings=settings,
                                                              outputs=["output"]))
    how = "--set" if settings else "inference default"
    assert any(n.startswith(f"flag is_training = false ({how}") for n in notes), notes
    out = ir.evaluate(graph, [np.transpose(x, (0, 3, 1, 2)).astype(np.float64)])[graph.outputs[0]]
    assert np.abs(out - expected).max() <= 1e-4 * np.abs(expected).max()


def test_auto_detected_outputs_leave_batch_statistics_out(built, tmp_path):
    prefix, _, _ = built
    code, _, err = run_cli("tf2onnx", prefix, "-o", tmp_path / "out", "--verify")
    assert code == 0, err
    doc = json.loads((tmp_path / "out" / "conversion.json").read_text())
    assert not any("moments" in n for n in doc["notes"] if n.startswith("outputs auto-detected")), doc["notes"]
    assert any("flag is_training = false (inference default" in n for n in doc["notes"]), doc["notes"]
