"""The ONNX handlers of the control family: a run-time loop as ONNX `Loop`, a conditional as `If`, their
nested graphs lowered node by node with the same handlers into ONNX subgraphs.

`Loop` takes its first condition as an input: the condition's nodes are written once before the Loop (on
the first values) and once at the end of its body (on the next values). Invariants and the weights of
nested nodes are outer-scope values the subgraphs read by name (initializers of the main graph). Every
nested tensor is named `<node>::<part>/<IR name>`, so no name shadows or repeats another. The IR's one node
per output read (`convert.ir.subgraph.siblings`) becomes one Loop (one If) whose outputs are those nodes'
outputs, written by the first of them; the others write nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.ir.subgraph import siblings

from .contract import TABLE, Builder, Ctx, Emitted, tensor_names


def _value_info(name: str, tensor: ir.Tensor, shape: Sequence[int] | None = None) -> object:
    from onnx import helper

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(tensor.dtype))
    return helper.make_tensor_value_info(name, elem, list(tensor.shape if shape is None else shape))


def _lower(ctx: Ctx, graph: ir.Graph, bound: Mapping[str, str], prefix: str, into: Emitted,
           nodes: list) -> list[str]:
    """`graph`'s nodes appended to `nodes`, its inputs read from the ONNX names `bound` (input -> name);
    initializers and deferred weights go to `into` (the main graph's). Returns its outputs' ONNX names."""
    names = {t: f"{prefix}/{name}" for t, name in tensor_names(graph).items()}  # unique as the main graph's
    names.update(bound)
    index = ir.GraphIndex(graph)
    for node in graph.nodes:
        part = TABLE.get(node.op)(Ctx(node, graph, ctx.options, index, names, {}))
        nodes.extend(part.nodes)
        into.initializers.extend(part.initializers)
        into.deferred.update(part.deferred)
        into.pad_layers.extend(part.pad_layers)
    return [names[t] for t in graph.outputs]


def _outputs(ctx: Ctx) -> tuple[dict[int, str], list] | None:
    """The ONNX names of the outputs read (output -> name) and the Identity nodes copying an output to a second
    node reading the same one; None when an earlier node of the same loop or branch writes them."""
    from onnx import helper

    nodes = siblings(ctx.index, ctx.node)
    if nodes[0] is not ctx.node:
        return None
    read: dict[int, str] = {}
    copies = []
    for node in nodes:
        name = ctx.names[node.output]
        first = read.setdefault(int(node.attrs["output"]), name)
        if first != name:
            copies.append(helper.make_node("Identity", [first], [name], name=name))
    return read, copies


def _scalar(b: Builder, x: str, nodes: list) -> str:
    """A one-element bool as the 0-d tensor Loop's condition is."""
    from onnx import helper

    shape = b.ints("scalar", [])
    out = b.fresh("cond")
    nodes.append(helper.make_node("Reshape", [x, shape], [out], name=out))
    return out


@TABLE.register("while_loop", limit=TABLE.nested_limit)
def while_loop(ctx: Ctx) -> Emitted:
    from onnx import TensorProto, helper

    b = Builder(ctx, ctx.node)
    emitted = b.done()
    found = _outputs(ctx)
    if found is None:
        return emitted
    read, copies = found
    node, carried = ctx.node, int(ctx.attrs["carried"])
    cond, body = ctx.attrs["cond"], ctx.attrs["body"]
    outer = [ctx.names[i] for i in node.inputs]
    first: list = []
    [go] = _lower(ctx, cond, dict(zip(cond.inputs, outer)), f"{b.prefix}::cond_first", emitted, first)
    emitted.nodes.extend(first)
    go = _scalar(b, go, emitted.nodes)

    steps, inner = f"{b.prefix}::body/step", f"{b.prefix}::body/go"
    values = [f"{b.prefix}::body/in_{k}" for k in range(carried)]
    state = values + outer[carried:]  # invariants: outer-scope values
    nodes: list = []
    following = _lower(ctx, body, dict(zip(body.inputs, state)), f"{b.prefix}::body", emitted, nodes)
    [again] = _lower(ctx, cond, dict(zip(cond.inputs, following + outer[carried:])), f"{b.prefix}::cond_next",
                     emitted, nodes)
    again = _scalar(b, again, nodes)
    results = [f"{b.prefix}::body/out_{k}" for k in range(carried)]
    nodes += [helper.make_node("Identity", [src], [dst], name=dst) for src, dst in zip(following, results)]
    tensors = [ctx.graph.tensors[i] for i in node.inputs[:carried]]
    graph = helper.make_graph(
        nodes, f"{b.prefix}::body",
        [helper.make_tensor_value_info(steps, TensorProto.INT64, []),
         helper.make_tensor_value_info(inner, TensorProto.BOOL, [])]
        + [_value_info(v, t) for v, t in zip(values, tensors)],
        [helper.make_tensor_value_info(again, TensorProto.BOOL, [])]
        + [_value_info(v, t) for v, t in zip(results, tensors)],
    )
    finals = [read.get(k, f"{b.prefix}::final_{k}") for k in range(carried)]
    emitted.nodes.append(helper.make_node("Loop", ["", go, *outer[:carried]], finals, name=b.prefix, body=graph))
    emitted.nodes += copies
    return emitted


@TABLE.register("cond", limit=TABLE.nested_limit)
def cond(ctx: Ctx) -> Emitted:
    from onnx import helper

    b = Builder(ctx, ctx.node)
    emitted = b.done()
    found = _outputs(ctx)
    if found is None:
        return emitted
    read, copies = found
    picked = sorted(read)
    operands = [ctx.names[i] for i in ctx.node.inputs[1:]]
    branches = {}
    for attr in ("then_branch", "else_branch"):
        graph = ctx.attrs[attr]
        nodes: list = []
        prefix = f"{b.prefix}::{attr}"
        results = _lower(ctx, graph, dict(zip(graph.inputs, operands)), prefix, emitted, nodes)
        outs = [f"{prefix}/out_{k}" for k in picked]
        nodes += [helper.make_node("Identity", [results[k]], [o], name=o) for k, o in zip(picked, outs)]
        branches[attr] = helper.make_graph(nodes, prefix, [], [
            _value_info(o, graph.tensors[graph.outputs[k]]) for k, o in zip(picked, outs)])
    emitted.nodes.append(helper.make_node("If", [ctx.names[ctx.node.inputs[0]]], [read[k] for k in picked],
                                          name=b.prefix, **branches))
    emitted.nodes += copies
    return emitted
