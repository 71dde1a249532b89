"""Recurrent IR nodes in every target runtime against the IR reference (itself
checked against Keras in tests/core/test_ir_reference.py), one row per cell variant: the fused
layers (torch nn.LSTM/GRU/RNN, ONNX LSTM/GRU/RNN, MXNet RNN) and the cells written out where a
target's own layer is not TF's (MXNet's unrolled cell: GRU reset_after=False, hard_sigmoid, relu,
linear). Caffe refuses every recurrent node by name.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.ir_cases import rel_error
from tests.support.sequence_cases import recurrent_node_spec
from tf_convert import emitters
from tf_convert.convert import ir
from tf_convert.emitters.base import EmitOptions

TOL = 1e-5
BATCH, LENGTH, FEATURES = 2, 5, 3
# id -> (op, units, attrs beyond Keras's defaults)
CELLS = {
    "lstm_fused_backwards_input_order": ("lstm", 4, {"go_backwards": True, "sequence_order": "input"}),
    "lstm_hard_sigmoid_relu_backwards": ("lstm", 4, {"recurrent_activation": "hard_sigmoid", "activation": "relu",
                                                     "go_backwards": True}),
    "lstm_hard_sigmoid_last_c": ("lstm", 3, {"recurrent_activation": "hard_sigmoid", "output": "last_c"}),
    "gru_reset_after_fused_last_h": ("gru", 4, {"output": "last_h"}),
    "gru_reset_after_relu": ("gru", 4, {"activation": "relu"}),
    "gru_reset_before_backwards_input": ("gru", 3, {"reset_after": False, "go_backwards": True,
                                                    "sequence_order": "input"}),
    "gru_reset_before_last_h": ("gru", 3, {"reset_after": False, "output": "last_h"}),
    "rnn_linear_backwards": ("rnn", 4, {"activation": "linear", "go_backwards": True}),
    "rnn_tanh_fused_last_h": ("rnn", 4, {"output": "last_h"}),
}


def _graph(op: str, units: int, attrs: dict) -> ir.Graph:
    node_attrs, params = recurrent_node_spec(op, FEATURES, units, seed=units, **attrs)
    if op == "gru" and not node_attrs["reset_after"]:
        params["bias_hh"][: 2 * units] = 0  # any value is legal; zeros on two blocks vary the case
    out = (BATCH, LENGTH, units) if node_attrs["output"] == "sequence" else (BATCH, units)
    g = ir.Graph(name=op)
    x = g.add_tensor("x", (BATCH, LENGTH, FEATURES))
    g.inputs = [x]
    g.outputs = [g.add_node(op, "cell", [x], out, node_attrs, params)]
    g.validate()
    return g


@pytest.fixture(scope="module")
def cases():
    x = np.random.default_rng(7).normal(0, 1, (BATCH, LENGTH, FEATURES)).astype(np.float32)
    found = {}
    for name, (op, units, attrs) in CELLS.items():
        g = _graph(op, units, attrs)
        found[name] = (g, x, ir.evaluate(g, [x.astype(np.float64)])[g.outputs[0]])
    return found


@pytest.mark.parametrize("target", ["torch", "onnx"])
def test_cells_in_torch_and_onnx(cases, target, tmp_path):
    emitter = emitters.get(target)
    for name, (g, x, expected) in cases.items():
        out = tmp_path / name
        out.mkdir()
        emitter.emit(g, out, EmitOptions())
        (actual,) = emitter.run(out, [x])
        assert rel_error(actual, expected) <= TOL, (name, rel_error(actual, expected))


def test_cells_in_mxnet(cases, tmp_path):
    mxe = emitters.get("mxnet")
    try:
        mxe.mxnet_python()
    except Exception:  # noqa: BLE001 - any failure to find the runtime skips
        pytest.skip("no .venv-mxnet")
    jobs = []
    for name, (g, x, _) in cases.items():
        out = tmp_path / name
        out.mkdir()
        mxe.emit(g, out, EmitOptions())
        jobs.append((out, [x]))
    for (name, (_, _, expected)), result in zip(cases.items(), mxe.evaluate(jobs, ("gluon", "module"))):
        assert "error" not in result, (name, result.get("error"))
        for mode in ("gluon", "module"):
            (actual,) = result["outputs"][mode]
            assert rel_error(actual, expected) <= TOL, (name, mode, rel_error(actual, expected))


def test_caffe_refuses_by_name(cases):
    g = cases["lstm_fused_backwards_input_order"][0]
    refused = emitters.get("caffe").unsupported(g)
    assert [u.node for u in refused] == ["cell"] and "Caffe" in refused[0].hint
