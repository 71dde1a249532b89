"""The Caffe handler contract: each handler appends the Caffe layers for one node and returns its
result blob.

TABLE maps op -> handler(ctx) -> blob (ctx: node, graph, CaffeOptions and the NetBuilder); a
handler's limit check(ctx) -> hint or None, for ops Caffe can express only in some
configurations, is registered with it. Padding decisions come from `ctx.plan()` (convert.padding);
handlers only follow the plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from tf_convert.emitters.base import HandlerTable, NodeContext

from .builder import NetBuilder

TABLE = HandlerTable("caffe", "no Caffe (BVLC) equivalent")


@dataclass(frozen=True)
class Ctx(NodeContext):
    builder: NetBuilder


BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")


def opencv_dialect(ctx: NodeContext) -> bool:
    """True when the files are for OpenCV DNN (--caffe-dialect opencv): its own layers may be written."""
    return getattr(ctx.options, "caffe_dialect", "bvlc") == "opencv"


def opencv_hint(reason: str, layer: str) -> str:
    """A BVLC refusal that OpenCV DNN's Caffe dialect can express: says so, and how."""
    return f"{reason}; --caffe-dialect opencv writes it as OpenCV DNN's {layer} (BVLC Caffe cannot read that file)"


def positive_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis
