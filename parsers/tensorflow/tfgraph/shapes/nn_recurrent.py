"""The converter's own recurrent-layer node: a TF While loop recognized as one LSTM/GRU/
SimpleRNN cell (parsers/tensorflow/recurrent_loops.py) stands in the converter's GraphDef copy as one
node of op RECURRENT_OP; TensorFlow never sees it (the reference run keeps the loop).

Inputs: the time-major sequence (T, N, F) and the IR's canonical weights (weight_ih, weight_hh,
bias_ih, bias_hh); outputs: the time-major sequence of h (T, N, U), the last h (N, U), the last c
(N, U, LSTM only); attr `units` is U. With attr go_backwards the input is the sequence before Keras's
reverse (the node steps from its last row; its output rows stay in the order taken)."""

from __future__ import annotations

from .base import Node, shape_fn

RECURRENT_OP = "TfConvertRecurrent"


@shape_fn(RECURRENT_OP)
def _recurrent(node: Node) -> list:
    x, units = node.dims(0), int(node.attr("units"))
    steps, batch = (None, None) if x is None else (x[0], x[1])
    return [[steps, batch, units], [batch, units], [batch, units]][:node.n_out]
