"""The per-layer diff: every IR tensor that both TF and the target expose, compared on one input.

Per tensor: metric.judge, as in --verify (max_rel = max|a-b| / max|ref| of that tensor, its float32
floor and SNR floor, the verdict), and max_rel split into the border (positions an upstream pad can
reach, see border.py) and the interior. The first tensor in graph order judged "failed" is the first
divergence: a bright border over a clean interior says "pads",
error everywhere says "the op itself".
"""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from tf_convert.app import mapping
from tf_convert.app.report import _clean
from tf_convert.app.verify import make_inputs, reference_process, unreadable_output
from tf_convert.app.verify.metric import CANNOT_TELL, FAILED, judge
from tf_convert.convert.ir import Graph

from . import border


def _rel(diff: np.ndarray, scale: float) -> float | None:
    return float(np.max(diff)) / scale if diff.size else None


def compare(actual: np.ndarray, expected: np.ndarray, widths: border.Widths | None, rtol: float = 1e-4,
            depth: int = 1) -> dict[str, Any]:
    """metric.judge of the tensor (max_rel against its own peak, verdict), the same max_rel on the border
    and in the interior, plus the H x W error map (rank 4)."""
    judged = judge(actual, expected, rtol, depth)
    a = np.asarray(actual, np.float64)
    b = np.asarray(expected, np.float64)
    scale = judged["scale"] or 1.0  # an all-zero reference: the maps show the absolute error
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf: zeroed below
        diff = np.abs(a - b)
    diff[~np.isfinite(diff)] = math.inf
    diff[(a == b) | (np.isnan(a) & np.isnan(b))] = 0.0
    row: dict[str, Any] = {"max_rel": judged["max_rel"], "verdict": judged["verdict"], "why": judged["why"],
                           "snr_db": judged["snr_db"], "scale": judged["scale"], "tolerance_rel": judged["tolerance"]
                           / scale, "border_max_rel": None, "interior_max_rel": None,
                           "border": list(widths) if widths is not None else None}
    if widths is not None and diff.ndim == 4:
        heat = diff.max(axis=(0, 1)) / scale  # per position, max over batch and channels
        on_border = border.mask(diff.shape, widths)
        row["border_max_rel"] = _rel(heat[on_border], 1.0)
        row["interior_max_rel"] = _rel(heat[~on_border], 1.0)
        row["heat"] = heat
    return row


# the only ops whose tensor a pass may keep in another element order than TF (a flatten of NCHW whose next
# dense layer's weights are permuted to match); anywhere else, and at an output, the order is the value
REORDERING_OPS = frozenset({"reshape", "transpose"})


def _reordered(actual: np.ndarray, expected: np.ndarray, rtol: float, depth: int) -> bool:
    """The same multiset of values in another order (judged like the tensor itself)."""
    a, b = np.sort(actual, axis=None), np.sort(expected, axis=None)
    return judge(a, b, rtol, depth)["verdict"] != FAILED


def _source_value(value: np.ndarray, perm: list[int] | None) -> np.ndarray:
    return np.transpose(value, perm) if perm is not None else value


def run(source: Path, graph: Graph, emitter: ModuleType, out_dir: Path, tensor_names: dict[str, str],
        rtol: float = 1e-4, seed: int = 0) -> dict[str, Any]:
    """Compare every mappable IR tensor; the document `convert verify --layers --json` prints."""
    inputs = make_inputs(graph, seed)
    sources = graph.metadata.get(mapping.KEY) or {}
    nodes = [n for n in graph.nodes if n.op != "const" and n.output in sources and n.output in tensor_names]
    reference = reference_process.run_reference_tensors(source, graph, inputs,
                                                        [sources[n.output]["tensor"] for n in nodes])
    fetch = getattr(emitter, "run_internals", None)
    try:
        target = fetch(Path(out_dir), inputs, [tensor_names[n.output] for n in nodes]) if fetch else {}
    except Exception as exc:  # noqa: BLE001 - the runtime's own error, on files --verify once ran
        raise unreadable_output(getattr(emitter, "TARGET", "target"), out_dir, exc) from None
    widths = border.propagate(graph)
    layers = []
    for depth, node in enumerate(nodes, start=1):  # ops from the input: scales the float32 floor
        src = sources[node.output]
        expected, actual = reference.get(src["tensor"]), target.get(tensor_names[node.output])
        if expected is None or actual is None:
            continue
        expected = _source_value(expected, src["perm"])
        actual = np.asarray(actual)
        row = {"node": node.name, "op": node.op, "source_tensor": src["tensor"],
               "target_name": tensor_names[node.output], "shape": list(expected.shape)}
        if actual.shape != expected.shape and actual.size == expected.size:
            actual = actual.reshape(expected.shape)  # the same values, viewed differently (2-D blobs)
        if actual.shape != expected.shape:  # a wrong size is a divergence too (e.g. a pad removed)
            row.update(max_rel=math.inf, border_max_rel=None, interior_max_rel=None, border=None, verdict=FAILED,
                       why=f"target shape {list(actual.shape)}", note=f"target shape {list(actual.shape)}")
        else:
            row.update(compare(actual, expected, widths.get(node.output), rtol, depth))
            if (row["verdict"] == FAILED and node.op in REORDERING_OPS and node.output not in graph.outputs
                    and _reordered(actual, expected, rtol, depth)):
                # a pass may lay a tensor out differently from TF (a flatten of NCHW with the next
                # dense layer's weights permuted to match): same values, other order; not a fault
                row.update(max_rel=None, border_max_rel=None, interior_max_rel=None, verdict="not compared",
                           note="element order differs from TF (a pass reordered it); not compared")
                row.pop("heat", None)
        layers.append(row)
    compared = [r for r in layers if r["max_rel"] is not None]
    beyond = [r for r in compared if r["verdict"] == FAILED]
    worst = max(compared, key=lambda r: r["max_rel"], default=None)
    return {"rtol": rtol, "seed": seed, "compared": len(compared), "mappable": len(nodes), "layers": layers,
            "first_divergence": _brief(beyond[0]) if beyond else None,
            "worst": _brief(worst) if worst is not None and beyond else None,
            "passed": not beyond}


def _brief(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "heat"}


def public(doc: dict[str, Any]) -> dict[str, Any]:
    """The document without the error maps, infinities as strings (for JSON)."""
    return _clean(dict(doc, layers=[_brief(r) for r in doc["layers"]]))


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2e}"


def divergence_line(doc: dict[str, Any]) -> str:
    first = doc["first_divergence"]
    if first is None:
        return f"no divergence: {doc['compared']} tensors within rtol {doc['rtol']:g}"
    return (f"first divergence: {first['node']} ({first['op']}) max_rel {fmt(first['max_rel'])}; "
            f"border {fmt(first['border_max_rel'])}, interior {fmt(first['interior_max_rel'])}")


def common_scope(names: list[str], share: float = 0.8) -> str:
    """Leading scopes ("StatefulPartitionedCall/model/") most names share: shown once, not per row."""
    split = [n.split("/")[:-1] for n in names]
    prefix: list[str] = []
    while True:
        heads = [p[len(prefix)] for p in split if p[:len(prefix)] == prefix and len(p) > len(prefix)]
        if not heads:
            break
        head = max(set(heads), key=heads.count)
        if heads.count(head) < share * len(names):
            break
        prefix.append(head)
    return "".join(f"{p}/" for p in prefix)


def short(name: str, scope: str) -> str:
    return name[len(scope):] if scope and name.startswith(scope) else name


def render(doc: dict[str, Any]) -> str:
    """The table in graph order (common scope shown once), then the first-divergence line."""
    head = ["node", "op", "target", "shape", "border t,b,l,r", "max_rel", "border", "interior", ""]
    scope = common_scope([r["node"] for r in doc["layers"]])
    lines = [head]
    for r in doc["layers"]:
        flag = ("<<" if r.get("verdict") == FAILED else "cannot tell" if r.get("verdict") == CANNOT_TELL
                else r.get("note", ""))
        lines.append([short(r["node"], scope), r["op"], r["target_name"], "x".join(map(str, r["shape"])),
                      "" if r["border"] is None else ",".join(map(str, r["border"])),
                      fmt(r["max_rel"]), fmt(r["border_max_rel"]), fmt(r["interior_max_rel"]), flag])
    widths = [min(max(len(str(line[i])) for line in lines), 40) for i in range(len(head))]
    out = [f"(node names under {scope})"] if scope else []
    out += ["  ".join(str(c)[:40].ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines]
    out.append(divergence_line(doc))
    return "\n".join(out)
