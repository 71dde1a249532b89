"""TF's fused recurrent kernels (tf.contrib.rnn's LSTMBlockCell, LSTMBlockFusedCell
and GRUBlockCell) unrolled into IR linear layers and elementwise ops, step by step as the kernels compute
them (lstm_ops.h, gru_ops.h); and SparseMatMul, a MatMul with sparsity hints.

LSTM (gates i, ci, f, o; V2's weights are laid out i, f, ci, o and it has no forget bias):
  icfo = [x, h] @ w + b; i = sigmoid(icfo_i + cs_prev * wci); ci = tanh(icfo_ci);
  f = sigmoid(icfo_f + forget_bias + cs_prev * wcf); cs = clip(i * ci + f * cs_prev);
  o = sigmoid(icfo_o + cs * wco); co = tanh(cs); h = o * co  (the peephole terms only with use_peephole).
GRU: r, u = sigmoid([x, h] @ w_ru + b_ru); c = tanh([x, r * h] @ w_c + b_c); h = u * (h - c) + c."""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.ir.lazy import contiguous

from ..context import Context, NotConvertible
from ..lowering import Lowering
from ..table import tf_op
from .nn import matmul

_MAX_STEPS = 256  # unrolled time steps


@tf_op("SparseMatMul")
def sparse_matmul(ctx: Context, op: Any) -> None:
    """a_is_sparse / b_is_sparse only pick TF's kernel: the product is MatMul's."""
    for name in ("Ta", "Tb"):
        if op.get_attr(name).name != "float32":
            raise NotConvertible(f"SparseMatMul of {op.get_attr(name).name} operands (float32 only)")
    matmul(ctx, op)


def _dense(low: Lowering, ctx: Context, x: str, t: Any, part: str) -> str:
    """x @ w for TF weight tensor `t` (in, out): a linear layer when it is a constant."""
    rows = low.shape(x)[0]
    if ctx.is_const(t):
        w = np.asarray(ctx.const(t), np.float32)
        return ctx.emit("linear", f"{low.base}/{part}", [x], (rows, w.shape[1]), {},
                        {"weight": contiguous(w.T, np.float32)}, source_op=low.source)
    w = ctx.tf_order(t)
    return low.node("matmul", part, [x, w], (rows, low.shape(w)[1]))


def _unary(low: Lowering, ir_op: str, part: str, x: str) -> str:
    return low.node(ir_op, part, [x], low.shape(x))


class _Lstm:
    """One LSTM step's IR, for a block cell op's attributes and weights."""

    def __init__(self, ctx: Context, op: Any, low: Lowering, w: Any, wci: Any, wcf: Any, wco: Any, b: Any,
                 layout: str, forget_bias: float):
        self.ctx, self.low, self.w, self.layout, self.forget_bias = ctx, low, w, layout, forget_bias
        self.peephole = bool(op.get_attr("use_peephole"))
        self.clip = float(op.get_attr("cell_clip"))
        self.peeps = [low.reshape(f"w{g}", ctx.tf_order(t), (1, ctx.shape(t)[0]))
                      for g, t in (("ci", wci), ("cf", wcf), ("co", wco))] if self.peephole else []
        self.b = low.reshape("b", ctx.tf_order(b), (1, ctx.shape(b)[0]))

    def step(self, t: str, x: str, h: str, cs: str) -> dict[str, str]:
        low = self.low
        units = low.shape(h)[1]
        xh = low.concat(f"xh{t}", [x, h], 1)
        gates = low.binary("add", f"gates{t}", _dense(low, self.ctx, xh, self.w, f"matmul{t}"), self.b)
        part = {g: low.slice(f"{g}{t}_in", gates, 1, k * units, (k + 1) * units) for k, g in enumerate(self.layout)}
        pre_i = low.binary("add", f"i{t}_peep", part["i"], low.binary("mul", f"i{t}_cs", cs, self.peeps[0])) \
            if self.peephole else part["i"]
        i = _unary(low, "sigmoid", f"i{t}", pre_i)
        ci = _unary(low, "tanh", f"ci{t}", part["c"])
        pre_f = part["f"]
        if self.forget_bias:
            pre_f = low.binary("add", f"f{t}_bias", pre_f, low.const(f"forget_bias{t}", np.float32(self.forget_bias)))
        if self.peephole:
            pre_f = low.binary("add", f"f{t}_peep", pre_f, low.binary("mul", f"f{t}_cs", cs, self.peeps[1]))
        f = _unary(low, "sigmoid", f"f{t}", pre_f)
        cs = low.binary("add", f"cs{t}_sum", low.binary("mul", f"cs{t}_in", i, ci),
                        low.binary("mul", f"cs{t}_keep", f, cs))
        if self.clip > 0:
            cs = low.node("clip", f"cs{t}", [cs], low.shape(cs), {"min": -self.clip, "max": self.clip})
        pre_o = low.binary("add", f"o{t}_peep", part["o"], low.binary("mul", f"o{t}_cs", cs, self.peeps[2])) \
            if self.peephole else part["o"]
        o = _unary(low, "sigmoid", f"o{t}", pre_o)
        co = _unary(low, "tanh", f"co{t}", cs)
        return {"i": i, "cs": cs, "f": f, "o": o, "ci": ci, "co": co, "h": low.binary("mul", f"h{t}", o, co)}


_OUTPUTS = ("i", "cs", "f", "o", "ci", "co", "h")


@tf_op("LSTMBlockCell")
def lstm_block_cell(ctx: Context, op: Any) -> None:
    low = Lowering(ctx, op)
    x, cs_prev, h_prev, w, wci, wcf, wco, b = op.inputs
    cell = _Lstm(ctx, op, low, w, wci, wcf, wco, b, "icfo", float(op.get_attr("forget_bias")))
    out = cell.step("", ctx.tf_order(x), ctx.tf_order(h_prev), ctx.tf_order(cs_prev))
    for k, name in enumerate(_OUTPUTS):
        ctx.set(op.outputs[k], out[name])


@tf_op("BlockLSTM", "BlockLSTMV2")
def block_lstm(ctx: Context, op: Any) -> None:
    """Every step of a (time, batch, input) sequence; steps from seq_len_max on are zeros (TF zeroes cs and
    h there and leaves its other outputs uninitialized)."""
    low = Lowering(ctx, op)
    seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b = op.inputs
    steps, batch, _ = ctx.shape(x)
    if steps > _MAX_STEPS:
        raise NotConvertible(f"{op.type} over {steps} time steps (unrolled, at most {_MAX_STEPS})")
    v2 = op.type == "BlockLSTMV2"
    cell = _Lstm(ctx, op, low, w, wci, wcf, wco, b, "ifco" if v2 else "icfo",
                 0.0 if v2 else float(op.get_attr("forget_bias")))
    xs = ctx.tf_order(x)
    h, cs = ctx.tf_order(h_prev), ctx.tf_order(cs_prev)
    units = low.shape(h)[1]
    limit = low.reshape("seq_len_max", ctx.tf_order(seq_len_max), (1, 1, 1))
    seqs: dict[str, list[str]] = {name: [] for name in _OUTPUTS}
    for t in range(steps):
        xt = low.reshape(f"x{t}", low.slice(f"x{t}_slice", xs, 0, t, t + 1), (batch, low.shape(xs)[2]))
        out = cell.step(str(t), xt, h, cs)
        h, cs = out["h"], out["cs"]
        for name in _OUTPUTS:
            seqs[name].append(low.reshape(f"{name}{t}_row", out[name], (1, batch, units)))
    live = low.compare("less", "live", low.const("t", np.arange(steps).reshape(-1, 1, 1), low.dtype(limit)), limit)
    zero = low.const("zero", np.float32(0))
    for k, name in enumerate(_OUTPUTS):
        ctx.set(op.outputs[k], low.select(f"{name}_live", live, low.concat(name, seqs[name], 0), zero))


@tf_op("GRUBlockCell")
def gru_block_cell(ctx: Context, op: Any) -> None:
    low = Lowering(ctx, op)
    x, h_prev, w_ru, w_c, b_ru, b_c = op.inputs
    x, h = ctx.tf_order(x), ctx.tf_order(h_prev)
    units = low.shape(h)[1]
    bias = {name: low.reshape(name, ctx.tf_order(t), (1, ctx.shape(t)[0])) for name, t in (("b_ru", b_ru),
                                                                                           ("b_c", b_c))}
    ru = low.binary("add", "r_u_bar", _dense(low, ctx, low.concat("x_h", [x, h], 1), w_ru, "matmul_ru"), bias["b_ru"])
    r = _unary(low, "sigmoid", "r", low.slice("r_in", ru, 1, 0, units))
    u = _unary(low, "sigmoid", "u", low.slice("u_in", ru, 1, units, 2 * units))
    x_hr = low.concat("x_hr", [x, low.binary("mul", "h_r", h, r)], 1)
    c = _unary(low, "tanh", "c", low.binary("add", "c_bar", _dense(low, ctx, x_hr, w_c, "matmul_c"), bias["b_c"]))
    out = low.binary("add", "h", low.binary("mul", "h_u", u, low.binary("sub", "h_minus_c", h, c)), c)
    for k, value in enumerate((r, u, c, out)):
        ctx.set(op.outputs[k], value)
