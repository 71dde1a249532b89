"""Recurrent layers (the IR's `sequence` family: lstm, gru, rnn).

torch's own nn.LSTM / nn.GRU / nn.RNN run them where their math is TF's exactly: LSTM with tanh and a
sigmoid recurrent activation (torch's gate order i, f, g, o is Keras's i, f, c, o); GRU with
reset_after (torch's r, z, n is Keras's z, r, h with the first two blocks swapped); SimpleRNN with
tanh or relu. Anything else (GRU reset_after=False, hard_sigmoid, ...) is the same module holding
the weights with the cell written out in forward(), one loop step per time step.

A masked node (a second input: the Keras step mask) always takes the written-out cell:
torch's fused layers cannot skip a step. At a masked step torch.where keeps the states, and the
sequence row is the carried state or zeros (masked_output), as Keras's where(mask, new, old).
"""

from __future__ import annotations

import numpy as np

from .contract import TABLE, Ctx, Lowered, call

MODULES = {"lstm": "nn.LSTM", "gru": "nn.GRU", "rnn": "nn.RNN"}
GATES = {"lstm": 4, "gru": 3, "rnn": 1}
ACTIVATION = {  # IR activation name -> torch expression of `{}`
    "tanh": "torch.tanh({})",
    "sigmoid": "torch.sigmoid({})",
    "hard_sigmoid": "torch.nn.functional.hardsigmoid({})",  # relu6(x + 3) / 6, Keras 3's
    "relu": "torch.relu({})",
    "linear": "{}",
}


def _native(ctx: Ctx) -> bool:
    attrs, op = ctx.attrs, ctx.node.op
    if op == "rnn":
        return attrs["activation"] in ("tanh", "relu")
    standard = attrs["activation"] == "tanh" and attrs["recurrent_activation"] == "sigmoid"
    return standard and (op == "lstm" or bool(attrs["reset_after"]))


def _torch_order(op: str, value: np.ndarray) -> np.ndarray:
    """Gate blocks from Keras order to torch's: GRU (z, r, h) -> (r, z, n); the others keep theirs."""
    value = np.asarray(value, np.float32)
    if op != "gru":
        return value
    z, r, h = np.split(value, 3, axis=0)
    return np.ascontiguousarray(np.concatenate([r, z, h], axis=0))


@TABLE.register("lstm", "gru", "rnn")
def recurrent(ctx: Ctx) -> Lowered:
    op, attrs, v = ctx.node.op, ctx.attrs, ctx.var
    features, units = ctx.in_shapes[0][-1], int(attrs["units"])
    extra = {}
    if op == "rnn":
        extra["nonlinearity"] = repr("relu" if attrs["activation"] == "relu" else "tanh")
    out = Lowered(modules=[(v, call(MODULES[op], str(features), str(units), batch_first="True", **extra))])
    for key in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        out.state[f"{v}.{key}_l0"] = _torch_order(op, ctx.params[key])
    x = ctx.args[0]
    mask = ctx.args[1] if len(ctx.args) > 1 else None
    if mask is not None:
        out.lines.append(f"{v}_keep = ({mask} != 0).unsqueeze(-1)  # Keras's step mask: False skips the step")
        mask = f"{v}_keep"
    if attrs["go_backwards"]:
        out.lines.append(f"{v} = torch.flip({x}, [1])  # go_backwards: step from the last time step")
        x = v
        if mask is not None:
            out.lines.append(f"{mask} = torch.flip({mask}, [1])")
    out.lines += _native_lines(ctx, x) if _native(ctx) and mask is None else _loop_lines(ctx, x, mask)
    if attrs["output"] == "sequence" and attrs["go_backwards"] and attrs["sequence_order"] == "input":
        out.lines.append(f"{v} = torch.flip({v}, [1])  # back to input order")
    return out


def _native_lines(ctx: Ctx, x: str) -> list[str]:
    v, output = ctx.var, ctx.attrs["output"]
    if output == "sequence":
        return [f"{v} = self.{v}({x})[0]"]
    if ctx.node.op == "lstm":
        index = "[1][0][0]" if output == "last_h" else "[1][1][0]"  # (h_n, c_n), each (1, N, U)
        return [f"{v} = self.{v}({x}){index}"]
    return [f"{v} = self.{v}({x})[1][0]"]  # h_n: (1, N, U)


def _loop_lines(ctx: Ctx, x: str, mask: str | None = None) -> list[str]:
    """The cell written out (torch gate order, the module's own parameters); `mask` (N, T, 1) bool
    keeps the states at the steps it is False."""
    op, attrs, v = ctx.node.op, ctx.attrs, ctx.var
    units = int(attrs["units"])
    act = ACTIVATION[attrs["activation"]].format
    rec = ACTIVATION[attrs.get("recurrent_activation", "sigmoid")].format
    linear = "torch.nn.functional.linear"
    lines = [
        f"{v}_gx = {linear}({x}, self.{v}.weight_ih_l0, self.{v}.bias_ih_l0)",
        f"{v}_state = {v}_gx.new_zeros({v}_gx.shape[0], {units})",
    ]
    if op == "lstm":
        lines.append(f"{v}_cell = {v}_gx.new_zeros({v}_gx.shape[0], {units})")
    if attrs["output"] == "sequence":
        lines.append(f"{v}_steps = {v}_gx.new_zeros({v}_gx.shape[0], {v}_gx.shape[1], {units})")
    lines.append(f"for {v}_t in range({v}_gx.shape[1]):")
    body = [f"{v}_gates = {v}_gx[:, {v}_t].chunk({GATES[op]}, 1)",
            f"{v}_rec = {linear}({v}_state, self.{v}.weight_hh_l0, self.{v}.bias_hh_l0).chunk({GATES[op]}, 1)"]
    new = f"{v}_new" if mask is not None else f"{v}_state"  # where the step's h goes before the mask
    new_cell = f"{v}_new_cell" if mask is not None else f"{v}_cell"
    if op == "lstm":
        body += [
            f"{new_cell} = {rec(f'{v}_gates[1] + {v}_rec[1]')} * {v}_cell"
            f" + {rec(f'{v}_gates[0] + {v}_rec[0]')} * {act(f'{v}_gates[2] + {v}_rec[2]')}",
            f"{new} = {rec(f'{v}_gates[3] + {v}_rec[3]')} * {act(new_cell)}",
        ]
    elif op == "gru":
        reset = rec(f"{v}_gates[0] + {v}_rec[0]")
        if attrs["reset_after"]:
            candidate = act(f"{v}_gates[2] + {reset} * {v}_rec[2]")
        else:  # the reset gate scales h before its product with the candidate's recurrent kernel
            hidden = (f"{linear}({reset} * {v}_state, self.{v}.weight_hh_l0[{2 * units}:], "
                      f"self.{v}.bias_hh_l0[{2 * units}:])")
            candidate = act(f"{v}_gates[2] + {hidden}")
        body += [
            f"{v}_update = {rec(f'{v}_gates[1] + {v}_rec[1]')}",
            f"{new} = {v}_update * {v}_state + (1 - {v}_update) * {candidate}",
        ]
    else:
        body.append(f"{new} = {act(f'{v}_gates[0] + {v}_rec[0]')}")
    row = f"{v}_state"
    if mask is not None:
        body.append(f"{v}_state = torch.where({mask}[:, {v}_t], {new}, {v}_state)")
        if op == "lstm":
            body.append(f"{v}_cell = torch.where({mask}[:, {v}_t], {new_cell}, {v}_cell)")
        if attrs.get("masked_output") == "zero":
            row = f"torch.where({mask}[:, {v}_t], {v}_state, torch.zeros_like({v}_state))"
    if attrs["output"] == "sequence":
        body.append(f"{v}_steps[:, {v}_t] = {row}")
    lines += ["    " + line for line in body]
    result = {"sequence": f"{v}_steps", "last_h": f"{v}_state", "last_c": f"{v}_cell"}[attrs["output"]]
    lines.append(f"{v} = {result}")
    return lines
