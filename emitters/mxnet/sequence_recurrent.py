"""Recurrent layers (the IR's `sequence` family: lstm, gru, rnn) as MXNet's fused
`RNN` operator, where its cells are TF's exactly: LSTM with tanh and a sigmoid recurrent activation
(MXNet's gate order i, f, g, o is Keras's i, f, c, o), GRU with reset_after (MXNet's r, z, n is
Keras's z, r, h with the first two blocks swapped), SimpleRNN with tanh or relu. Other activations
and GRU reset_after=False are refused by name (exit 3).

`RNN` is time-major, starts from a given state (zeros here, with the input's batch size) and
takes all weights as one flat vector: i2h weight, h2h weight, then i2h bias, h2h bias.

Every other cell (GRU reset_after=False, hard_sigmoid / relu / linear activations) is written out
as the catalog's cell math, unrolled over the sequence length, which is static in a converted
graph: one input projection for all steps, then per step a recurrent FullyConnected, the gate
slices and the elementwise update, in the order the reference computes them.

A masked node (a second input: the Keras step mask) is always unrolled (the fused RNN
cannot skip a step): `where` keeps the old states at a masked step, as Keras's where(mask, new,
old), and the sequence row is the kept state or zeros (masked_output).
"""

from __future__ import annotations

import numpy as np

from tf_convert.convert.ir.lazy import contiguous
from tf_convert.emitters.base import NodeContext

from .contract import TABLE, Ctx
from .symbol import Fragment, Ref


def _mode(node_ctx: NodeContext) -> str | None:
    """MXNet's RNN mode computing this node exactly, or None."""
    op, attrs = node_ctx.node.op, node_ctx.node.attrs
    if op == "rnn":
        return {"tanh": "rnn_tanh", "relu": "rnn_relu"}.get(attrs["activation"])
    if attrs["activation"] != "tanh" or attrs["recurrent_activation"] != "sigmoid":
        return None
    if op == "gru" and not attrs["reset_after"]:
        return None
    return op


def _mxnet_order(op: str, value: np.ndarray) -> np.ndarray:
    value = contiguous(value, np.float32)
    if op != "gru":
        return value
    z, r, h = np.split(value, 3, axis=0)
    return np.concatenate([r, z, h], axis=0)


@TABLE.register("lstm", "gru", "rnn")
def recurrent(ctx: Ctx) -> Fragment:
    if _mode(ctx) is None or len(ctx.node.inputs) > 1:
        return _unrolled(ctx)
    node, attrs, f, name = ctx.node, ctx.attrs, Fragment(), ctx.name
    units = int(attrs["units"])
    p = {key: _mxnet_order(node.op, node.params[key]) for key in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    flat = np.concatenate([p[k].ravel() for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")])
    x = f.op("transpose", f"{name}_time_major", [ctx.inputs[0]], axes=(1, 0, 2))
    if attrs["go_backwards"]:
        x = f.op("reverse", f"{name}_backwards", [x], axis=0)
    zeros = _zero_state(f, f"{name}_state0", x, time_axis=0, units=units)  # (1, N, U)
    ins = [x, f.var(f"{name}_parameters", flat), zeros] + ([zeros] if node.op == "lstm" else [])
    output = attrs["output"]
    states = output == "last_c"  # MXNet's h state equals the last step of the sequence output
    y = f.op("RNN", f"{name}_rnn", ins, mode=_mode(ctx), state_size=units, num_layers=1,
             state_outputs=states)
    # (1, N, U) -> (N, U): -3 merges the first two axes, so any batch runs
    if output == "last_c":
        f.op("Reshape", name, [Ref(y.node, 2)], shape=(-3, 0))
        return f
    if output == "last_h":
        last = f.op("slice_axis", f"{name}_last", [y], axis=0, begin=-1, end=None)
        f.op("Reshape", name, [last], shape=(-3, 0))
        return f
    if attrs["go_backwards"] and attrs["sequence_order"] == "input":
        y = f.op("reverse", f"{name}_input_order", [y], axis=0)
    f.op("transpose", name, [y], axes=(1, 0, 2))
    return f


def _zero_state(f: Fragment, name: str, x: Ref, time_axis: int, units: int) -> Ref:
    """Zeros of `units` features with x's batch, not the conversion's: (1, N, U) from a time-major x
    (T, N, F), (N, 1, U) from a batch-major one (N, T, F)."""
    step = f.op("slice_axis", f"{name}_step", [x], axis=time_axis, begin=0, end=1)
    column = f.op("slice_axis", f"{name}_column", [step], axis=2, begin=0, end=1)
    zero = f.op("zeros_like", f"{name}_zero", [column])
    return f.op("broadcast_to", name, [zero], shape=(0, 0, units))


# ---- the cell written out, unrolled over the static sequence length ---------------------------

GATE_COUNT = {"lstm": 4, "gru": 3, "rnn": 1}


def _activate(f: Fragment, kind: str, name: str, x: Ref) -> Ref:
    """The catalog's activation `kind` applied to x (reference.RECURRENT_ACTIVATIONS)."""
    if kind == "linear":
        return x
    if kind == "hard_sigmoid":  # clip(x / 6 + 1/2, 0, 1), spelled as the reference spells it
        y = f.op("_div_scalar", f"{name}_div", [x], scalar=6.0)
        y = f.op("_plus_scalar", f"{name}_shift", [y], scalar=0.5)
        return f.op("clip", name, [y], a_min=0.0, a_max=1.0)
    return f.op("Activation", name, [x], act_type=kind)


class _Cell:
    """Symbol-building helpers for one unrolled recurrent node (names all start with the node's)."""

    def __init__(self, ctx: Ctx, f: Fragment) -> None:
        self.f, self.name, self.attrs = f, ctx.name, ctx.attrs
        self.units = int(ctx.attrs["units"])
        self.params = {k: contiguous(ctx.node.params[k], np.float32)
                       for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
        self._vars: dict[str, tuple[Ref, Ref, int]] = {}

    def weights(self, key: str, rows: slice = slice(None)) -> tuple[Ref, Ref, int]:
        """(weight, bias, rows) variables for `key` in {'ih', 'hh'}, made once and shared by every step."""
        tag = f"{key}_{rows.start or 0}_{rows.stop or 'end'}"
        if tag not in self._vars:
            weight, bias = self.params[f"weight_{key}"][rows], self.params[f"bias_{key}"][rows]
            n = f"{self.name}_{tag}"
            self._vars[tag] = (self.f.var(f"{n}_weight", weight), self.f.var(f"{n}_bias", bias), weight.shape[0])
        return self._vars[tag]

    def dense(self, tag: str, x: Ref, key: str, rows: slice = slice(None)) -> Ref:
        weight, bias, hidden = self.weights(key, rows)
        return self.f.op("FullyConnected", f"{self.name}_{tag}", [x, weight, bias], num_hidden=hidden, flatten=False)

    def gate(self, tag: str, x: Ref, index: int) -> Ref:
        u = self.units
        return self.f.op("slice_axis", f"{self.name}_{tag}", [x], axis=1, begin=index * u, end=(index + 1) * u)

    def op(self, op: str, tag: str, *inputs: Ref, **attrs) -> Ref:
        return self.f.op(op, f"{self.name}_{tag}", list(inputs), **attrs)

    def act(self, tag: str, x: Ref, recurrent: bool = False) -> Ref:
        kind = self.attrs["recurrent_activation" if recurrent else "activation"]
        return _activate(self.f, kind, f"{self.name}_{tag}", x)


def _lstm_step(cell: _Cell, s: str, xt: Ref, h: Ref, c: Ref) -> tuple[Ref, Ref]:
    z = cell.op("elemwise_add", f"{s}_z", xt, cell.dense(f"{s}_hh", h, "hh"))
    i, fg, g, o = (cell.gate(f"{s}_{k}", z, j) for j, k in enumerate(("zi", "zf", "zc", "zo")))
    i, fg, o = (cell.act(f"{s}_{k}", v, recurrent=True) for k, v in (("i", i), ("f", fg), ("o", o)))
    c = cell.op("elemwise_add", f"{s}_c", cell.op("elemwise_mul", f"{s}_keep", fg, c),
                cell.op("elemwise_mul", f"{s}_write", i, cell.act(f"{s}_g", g)))
    return cell.op("elemwise_mul", f"{s}_h", o, cell.act(f"{s}_act_c", c)), c


def _gru_step(cell: _Cell, s: str, xt: Ref, h: Ref, c: Ref) -> tuple[Ref, Ref]:
    u = cell.units
    gx = [cell.gate(f"{s}_x{k}", xt, j) for j, k in enumerate("zrh")]
    if cell.attrs["reset_after"]:
        gh_all = cell.dense(f"{s}_hh", h, "hh")
    else:  # the candidate's recurrent product comes after the reset gate: z, r blocks only here
        gh_all = cell.dense(f"{s}_hh", h, "hh", slice(0, 2 * u))
    z = cell.act(f"{s}_z", cell.op("elemwise_add", f"{s}_zsum", gx[0], cell.gate(f"{s}_hz", gh_all, 0)), True)
    r = cell.act(f"{s}_r", cell.op("elemwise_add", f"{s}_rsum", gx[1], cell.gate(f"{s}_hr", gh_all, 1)), True)
    if cell.attrs["reset_after"]:
        recurrent = cell.op("elemwise_mul", f"{s}_rh", r, cell.gate(f"{s}_hh_h", gh_all, 2))
    else:
        recurrent = cell.dense(f"{s}_hh_h", cell.op("elemwise_mul", f"{s}_rh", r, h), "hh", slice(2 * u, None))
    candidate = cell.act(f"{s}_candidate", cell.op("elemwise_add", f"{s}_hsum", gx[2], recurrent))
    keep = cell.op("elemwise_mul", f"{s}_keep", z, h)
    write = cell.op("elemwise_mul", f"{s}_write", cell.op("_rminus_scalar", f"{s}_1mz", z, scalar=1.0), candidate)
    return cell.op("elemwise_add", f"{s}_h", keep, write), c


def _rnn_step(cell: _Cell, s: str, xt: Ref, h: Ref, c: Ref) -> tuple[Ref, Ref]:
    hh = cell.dense(f"{s}_hh", h, "hh")
    return cell.act(f"{s}_h", cell.op("elemwise_add", f"{s}_sum", xt, hh)), c


STEPS = {"lstm": _lstm_step, "gru": _gru_step, "rnn": _rnn_step}


def _unrolled(ctx: Ctx) -> Fragment:
    node, attrs, f, name = ctx.node, ctx.attrs, Fragment(), ctx.name
    length = ctx.in_shape()[1]
    cell = _Cell(ctx, f)
    units = cell.units
    gx = cell.dense("gx", ctx.inputs[0], "ih")  # (N, T, G*U), every step at once
    zero_step = _zero_state(f, f"{name}_state0", gx, time_axis=1, units=units)  # (N, 1, U)
    h = c = zeros = f.op("Reshape", f"{name}_h0", [zero_step], shape=(0, -1))
    order = range(length - 1, -1, -1) if attrs["go_backwards"] else range(length)
    steps: list[Ref] = []
    for k, t in enumerate(order):
        s = f"t{k}"
        xt = cell.op("Reshape", f"{s}_x", cell.op("slice_axis", f"{s}_slice", gx, axis=1, begin=t, end=t + 1),
                     shape=(0, -1))
        new_h, new_c = STEPS[node.op](cell, s, xt, h, c)
        if len(ctx.inputs) < 2:
            h, c = new_h, new_c
            steps.append(cell.op("expand_dims", f"{s}_step", h, axis=1))
            continue
        keep = cell.op("slice_axis", f"{s}_step_mask", ctx.inputs[1], axis=1, begin=t, end=t + 1)  # (N, 1)
        keep = cell.op("broadcast_to", f"{s}_step_keep", keep, shape=(0, units))
        h = cell.op("where", f"{s}_kept_h", keep, new_h, h)
        if node.op == "lstm":
            c = cell.op("where", f"{s}_kept_c", keep, new_c, c)
        row = cell.op("where", f"{s}_row", keep, h, zeros) if attrs.get("masked_output") == "zero" else h
        steps.append(cell.op("expand_dims", f"{s}_step", row, axis=1))
    output = attrs["output"]
    if output in ("last_h", "last_c"):
        f.op("_copy", name, [h if output == "last_h" else c])
        return f
    if attrs["go_backwards"] and attrs["sequence_order"] == "input":
        steps.reverse()
    f.op("Concat", name, steps, dim=1, num_args=len(steps))
    return f
