"""Which layout a rank-4 input has: NHWC as TF's ops want it, or NCHW where the graph transposes it to NHWC
first (Hugging Face's TF vision classes take `pixel_values` NCHW and transpose inside). An NCHW input is kept
NCHW at the boundary, so a converted model takes the same array TF does (no permute there and back again);
`--input-layout nchw|nhwc` overrides the guess."""

from __future__ import annotations

from typing import Any

import numpy as np

LAYOUTS = ("nchw", "nhwc")
_TO_CHANNELS_LAST = (0, 2, 3, 1)
_PASS_THROUGH = {"Identity", "Cast", "StopGradient"}  # a value passed on in its own order
_SHAPE_ONLY = {"Shape", "ShapeN", "Rank", "Size"}  # reads the dims, not the values' order


def transposed_first(tensor: Any, consts: dict[str, Any]) -> bool:
    """Whether every reader of `tensor` (through identities and casts) transposes it to channels-last or reads
    only its shape, and at least one transposes."""
    stack, seen, transposed = [tensor], set(), False
    while stack:
        t = stack.pop()
        if t.name in seen:
            continue
        seen.add(t.name)
        for op in t.consumers():
            if op.type in _PASS_THROUGH:
                stack.extend(op.outputs)
            elif op.type == "Transpose" and op.inputs[0] is t and op.inputs[1].name in consts and \
                    tuple(np.asarray(consts[op.inputs[1].name]).reshape(-1).tolist()) == _TO_CHANNELS_LAST:
                transposed = True
            elif op.type not in _SHAPE_ONLY:
                return False
    return transposed


def channels_first(name: str, tensor: Any, consts: dict[str, Any], override: str | None,
                   notes: list[str] | None) -> bool:
    """Whether rank-4 input `name` is NCHW: `override` (--input-layout) when given, else guessed from its
    readers (transposed_first); a guessed NCHW is said in `notes`."""
    if override is not None:
        return override.lower() == "nchw"
    found = transposed_first(tensor, consts)
    if found and notes is not None:
        notes.append(f"input '{name}' read as NCHW: the graph transposes it to NHWC first "
                     "(--input-layout nhwc reads it as NHWC)")
    return found
