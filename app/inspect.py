"""`convert inspect`: the IR as a table with the per-side pads and what each target will do.

The per-target column is `convert.padding.plan(node, graph, options).summary()` -- the very plan
the target's emitter follows -- so inspect cannot disagree with a conversion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tf_convert.convert import padding
from tf_convert.convert.ir import Graph
from tf_convert.convert.ir.ops import WINDOW_OPS
from tf_convert.emitters.options import TARGETS, options_for


def target_options(options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every target's options (emitters.options dataclasses) from flag values such as
    {'caffe_pad': 'kernel', 'opset': 13}; each target takes the keys it knows."""
    return {t: options_for(t, dict(options or {})) for t in TARGETS}


def rows(graph: Graph, options: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per non-constant node. For nodes whose lowering involves padding, `plan` maps each
    target to its plan summary and `targets` to the plan's details, `pad_layer` saying whether
    the target writes a separate layer for the node (exactly its `pad_layers` entries)."""
    per_target = target_options(options)
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
            "targets": {},
        }
        if node.op == "conv_transpose2d":
            row["pads"] = ["crop", *node.attrs["crop"]]
        elif node.op == "pad":
            row["pads"] = [p for pair in node.attrs["pads"][2:] for p in pair]
        if node.op in padding.PADDED_OPS:
            for target, opts in per_target.items():
                plan = padding.plan(node, graph, opts.plan_options())
                row["plan"][target] = plan.summary()
                row["targets"][target] = plan.as_dict()
        table.append(row)
    return table


def pad_layer_nodes(table: list[dict[str, Any]], target: str) -> list[str]:
    """The nodes for which `target` writes a separate pad layer (per `rows`), in graph order."""
    return [r["node"] for r in table if r["targets"].get(target, {}).get("pad_layer")]


def render(graph: Graph, options: Mapping[str, Any] | None = None, table: list[dict[str, Any]] | None = None) -> str:
    table = rows(graph, options) if table is None else table
    head = ["node", "op", "in", "out", "pads t,b,l,r", *TARGETS]
    lines = [head]
    for r in table:
        shape_in = " ".join("x".join(map(str, s)) for s in r["in"])
        pads = "" if r["pads"] is None else ",".join(map(str, r["pads"]))
        lines.append(
            [r["node"], r["op"], shape_in, "x".join(map(str, r["out"])), pads,
             *(r["plan"].get(t, "") for t in TARGETS)]
        )
    widths = [min(max(len(str(line[i])) for line in lines), 48) for i in range(len(head))]
    out = []
    for line in lines:
        out.append("  ".join(str(cell)[:48].ljust(w) for cell, w in zip(line, widths)).rstrip())
    asym = sum(1 for r in table if r["pads"] and r["op"] in WINDOW_OPS
               and (r["pads"][0] != r["pads"][1] or r["pads"][2] != r["pads"][3]))
    out.append(f"{len(table)} nodes; {asym} with asymmetric pads; inputs {graph.inputs}; outputs {graph.outputs}")
    return "\n".join(out)
