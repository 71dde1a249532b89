"""Recurrent layers (the IR's `sequence` family: lstm, gru, rnn) as ONNX's own
LSTM / GRU / RNN operators, which compute TF's cells exactly: GRU's linear_before_reset is Keras's
reset_after, the activations are attributes (Keras 3's hard_sigmoid is HardSigmoid(1/6, 1/2)).

ONNX wants time-major input and LSTM gates in (i, o, f, c) order; direction='reverse' is
go_backwards with the sequence output already in input order.

A masked node (a second input: the Keras step mask) runs the same operator one step at a
time, unrolled over the static length, each step starting from the states the last one kept: Where
keeps the old states at a masked step, as Keras's where(mask, new, old); the sequence row is the
kept state or zeros (masked_output).
"""

from __future__ import annotations

import numpy as np

from .contract import TABLE, Builder, Ctx, Emitted

OP_TYPES = {"lstm": "LSTM", "gru": "GRU", "rnn": "RNN"}
# IR activation -> (ONNX name, alpha, beta); alpha/beta only for those that take them
ACTIVATIONS = {
    "tanh": ("Tanh", None, None),
    "sigmoid": ("Sigmoid", None, None),
    "relu": ("Relu", None, None),
    "hard_sigmoid": ("HardSigmoid", 1.0 / 6.0, 0.5),
    "linear": ("Affine", 1.0, 0.0),
}
LSTM_ORDER = (0, 3, 1, 2)  # ONNX (i, o, f, c) from Keras (i, f, c, o)
_BEFORE_FIRST = -(2**63)  # a reversing Slice's end that runs through index 0 at any length (clamped)


def _onnx_order(op: str, value: np.ndarray) -> np.ndarray:
    value = np.asarray(value, np.float32)
    if op != "lstm":
        return value  # GRU: ONNX's (z, r, h) is Keras's order
    blocks = np.split(value, 4, axis=0)
    return np.concatenate([blocks[i] for i in LSTM_ORDER], axis=0)


def _activation_attrs(ctx: Ctx) -> dict:
    op, attrs = ctx.node.op, ctx.attrs
    names = [attrs["activation"]] if op == "rnn" else [attrs["recurrent_activation"], attrs["activation"]]
    if op == "lstm":
        names.append(attrs["activation"])  # f (gates), g (cell input), h (cell output)
    specs = [ACTIVATIONS[n] for n in names]
    result = {"activations": [s[0] for s in specs]}
    alphas = [s[1] for s in specs if s[1] is not None]
    if alphas:  # consumed in order by the activations that take them
        result["activation_alpha"] = alphas
        result["activation_beta"] = [s[2] for s in specs if s[2] is not None]
    return result


@TABLE.register("lstm", "gru", "rnn")
def recurrent(ctx: Ctx) -> Emitted:
    node, attrs, op = ctx.node, ctx.attrs, ctx.node.op
    b = Builder(ctx, node)
    units = int(attrs["units"])
    p = node.params
    weight = b.const("W", _onnx_order(op, p["weight_ih"])[None])
    recurrence = b.const("R", _onnx_order(op, p["weight_hh"])[None])
    bias = b.const("B", np.concatenate([_onnx_order(op, p["bias_ih"]), _onnx_order(op, p["bias_hh"])])[None])
    time_major = b.op("Transpose", [b.x()], perm=[1, 0, 2])
    extra = _activation_attrs(ctx)
    if op == "gru":
        extra["linear_before_reset"] = int(bool(attrs["reset_after"]))
    if len(node.inputs) > 1:
        _masked_steps(ctx, b, time_major, [weight, recurrence, bias], extra)
        return b.done()
    outs = [b.fresh("Y"), b.fresh("Y_h"), b.fresh("Y_c") if op == "lstm" else ""]
    b.op_outputs(OP_TYPES[op], [time_major, weight, recurrence, bias], [o for o in outs if o],
                 hidden_size=units, direction="reverse" if attrs["go_backwards"] else "forward", **extra)
    # squeezes and a reversing slice, not reshapes: the batch and the length stay whatever they are at run time
    output = attrs["output"]
    if output != "sequence":
        state = outs[1] if output == "last_h" else outs[2]
        b.op("Squeeze", [state, b.ints("directions", [0])], b.out)  # (1, N, U): one direction
        return b.done()
    y = b.op("Squeeze", [outs[0], b.ints("directions", [1])])  # (T, 1, N, U): one direction
    if attrs["go_backwards"] and attrs["sequence_order"] == "processed":
        # direction='reverse' gives input order; Keras's go_backwards sequence runs the other way
        y = b.op("Slice", [y, b.ints("starts", [-1]), b.ints("ends", [_BEFORE_FIRST]), b.ints("axes", [0]),
                           b.ints("steps", [-1])])
    b.op("Transpose", [y], b.out, perm=[1, 0, 2])
    return b.done()


def _masked_steps(ctx: Ctx, b: Builder, time_major: str, weights: list[str], extra: dict) -> None:
    """The masked recurrence: one single-step operator per time step from the kept states."""
    node, attrs, op = ctx.node, ctx.attrs, ctx.node.op
    length = ctx.shape(node.inputs[0])[1]
    units = int(attrs["units"])
    zeros = b.const("zeros", np.zeros((1, 1, units), np.float32))  # broadcast by Where: any batch
    keep = b.op("Cast", [b.op("Transpose", [b.x(1)], perm=[1, 0])], to=9)  # (T, N) bool: 9 = BOOL
    keep = b.op("Unsqueeze", [keep, b.ints("state_axis", [2])])  # (T, N, 1)
    h = c = ""  # the first step starts from the operator's own zero states
    time_axis = b.ints("time_axis", [0])
    rows: dict[int, str] = {}
    order = range(length - 1, -1, -1) if attrs["go_backwards"] else range(length)
    for k, t in enumerate(order):
        step = [b.ints(f"start{t}", [t]), b.ints(f"end{t}", [t + 1]), time_axis]
        xt = b.op("Slice", [time_major, *step])
        kt = b.op("Slice", [keep, *step])
        outs = [b.fresh(f"h{t}"), b.fresh(f"c{t}") if op == "lstm" else ""]
        ins = [xt, *weights, "", h] + ([c] if op == "lstm" else [])
        b.op_outputs(OP_TYPES[op], ins, ["", outs[0]] + ([outs[1]] if op == "lstm" else []), hidden_size=units,
                     **extra)
        h = b.op("Where", [kt, outs[0], h or zeros])
        if op == "lstm":
            c = b.op("Where", [kt, outs[1], c or zeros])
        rows[k if attrs["sequence_order"] == "processed" else t] = \
            b.op("Where", [kt, h, zeros]) if attrs.get("masked_output") == "zero" else h
    output = attrs["output"]
    if output != "sequence":
        b.op("Squeeze", [h if output == "last_h" else c, b.ints("directions", [0])], b.out)
        return
    y = b.op("Concat", [rows[i] for i in range(length)], axis=0)  # (T, N, U)
    b.op("Transpose", [y], b.out, perm=[1, 0, 2])
