"""The op samples (op_samples.py) through the parser and each target: which samples a target takes (and
why it refuses the others), and their errors against TF in the target's real runtime."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tf_convert import emitters, parsers
from tf_convert.convert import passes
from tf_convert.convert.errors import UnsupportedError
from tf_convert.convert.ir import Graph
from tf_convert.parsers.base import ParseOptions

from .op_samples import FEEDS, SAMPLES, Sample


@dataclass
class Parsed:
    graph: Graph  # every sample the parser takes, one graph output each (IR name out_<case>)
    refused: dict[str, str] = field(default_factory=dict)  # case -> the parser's hint


def _options(samples: list[Sample], all_inputs: bool = True) -> ParseOptions:
    """All samples read every input; one sample alone reads the ones it needs (found by the parser)."""
    return ParseOptions(inputs=[f"{n}:0" for n in FEEDS] if all_inputs else None,
                        outputs=[f"out_{s.case}:0" for s in samples])


def parse_samples(pb: Path, samples: list[Sample] | None = None) -> Parsed:
    samples = SAMPLES if samples is None else samples
    refused: dict[str, str] = {}
    try:
        graph = parsers.parse(pb, _options(samples))
    except UnsupportedError:  # find the refused samples one by one, then parse the rest together
        for s in samples:
            try:
                parsers.parse(pb, _options([s], all_inputs=False))
            except UnsupportedError as e:
                refused[s.case] = "; ".join(f"{i.op}: {i.hint}" for i in e.items)
        graph = parsers.parse(pb, _options([s for s in samples if s.case not in refused]))
    return Parsed(passes.run_default_passes(graph), refused)


def case_of(graph: Graph, output: str) -> str:
    return graph.source_names[output].removeprefix("out_").rsplit(":", 1)[0]


def _ancestors(graph: Graph, tensor: str) -> set[str]:
    producers = {out: node for node in graph.nodes for out in node.outputs}
    seen, stack = set(), [tensor]
    while stack:
        node = producers.get(stack.pop())
        if node is not None and node.name not in seen:
            seen.add(node.name)
            stack.extend(node.inputs)
    return seen


def target_split(graph: Graph, target: str) -> tuple[list[str], dict[str, str]]:
    """(outputs the target takes, {case: hint} of those it refuses)."""
    problems = emitters.get(target).unsupported(graph)
    by_node: dict[str, str] = {}
    for p in problems:
        by_node.setdefault(p.node, f"{p.op}: {p.hint}")
    taken, refused = [], {}
    for out in graph.outputs:
        hints = [by_node[n] for n in sorted(_ancestors(graph, out) | {out}) if n in by_node]
        if hints:
            refused[case_of(graph, out)] = hints[0]
        else:
            taken.append(out)
    return taken, refused


def trimmed(graph: Graph, outputs: list[str]) -> Graph:
    """A copy computing only `outputs`, with only the inputs they read."""
    g = copy.deepcopy(graph)
    g.outputs = list(outputs)
    g.prune()
    used = {i for n in g.nodes for i in n.inputs} | set(g.outputs)
    g.inputs = [i for i in g.inputs if i in used]
    g.prune()  # and the tensors of the inputs left out
    return g


def ir_feeds(graph: Graph, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The TF feeds in IR layout, in graph input order."""
    result = []
    for name in graph.inputs:
        value = feeds[graph.source_names[name].rsplit(":", 1)[0]]
        result.append(value.transpose(0, 3, 1, 2).copy() if graph.source_layouts.get(name) == "NHWC" else value)
    return result


def ir_expected(graph: Graph, output: str, value: np.ndarray) -> np.ndarray:
    return value.transpose(0, 3, 1, 2) if graph.source_layouts.get(output) == "NHWC" else value
