"""A TF function (a While's cond/body, an If's branch) as a nested IR graph (convert.ir.subgraph.Subgraph).

The function's nodes are copied into a GraphDef of their own (inline.body_nodes): an argument bound to a
constant becomes a Const (a weight the body reads), every other argument a Placeholder of its fixed shape
and dtype. That GraphDef goes through the parser's own pipeline (`build`: build.build_graph, so nested
static loops unroll and nested run-time loops nest) with the function's return values as outputs.
A rank-4 tensor crosses the boundary in the IR's order (NCHW of TF's NHWC) both ways, so a loop variable
reads the same in the body as outside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.errors import ConvertError, UnsupportedError
from tf_convert.convert.ir.subgraph import Subgraph, as_subgraph
from tf_convert.convert.passes.cleanup import drop_identities
from tf_convert.convert.passes.runner import run_passes
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.common.layout import TO_NCHW

from .graphio import split_ref
from .inline import body_nodes
from .loader import Frozen
from .protos import GraphDef
from .tensors import const_node

_PREFIX = "f/"


@dataclass(frozen=True)
class Binding:
    """What one function argument is: a constant `value`, or a run-time tensor of `dtype` (a TF DataType
    enum) and static `dims`."""

    value: Any = None
    dtype: int = 0
    dims: tuple[int, ...] = ()

    @property
    def is_const(self) -> bool:
        return self.value is not None


class FunctionNotConvertible(Exception):
    """The function's graph cannot be converted; the message says why (the nodes, or the error)."""


def _placeholder(graph_def: Any, name: str, binding: Binding) -> None:
    node = graph_def.node.add(name=name, op="Placeholder")
    node.attr["dtype"].type = binding.dtype
    for d in binding.dims:
        node.attr["shape"].shape.dim.add(size=int(d))
    if not binding.dims:
        node.attr["shape"].shape.SetInParent()


def _canonical(ref: str) -> str:
    node, index, _ = split_ref(ref)
    return f"{node}:{index}"


def function_graph(build: Callable[..., ir.Graph], library: Any, fdef: Any, bindings: list[Binding],
                   name: str, wanted: list[int] | None = None) -> Subgraph:
    """`fdef` (a FunctionDef of `library`, a FunctionDefLibrary) as a Subgraph: its inputs are the run-time
    arguments in argument order, its outputs the function's return values `wanted` (default all), in that
    order. `build` is build.build_graph. Raises FunctionNotConvertible naming what fails."""
    functions = {f.signature.name: f for f in library.function}
    graph_def = GraphDef()
    graph_def.library.CopyFrom(library)
    bound, inputs = {}, []
    for k, (arg, binding) in enumerate(zip(fdef.signature.input_arg, bindings)):
        node_name = f"arg_{k}"
        if binding.is_const:
            graph_def.node.append(const_node(node_name, np.asarray(binding.value)))
        else:
            _placeholder(graph_def, node_name, binding)
            inputs.append(f"{node_name}:0")
        bound[arg.name] = node_name
    try:
        nodes, returns = body_nodes(fdef, functions, _PREFIX, bound)
        graph_def.node.extend(nodes)
        picked = returns if wanted is None else [returns[k] for k in wanted]
        frozen = Frozen(graph_def, inputs, [_canonical(r) for r in picked])
        graph = build(frozen, ParseOptions(inputs=inputs, input_layout="nhwc"), name, "function")
    except UnsupportedError as e:
        raise FunctionNotConvertible("; ".join(str(item) for item in e.items)) from None
    except ConvertError as e:
        raise FunctionNotConvertible(str(e)) from None
    run_passes(graph, [drop_identities])  # the function's Identity returns: readable bodies
    _outputs_in_ir_order(graph)
    return as_subgraph(graph)


def _outputs_in_ir_order(graph: ir.Graph) -> None:
    """A rank-4 output the parser left in TF's order gets a transpose to NCHW (the inputs are NCHW)."""
    for k, tensor in enumerate(graph.outputs):
        if len(graph.shape(tensor)) == 4 and graph.source_layouts.get(tensor) != "NHWC":
            n, h, w, c = graph.shape(tensor)
            name = graph.add_node("transpose", graph.unique_name(f"{tensor}/to_nchw"), [tensor], (n, c, h, w),
                                  {"perm": TO_NCHW}, source_op="(layout)")
            graph.outputs[k] = name
            graph.source_layouts[name] = "NHWC"
