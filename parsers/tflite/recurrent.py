"""TFLite's fused recurrent kernels onto the IR's recurrent ops (convert/ir/ops.py: lstm, rnn):
UNIDIRECTIONAL_SEQUENCE_LSTM (what a tf.keras LSTM becomes), BIDIRECTIONAL_SEQUENCE_LSTM,
UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN and RNN (one step).

TFLite keeps each gate's weights as a tensor of its own ((U, F) input, (U, U) recurrent, (U,) bias, gates
i, f, c, o): stacked in that order they are the IR's canonical weight_ih / weight_hh / bias_ih. The gates
are sigmoids; the cell's input and output activation is the fused activation. The state starts from
zeros: TFLite keeps it in variable tensors that only a first invocation (or reset_all_variables) finds
at zero, and a converted model is a function of its inputs. TFLite's cell clipping is kept (see _lstm). The
variants the IR's cells do not compute (CIFG, peepholes, projection, layer norm, an auxiliary input, a state
given as data) are refused by name."""

from __future__ import annotations

from typing import Any

import numpy as np

from .op import Op
from .schema import ACTIVATIONS
from .table import TABLE
from .weights import float_weight

_ACTIVATIONS = {"TANH": "tanh", "RELU": "relu", "NONE": "linear"}  # TFLite's fused activation -> the IR cell's
_GATES = ("input", "forget", "cell", "output")


def _activation(op: Op) -> str:
    name = ACTIVATIONS.get(int(op.options.FusedActivationFunction()), "?")
    if name not in _ACTIVATIONS:
        raise op.unsupported(f"a recurrent cell with activation {name} (the IR's cells take tanh, relu or none)")
    return _ACTIVATIONS[name]


def _refuse_options(op: Op) -> None:
    o = op.options
    if hasattr(o, "DiagonalRecurrentTensors") and o.DiagonalRecurrentTensors():
        raise op.unsupported("diagonal recurrent weights are not supported")


def _lstm(op: Op, x: str, params: dict[str, np.ndarray], backwards: bool, suffix: str) -> str:
    """One direction of an LSTM kernel over x (N, T, F): (N, T, U), row t the state after input step t.
    TFLite clips the cell state to [-cell_clip, cell_clip] after every step (tf.keras's LSTM is written with
    cell_clip 10). The IR's lstm has no clip: it computes the kernel where the clip cannot act (a tanh cell
    moves the state by at most 1 a step from 0, so never past step T's bound T <= cell_clip), else the steps
    are unrolled into elementwise ops with the clip."""
    activation = _activation(op)
    clip = float(op.options.CellClip())
    attrs = {"activation": activation, "recurrent_activation": "sigmoid"}
    if backwards:
        attrs |= {"go_backwards": True, "sequence_order": "input"}
    if clip <= 0 or (activation == "tanh" and op.shape(x)[1] <= clip):
        return _cell(op, "lstm", x, params, attrs, suffix)
    return _unrolled_lstm(op, x, params, activation, clip, backwards, suffix)


def _unrolled_lstm(op: Op, x: str, params: dict[str, np.ndarray], activation: str, clip: float, backwards: bool,
                   suffix: str) -> str:
    n, length, _ = op.shape(x)
    units = params["weight_hh"].shape[1]
    gx = op.add("linear", [x], (n, length, 4 * units), params={"weight": params["weight_ih"],
                                                                "bias": params["bias_ih"]}, suffix=f"{suffix}/gx")

    def act(name: str, t: str, tag: str) -> str:
        return t if name == "linear" else op.add(name, [t], op.shape(t), suffix=tag)

    def cut(t: str, axis: int, lo: int, hi: int, tag: str) -> str:
        shape = list(op.shape(t))
        begin, end = [0] * len(shape), list(shape)
        begin[axis], end[axis], shape[axis] = lo, hi, hi - lo
        return op.add("slice", [t], shape, {"begin": tuple(begin), "end": tuple(end)}, suffix=tag)

    h = c = None
    rows: dict[int, str] = {}
    for t in (range(length - 1, -1, -1) if backwards else range(length)):
        at = f"{suffix}/step{t}"
        z = op.add("reshape", [cut(gx, 1, t, t + 1, f"{at}/gx")], (n, 4 * units), {"shape": (n, 4 * units)},
                   suffix=f"{at}/z_x")
        if h is not None:
            gh = op.add("linear", [h], (n, 4 * units), params={"weight": params["weight_hh"]}, suffix=f"{at}/gh")
            z = op.add("add", [z, gh], (n, 4 * units), suffix=f"{at}/z")
        i, f, g, o = (cut(z, 1, k * units, (k + 1) * units, f"{at}/{name}") for k, name in enumerate(_GATES))
        i, f, o = (act("sigmoid", v, f"{at}/{name}_gate") for v, name in ((i, "input"), (f, "forget"), (o, "output")))
        update = op.add("mul", [i, act(activation, g, f"{at}/cell_input")], (n, units), suffix=f"{at}/update")
        if c is not None:
            update = op.add("add", [op.add("mul", [f, c], (n, units), suffix=f"{at}/keep"), update], (n, units),
                            suffix=f"{at}/cell_sum")
        c = op.add("clip", [update], (n, units), {"min": -clip, "max": clip}, suffix=f"{at}/cell")
        h = op.add("mul", [o, act(activation, c, f"{at}/cell_out")], (n, units), suffix=f"{at}/h")
        rows[t] = op.add("reshape", [h], (n, 1, units), {"shape": (n, 1, units)}, suffix=f"{at}/row")
    return op.add("concat", [rows[t] for t in range(length)], (n, length, units), {"axis": 1}, suffix=suffix)


def _absent(op: Op, inputs: range | tuple[int, ...], what: str) -> None:
    if any(op.has(k) for k in inputs):
        raise op.unsupported(f"{what} (inputs {inputs[0]}-{inputs[-1]}) is not supported")


def _zero_state(op: Op, k: int, what: str) -> None:
    """The state input k must start at zero: a variable tensor (TFLite's own state), or a constant of zeros."""
    if not op.has(k) or op.tensor(k).variable:
        return
    value = op.value(k)
    if value is None or np.any(value):
        raise op.unsupported(f"the {what} (input {k}) is given as {'data' if value is None else 'nonzero values'}: "
                             "only a state starting at zero is supported")


def _time_major(op: Op, x: str, flag: bool) -> str:
    """x as (N, T, F): a time-major input (T, N, F) is transposed."""
    if not flag:
        return x
    t, n, f = op.shape(x)
    return op.add("transpose", [x], (n, t, f), {"perm": (1, 0, 2)}, suffix="/batch_major")


def _time_major_out(op: Op, y: str, flag: bool, suffix: str) -> str:
    if not flag:
        return y
    n, t, u = op.shape(y)
    return op.add("transpose", [y], (t, n, u), {"perm": (1, 0, 2)}, suffix=suffix + "/time_major")


def _cell(op: Op, ir_op: str, x: str, params: dict[str, np.ndarray], attrs: dict[str, Any], suffix: str) -> str:
    n, t, _ = op.shape(x)
    units = params["weight_hh"].shape[1]
    attrs = {"units": units, "go_backwards": False, "output": "sequence", "sequence_order": "processed", **attrs}
    return op.add(ir_op, [x], (n, t, units), attrs, params, suffix=suffix)


def _lstm_params(op: Op, first: int, features: int, side: str) -> dict[str, np.ndarray]:
    """The four gates' weights from input `first` on (input weights, recurrent weights, then the biases 11
    inputs on), stacked (i, f, c, o)."""
    if not op.has(first):
        raise op.unsupported(f"{side}CIFG (no input gate: input weights {first} left out) is not supported")
    w_ih = np.concatenate([float_weight(op, first + g, f"{side}input-to-{n} weights") for g, n in enumerate(_GATES)])
    w_hh = np.concatenate([float_weight(op, first + 4 + g, f"{side}recurrent-to-{n} weights")
                           for g, n in enumerate(_GATES)])
    bias = np.concatenate([float_weight(op, first + 11 + g, f"{side}{n} gate bias").reshape(-1)
                           for g, n in enumerate(_GATES)])
    units = w_hh.shape[1]
    if w_ih.shape != (4 * units, features) or w_hh.shape != (4 * units, units) or bias.shape != (4 * units,):
        raise op.unsupported(f"{side}gate weights {w_ih.shape}, {w_hh.shape}, {bias.shape} for {features} features")
    return {"weight_ih": w_ih, "weight_hh": w_hh, "bias_ih": bias, "bias_hh": np.zeros_like(bias)}


@TABLE.register("UNIDIRECTIONAL_SEQUENCE_LSTM")
def unidirectional_sequence_lstm(op: Op) -> list[str]:
    """Inputs: x, input weights 1-4, recurrent weights 5-8, peepholes 9-11, biases 12-15, projection 16-17,
    state 18-19, layer-norm coefficients 20-23."""
    _refuse_options(op)
    _absent(op, range(9, 12), "peephole connections")
    _absent(op, range(16, 18), "a projection layer")
    _absent(op, range(20, 24), "layer normalisation")
    _zero_state(op, 18, "initial output state")
    _zero_state(op, 19, "initial cell state")
    major = bool(op.options.TimeMajor())
    x = _time_major(op, op.x(), major)
    params = _lstm_params(op, 1, op.shape(x)[2], "")
    return [_time_major_out(op, _lstm(op, x, params, False, "/lstm" if major else ""), major, "")]


def _merge(op: Op, forward: str, backward: str, major: bool) -> list[str]:
    forward = _time_major_out(op, forward, major, "/fw")
    backward = _time_major_out(op, backward, major, "/bw")
    if not op.options.MergeOutputs():
        return [forward, backward]
    *lead, units = op.shape(forward)
    return [op.add("concat", [forward, backward], (*lead, 2 * units), {"axis": 2})]


@TABLE.register("BIDIRECTIONAL_SEQUENCE_LSTM")
def bidirectional_sequence_lstm(op: Op) -> list[str]:
    """Inputs: x, forward weights 1-17, backward weights 18-34 (each as the unidirectional kernel's 1-17),
    states 35-38, an auxiliary input 39 with its weights 40-47. The backward output row t is input step t's."""
    _refuse_options(op)
    for first, side in ((1, "forward "), (18, "backward ")):
        _absent(op, range(first + 8, first + 11), f"{side}peephole connections")
        _absent(op, range(first + 15, first + 17), f"{side}projection layer")
    _absent(op, range(39, 48), "an auxiliary input")
    for k, what in zip(range(35, 39), ("forward output state", "forward cell state", "backward output state",
                                       "backward cell state")):
        _zero_state(op, k, what)
    major = bool(op.options.TimeMajor())
    x = _time_major(op, op.x(), major)
    forward = _lstm(op, x, _lstm_params(op, 1, op.shape(x)[2], "forward "), False, "/fw")
    backward = _lstm(op, x, _lstm_params(op, 18, op.shape(x)[2], "backward "), True, "/bw")
    return _merge(op, forward, backward, major)


def _rnn_params(op: Op, first: int, features: int, side: str) -> dict[str, np.ndarray]:
    """Inputs first .. first + 2: input weights (U, F), recurrent weights (U, U), bias (U,)."""
    w_ih = float_weight(op, first, f"{side}input weights")
    w_hh = float_weight(op, first + 1, f"{side}recurrent weights")
    bias = float_weight(op, first + 2, f"{side}bias").reshape(-1)
    units = w_hh.shape[0]
    if w_ih.shape != (units, features) or w_hh.shape != (units, units) or bias.shape != (units,):
        raise op.unsupported(f"{side}weights {w_ih.shape}, {w_hh.shape}, {bias.shape} for {features} features")
    return {"weight_ih": w_ih, "weight_hh": w_hh, "bias_ih": bias, "bias_hh": np.zeros_like(bias)}


@TABLE.register("UNIDIRECTIONAL_SEQUENCE_RNN")
def unidirectional_sequence_rnn(op: Op) -> list[str]:
    """Inputs: x, input weights, recurrent weights, bias, state."""
    _zero_state(op, 4, "initial state")
    major = bool(op.options.TimeMajor())
    x = _time_major(op, op.x(), major)
    params = _rnn_params(op, 1, op.shape(x)[2], "")
    return [_time_major_out(op, _cell(op, "rnn", x, params, {"activation": _activation(op)}, "/rnn" if major else ""),
                            major, "")]


@TABLE.register("BIDIRECTIONAL_SEQUENCE_RNN")
def bidirectional_sequence_rnn(op: Op) -> list[str]:
    """Inputs: x, forward weights 1-3 and state 4, backward weights 5-7 and state 8, an auxiliary input 9
    with its weights 10-11."""
    _absent(op, range(9, 12), "an auxiliary input")
    _zero_state(op, 4, "forward initial state")
    _zero_state(op, 8, "backward initial state")
    major = bool(op.options.TimeMajor())
    x = _time_major(op, op.x(), major)
    attrs = {"activation": _activation(op)}
    forward = _cell(op, "rnn", x, _rnn_params(op, 1, op.shape(x)[2], "forward "), attrs, "/fw")
    backward = _cell(op, "rnn", x, _rnn_params(op, 5, op.shape(x)[2], "backward "),
                     {**attrs, "go_backwards": True, "sequence_order": "input"}, "/bw")
    return _merge(op, forward, backward, major)


@TABLE.register("RNN")
def rnn(op: Op) -> list[str]:
    """One step of a simple RNN on x (N, F) from a zero state: inputs x, weights, recurrent weights, bias,
    state; the output is the new state (N, U)."""
    _zero_state(op, 4, "initial state")
    x = op.x()
    n, features = op.shape(x)
    params = _rnn_params(op, 1, features, "")
    units = params["weight_hh"].shape[0]
    steps = op.add("reshape", [x], (n, 1, features), {"shape": (n, 1, features)}, suffix="/steps")
    attrs = {"units": units, "activation": _activation(op), "go_backwards": False, "output": "last_h",
             "sequence_order": "processed"}
    return [op.add("rnn", [steps], (n, units), attrs, params)]
