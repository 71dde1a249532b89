"""TF graphs that once ended in an internal error (exit 1): an `--inputs` placeholder the chosen outputs never
read (refused with exit 2 naming it), and a 5-D (NDHWC) fused batch norm, which converts and is verified
against TF on torch, ONNX and MXNet."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.verify_faults import run_cli
from tf_convert import emitters


def _save(path: Path, build) -> Path:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        build(tf)
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return path


@pytest.fixture(scope="module")
def graphs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("former_crashes")
    rng = np.random.default_rng(0)

    def two_inputs(tf):
        a = tf.compat.v1.placeholder(tf.float32, [1, 4], name="a")
        b = tf.compat.v1.placeholder(tf.float32, [1, 4], name="b")
        tf.identity(a * 2.0, name="out")
        tf.identity(b + 1.0, name="out_b")

    def batch_norm(training: bool):
        def build(tf):
            x = tf.compat.v1.placeholder(tf.float32, [1, 3, 4, 5, 6], name="x")
            channel = [tf.constant(rng.standard_normal(6).astype(np.float32)) for _ in range(4)]
            mean, var = (None, None) if training else (channel[2], tf.abs(channel[3]) + 0.5)
            y, _, _ = tf.compat.v1.nn.fused_batch_norm(x, channel[0], channel[1], mean, var, epsilon=1e-3,
                                                       is_training=training, data_format="NDHWC", name="bn")
            tf.identity(tf.nn.relu(y), name="out")
        return build

    return {"two_inputs": _save(root / "two.pb", two_inputs),
            "bn5d": _save(root / "bn5d.pb", batch_norm(False)),
            "bn5d_batch_stats": _save(root / "bn5d_stats.pb", batch_norm(True))}


@pytest.mark.parametrize("inputs, outputs", [("a,b", "out"), ("b", "out"), ("a,b", "out_b")])
def test_an_input_the_outputs_never_read_is_exit_2_naming_it(graphs, inputs, outputs, tmp_path):
    code, _, err = run_cli("tf2onnx", graphs["two_inputs"], "-o", tmp_path / "out", "--inputs", inputs,
                           "--outputs", outputs)
    unread = "b:0" if outputs == "out" else "a:0"
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and f"--inputs {unread}" in err and "never read" in err
    assert not (tmp_path / "out").exists()


MXNET = (Path(emitters.__file__).parents[1] / ".venv-mxnet").exists()


@pytest.mark.parametrize("target", ["torch", "onnx", pytest.param("mxnet", marks=pytest.mark.skipif(
    not MXNET, reason="no .venv-mxnet (run `make mxnet-env`)"))])
@pytest.mark.parametrize("graph", ["bn5d", "bn5d_batch_stats"])
def test_5d_fused_batch_norm_converts_and_verifies(graphs, graph, target, tmp_path):
    code, _, err = run_cli(f"tf2{target}", graphs[graph], "-o", tmp_path / "out", "--verify")
    assert code == 0, err
