"""Which source (TF) tensor holds the value of each IR tensor, after the passes rewrote the graph.

The parser records `metadata["source_tensors"]`: TF tensor -> [IR tensor, perm, IR shape] at parse
time. Passes then fuse nodes (a BiasAdd into its conv: the conv's tensor now holds the BiasAdd's
value) and drop no-ops, renaming the tensors their readers see. `run_passes` runs the default
passes while logging those renames (every rename goes through `GraphIndex.rename_tensor`, or
`Graph.rename_tensor` for a pass without an index) and resolves the map again: each surviving IR tensor takes the
*latest* TF tensor (in TF's op order) that was renamed into it and still has its shape; fusion only
ever moves a later value onto an earlier tensor, and a dropped no-op had the same value anyway.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from typing import Any, Callable

from tf_convert.convert.ir import Graph
from tf_convert.convert.passes import DEFAULT_PASSES, GraphIndex
from tf_convert.convert.passes import run_passes as run_pass_list

NHWC_TO_NCHW = [0, 3, 1, 2]
KEY = "source_tensors"


@dataclass
class _RenameLog(Graph):
    """A Graph that remembers every rename_tensor(old, new) the passes make."""

    renames: list[tuple[str, str]] = field(default_factory=list)

    def rename_tensor(self, old: str, new: str) -> None:
        self.renames.append((old, new))
        super().rename_tensor(old, new)


class _RenameLogIndex(GraphIndex):
    """A GraphIndex that remembers every rename (bypass and remove_after rename through it)."""

    def __init__(self, graph: Graph, renames: list[tuple[str, str]]):
        self.renames = renames
        super().__init__(graph)

    def rename_tensor(self, old: str, new: str) -> None:
        self.renames.append((old, new))
        super().rename_tensor(old, new)


def _logged(p: Callable[..., bool], renames: list[tuple[str, str]]) -> Callable[..., bool]:
    """`p` run with a renaming-logging index of its own (a plain pass to the runner, which
    re-indexes after it)."""
    if not getattr(p, "keeps_index", False):
        return p

    @functools.wraps(p)
    def run(graph: Graph) -> bool:
        return p(graph, _RenameLogIndex(graph, renames))

    del run.keeps_index  # copied over by functools.wraps: the runner must not share its index
    return run


def _plain(graph: Graph) -> Graph:
    return Graph(**{f.name: getattr(graph, f.name) for f in fields(Graph)})


def run_passes(graph: Graph, passes=None) -> Graph:
    """passes.run_default_passes (or the list `passes`), plus metadata["source_tensors"] re-resolved for
    the result: IR tensor -> {"tensor": TF name, "perm": IR = transpose(TF, perm) or None}."""
    logged = _RenameLog(**{f.name: getattr(graph, f.name) for f in fields(Graph)})
    result = _plain(run_pass_list(logged, [_logged(p, logged.renames) for p in (passes or DEFAULT_PASSES)]))
    result.metadata[KEY] = resolve(graph.metadata.get(KEY) or {}, logged.renames, result)
    return result


def resolve(parsed: dict[str, Any], renames: list[tuple[str, str]], graph: Graph) -> dict[str, dict]:
    if parsed and isinstance(next(iter(parsed.values())), dict):
        return dict(parsed)  # already resolved (a graph read back from disk)
    found: dict[str, dict] = {}
    for tf_name, (ir_name, perm, *shape) in parsed.items():
        for old, new in renames:
            if ir_name == old:
                ir_name = new
        if ir_name not in graph.tensors or ir_name in graph.inputs:
            continue
        if shape and tuple(shape[0]) != tuple(graph.shape(ir_name)):
            continue  # e.g. a Pad folded into its conv: the pad's value is gone, not renamed
        found[ir_name] = {"tensor": tf_name, "perm": perm}  # later TF tensors win
    for out in graph.outputs:  # the outputs' TF names are known exactly
        layout = graph.source_layouts.get(out, "")
        found[out] = {"tensor": graph.source_names.get(out, out),
                      "perm": NHWC_TO_NCHW if layout == "NHWC" else None}
    return found
