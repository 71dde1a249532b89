"""The converter's recurrent node (a While loop recognized as one cell by
recurrent_loops.py) into the IR's lstm / gru / rnn node. Its input is the time-major sequence
(T, N, F) and the IR's canonical weights; its outputs are the time-major h sequence, the last h
and the last c. The IR op reads (N, T, F): the sequence's layout is a perm, no copy."""

from __future__ import annotations

from typing import Any

from ..context import Context, attr
from ..table import tf_op
from ..tfgraph.shapes.nn_recurrent import RECURRENT_OP

_TIME_MAJOR = (1, 0, 2)  # ir == transpose(tf, perm): (T, N, .) held as (N, T, .)
_OUTPUTS = ("sequence", "last_h", "last_c")


@tf_op(RECURRENT_OP)
def recurrent_loop(ctx: Context, op: Any) -> None:
    kind = attr(op, "kind")
    x = ctx.ir(op.inputs[0], _TIME_MAJOR)
    batch, steps, _ = ctx.graph.shape(x)
    units = int(attr(op, "units"))
    params = {key: ctx.const(t) for key, t in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"), op.inputs[1:])}
    attrs: dict[str, Any] = {"units": units, "activation": attr(op, "activation"),
                             "go_backwards": bool(attr(op, "go_backwards")), "sequence_order": "processed",
                             "fixed_steps": True}  # the loop's trip count is a constant of the traced graph
    if kind != "rnn":
        attrs["recurrent_activation"] = attr(op, "recurrent_activation")
    if kind == "gru":
        attrs["reset_after"] = bool(attr(op, "reset_after"))
    for k, output in enumerate(_OUTPUTS[:len(op.outputs)]):
        if output == "last_c" and kind != "lstm":
            continue
        shape = (batch, steps, units) if output == "sequence" else (batch, units)
        name = ctx.emit(kind, f"{op.name}/{output}", [x], shape, dict(attrs, output=output), params,
                        source_op="While")
        ctx.set(op.outputs[k], name, _TIME_MAJOR if output == "sequence" else None)
