"""A `tf.cond` whose predicate the input's shape decides (Whisper's decoder picks its causal mask by the sequence
length) is folded to the branch taken at the conversion's fixed shape: no run-time `cond` node is left, and the
converted PyTorch model equals TF at a shape that takes each branch."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tf_convert import cli
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tensorflow import parse

tf = pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A SavedModel whose branch depends on the sequence length (longer than 3: a product; else tanh)."""
    weights = tf.constant(np.linspace(-0.5, 0.6, 16, dtype=np.float32).reshape(4, 4))

    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec((None, None, 4), tf.float32, name="x")])
        def __call__(self, x):
            return {"y": tf.cond(tf.shape(x)[1] > 3, lambda: tf.matmul(x, weights) + 0.5, lambda: tf.tanh(x))}

    path = tmp_path_factory.mktemp("cond") / "model"
    model = Model()
    tf.saved_model.save(model, str(path), signatures={"serving_default": model.__call__})
    return path


@pytest.mark.parametrize("steps", [5, 2], ids=["then", "else"])
def test_a_shape_decided_cond_is_folded_and_exact(source, tmp_path, steps):
    graph = parse(source, ParseOptions(input_shapes={"": (2, steps, 4)}))
    assert not [n for n in graph.nodes if n.op == "cond"], [n.op for n in graph.nodes]
    assert ("linear" in {n.op for n in graph.nodes} or "matmul" in {n.op for n in graph.nodes}) == (steps > 3)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli.main, ["tf2torch", str(source), "--input-shape", f"2,{steps},4", "--verify",
                                           "-o", str(out)])
    assert result.exit_code == 0, result.output
    verified = json.loads((out / "conversion.json").read_text())["verify"]
    assert verified["passed"] and verified["max_rel"] < 1e-6, verified
