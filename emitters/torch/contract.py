"""The handler contract of the PyTorch emitter.

A handler is a pure function of one IR node (plus the graph, for shapes and constants, and the
target's options): it gets a `Ctx` (emitters.base.NodeContext) and returns a `Lowered` -- the
submodules and buffers the node adds to `Model.__init__`, the lines it adds to `forward`, the
state_dict entries of its submodules and the pad layers it inserted.
The caller (codegen.py) owns naming and collects the results; handlers never share state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..base import HandlerTable, NodeContext

TABLE = HandlerTable("torch", "no PyTorch lowering for this IR op")

# Suffixes a handler may append to its node's name for extra submodules/buffers. The namer
# reserves `<base>_<suffix>` for every node so these never collide with other nodes' names.
AUX_SUFFIXES = ("pad", "full", "divisor", "count", "scale", "shift", "gamma", "beta", "rows", "cols", "wy", "wx", "top")
AUX_SUFFIXES += ("gx", "state", "cell", "steps", "t", "gates", "rec", "update")  # sequence_recurrent.py's loop locals
AUX_SUFFIXES += ("lo", "hi", "area", "iou", "over", "order", "keep", "i", "take", "pos")  # detection.py's NMS locals
AUX_SUFFIXES += ("left", "multiplier", "right", "mask", "bias")  # nn_quant.py's integer kernels
AUX_SUFFIXES += ("exp", "rescaled", "powers", "rounding")  # nn_quant.py's integer softmax, single rounding


@dataclass(frozen=True)
class Ctx(NodeContext):
    args: tuple[str, ...]  # Python expressions of the node's inputs inside forward()
    in_shapes: tuple[tuple[int, ...], ...]
    out_shape: tuple[int, ...]
    var: str  # the node's identifier: its output variable and its main submodule/buffer
    dynamic: bool = False  # the model runs at any H/W: size-dependent pads follow the runtime size
    # a dynamic model's tensors -> their axes that follow the runtime size (convert.padding.sizes.size_flow)
    free_axes: Mapping[str, frozenset[int]] = field(default_factory=dict)
    namer: Any = None  # the model's Namer (codegen.py): identifiers for the nodes of nested graphs (control.py)

    def aux(self, suffix: str) -> str:
        if suffix not in AUX_SUFFIXES:
            raise ValueError(f"undeclared auxiliary suffix {suffix!r}")
        return f"{self.var}_{suffix}"


@dataclass
class Lowered:
    modules: list[tuple[str, str]] = field(default_factory=list)  # (attribute, constructor source)
    buffers: list[tuple[str, np.ndarray]] = field(default_factory=list)  # registered buffers + values
    state: dict[str, np.ndarray] = field(default_factory=dict)  # "<submodule>.weight" -> value
    lines: list[str] = field(default_factory=list)  # forward() lines
    expr: str | None = None  # how later code refers to the output (default: Ctx.var)
    # other nodes' outputs this lowering computes too (the other variables of one loop) -> their expressions;
    # the caller writes nothing for those nodes
    computes: dict[str, str] = field(default_factory=dict)
    pad_layers: list[dict[str, Any]] = field(default_factory=list)


# ---- small source-formatting helpers shared by the handlers --------------------------------------


def lit(value: Any) -> str:
    """A Python literal for a number (exact round trip of float32 values; infinities spelled out)."""
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    v = float(value)
    if math.isnan(v):
        return "float('nan')"
    if v in (float("inf"), float("-inf")):
        return "float('inf')" if v > 0 else "float('-inf')"
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v)}.0"
    return repr(v)


def pair(values: Sequence[int]) -> str:
    """`3` for (3, 3), `(3, 1)` otherwise: how people write torch layer arguments."""
    a, b = (int(v) for v in values)
    return str(a) if a == b else f"({a}, {b})"


def ints(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def call(fn: str, *args: str, **kwargs: str | None) -> str:
    """`fn(a, b, k=v)`, leaving out keyword arguments passed as None (defaults)."""
    parts = list(args) + [f"{k}={v}" for k, v in kwargs.items() if v is not None]
    return f"{fn}({', '.join(parts)})"


def assign(expr: Callable[[Ctx], str]) -> Callable[[Ctx], Lowered]:
    """A handler whose whole lowering is `<var> = <expr>`."""

    def handler(ctx: Ctx) -> Lowered:
        return Lowered(lines=[f"{ctx.var} = {expr(ctx)}"])

    handler.__name__ = expr.__name__
    handler.__module__ = expr.__module__  # the family module the expression lives in
    return handler
