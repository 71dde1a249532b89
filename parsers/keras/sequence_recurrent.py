"""Recurrent layers (LSTM, GRU, SimpleRNN), their wrappers (Bidirectional, TimeDistributed) and
RepeatVector, into the IR's `sequence` ops (canonical weights: convert/ir/ops.py).

Keras kernels are (F, G*U) and recurrent kernels (U, G*U) with gates in Keras order; the IR keeps
that order and stores the transposes. A GRU with reset_after keeps its bias as (2, 3U): input and
recurrent halves.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from tf_convert.convert.ir.ops import CELL_ACTIVATIONS

from ..common.layout import nhwc_reshape
from . import sequence_masks, weights
from .call import Call, TensorRef
from .elementwise import activation_name
from .table import TABLE

GATES = {"LSTM": 4, "GRU": 3, "SimpleRNN": 1}
IR_OP = {"LSTM": "lstm", "GRU": "gru", "SimpleRNN": "rnn"}


# ---- weight specs (checked by weights.check before a handler runs) ------------------------------


def _recurrent_spec(class_name: str):
    def spec(cfg: dict, kin: tuple[int, ...]) -> list[weights.Slot]:
        gates, units = GATES[class_name], int(cfg["units"])
        slots = [(frozenset({"kernel"}), (kin[-1], gates * units)),
                 (frozenset({"recurrent_kernel"}), (units, gates * units))]
        if cfg.get("use_bias", True):
            two_halves = class_name == "GRU" and cfg.get("reset_after", True)
            slots.append((frozenset({"bias"}), (2, gates * units) if two_halves else (gates * units,)))
        return slots

    return spec


for _name in GATES:
    weights.spec(_name)(_recurrent_spec(_name))


@weights.spec("Bidirectional")
def _bidirectional_spec(cfg: dict, kin: tuple[int, ...]) -> list[weights.Slot]:
    forward, backward = _halves(cfg)
    return _inner_spec(forward, kin) + _inner_spec(backward, kin)


@weights.spec("TimeDistributed")
def _time_distributed_spec(cfg: dict, kin: tuple[int, ...]) -> list[weights.Slot]:
    return _inner_spec(cfg["layer"], (kin[0] * kin[1], *kin[2:]))


def _inner_spec(layer: dict, kin: tuple[int, ...]) -> list[weights.Slot]:
    build = weights.SPECS.get(layer["class_name"])
    return [] if build is None else build(layer["config"], kin)


def _halves(cfg: dict) -> tuple[dict, dict]:
    forward = cfg["layer"]
    backward = cfg.get("backward_layer") or {
        "class_name": forward["class_name"],
        "config": dict(forward["config"], go_backwards=not forward["config"].get("go_backwards", False)),
    }
    return forward, backward


# ---- recurrent layers ---------------------------------------------------------------------------


def _canonical(class_name: str, cfg: dict, arrays: list[np.ndarray], features: int) -> dict[str, np.ndarray]:
    gates, units = GATES[class_name], int(cfg["units"])
    size = gates * units
    kernel, recurrent = (np.asarray(a, np.float32) for a in arrays[:2])
    bias_ih = np.zeros(size, np.float32)
    bias_hh = np.zeros(size, np.float32)
    if cfg.get("use_bias", True):
        bias = np.asarray(arrays[2], np.float32)
        if bias.ndim == 2:  # GRU reset_after: (input half, recurrent half)
            bias_ih, bias_hh = bias[0].copy(), bias[1].copy()
        else:
            bias_ih = bias.copy()
    assert kernel.shape == (features, size)  # weights.check has refused anything else
    return {
        "weight_ih": np.ascontiguousarray(kernel.T),
        "weight_hh": np.ascontiguousarray(recurrent.T),
        "bias_ih": bias_ih,
        "bias_hh": bias_hh,
    }


def _refuse_unsupported(call: Call, class_name: str, cfg: dict) -> None:
    if cfg.get("stateful"):
        raise call.unsupported("stateful=True carries state between batches; a converted model starts "
                               "from zeros every call")
    if cfg.get("time_major"):
        raise call.unsupported("time_major=True is not supported")
    if len(call.inputs) > 1 or "initial_state" in call.kwargs:
        raise call.unsupported("an initial_state given as an input is not supported")
    keys = ["activation"] + (["recurrent_activation"] if class_name != "SimpleRNN" else [])
    for key in keys:
        name = activation_name(cfg.get(key, "tanh" if key == "activation" else "sigmoid"))
        if name not in CELL_ACTIVATIONS:
            raise call.unsupported(f"{key}={name!r} in a recurrent layer is not supported")
        if name == "hard_sigmoid" and call.legacy:  # the cell's hard_sigmoid is Keras 3's x/6 + 1/2
            raise call.unsupported(f"{key}='hard_sigmoid' of Keras 2 (clip(0.2 x + 0.5, 0, 1)) in a recurrent "
                                   "layer is not supported")


def recurrent(call: Call, class_name: str, cfg: dict, arrays: list[np.ndarray], x: str,
              suffix: str = "", sequence_order: str = "processed", zero_masked: bool | None = None) -> list[str]:
    """One LSTM/GRU/SimpleRNN over x: the outputs Keras returns ([output, *states]). With a step mask on
    x (keras.masks), the mask is the node's second input; `zero_masked` overrides the layer's
    zero_output_for_mask (Bidirectional sets it from return_sequences)."""
    _refuse_unsupported(call, class_name, cfg)
    mask = sequence_masks.explicit_mask(call) or (call.masks[0] if call.masks else None)
    if zero_masked is None:
        zero_masked = bool(cfg.get("zero_output_for_mask", False))
    if mask is not None and zero_masked and not cfg.get("return_sequences", False):
        raise call.unsupported("zero_output_for_mask=True without return_sequences (the output is then not "
                               "the last state) is not supported")
    n, length, features = call.shape(x)
    units = int(cfg["units"])
    params = _canonical(class_name, cfg, arrays, features)
    attrs: dict[str, Any] = {
        "units": units,
        "activation": activation_name(cfg.get("activation", "tanh")),
        "go_backwards": bool(cfg.get("go_backwards", False)),
        "sequence_order": sequence_order,
    }
    if class_name != "SimpleRNN":
        attrs["recurrent_activation"] = activation_name(cfg.get("recurrent_activation", "sigmoid"))
    if class_name == "GRU":
        attrs["reset_after"] = bool(cfg.get("reset_after", True))
    if mask is not None:
        attrs["masked_output"] = "zero" if zero_masked else "previous"
    op = IR_OP[class_name]
    inputs = [x] if mask is None else [x, mask]

    def node(output: str, shape: tuple[int, ...], tag: str) -> str:
        return call.add(op, inputs, shape, dict(attrs, output=output), params, suffix=suffix + tag)

    last_h = None
    if cfg.get("return_sequences", False):
        out = node("sequence", (n, length, units), "")
    else:
        out = last_h = node("last_h", (n, units), "")
    if not cfg.get("return_state", False):
        return [out]
    # each state is its own node (the IR's nodes have one output); the recurrence is recomputed
    states = [last_h or node("last_h", (n, units), "/h")]
    if class_name == "LSTM":
        states.append(node("last_c", (n, units), "/c"))
    return [out, *states]


@TABLE.register("LSTM", "GRU", "SimpleRNN")
def recurrent_layer(call: Call) -> list[str]:
    return recurrent(call, call.class_name, call.config, call.weights, call.x)


@TABLE.register("Bidirectional")
def bidirectional(call: Call) -> list[str]:
    forward, backward = _halves(call.config)
    if not backward["config"].get("go_backwards", False):
        raise call.unsupported("a backward_layer without go_backwards=True is not supported")
    count = len(_inner_spec(forward, call.kshape()))
    zero_masked = bool(forward["config"].get("return_sequences", False))  # Keras forces it so on both halves
    fw = recurrent(call, forward["class_name"], forward["config"], call.weights[:count], call.x, "/forward",
                   zero_masked=zero_masked)
    bw = recurrent(call, backward["class_name"], backward["config"], call.weights[count:], call.x, "/backward",
                   sequence_order="input", zero_masked=zero_masked)  # Keras flips the backward sequence back
    merged = _merge(call, str(call.config.get("merge_mode", "concat")), fw[0], bw[0])
    return merged + fw[1:] + bw[1:]


def _merge(call: Call, mode: str, a: str, b: str) -> list[str]:
    shape = call.shape(a)
    if mode in ("None", "none"):
        return [a, b]
    if mode == "concat":
        out = (*shape[:-1], shape[-1] * 2)
        return [call.add("concat", [a, b], out, {"axis": len(shape) - 1})]
    if mode in ("sum", "ave"):
        total = call.add("add", [a, b], shape, suffix="" if mode == "sum" else "/sum")
        if mode == "sum":
            return [total]
        half = call.const(np.full((1,) * len(shape), 0.5, np.float32), "/half")
        return [call.add("mul", [total, half], shape)]
    if mode == "mul":
        return [call.add("mul", [a, b], shape)]
    raise call.unsupported(f"merge_mode={mode!r} is not supported")


# ---- wrappers and sequence helpers --------------------------------------------------------------


@TABLE.register("TimeDistributed")
def time_distributed(call: Call) -> list[str]:
    """The inner layer on (N*T, ...) (time folded into the batch), then unfolded again."""
    inner = call.config["layer"]
    handler = TABLE.get(inner["class_name"])
    if handler is None:
        raise call.unsupported(f"TimeDistributed of {inner['class_name']}: no converter for that layer class")
    kshape = call.kshape()
    if inner["class_name"] == "Dense" and len(kshape) == 3:
        # a Dense on (N, T, C) acts on the last axis already: no fold, so T (and N) stay free
        return handler(dataclasses.replace(call, class_name="Dense", config=inner["config"]))
    n, length = kshape[0], kshape[1]
    folded = nhwc_reshape(call, call.x, (n * length, *kshape[2:]))
    sub = Call(graph=call.graph, name=call.graph.unique_name(call.name + "/inner"), layer=call.layer,
               class_name=inner["class_name"], config=inner["config"], inputs=[folded],
               args=[TensorRef(folded)], weights=call.weights)
    outs = []
    for y in handler(sub):
        ky = call.kshape(y)
        outs.append(nhwc_reshape(call, y, (n, length, *ky[1:])))
    return outs


@TABLE.register("RepeatVector")
def repeat_vector(call: Call) -> list[str]:
    n, features = call.shape()
    times = int(call.config["n"])
    row = call.add("reshape", [call.x], (n, 1, features), {"shape": (n, 1, features)}, suffix="/row")
    return [call.add("concat", [row] * times, (n, times, features), {"axis": 1})]


@TABLE.register("Masking")
def masking(call: Call) -> list[str]:
    """x * any(x != mask_value over features): Keras's output; the bool becomes the step mask (keras.masks)."""
    shape = call.shape()
    if len(shape) != 3:
        raise call.unsupported(f"Masking of a rank-{len(shape)} input: only (batch, steps, features) is supported")
    n, length, _ = shape
    value = call.const(np.full((1, 1, 1), float(call.cfg("mask_value", 0.0)), np.float32), "/mask_value")
    differs = call.add("not_equal", [call.x, value], shape, suffix="/differs", out_dtype="bool")
    keep = call.add("reduce_any", [differs], (n, length), {"axes": (2,), "keepdims": False}, suffix="/keep",
                    out_dtype="bool")
    mask = sequence_masks.keep_steps(call, keep)
    column = call.add("reshape", [mask], (n, length, 1), {"shape": (n, length, 1)}, suffix="/mask/column")
    return [call.add("mul", [call.x, column], shape)]
