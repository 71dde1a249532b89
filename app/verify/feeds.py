"""Values --verify feeds named inputs (`--feed NAME=VALUE`), TF and the target alike: the run-time parameters
that set sizes while the model runs (a Reshape's shape, a Pad's paddings, a one-hot's depth,
convert.ir.runtime_dims) cannot be drawn at random, so the check runs the model at the values the user gives,
and conversion.json records them: the conversion claims what was checked at those values only."""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np

from tf_convert.convert.errors import UsageError
from tf_convert.convert.ir import Graph, GraphIndex, runtime_dims

FEEDS = "verify_feeds"  # graph.metadata key: IR input -> the value the check feeds it (nested lists)
FED_ONLY = "fed_only_outputs"  # graph.metadata key: the outputs only fed inputs reach (a skeleton graph's record)


def parse(feeds: Mapping[str, str] | list[str] | tuple[str, ...]) -> dict[str, object]:
    """NAME=VALUE pairs (VALUE a number or a JSON list, e.g. shape=[4,15]) -> {NAME: value}."""
    items = feeds.items() if isinstance(feeds, Mapping) else (_pair(f) for f in feeds)
    parsed = {}
    for name, text in items:
        try:
            parsed[name] = json.loads(text) if isinstance(text, str) else text
        except json.JSONDecodeError:
            raise UsageError(f"--feed {name}={text}: the value must be a number or a list such as [4, 15]") from None
    return parsed


def _pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise UsageError(f"--feed {text!r} must be NAME=VALUE, e.g. --feed shape=[4,15]")
    return name, value


def attach(graph: Graph, feeds: Mapping[str, object]) -> None:
    """Record the values for the graph's inputs (named as in the source: `shape` or `shape:0`)."""
    by_name = {}
    for ir_name in graph.inputs:
        source = graph.source_names.get(ir_name, ir_name)
        by_name.update({source: ir_name, source.rsplit(":", 1)[0]: ir_name})
    fed = {}
    for name, value in feeds.items():
        if name not in by_name:
            raise UsageError(f"--feed {name}: no model input of that name (inputs: "
                             f"{', '.join(graph.source_names.get(i, i) for i in graph.inputs)})")
        ir_name = by_name[name]
        tensor = graph.tensors[ir_name]
        array = np.asarray(value)
        if array.shape != tuple(tensor.shape):
            raise UsageError(f"--feed {name}: a value of shape {list(array.shape)}; the input has shape "
                             f"{list(tensor.shape)}")
        fed[ir_name] = array.astype(tensor.dtype).tolist()
    graph.metadata[FEEDS] = fed


def fed(graph: Graph) -> dict[str, np.ndarray]:
    """IR input -> the value the check feeds it, in the input's dtype."""
    return {name: np.asarray(value, graph.tensors[name].dtype)
            for name, value in (graph.metadata.get(FEEDS) or {}).items() if name in graph.tensors}


def require(graph: Graph, target: str) -> None:
    """Every input that sets a size while the model runs has a value for the check (--feed), else exit 2 (a
    target that cannot follow such sizes refuses the model itself, exit 3)."""
    if target not in runtime_dims.TARGETS or not runtime_dims.has_run_time(graph):
        return
    given = set(graph.metadata.get(FEEDS) or {})
    index = GraphIndex(graph)
    for name in graph.inputs:
        if name in given:
            continue
        node = runtime_dims.parameter_reader(index, name)
        if node is not None:
            reader = f"{node.op} '{node.name}'"
            shown = graph.source_names.get(name, name).rsplit(":", 1)[0]
            raise UsageError(f"input '{shown}' sets sizes while the model runs ({reader}): --verify cannot draw it "
                             f"at random; give the value to check at, e.g. --feed {shown}=VALUE (a number or a "
                             "list such as [4, 15])")


def fed_only(graph: Graph) -> list[str]:
    """The outputs that only fed inputs reach (a Fill of fed dims, a Range of a fed length): TF's value there is
    fixed by the feeds, so no input the check draws can move it (from the nodes, or the record of a skeleton)."""
    given = set(graph.metadata.get(FEEDS) or {})
    if not given:
        return []
    if not graph.nodes:
        return [n for n in graph.metadata.get(FED_ONLY, []) if n in graph.outputs]
    index = GraphIndex(graph)
    found = []
    for output in graph.outputs:
        reached, stack, seen = set(), [output], set()
        while stack:
            t = stack.pop()
            if t in seen:
                continue
            seen.add(t)
            node = index.producer(t)
            if node is None:
                reached.add(t)
            else:
                stack.extend(node.inputs)
        sources = reached & set(graph.inputs)
        if sources and sources <= given:
            found.append(output)
    return found
