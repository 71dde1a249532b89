"""Clean-up: identity nodes and neutral arithmetic (x * 1, x + 0) go."""

from __future__ import annotations

import numpy as np

from .index import GraphIndex, graph_pass


@graph_pass
def drop_identities(ix: GraphIndex) -> bool:
    graph = ix.graph
    changed = False
    for node in list(graph.nodes):
        if node.op != "identity" or not ix.alive(node):
            continue
        src = node.inputs[0]
        if node.output not in graph.outputs:
            ix.bypass(node, src)
            changed = True
            continue
        # keep the output's name: the producer takes it over, if nothing else needs the old one
        producer = ix.producer(src)
        if producer is not None and ix.single_reader(src) is node and src not in graph.inputs:
            ix.remove_after(producer, node)
            changed = True
    return changed


_NEUTRAL = {"mul": 1.0, "div": 1.0, "add": 0.0, "sub": 0.0}


@graph_pass
def drop_neutral_arith(ix: GraphIndex) -> bool:
    """x * 1, x / 1, x + 0, x - 0 with a constant that does not broadcast x to a bigger shape."""
    graph = ix.graph
    changed = False
    for node in list(graph.nodes):
        if node.op not in _NEUTRAL or len(node.inputs) != 2 or not ix.alive(node):
            continue
        x, c = node.inputs
        value = ix.const_value(c)
        if value is None and node.op in ("mul", "add"):
            x, c = c, x
            value = ix.const_value(c)
        if value is None or not np.all(value == _NEUTRAL[node.op]):
            continue
        if graph.shape(x) != graph.shape(node.output) or x in graph.inputs and node.output in graph.outputs:
            continue
        if node.output in graph.outputs:
            producer = ix.producer(x)
            if producer is None or ix.single_reader(x) is not node:
                continue
            ix.remove_after(producer, node)
        else:
            ix.bypass(node, x)
        changed = True
    return changed
