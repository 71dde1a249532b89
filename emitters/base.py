"""What every emitter takes and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Container

from convert.errors import Unsupported
from convert.ir import Graph, Node


@dataclass
class EmitOptions:
    nhwc: bool = False  # keep TF's NHWC layout at the model's inputs/outputs (torch)
    caffe_pad: str = "layer"  # Caffe asymmetric pads: 'layer' (pad layer group) or 'kernel'
    opset: int = 17  # ONNX opset
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class EmitResult:
    files: list[str] = field(default_factory=list)  # relative to the output directory
    # one entry per separate pad layer: {"node": IR node, "pads": [t, b, l, r], "reason": str}
    pad_layers: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # per graph input/output, in order: {"name": name in the target, "shape": [...], "layout": "NCHW"}
    inputs: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    # IR tensor -> the name its value has in the target (torch forward local, ONNX value, Caffe blob,
    # MXNet internal output), for the per-layer diff (`convert verify --layers`)
    tensor_names: dict[str, str] = field(default_factory=dict)


def unsupported_nodes(
    graph: Graph, handled: Container[str], no_handler_hint: str, limit: Callable[[Node], str | None]
) -> list[Unsupported]:
    """Every node a target cannot express: its op has no handler, or `limit(node)` gives a hint."""
    found = []
    for node in graph.nodes:
        hint = no_handler_hint if node.op not in handled else limit(node)
        if hint:
            found.append(Unsupported(node.op, node.name, hint))
    return found
