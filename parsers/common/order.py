"""The order a parser walks a graph in: every node after the nodes it reads."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any


def topological(nodes: Mapping[str, Any], inputs: Callable[[Any], Iterable[str]]) -> list[str]:
    """The names of `nodes` (name -> node), each after the names `inputs(node)` gives (depth first, otherwise in
    the mapping's order); names that are not in `nodes` are skipped, and a cycle (a while loop's back edge) is
    cut where it closes."""
    order: list[str] = []
    seen: set[str] = set()
    for root in nodes:
        stack = [(root, False)]
        while stack:
            name, done = stack.pop()
            if done:
                order.append(name)
                continue
            if name in seen or name not in nodes:
                continue
            seen.add(name)
            stack.append((name, True))
            stack.extend((source, False) for source in reversed(list(inputs(nodes[name]))))
    return order
