"""Running passes: an explicit ordered list, repeated to a fixed point, with one shared index.

In check mode (``check=True``, or the environment variable ``CONVERT_DEBUG`` or
``CONVERT_CHECK_PASSES`` set to anything but "0"; the test suite always sets the latter) the graph is
validated after every pass, so the error names the pass that broke it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Callable

from ..ir import Graph, runtime_dims
from ..ir.dtypes import computes_wide
from .index import GraphIndex

# The passes that read no size: all a graph whose sizes follow run-time values gets (convert.ir.runtime_dims);
# the others match per-channel constants, transposes and reshapes by their static sizes. They keep every
# dtype, too: all a graph computing in float64, float16 or int16 gets (the others fuse into float32 parameters).
SIZE_FREE_PASSES = frozenset({"fold_constants", "drop_identities", "merge_duplicates", "drop_neutral_arith"})

Pass = Callable[..., bool]  # pass(graph[, index]) -> changed


class PassError(ValueError):
    """A pass left the graph invalid (check mode)."""

    def __init__(self, pass_name: str, problem: str):
        super().__init__(f"IR pass {pass_name!r} broke the graph: {problem}")
        self.pass_name = pass_name


def checks_enabled() -> bool:
    return any(os.environ.get(var, "0") not in ("", "0") for var in ("CONVERT_DEBUG", "CONVERT_CHECK_PASSES"))


def pass_name(p: Pass) -> str:
    return getattr(p, "__name__", repr(p))


def check_graph(graph: Graph, index: GraphIndex, outputs: Sequence[str], after: str) -> None:
    """Raise PassError naming `after` if the graph is invalid, its outputs were renamed, or the
    index no longer matches the graph."""
    try:
        graph.validate()
        if list(graph.outputs) != list(outputs):
            raise ValueError(f"graph outputs changed from {list(outputs)} to {list(graph.outputs)}")
        index.verify()
    except ValueError as problem:
        raise PassError(after, str(problem)) from problem


def run_passes(graph: Graph, passes: Sequence[Pass], max_rounds: int = 20, check: bool | None = None) -> Graph:
    """Run `passes` in order, over and over until none changes the graph (at most `max_rounds`)."""
    check = checks_enabled() if check is None else check
    if runtime_dims.has_run_time(graph) or computes_wide(graph):
        passes = [p for p in passes if pass_name(p) in SIZE_FREE_PASSES]
    index = GraphIndex(graph)
    outputs = list(graph.outputs)
    if check:
        check_graph(graph, index, outputs, "(input graph, before any pass)")
    for _ in range(max_rounds):
        changed = False
        for p in passes:
            if getattr(p, "keeps_index", False):
                changed = p(graph, index) or changed
            else:  # a plain graph -> bool function: re-index after it
                changed = p(graph) or changed
                index.rebuild()
            if check:
                check_graph(graph, index, outputs, pass_name(p))
        graph.prune()
        index.rebuild()
        if not changed:
            break
    graph.validate()
    return graph
