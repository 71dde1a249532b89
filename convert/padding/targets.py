"""One plan function per target: `plan(node, graph, options) -> Plan`.

Emitters and `convert inspect` both call `plan`, so what inspect says a target does is what the
target's emitter writes (tests/app/test_inspect.py checks it against `pad_layers` on the padding
matrix). The target is the options' `target` (PlanOptions); the per-target recipes live in
plans.py (torch/ONNX/MXNet windows and transposed convs), mxnet.py and caffe.py.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..ir.ops import AVERAGING_OPS, OPS, PADDED_OPS, WINDOW_OPS
from .caffe import CaffePlan, caffe_plan_conv, caffe_plan_pool, caffe_plan_transposed
from .costs import conv_lowering
from .mxnet import plan_avg_pool, pool_full_hw
from .plan_type import PadLayer, PadRecord, Plan, PlanOptions
from .plans import MXNET, ONNX, TORCH, TargetCaps, kernel_extension, plan_transposed, plan_window
from .rules import Pads
from .sizes import needs_runtime_pads, size_bound

if TYPE_CHECKING:
    from tf_convert.convert.ir import Graph, Node

# PADDED_OPS: the IR ops whose lowering involves padding (every other op gets an empty plan);
# WINDOW_OPS: conv and pooling. Both are the catalog's flags (convert/ir/ops.py).

PlanFn = Callable[["Node", "Graph", PlanOptions], Plan]
_PLANNERS: dict[str, PlanFn] = {}


def _planner(target: str) -> Callable[[PlanFn], PlanFn]:
    def register(fn: PlanFn) -> PlanFn:
        _PLANNERS[target] = fn
        return fn

    return register


def plan(node: Node, graph: Graph, options: PlanOptions) -> Plan:
    """How `options.target` lowers `node`'s padding."""
    if not isinstance(options, PlanOptions):  # a target's own options: pass their .plan_options()
        raise TypeError(f"padding.plan takes PlanOptions, not {type(options).__name__}")
    target = options.target
    if node.op not in PADDED_OPS:
        return Plan(target, node.op)
    result = _PLANNERS[target](node, graph, options)
    if node.attrs.get("padding") == "SAME" and not result.size_dependent:
        # pads a parser derived from TF SAME follow the input size (for parsers that record it)
        result = dataclasses.replace(result, size_dependent=True)
    return result


def lowerings(graph: Graph, options: PlanOptions) -> dict[str, str]:
    """Node -> how `options.target` lowers its padding (the plan's summary, e.g. 'kernel taps',
    'pad layer', 'in layer'), for every node that has padding to lower: conversion.json's `lowerings`."""
    found = {}
    for node in graph.nodes:
        if node.op in PADDED_OPS:
            summary = plan(node, graph, options).summary()
            if summary != "-":
                found[node.name] = summary
    return found


def _in_hw(node: Node, graph: Graph) -> tuple[int, int]:
    shape = graph.shape(node.inputs[0])
    return int(shape[2]), int(shape[3])


# ---- torch / ONNX / MXNet: shared window and transposed recipes -------------------------------


def _window(node: Node, graph: Graph, caps: TargetCaps, count_include_pad: bool | None = None) -> Plan:
    a = node.attrs
    cip = bool(a.get("count_include_pad", False)) if count_include_pad is None else count_include_pad
    w = plan_window(node.op, _in_hw(node, graph), a["kernel"], a["stride"], a["pads"], caps, cip)
    records = () if w.pad_layer is None else (PadRecord(tuple(w.pad_layer.pads), w.reason),)
    return Plan(caps.name, node.op, pad_layer=w.pad_layer, layer_pads=w.layer_pads,
                count_include_pad=w.count_include_pad, divisor_map=w.divisor_map, records=records,
                size_dependent=w.divisor_map is not None, reason=w.reason)


def _transposed(node: Node, graph: Graph, target: str, record_crop: bool) -> Plan:
    a = node.attrs
    t = plan_transposed(_in_hw(node, graph), a["kernel"], a["stride"], a.get("dilation", (1, 1)),
                        a["crop"], a["output_size"])
    ph, pw = t.layer_pad
    records = (PadRecord(tuple(t.crop), t.reason, "crop"),) if record_crop and not t.crop.zero else ()
    return Plan(target, node.op, layer_pads=Pads(ph, ph, pw, pw), output_padding=tuple(t.output_padding),
                crop=t.crop, records=records, size_dependent=True, reason=t.reason)


KERNEL_REASON = "asymmetric pads; zero taps added to the kernel (measured cheaper than a pad layer)"


def _conv_kernel_taps(node: Node, graph: Graph, options: PlanOptions) -> Plan | None:
    """The kernel-extension plan of a conv with static asymmetric pads, where it is exact and the
    measured-cheaper lowering for the target (convert/padding/costs.py); else None (a pad layer).
    `options.conv_lowering` ('pad' or 'kernel') forces one, for bench/lowering.py."""
    a = node.attrs
    pads = Pads(*a["pads"])
    if node.op != "conv2d" or pads.symmetric:
        return None
    in_c = graph.shape(node.inputs[0])[1]
    choice = (options.conv_lowering
              or conv_lowering(options.target, a["groups"] == in_c > 1, a["kernel"], in_c))
    extended = kernel_extension(pads, a.get("dilation", (1, 1))) if choice == "kernel" else None
    if extended is None:
        return None
    taps, layer_pads = extended
    return Plan(options.target, node.op, layer_pads=layer_pads, kernel_taps=taps, reason=KERNEL_REASON)


RUNTIME_REASON = "TF SAME pads computed from the runtime input size (these at the conversion size)"


def _runtime(node: Node, graph: Graph, options: PlanOptions, in_layer: bool = False) -> Plan | None:
    """The plan of a size-free model whose pads follow the runtime size, or None (static pads).
    torch: a pad layer computing TF SAME's pads; ONNX (`in_layer`): the layer's auto_pad SAME_UPPER,
    which is TF's rule for conv and pooling (average pooling: count_include_pad=0 divides by the real
    elements, checked in onnxruntime by tests/app/test_dynamic_sizes.py)."""
    if options.static_shapes or not needs_runtime_pads(node) or size_bound(graph) is not None:
        return None
    pads = Pads(*node.attrs["pads"])
    if in_layer:
        return Plan(options.target, node.op, layer_pads=pads, size_dependent=True, runtime=True, reason=RUNTIME_REASON)
    value = OPS[node.op].pad_fill
    return Plan(options.target, node.op, pad_layer=PadLayer(pads, value),
                records=(PadRecord(tuple(pads), RUNTIME_REASON),),
                size_dependent=True, runtime=True, reason=RUNTIME_REASON)


@_planner("torch")
def torch_plan(node: Node, graph: Graph, options: PlanOptions) -> Plan:
    if node.op in WINDOW_OPS:
        return _runtime(node, graph, options) or _conv_kernel_taps(node, graph, options) or _window(node, graph, TORCH)
    if node.op == "conv_transpose2d":
        return _transposed(node, graph, "torch", record_crop=True)
    return Plan("torch", node.op)  # a TF Pad is a pad layer of the source, not one we add


@_planner("onnx")
def onnx_plan(node: Node, graph: Graph, options: PlanOptions) -> Plan:
    if node.op in WINDOW_OPS:
        return _runtime(node, graph, options, in_layer=True) or _window(node, graph, ONNX)
    if node.op == "conv_transpose2d":
        return _transposed(node, graph, "onnx", record_crop=False)
    return Plan("onnx", node.op)


@_planner("mxnet")
def mxnet_plan(node: Node, graph: Graph, options: PlanOptions) -> Plan:
    a = node.attrs
    if node.op == "conv_transpose2d":
        return _transposed(node, graph, "mxnet", record_crop=True)
    if node.op == "conv2d":
        return _conv_kernel_taps(node, graph, options) or _window(node, graph, MXNET)
    if OPS[node.op].pad_fill or (node.op in AVERAGING_OPS and a.get("count_include_pad", False)):
        return _window(node, graph, MXNET)
    if node.op not in AVERAGING_OPS:
        return Plan("mxnet", node.op)
    # Zero-padding first would be counted by the average: aligned symmetric pad, 'full'
    # convention, exclude the pad, then slice (convert/padding/mxnet.py).
    in_hw = _in_hw(node, graph)
    p = plan_avg_pool(in_hw, a["kernel"], a["stride"], a["pads"])
    layer_pads = Pads(p.layer_pads[0], p.layer_pads[0], p.layer_pads[1], p.layer_pads[1])
    if p.keep is None:
        return Plan("mxnet", node.op, layer_pads=layer_pads, reason=p.reason)
    full = pool_full_hw(in_hw, a["kernel"], a["stride"], p.layer_pads)
    (kh, kw), (oh, ow) = p.keep, p.out_hw
    crop = Pads(kh, full[0] - kh - oh, kw, full[1] - kw - ow)
    return Plan("mxnet", node.op, layer_pads=layer_pads, convention=p.convention, crop=crop,
                records=(PadRecord(tuple(a["pads"]), p.reason, "crop"),), size_dependent=True, reason=p.reason)


# ---- Caffe: its own rules (convert/padding/caffe.py) -------------------------------------------


def caffe_depthwise(node: Node, graph: Graph) -> bool:
    """groups == in == out channels (> 1): OpenCV runs such convs on a path of its own."""
    in_c = graph.shape(node.inputs[0])[1]
    return node.attrs["groups"] == in_c == node.params["weight"].shape[0] and in_c > 1


def caffe_transposed_kernel(node: Node) -> np.ndarray:
    """The Deconvolution weight: OpenCV's Deconvolution ignores dilation (measured: wrong output
    size), so a dilated kernel is written out with its holes as zeros -- the same operator."""
    weight = node.params["weight"]
    dh, dw = node.attrs.get("dilation", (1, 1))
    if (dh, dw) == (1, 1):
        return weight
    i, o, kh, kw = weight.shape
    dilated = np.zeros((i, o, (kh - 1) * dh + 1, (kw - 1) * dw + 1), weight.dtype)
    dilated[:, :, ::dh, ::dw] = weight
    return dilated


CAFFE_MODES = {"pad": "layer", "kernel": "kernel", "shift": "shift"}  # costs.LOWERINGS -> --caffe-pad


def _from_caffe(node: Node, c: CaffePlan, size_dependent: bool) -> Plan:
    group = None if c.pad_group is None else PadLayer(Pads(*c.pad_group), c.pad_value)
    records = () if c.pad_group is None else (PadRecord(tuple(c.pad_group), c.reason),)
    if node.op == "conv2d" and not Pads(*c.trim).zero:  # the window shift's slice
        records = (PadRecord(tuple(c.trim), c.reason, "crop"),)
    return Plan("caffe", node.op, pad_layer=group, layer_pads=c.layer_pads, kernel_taps=c.kernel_taps,
                crop=c.trim, divisor_map=c.scale_map, records=records, size_dependent=size_dependent,
                reason=c.reason)


@_planner("caffe")
def caffe_plan(node: Node, graph: Graph, options: PlanOptions) -> Plan:
    a = node.attrs
    if node.op == "conv2d":
        depthwise = caffe_depthwise(node, graph)
        mode = options.caffe_pad
        if mode == "auto":  # the measured-cheapest lowering for this kind of layer (costs.py)
            in_c = graph.shape(node.inputs[0])[1]
            mode = CAFFE_MODES[conv_lowering("caffe", depthwise, a["kernel"], in_c)]
        c = caffe_plan_conv(a["pads"], a["dilation"], mode, a["kernel"], depthwise, _in_hw(node, graph), a["stride"])
        return _from_caffe(node, c, size_dependent=mode == "shift")
    if node.op in ("max_pool2d", "avg_pool2d"):
        c = caffe_plan_pool(node.op, _in_hw(node, graph), a["kernel"], a["stride"], a["pads"],
                            bool(a.get("count_include_pad", False)))
        return _from_caffe(node, c, size_dependent=True)
    if node.op == "conv_transpose2d":
        kernel = caffe_transposed_kernel(node).shape[2:]
        c = caffe_plan_transposed(_in_hw(node, graph), kernel, a["stride"], (1, 1), a["crop"], a["output_size"],
                                  options.caffe_pad)
        return _from_caffe(node, c, size_dependent=True)
    # node.op == "pad": Caffe has no pad layer; a 4-D TF Pad becomes a pad layer group
    pads = [tuple(int(v) for v in p) for p in a["pads"]]
    if len(pads) != 4:
        return Plan("caffe", node.op)
    mode = a["mode"]
    record = PadRecord((*pads[2], *pads[3]), f"TF Pad ({mode}); pad layer group")
    return Plan("caffe", node.op, records=(record,), reason=record.reason)


__all__ = ["PADDED_OPS", "plan", "lowerings", "torch_plan", "onnx_plan", "mxnet_plan", "caffe_plan", "caffe_depthwise",
           "caffe_transposed_kernel"]
