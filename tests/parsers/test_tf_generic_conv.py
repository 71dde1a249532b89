"""TF's generic `Conv` op (tf.raw_ops.Conv) end to end: its SAME pads follow the input size like Conv2D's.
Converted at 8x8, the PyTorch model runs at 9x9 and gives TF's 5x5 there (stride 2), not the 4x4 that pads
baked at 8x8 would give."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tests.support.tf_models import rel_err, run_frozen, save_frozen
from tf_convert import emitters, parsers
from tf_convert.convert import passes
from tf_convert.emitters.base import EmitOptions
from tf_convert.emitters.torch.runner import import_model
from tf_convert.parsers.base import ParseOptions

tf = pytest.importorskip("tensorflow")
torch = pytest.importorskip("torch")
TOL = 1e-5


def _generic_conv(x):
    w = tf.constant(np.random.default_rng(0).uniform(-1, 1, (3, 3, 3, 4)).astype(np.float32))
    return tf.identity(tf.raw_ops.Conv(input=x, filter=w, strides=[1, 2, 2, 1], padding="SAME"), name="out")


def test_generic_conv_same_follows_the_input_size(tmp_path: Path) -> None:
    pb = save_frozen(tmp_path / "conv.pb", _generic_conv, [None, None, None, 3])
    graph = passes.run_default_passes(parsers.parse(pb, ParseOptions(input_shapes={"": (1, 8, 8, 3)})))
    assert [n.attrs["padding"] for n in graph.nodes if n.op == "conv2d"] == ["SAME"]
    out = tmp_path / "torch"
    out.mkdir()
    emitters.get("torch").emit(graph, out, EmitOptions())
    model = import_model(out).load(str(out / "model.pt"))
    for hw, out_hw in (((8, 8), (4, 4)), ((9, 9), (5, 5))):
        x = np.random.default_rng(hw[0]).standard_normal((1, *hw, 3)).astype(np.float32)
        expected = run_frozen(pb, {"input:0": x}).transpose(0, 3, 1, 2)
        with torch.no_grad():
            got = model(torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))).numpy()
        assert got.shape == expected.shape == (1, 4, *out_hw)
        assert rel_err(got, expected) <= TOL, (hw, rel_err(got, expected))
