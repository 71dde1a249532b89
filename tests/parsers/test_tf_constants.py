"""The TF parser's constant evaluation: every TF op the op catalog names folds through the IR reference
(tf.signal's window functions build their windows from Range, Cos and arithmetic), and a graph that cannot
be converted is refused with every blocker at once, grouped by op."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tests.support.tf_models import save_frozen
from tf_convert import parsers
from tf_convert.convert import passes
from tf_convert.convert.errors import Unsupported, UnsupportedError
from tf_convert.convert.ir import reference
from tf_convert.parsers.base import ParseOptions

tf = pytest.importorskip("tensorflow")


def _windowed(x):  # (1, 16) signal times the windows tf.signal builds (constants computed with Cos)
    return tf.identity(x * tf.signal.hann_window(16) + x * tf.signal.hamming_window(16, periodic=False), name="out")


def test_window_functions_fold_to_constants(tmp_path):
    pb = save_frozen(tmp_path / "window.pb", _windowed, [1, 16])
    graph = passes.run_default_passes(parsers.parse(pb, ParseOptions()))
    assert {"cos", "sin"}.isdisjoint(n.op for n in graph.nodes)
    x = np.random.default_rng(0).standard_normal((1, 16)).astype(np.float32)
    ours = reference.evaluate(graph, [x])[graph.outputs[0]]
    expected = parsers.run_reference(pb, graph, [x])[0]
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-7)


def _stft(x):
    return tf.abs(tf.signal.stft(x, frame_length=16, frame_step=8), name="out")


def test_a_refusal_lists_every_blocker_and_not_the_window(tmp_path):
    pb = save_frozen(tmp_path / "stft.pb", _stft, [1, 64])
    try:
        parsers.parse(pb, ParseOptions(outputs=["out:0"]))
    except UnsupportedError as e:
        message = str(e)
        blocking = {item.op for item in e.items}
    else:  # the spectral ops convert (a later change): nothing is blocked at all
        return
    assert "Cos" not in blocking and "Cos" not in message
    assert len(blocking) >= 2 and {"RFFT"} <= blocking, message  # the FFT and what follows it, at once


def test_a_refusal_groups_the_nodes_of_one_op():
    err = UnsupportedError([Unsupported("RFFT", "a", "why"), Unsupported("Cos", "c", "other"),
                            Unsupported("RFFT", "b", "why")])
    assert str(err) == "3 unsupported node(s): RFFT (nodes 'a', 'b'): why; Cos (node 'c'): other"
