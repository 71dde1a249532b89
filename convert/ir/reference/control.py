"""Control flow: a loop with a run-time trip count and a conditional, their nested graphs run with
`evaluate` (a runaway loop stops with a clear error after MAX_TRIPS steps)."""

from __future__ import annotations

import numpy as np

from ..graph import Node
from .evaluate import evaluate
from .table import EvaluationError, reference_op

MAX_TRIPS = 1_000_000  # steps of one loop before the reference calls it a runaway


def _truth(value: np.ndarray, where: str) -> bool:
    value = np.asarray(value)
    if value.size != 1:
        raise EvaluationError(f"{where}: the predicate has {value.size} elements; it must be one boolean")
    return bool(value.reshape(-1)[0])


def run_loop(node: Node, *inputs: np.ndarray) -> list[np.ndarray]:
    """Every loop variable after the last step."""
    cond, body, carried = node.attrs["cond"], node.attrs["body"], int(node.attrs["carried"])
    values, invariants = list(inputs[:carried]), list(inputs[carried:])
    for _ in range(MAX_TRIPS):
        if not _truth(evaluate(cond, values + invariants)[cond.outputs[0]], f"node {node.name} (while_loop)"):
            return values
        results = evaluate(body, values + invariants)
        following = [np.asarray(results[t]).astype(np.asarray(v).dtype, copy=False)
                     for t, v in zip(body.outputs, values)]
        for before, after in zip(values, following):
            if np.shape(before) != np.shape(after):
                raise EvaluationError(f"node {node.name} (while_loop): a loop variable changes shape "
                                      f"{np.shape(before)} -> {np.shape(after)}")
        values = following
    raise EvaluationError(f"node {node.name} (while_loop): still running after {MAX_TRIPS} steps (a runaway "
                          "loop); check the inputs that bound it")


@reference_op("while_loop")
def while_loop(node: Node, *inputs: np.ndarray) -> np.ndarray:
    return run_loop(node, *inputs)[int(node.attrs["output"])]


@reference_op("cond")
def cond(node: Node, pred: np.ndarray, *operands: np.ndarray) -> np.ndarray:
    branch = node.attrs["then_branch" if _truth(pred, f"node {node.name} (cond)") else "else_branch"]
    return evaluate(branch, list(operands), [branch.outputs[int(node.attrs["output"])]])[
        branch.outputs[int(node.attrs["output"])]]
