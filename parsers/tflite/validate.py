"""Check a `.tflite` model's records before the builder walks them: every index in range, an order that
runs the operators (out of file order is fine, a cycle is not), options in range, shapes non-negative,
outputs that something computes. Each violation is an InputError (exit 2) naming the subgraph and the
tensor or operator, by index and name.

What the file's bytes themselves hold (offsets, vector lengths, constant sizes) schema.read checks as it
reads them; this module checks what the records mean together.
"""

from __future__ import annotations

import functools
import heapq

from tf_convert.convert.errors import InputError

from .schema import ACTIVATIONS, OPTION_NAMES, PADDINGS, Model, Operator, Subgraph, Tensor

# Options accessors that count windows and steps: 0 or less is no window (TFLite's kernels divide by them)
_POSITIVE = ("StrideH", "StrideW", "StrideD", "DilationHFactor", "DilationWFactor", "DilationDFactor",
             "FilterHeight", "FilterWidth", "BlockSize")
# Options accessors holding a schema enum: the values the schema names
_ENUMS = {"Padding": PADDINGS, "FusedActivationFunction": ACTIVATIONS}
# an operator's options table by its name, where the schema names it so (CONV_2D: Conv2DOptions): TFLite
# reads a table of another type as no options at all; the rest (MAX_POOL_2D: Pool2DOptions) are not checked
_OWN_OPTIONS = {name.lower().removesuffix("options"): name for name in OPTION_NAMES.values()}


def check(model: Model) -> None:
    """Raise InputError for the first thing in `model` that no TFLite file written by a converter holds."""
    where = model.path.name
    for sub in model.subgraphs:
        _check_subgraph(where, sub, len(model.subgraphs))
    for s in model.signatures:
        if not 0 <= s.subgraph < len(model.subgraphs):
            raise InputError(f"{where}: signature '{s.key}' names subgraph {s.subgraph}, the file has "
                             f"{len(model.subgraphs)}; the file is corrupt")
        tensors = model.subgraphs[s.subgraph].tensors
        for side, named in (("input", s.inputs), ("output", s.outputs)):
            for name, index in named.items():
                if not 0 <= index < len(tensors):
                    raise InputError(f"{where}: signature '{s.key}' {side} '{name}' names tensor {index}, its "
                                     f"subgraph has {len(tensors)}; the file is corrupt")


def converted(model: Model, sub: Subgraph, outputs: dict[str, int] | None) -> None:
    """The subgraph (or signature: its `outputs`) chosen for conversion computes something. Another subgraph
    may have no outputs (a stateful model's initialization, run once for its variables)."""
    if not (sub.outputs if outputs is None else outputs):
        raise InputError(f"{model.path.name}: subgraph {sub.index} has no outputs: nothing to convert (an empty or "
                         f"truncated subgraph)")


def order(sub: Subgraph, where: str = "") -> list[Operator]:
    """The subgraph's operators in an order that runs them: file order where the file is sorted (the
    schema asks for it), else the first ready operator in file order each time (Kahn's algorithm)."""
    producer = {t: op.index for op in sub.operators for t in op.outputs if t >= 0}
    needs = {op.index: {producer[t] for t in op.inputs if t in producer} for op in sub.operators}
    readers: dict[int, list[int]] = {}
    for op, before in needs.items():
        for b in before:
            readers.setdefault(b, []).append(op)
    waiting = {op: len(before) for op, before in needs.items()}
    ready = [op for op, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    ran = []
    while ready:
        k = heapq.heappop(ready)
        ran.append(k)
        for r in readers.get(k, []):
            waiting[r] -= 1
            if waiting[r] == 0:
                heapq.heappush(ready, r)
    by_index = {op.index: op for op in sub.operators}
    if len(ran) < len(sub.operators):
        stuck = sorted(set(by_index) - set(ran))
        at = f"{where}: " if where else ""
        raise InputError(f"{at}subgraph {sub.index}: operators {_ops(sub, stuck)} read each other's outputs in a "
                         f"cycle: no order runs them; the file is corrupt")
    return [by_index[k] for k in ran]


def _ops(sub: Subgraph, indices: list[int]) -> str:
    shown = ", ".join(_op(sub, sub.operators[k]) for k in indices[:3])
    return shown + (f" and {len(indices) - 3} more" if len(indices) > 3 else "")


def _op(sub: Subgraph, op: Operator) -> str:
    named = next((sub.tensors[t].name for t in op.outputs if 0 <= t < len(sub.tensors)), "")
    return f"{op.index} {op.name}" + (f" ('{named}')" if named else "")


def _tensor(t: Tensor) -> str:
    return f"tensor {t.index} '{t.name}'"


def _check_subgraph(where: str, sub: Subgraph, subgraphs: int) -> None:
    prefix = f"{where}: subgraph {sub.index}"
    count = len(sub.tensors)
    for t in sub.tensors:
        _check_tensor(prefix, t)
    for side in ("inputs", "outputs"):
        for index in getattr(sub, side):
            if not 0 <= index < count:
                raise InputError(f"{prefix}: its {side} name tensor {index}, it has {count}; the file is corrupt")
    produced: dict[int, Operator] = {}
    for op in sub.operators:
        for side in ("inputs", "outputs"):
            for index in getattr(op, side):
                if index != -1 and not 0 <= index < count:
                    raise InputError(f"{prefix}: operator {_op(sub, op)} {side[:-1]} names tensor {index}, the "
                                     f"subgraph has {count}; the file is corrupt")
        for index in op.outputs:
            if index < 0:
                continue
            if index in produced or index in sub.inputs or sub.tensors[index].data is not None:
                what = f"operator {_op(sub, produced[index])}" if index in produced else \
                    "an input" if index in sub.inputs else "a constant"
                raise InputError(f"{prefix}: operator {_op(sub, op)} writes {_tensor(sub.tensors[index])}, which "
                                 f"{what} writes too; the file is corrupt")
            produced[index] = op
        _check_options(prefix, sub, op, subgraphs)
    known = set(produced) | set(sub.inputs)
    for op in sub.operators:
        for index in op.inputs:
            if index >= 0 and not _available(sub.tensors[index], known):
                raise InputError(f"{prefix}: operator {_op(sub, op)} reads {_tensor(sub.tensors[index])}, which no "
                                 f"operator, input or constant produces; the file is corrupt")
    for index in sub.outputs:
        if not _available(sub.tensors[index], known):
            raise InputError(f"{prefix}: output {_tensor(sub.tensors[index])} is computed by no operator and is no "
                             f"input or constant; the file is corrupt")
    order(sub, where)


def _available(t: Tensor, known: set[int]) -> bool:
    """A tensor has a value when the operators run: computed, fed, stored, a variable, or holding nothing."""
    return t.index in known or t.data is not None or t.variable or any(d == 0 for d in t.shape)


def _check_tensor(prefix: str, t: Tensor) -> None:
    if t.type.startswith("type "):
        raise InputError(f"{prefix}: {_tensor(t)} has {t.type}, which TFLite's schema does not name; the file is "
                         f"corrupt")
    if any(d < 0 for d in t.shape):
        raise InputError(f"{prefix}: {_tensor(t)} has shape {t.shape}: sizes must be 0 or more (-1, a free size, "
                         f"belongs in shape_signature); the file is corrupt")
    # a shape signature that disagrees with the shape TFLite runs anyway (it runs at `shape`): the builder
    # reads one of another rank as none, and one of the same rank only for the sizes it leaves free (-1)


def _check_options(prefix: str, sub: Subgraph, op: Operator, subgraphs: int) -> None:
    options = op.options
    if options is None:
        return
    own = None if op.custom else _OWN_OPTIONS.get(op.name.replace("_", "").lower())
    if own is not None and type(options).__name__ != own:
        raise InputError(f"{prefix}: operator {_op(sub, op)} holds {type(options).__name__}, not its own {own}; "
                         f"the file is corrupt")
    for name in _subgraph_fields(type(options)):
        if not 0 <= int(getattr(options, name)()) < subgraphs:
            raise InputError(f"{prefix}: operator {_op(sub, op)} has {_snake(name)} {int(getattr(options, name)())}, "
                             f"the file has {subgraphs} subgraph(s); the file is corrupt")
    for name in _POSITIVE:
        if hasattr(options, name) and int(getattr(options, name)()) < 1:
            raise InputError(f"{prefix}: operator {_op(sub, op)} has {_snake(name)} {int(getattr(options, name)())}: "
                             f"it must be 1 or more; the file is corrupt")
    for name, names in _ENUMS.items():
        if hasattr(options, name) and int(getattr(options, name)()) not in names:
            raise InputError(f"{prefix}: operator {_op(sub, op)} has {_snake(name)} {int(getattr(options, name)())}, "
                             f"which TFLite's schema does not name; the file is corrupt")


@functools.cache
def _subgraph_fields(cls: type) -> tuple[str, ...]:
    """The accessors of an options class that name another subgraph (WHILE's cond and body, IF's branches,
    CALL_ONCE's init)."""
    return tuple(name for name in dir(cls) if name.endswith("SubgraphIndex"))


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
