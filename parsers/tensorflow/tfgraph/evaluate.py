"""Constant values of a Graph's tensors, computed on demand with the numpy evaluators of fold.py.

A Const takes its value from the graph's `weights` (as is: possibly a lazy array) or its attr;
Shape/ShapeN/Size/Rank of a fully known shape need no value; any other op is evaluated when all
its inputs are. Evaluation is iterative (no recursion limit on long constant chains) and cached.
"""

from __future__ import annotations

import math
from typing import Any

from ..tensors import read_const
from .fold import FOLDS, SHAPE_OPS, cast_to

_NONE = object()  # cached: no value


class _Shaped:
    """Stands for a tensor of known shape whose value is not needed (Shape's input)."""

    def __init__(self, shape: list[int]):
        self.shape = tuple(shape)
        self.ndim = len(self.shape)
        self.size = math.prod(self.shape)


class Evaluator:
    def __init__(self, graph: Any):
        self.graph = graph
        self._values: dict[str, Any] = {}
        self.failures: dict[str, str] = {}  # op name -> why it has no value

    def value(self, tensor: Any) -> Any:
        """The tensor's value, or None when it depends on an input or on an op with no evaluator."""
        if tensor.name not in self._values:
            self._run(tensor.op)
        v = self._values.get(tensor.name, _NONE)
        return None if v is _NONE else v

    def failures_of(self, tensor: Any) -> list[tuple[Any, str]]:
        """(op, reason) of every op on `tensor`'s constant path that has no value of its own (its inputs
        have theirs, or it has none to need), in the order found."""
        found: dict[str, tuple[Any, str]] = {}
        stack, seen = [tensor.op], set()
        while stack:
            op = stack.pop()
            if op.name in seen:
                continue
            seen.add(op.name)
            if op.name in self.failures and self.failures[op.name] != "input":
                found[op.name] = (op, self.failures[op.name])
                continue
            missing = [t for t in self._needed(op) if self.value(t) is None]
            if not missing:
                found[op.name] = (op, self.failures.get(op.name, "no value"))
            stack.extend(t.op for t in reversed(missing))
        return list(found.values())

    def _needed(self, op: Any) -> tuple:
        """The inputs whose values evaluating `op` takes (none where it cannot be evaluated anyway)."""
        if op.type not in FOLDS or self._shape_only(op):
            return ()
        return op.inputs

    @staticmethod
    def _shape_only(op: Any) -> bool:
        return op.type in SHAPE_OPS and all(t.shape.is_fully_defined() for t in op.inputs)

    def _run(self, root: Any) -> None:
        stack = [(root, False)]
        entered: set[str] = set()  # a while loop's back edge must not send this round forever
        while stack:
            op, ready = stack.pop()
            if op.outputs and op.outputs[0].name in self._values:
                continue
            if ready:
                self._evaluate(op)
                continue
            if op.name in entered:
                self._fail(op, "input")  # on a cycle: not a constant
                continue
            entered.add(op.name)
            stack.append((op, True))
            stack.extend((t.op, False) for t in self._needed(op) if t.name not in self._values)

    def _fail(self, op: Any, why: str) -> None:
        self.failures.setdefault(op.name, why)
        for t in op.outputs:
            self._values[t.name] = _NONE

    def _evaluate(self, op: Any) -> None:
        if not op.outputs:
            return
        if op.type == "Const":
            self._values[op.outputs[0].name] = self._const(op)
            return
        if op.type == "Placeholder":
            return self._fail(op, "input")
        fold = FOLDS.get(op.type)
        if fold is None:
            return self._fail(op, "no evaluator")
        if self._shape_only(op):
            args = [_Shaped(t.shape.as_list()) for t in op.inputs]
        else:
            args = [self._values.get(t.name, _NONE) for t in op.inputs]
            if any(a is _NONE for a in args):
                return self._fail(op, "input")
        try:
            result = fold(op, *args)
        except Exception as e:  # noqa: BLE001 - a bad constant is the graph's fault, reported by name
            line = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
            return self._fail(op, f"error: {line}")
        results = result if isinstance(result, (list, tuple)) else [result]
        for t, v in zip(op.outputs, results):
            self._values[t.name] = cast_to(v, t.dtype)

    def _const(self, op: Any) -> Any:
        weights = self.graph.weights
        if op.name in weights:
            return weights[op.name]  # as is: a lazy array materializes only where it is used

        return read_const(op.node_def)
