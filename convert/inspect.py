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
            for caps in (padding.TORCH, padding.MXNET, padding.ONNX):
                row["plan"][caps.name] = _window_plan(node, graph, caps)
        elif node.op == "conv_transpose2d":
            row["pads"] = ["crop", *node.attrs["crop"]]
            row["plan"] = {t: _transposed_plan(node, graph) for t in ("torch", "mxnet", "onnx")}
        elif node.op == "pad":
            row["pads"] = [p for pair in node.attrs["pads"][2:] for p in pair]
        table.append(row)
    return table


def render(graph: Graph) -> str:
    table = rows(graph)
    head = ["node", "op", "in", "out", "pads t,b,l,r", "torch", "mxnet", "onnx"]
    lines = [head]
    for r in table:
        shape_in = " ".join("x".join(map(str, s)) for s in r["in"])
        pads = "" if r["pads"] is None else ",".join(map(str, r["pads"]))
        lines.append(
            [r["node"], r["op"], shape_in, "x".join(map(str, r["out"])), pads,
             r["plan"].get("torch", ""), r["plan"].get("mxnet", ""), r["plan"].get("onnx", "")]
        )
    widths = [min(max(len(str(line[i])) for line in lines), 48) for i in range(len(head))]
    out = []
    for line in lines:
        out.append("  ".join(str(cell)[:48].ljust(w) for cell, w in zip(line, widths)).rstrip())
    asym = sum(1 for r in table if r["pads"] and r["op"] in SPATIAL and (r["pads"][0] != r["pads"][1] or r["pads"][2] != r["pads"][3]))
    out.append(f"{len(table)} nodes; {asym} with asymmetric pads; inputs {graph.inputs}; outputs {graph.outputs}")
    return "\n".join(out)
