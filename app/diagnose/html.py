"""`convert verify OUT --layers --report report.html`: one self-contained HTML file.

No scripts, no fonts, no network: styles inline, heat maps as data: PNGs (png.py). It shows the
model's summary, the first-divergence line, the error heat maps of the first diverging node and of
the worst node, and the per-layer table with each node's pads and plan as `convert inspect` has them.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

from tf_convert.app import inspect
from tf_convert.convert.ir import Graph

from . import layers, png

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 8px} h2{font-size:16px;margin:24px 0 8px}
table{border-collapse:collapse;font:12px/1.3 ui-monospace,monospace}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;white-space:nowrap}
th{background:#eee} tr.bad td{background:#fde2e1} tr.first td{background:#f9b4b0;font-weight:bold}
.line{font:14px ui-monospace,monospace;padding:8px;background:#f4f4f4;border-left:4px solid #c00}
.ok{border-left-color:#090} figure{display:inline-block;margin:0 24px 0 0;vertical-align:top}
figcaption{font:12px ui-monospace,monospace;max-width:480px;overflow-wrap:anywhere}
img{image-rendering:pixelated} dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}
dt{font-weight:bold} dd{margin:0}
.key span{display:inline-block;width:14px;height:14px;vertical-align:middle;margin:0 4px}
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _summary(conversion: dict[str, Any], doc: dict[str, Any], graph: Graph) -> str:
    v = conversion.get("verify") or {}
    io = lambda rows: ", ".join(f"{r['source_name']} {tuple(r['shape'])}" for r in rows)  # noqa: E731
    items = [
        ("source", f"{conversion['source']['path']} ({conversion['source']['format']})"),
        ("target", conversion["target"]),
        ("inputs", io(conversion["inputs"])), ("outputs", io(conversion["outputs"])),
        ("graph", f"{len(graph.nodes)} IR nodes; ops {', '.join(sorted({n.op for n in graph.nodes}))}"),
        ("pad layers", len(conversion.get("pad_layers", []))),
        ("recorded check",
         f"max_rel {layers.fmt(v.get('max_rel'))}, passed {v.get('passed')}" if v else "not verified"),
        ("this run",
         f"{doc['compared']} of {doc['mappable']} tensors compared, seed {doc['seed']}, rtol {doc['rtol']:g}"),
    ]
    return "<dl>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(val)}</dd>" for k, val in items) + "</dl>"


def _figure(title: str, row: dict[str, Any], pads: list | None) -> str:
    if "heat" not in row:
        return f"<p>{_e(title)}: {_e(row['node'])} has no spatial map to draw.</p>"
    own = tuple(pads) if pads and len(pads) == 4 and all(isinstance(p, int) for p in pads) else None
    data = base64.b64encode(png.encode(png.heat_map(row["heat"], own, tuple(row["border"] or (0, 0, 0, 0))))).decode()
    caption = (f"{title}: {row['node']} ({row['op']}) max_rel {layers.fmt(row['max_rel'])}; border "
               f"{layers.fmt(row['border_max_rel'])}, interior {layers.fmt(row['interior_max_rel'])}")
    return (f'<figure><img alt="error heat map of {_e(row["node"])}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>")


def _table(doc: dict[str, Any], plans: dict[str, dict], target: str, scope: str) -> str:
    head = ["node", "op", "target name", "shape", "pads t,b,l,r", f"{target} plan", "border reach t,b,l,r",
            "max_rel", "border", "interior"]
    first = (doc["first_divergence"] or {}).get("node")
    rows = []
    for r in doc["layers"]:
        plan = plans.get(r["node"], {})
        pads = plan.get("pads")
        beyond = r.get("verdict") == "failed"
        cls = "first" if r["node"] == first else ("bad" if beyond else "")
        cells = [layers.short(r["node"], scope), r["op"], r["target_name"], "x".join(map(str, r["shape"])),
                 "" if pads is None else ",".join(map(str, pads)), plan.get("plan", {}).get(target, ""),
                 "" if r["border"] is None else ",".join(map(str, r["border"])),
                 layers.fmt(r["max_rel"]) + (f" ({r['note']})" if r.get("note") else ""),
                 layers.fmt(r["border_max_rel"]), layers.fmt(r["interior_max_rel"])]
        rows.append(f'<tr class="{cls}">' + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    under = f"<p>node names under <code>{_e(scope)}</code></p>" if scope else ""
    return (under + "<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>")


def render(conversion: dict[str, Any], doc: dict[str, Any], graph: Graph) -> str:
    plans = {r["node"]: r for r in inspect.rows(graph)}
    target = conversion["target"]
    by_node = {r["node"]: r for r in doc["layers"]}
    shown = []
    if doc["first_divergence"]:
        shown.append(("first divergence", by_node[doc["first_divergence"]["node"]]))
    worst = max((r for r in doc["layers"] if r["max_rel"] is not None), key=lambda r: r["max_rel"], default=None)
    if worst is not None and all(worst is not row for _, row in shown):
        shown.append(("worst node", worst))
    scope = layers.common_scope([r["node"] for r in doc["layers"]])
    figures = "".join(_figure(t, r, plans.get(r["node"], {}).get("pads")) for t, r in shown)
    line_class = "line" if doc["first_divergence"] else "line ok"
    key = ('<p class="key">error per position (max over channels, log scale): '
           '<span style="background:#000"></span>none <span style="background:#f00"></span>'
           '<span style="background:#ff0"></span>largest; '
           f'<span style="background:rgb{png.PAD_RGB}"></span>the node\'s own pads; '
           f'<span style="background:rgb{png.REACH_RGB}"></span>inside: interior, outside: border</p>')
    return (
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
        f"<title>convert: per-layer diff, {_e(graph.name)} -> {_e(target)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>Per-layer diff: {_e(graph.name)} &rarr; {_e(target)}</h1>"
        f'<p class="{line_class}">{_e(layers.divergence_line(doc))}</p>'
        f"<h2>Model</h2>{_summary(conversion, doc, graph)}"
        f"<h2>Error maps</h2>{key}{figures}"
        f"<h2>Layers (graph order)</h2>{_table(doc, plans, target, scope)}"
        "</body></html>\n"
    )


def write(path: Path, conversion: dict[str, Any], doc: dict[str, Any], graph: Graph) -> None:
    Path(path).write_text(render(conversion, doc, graph), encoding="utf-8")
