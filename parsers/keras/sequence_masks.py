"""Keras masks: the step mask that `Masking` and `Embedding(mask_zero=True)` attach to
their output and Keras propagates to later layers, as an IR tensor (N, T) float32 of 0/1.

Keras 3 writes the masks into the config: `NotEqual`/`Any` operations compute them and a layer that
takes one gets it as its `mask` keyword (a tensor, `explicit_mask`). Keras 2 leaves them implicit:
the builder keeps each tensor's mask, hands a layer the masks of its inputs (`Call.masks`) and asks
`output_masks` for the masks of its outputs. Only the layers below may receive a mask: the ones that
pass it on unchanged and the ones that use it (recurrent layers). Any other layer given a mask is
refused by name: Keras would change its numbers by the mask, and ignoring it would be silently wrong.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .call import Call, TensorRef
from .table import TABLE

# layers Keras runs unchanged on a masked input and whose output keeps the input's mask
PASS_THROUGH = frozenset({"Dense", "Dropout", "Activation"})
# layers that read the mask (their handlers lower it exactly)
RECURRENT = frozenset({"LSTM", "GRU", "SimpleRNN", "Bidirectional"})
# layers that average only the unmasked steps (masked_average)
AVERAGES = frozenset({"GlobalAveragePooling1D", "GlobalAvgPool1D"})
ACCEPTS = PASS_THROUGH | RECURRENT | AVERAGES | {"Masking"}
# layers whose handlers read (or refuse, naming the keyword) a Keras 3 `mask` keyword themselves
READS_KEYWORD = RECURRENT | AVERAGES | {"MultiHeadAttention", "Attention", "AdditiveAttention"}


def mask_name(call: Call) -> str:
    return call.name + "/mask"


def keep_steps(call: Call, keep: str) -> str:
    """The call's mask from a bool (N, T) tensor `keep`: float32 0/1, named after the call."""
    return call.graph.add_node("cast", mask_name(call), [keep], call.shape(keep), {"dtype": "float32"},
                               source_op=call.class_name, out_dtype="float32")


def explicit_mask(call: Call) -> str | None:
    """The step mask a Keras 3 config passes as the `mask` keyword, as float32 0/1 (N, T); else None."""
    given = call.kwargs.get("mask")
    if given is None:
        return None
    if not isinstance(given, TensorRef) or len(call.shape(given.name)) != 2:
        raise call.unsupported("a mask that is not one (batch, steps) tensor is not supported")
    return call.add("cast", [given.name], call.shape(given.name), {"dtype": "float32"}, suffix="/mask",
                    out_dtype="float32")


def step_mask(call: Call) -> str | None:
    """The call's step mask, float32 0/1 (N, T): the Keras 3 keyword or the Keras 2 implicit one."""
    return explicit_mask(call) or (call.masks[0] if call.masks else None)


def masked_average(call: Call, mask: str) -> str:
    """Keras's masked GlobalAveragePooling1D: sum(where(mask, x, 0)) / sum(mask) over the steps."""
    n, length, c = call.shape()
    keep = call.cfg("keepdims", False)
    column = call.add("reshape", [mask], (n, length, 1), {"shape": (n, length, 1)}, suffix="/mask/column")
    taken = call.add("cast", [column], (n, length, 1), {"dtype": "bool"}, suffix="/mask/bool", out_dtype="bool")
    zero = call.const(np.zeros((1, 1, 1), np.float32), "/zero")
    kept = call.add("select", [taken, call.x, zero], (n, length, c), suffix="/kept", out_dtype="float32")
    attrs = {"axes": (1,), "keepdims": bool(keep)}
    total = call.add("reduce_sum", [kept], (n, 1, c) if keep else (n, c), attrs, suffix="/sum")
    count = call.add("reduce_sum", [column], (n, 1, 1) if keep else (n, 1), attrs, suffix="/count")
    return call.add("div", [total, count], call.shape(total))


def refusal(call: Call) -> str | None:
    """Why the call cannot take the masks of its inputs, or None."""
    keyword = "mask" in call.kwargs and call.class_name not in READS_KEYWORD
    if not keyword and (not any(call.masks) or call.class_name in ACCEPTS):
        return None
    return ("receives the step mask of a Masking layer or Embedding(mask_zero=True); only LSTM, GRU, "
            "SimpleRNN, Bidirectional, GlobalAveragePooling1D, Dense, Dropout and Activation are converted with "
            "a mask: remove the mask or the layer")


def _made(call: Call, outputs: list[str]) -> list[str | None]:
    name = mask_name(call)
    return [name if name in call.graph.tensors else None] + [None] * (len(outputs) - 1)


def _first(call: Call, outputs: list[str]) -> list[str | None]:
    return [call.masks[0] if call.masks else None] + [None] * (len(outputs) - 1)


def _recurrent(call: Call, outputs: list[str]) -> list[str | None]:
    """A recurrent layer returning sequences keeps its input's mask on the sequence output(s)."""
    if not any(call.masks):
        return [None] * len(outputs)
    cfg = call.config["layer"]["config"] if call.class_name == "Bidirectional" else call.config
    if not cfg.get("return_sequences", False):
        return [None] * len(outputs)
    merged = call.class_name != "Bidirectional" or str(call.config.get("merge_mode", "concat")) not in ("None", "none")
    count = 1 if merged else 2
    return [call.masks[0]] * count + [None] * (len(outputs) - count)


RULES: dict[str, Callable[[Call, list[str]], list[str | None]]] = {
    "Masking": _made, "Embedding": _made,
    **{name: _first for name in PASS_THROUGH}, **{name: _recurrent for name in RECURRENT},
}


def output_masks(call: Call, outputs: list[str]) -> list[str | None]:
    """The mask of each output of `call` (None: unmasked)."""
    rule = RULES.get(call.class_name)
    return rule(call, outputs) if rule else [None] * len(outputs)


# ---- the keras.ops operations Keras 3 computes masks with -----------------------------------------


@TABLE.register("ops.NotEqual")
def not_equal(call: Call) -> list[str]:
    """keras.ops.not_equal(x, constant) (bool); integer ids are compared as float32 (exact below 2**24)."""
    x, value = call.args[:2]
    if not isinstance(x, TensorRef) or isinstance(value, (TensorRef, list, dict)):
        raise call.unsupported("only not_equal(tensor, constant) is supported")
    shape, x = call.shape(x.name), x.name
    if call.graph.tensors[x].dtype != "float32":
        x = call.add("cast", [x], shape, {"dtype": "float32"}, suffix="/float", out_dtype="float32")
    value = call.const(np.full((1,) * len(shape), float(value), np.float32), "/value")
    return [call.add("not_equal", [x, value], shape, out_dtype="bool")]


@TABLE.register("ops.Any")
def any_(call: Call) -> list[str]:
    """keras.ops.any over the last axis of a (batch, steps, features) tensor: the step mask Masking makes."""
    shape = call.shape()
    axis, keep = call.cfg("axis"), bool(call.cfg("keepdims", False))
    if len(shape) != 3 or axis not in (-1, 2, [-1], [2]):
        raise call.unsupported("only any(x, axis=-1) of a (batch, steps, features) tensor is supported")
    out = (*shape[:2], 1) if keep else shape[:2]
    return [call.add("reduce_any", [call.x], out, {"axes": (2,), "keepdims": keep}, out_dtype="bool")]
