"""What every emitter takes and returns, and the one handler contract all four share.

A handler lowers one IR node: `handler(ctx) -> <the target's fragment>`, where `ctx` is the
target's subclass of `NodeContext` (node, graph, the target's options -- opset included -- plus
what that target's builder needs). A limit check, for nodes a handler cannot express, is
registered with its handler and has one signature: `limit(ctx: NodeContext) -> hint | None`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from tf_convert.convert.errors import Unsupported
from tf_convert.convert.ir import OPS, Graph, GraphIndex, Node, runtime_dims
from tf_convert.convert.ir.subgraph import subgraphs
from tf_convert.convert.padding import plan
from tf_convert.convert.registry import OpTable

from .options import EmitOptions as EmitOptions  # every target's options in one bag
from .options import TargetOptions, options_for

F = TypeVar("F", bound=Callable)


@dataclass
class EmitResult:
    files: list[str] = field(default_factory=list)  # relative to the output directory
    # one entry per separate pad layer: {"node": IR node, "pads": [t, b, l, r], "reason": str}
    pad_layers: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # per graph input/output, in order: {"name": name in the target, "shape": [...], "layout": "NCHW"}, and
    # "returns_shape" where the target's runtime returns another shape than TF's (MXNet's 0-d outputs: (1,))
    inputs: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    # IR tensor -> the name its value has in the target (torch forward local, ONNX value, Caffe blob,
    # MXNet internal output), for the per-layer diff (`convert verify --layers`)
    tensor_names: dict[str, str] = field(default_factory=dict)
    # why the written model only runs at the conversion's H/W (None: any size, pads follow the input)
    size_bound: str | None = "the format bakes the pads for the conversion size"


@dataclass(frozen=True)
class NodeContext:
    """What a handler and a limit check see of one node."""

    node: Node
    graph: Graph
    options: TargetOptions
    index: GraphIndex  # producers and readers of `graph`, built once per emit

    @property
    def attrs(self) -> dict[str, Any]:
        return self.node.attrs

    @property
    def params(self) -> dict[str, Any]:
        return self.node.params

    def plan(self):
        """The target's padding plan for this node (the one `convert inspect` shows)."""
        return plan(self.node, self.graph, self.options.plan_options())


Limit = Callable[[NodeContext], "str | None"]


class HandlerTable(OpTable):
    """One handler per IR op, each registered with its optional limit check."""

    def __init__(self, target: str, no_handler_hint: str):
        super().__init__(target)
        self.target = target
        self.no_handler_hint = no_handler_hint
        self._limits: dict[str, Limit] = {}

    def register(self, *ops: str, limit: Limit | None = None) -> Callable[[F], F]:
        decorate = super().register(*ops)
        if limit is not None:
            self._limits.update({op: limit for op in ops})
        return decorate

    def limit(self, ctx: NodeContext) -> str | None:
        check = self._limits.get(ctx.node.op)
        return check(ctx) if check else None

    def nested_limit(self, ctx: Any) -> str | None:
        """A control node's limit: the first node of its nested graphs this target cannot express, as a hint
        naming it (None: all can)."""
        for attr, body in subgraphs(ctx.node):
            problems = self.unsupported(body, ctx.options)
            if problems:
                return f"its {attr} holds {problems[0]}"
        return None

    def unsupported(self, graph: Graph, options: Any = None) -> list[Unsupported]:
        """Every node the target cannot express (with `options`, e.g. the ONNX opset): no handler
        for its op, or its limit check gives a hint."""
        options = options_for(self.target, options)
        index = GraphIndex(graph)
        run_time = runtime_dims.has_run_time(graph)  # a size follows a run-time value somewhere
        found = []
        for node in graph.nodes:
            # a size this target cannot follow comes first: it is the reason whatever the handler
            hint = runtime_dims.refusal(graph, node, self.target) if run_time else None
            if hint is None and node.op not in self:  # the catalog's reason for refusing the op, if it states one
                hint = OPS[node.op].refused.get(self.target) if node.op in OPS else None
                hint = hint or self.no_handler_hint
            elif hint is None:
                hint = self.limit(NodeContext(node, graph, options, index))
            if hint:
                found.append(Unsupported(node.op, node.name, hint))
        return found
