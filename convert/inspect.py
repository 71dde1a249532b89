"""`convert inspect`: the IR as a table with the per-side pads and what each target will do."""

from __future__ import annotations

from typing import Any

from . import padding
from .ir import Graph, Node

SPATIAL = ("conv2d", "max_pool2d", "avg_pool2d")


def _window_plan(node: Node, graph: Graph, caps: padding.TargetCaps) -> str:
    in_hw = graph.shape(node.inputs[0])[2:]
    plan = padding.plan_window(
        node.op, in_hw, node.attrs["kernel"], node.attrs["stride"], node.attrs["pads"], caps,
        node.attrs.get("count_include_pad", False),
    )
    if plan.pad_layer is None:
        return "in layer" if not padding.Pads(*plan.layer_pads).zero else "-"
    extra = " + divisor map" if plan.divisor_map is not None else ""
    value = " (-inf)" if plan.pad_layer.value != 0 else ""
    return f"pad layer{value}{extra}"


def _mxnet_plan(node: Node, graph: Graph) -> str:
    if node.op != "avg_pool2d" or node.attrs.get("count_include_pad"):
        return _window_plan(node, graph, padding.MXNET)
    a = node.attrs
    plan = padding.mxnet_plan_avg_pool(graph.shape(node.inputs[0])[2:], a["kernel"], a["stride"], a["pads"])
    if plan.keep is None:
        return "in layer" if any(plan.layer_pads) else "-"
    return "aligned pad + slice"


def _caffe_plan(node: Node, graph: Graph) -> str:
    a = node.attrs
    in_shape = graph.shape(node.inputs[0])
    if node.op == "conv2d":
        depthwise = a["groups"] == in_shape[1] == graph.shape(node.output)[1]
        plan = padding.caffe_plan_conv(a["pads"], a["dilation"], "layer", a["kernel"], depthwise)
    else:
        plan = padding.caffe_plan_pool(node.op, in_shape[2:], a["kernel"], a["stride"], a["pads"],
                                       a.get("count_include_pad", False))
    parts = []
    if plan.pad_group is not None:
        parts.append("pad group" + (" (-FLT_MAX)" if plan.pad_value else ""))
    if not padding.Pads(*plan.kernel_taps).zero:
        parts.append("kernel taps")
    if not padding.Pads(*plan.trim).zero:
        parts.append("slice")
    if plan.scale_map is not None:
        parts.append("scale map")
    if not parts:  # Caffe's ceil-rounded pooling can absorb a trailing pad by itself
        return "in layer" if any(plan.layer_pad) or any(a["pads"]) else "-"
    return " + ".join(parts)


def _transposed_plan(node: Node, graph: Graph) -> str:
    a = node.attrs
    plan = padding.plan_transposed(
        graph.shape(node.inputs[0])[2:], a["kernel"], a["stride"], a["dilation"], a["crop"], a["output_size"]
    )
    return "slice after" if not plan.crop.zero else "in layer"


def rows(graph: Graph) -> list[dict[str, Any]]:
    table = []
    for node in graph.nodes:
        if node.op == "const":
            continue
        row: dict[str, Any] = {
            "node": node.name,
            "op": node.op,
            "source_op": node.source_op,
            "in": [list(graph.shape(i)) for i in node.inputs],
            "out": list(graph.shape(node.output)),
            "pads": list(node.attrs["pads"]) if "pads" in node.attrs and node.op != "pad" else None,
            "plan": {},
        }
        if node.op in SPATIAL:
            row["plan"] = {
                "torch": _window_plan(node, graph, padding.TORCH),
                "caffe": _caffe_plan(node, graph),
                "mxnet": _mxnet_plan(node, graph),
                "onnx": _window_plan(node, graph, padding.ONNX),
            }
        elif node.op == "conv_transpose2d":
            row["pads"] = ["crop", *node.attrs["crop"]]
            row["plan"] = {t: _transposed_plan(node, graph) for t in ("torch", "caffe", "mxnet", "onnx")}
        elif node.op == "pad":
            row["pads"] = [p for pair in node.attrs["pads"][2:] for p in pair]
        table.append(row)
    return table


def render(graph: Graph) -> str:
    table = rows(graph)
    head = ["node", "op", "in", "out", "pads t,b,l,r", "torch", "caffe", "mxnet", "onnx"]
    lines = [head]
    for r in table:
        shape_in = " ".join("x".join(map(str, s)) for s in r["in"])
        pads = "" if r["pads"] is None else ",".join(map(str, r["pads"]))
        lines.append(
            [r["node"], r["op"], shape_in, "x".join(map(str, r["out"])), pads,
             *(r["plan"].get(t, "") for t in ("torch", "caffe", "mxnet", "onnx"))]
        )
    widths = [min(max(len(str(line[i])) for line in lines), 48) for i in range(len(head))]
    out = []
    for line in lines:
        out.append("  ".join(str(cell)[:48].ljust(w) for cell, w in zip(line, widths)).rstrip())
    asym = sum(1 for r in table if r["pads"] and r["op"] in SPATIAL and (r["pads"][0] != r["pads"][1] or r["pads"][2] != r["pads"][3]))
    out.append(f"{len(table)} nodes; {asym} with asymmetric pads; inputs {graph.inputs}; outputs {graph.outputs}")
    return "\n".join(out)
