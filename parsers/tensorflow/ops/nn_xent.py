"""Issue 22 part B (opsb): softmax cross-entropy, as TF's kernel computes it (xent_op.h): shifted = logits -
max, sum_exp = sum(exp(shifted)); loss = sum(labels * (log(sum_exp) - shifted)); backprop = exp(shifted) /
sum_exp - labels. The sparse form takes the label's column by an equality mask (one term: exact)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..context import Context
from ..table import tf_op
from .lowering import Lowering


def _shifted(low: Lowering, logits: str) -> tuple[str, str]:
    """(logits - their row max, the row sums of exp of that, kept as a column)."""
    top = low.reduce("reduce_max", "max", logits, [1], True)
    shifted = low.binary("sub", "shifted", logits, top)
    exp = low.node("exp", "exp", [shifted], low.shape(shifted))
    return shifted, low.reduce("reduce_sum", "sum_exp", exp, [1], True)


def _backprop(low: Lowering, shifted: str, sum_exp: str, labels: str) -> str:
    exp = low.node("exp", "exp_b", [shifted], low.shape(shifted))
    return low.binary("sub", "backprop", low.binary("div", "softmax", exp, sum_exp), labels)


@tf_op("SoftmaxCrossEntropyWithLogits")
def softmax_cross_entropy(ctx: Context, op: Any) -> None:
    low = Lowering(ctx, op)
    logits, labels = ctx.tf_order(op.inputs[0]), ctx.tf_order(op.inputs[1])
    shape = low.shape(logits)
    if low.shape(labels) != shape:
        labels = low.binary("add", "labels", labels, low.const("zeros", np.zeros(shape), low.dtype(logits)))
    shifted, sum_exp = _shifted(low, logits)
    log_sum = low.node("log", "log_sum", [sum_exp], low.shape(sum_exp))
    terms = low.binary("mul", "terms", labels, low.binary("sub", "neg_log_p", log_sum, shifted))
    ctx.set(op.outputs[0], low.reduce("reduce_sum", "loss", terms, [1]))
    ctx.set(op.outputs[1], _backprop(low, shifted, sum_exp, labels))


@tf_op("SparseSoftmaxCrossEntropyWithLogits")
def sparse_softmax_cross_entropy(ctx: Context, op: Any) -> None:
    """TF's sparse kernel: loss = log(sum_exp) - shifted[label]; backprop = softmax - one_hot(label)."""
    low = Lowering(ctx, op)
    logits, labels = ctx.tf_order(op.inputs[0]), ctx.tf_order(op.inputs[1])
    b, n = low.shape(logits)
    dtype = low.dtype(logits)
    hits = low.compare("equal", "hits", low.reshape("labels", labels, (b, 1)),
                       low.const("classes", np.arange(n)[None], low.dtype(labels)))
    shifted, sum_exp = _shifted(low, logits)
    at_label = low.reduce("reduce_sum", "at_label", low.select("picked", hits, shifted, low.const("zero", 0, dtype)),
                          [1])
    log_sum = low.node("log", "log_sum", [low.reshape("sum_exp_row", sum_exp, (b,))], (b,))
    ctx.set(op.outputs[0], low.binary("sub", "loss", log_sum, at_label))
    ctx.set(op.outputs[1], _backprop(low, shifted, sum_exp, low.cast("one_hot", hits, dtype)))
