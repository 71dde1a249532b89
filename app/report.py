"""conversion.json, the `inspect` table, and the lines the CLI prints."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from tf_convert.convert.ir import Graph
from tf_convert.convert.padding.sizes import size_words

from .verify import feeds, token_inputs


def _io(graph: Graph, names: list[str], emitted_io: list[dict] | None) -> list[dict[str, Any]]:
    rows = []
    fed_only = set(feeds.fed_only(graph)) if names is graph.outputs else set()
    for i, name in enumerate(names):
        target = (emitted_io or [])[i] if emitted_io and i < len(emitted_io) else {}
        rows.append(
            {
                "source_name": graph.source_names.get(name, name),
                "source_layout": graph.source_layouts.get(name, ""),
                "name": target.get("name", name),
                "shape": list(target.get("shape", graph.shape(name))),
                "layout": target.get("layout", "NCHW" if len(graph.shape(name)) == 4 else ""),
                "dtype": graph.tensors[name].dtype,
            }
        )
        if "returns_shape" in target:  # what the target's runtime really returns, where it differs from TF's
            rows[-1]["returns_shape"] = list(target["returns_shape"])
        longest = graph.data_dependent_length(name) if name in graph.outputs else None
        if longest is not None:  # e.g. a non-max suppression's selection that is not padded
            rows[-1]["length"] = {"axis": 0, "depends_on_data": True, "at_most": longest}
        if name in fed_only:  # only fed inputs reach it: its value is fixed by the feeds
            rows[-1]["fed_only"] = True
        fed = (graph.metadata.get(feeds.FEEDS) or {}).get(name) if name in graph.inputs else None
        ids = token_inputs.value_range(graph, name) if name in graph.inputs and fed is None else None
        if fed is not None:
            rows[-1]["fed_value"] = fed  # what --verify fed it (--feed): the check holds at this value only
        elif ids is not None:
            rows[-1]["value_range"] = list(ids)  # what --verify feeds
    return rows


# A .tflite file bakes its size into its constants in ways the graph's size rules do not see (a broadcast
# against a constant of the file's size): "any size" is claimed only for a size the check ran at.
TFLITE_UNCHECKED = ("the .tflite file was not run at another size (its shape signature fixes the size, or "
                    "--verify was not asked for): its other sizes are not claimed")


def _input_sizes(graph: Graph, emitted: Any, verified: dict[str, Any] | None = None,
                 source_format: str = "") -> dict[str, Any]:
    bound = getattr(emitted, "size_bound", "not emitted")
    if bound is None and source_format == "tflite" and not _checked_at_another_size(verified):
        bound = TFLITE_UNCHECKED
    if bound is None:
        return {"spatial": "any", "batch": "any", "free": size_words(graph)}  # free: "H x W" or "length"
    return {"spatial": "conversion size only", "batch": "any", "why": bound}


def _checked_at_another_size(verified: dict[str, Any] | None) -> bool:
    """--verify compared the model with the source at another size, and it passed there."""
    sizes = (verified or {}).get("sizes", [])
    return any("skipped" not in s and s.get("passed") for s in sizes)


def conversion_doc(
    *,
    tool_version: str,
    source: dict[str, Any],
    target: str,
    graph: Graph,
    emitted: Any,
    files: list[str],
    verified: dict[str, Any] | None,
    seconds: dict[str, float],
    options: dict[str, Any],
) -> dict[str, Any]:
    return {
        "tool_version": tool_version,
        "source": source,
        "target": target,
        "files": files,
        "inputs": _io(graph, graph.inputs, emitted.inputs if emitted else None),
        "outputs": _io(graph, graph.outputs, emitted.outputs if emitted else None),
        # SAME pads with stride > 1 depend on the spatial size: these are the shapes they were baked for
        "pads_computed_for": {graph.source_names.get(n, n): _source_shape(graph, n) for n in graph.inputs},
        # which input sizes the written model runs at: 'any' H/W (batch always free), or only the above
        "input_sizes": _input_sizes(graph, emitted, verified, source.get("format", "")),
        "pad_layers": list(emitted.pad_layers) if emitted else [],
        "tensors": tensor_map(graph, emitted.tensor_names if emitted else {}),
        "warnings": list(emitted.warnings) if emitted else [],
        "verify": verified,
        "seconds": seconds,
        "options": options,
        "graph": {"nodes": len(graph.nodes), "ops": sorted({n.op for n in graph.nodes})},
    }


def tensor_map(graph: Graph, target_names: dict[str, str]) -> list[dict[str, Any]]:
    """Per IR node in graph order: its tensor, the TF tensor holding the same value, its target name."""
    sources = graph.metadata.get("source_tensors") or {}
    rows = []
    for node in graph.nodes:
        if node.op == "const":
            continue
        source = sources.get(node.output)
        rows.append({"node": node.name, "op": node.op, "ir": node.output,
                     "source": source["tensor"] if isinstance(source, dict) else None,
                     "target": target_names.get(node.output)})
    return rows


def _source_shape(graph: Graph, name: str) -> list[int]:
    """The input shape as the user gives it (--input-shape is in the source layout)."""
    shape = list(graph.shape(name))
    if graph.source_layouts.get(name) == "NHWC" and len(shape) == 4:
        return [shape[0], shape[2], shape[3], shape[1]]
    return shape


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def write(doc: dict[str, Any], path: Path) -> None:
    Path(path).write_text(json.dumps(_clean(doc), indent=2) + "\n")


def read(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def skeleton_graph(doc: dict[str, Any]) -> Graph:
    """Enough of the IR (inputs, outputs, shapes, source names) to re-run a recorded check."""
    graph = Graph(name="recorded")
    for key, names in (("inputs", graph.inputs), ("outputs", graph.outputs)):
        for i, row in enumerate(doc[key]):
            name = f"{key}_{i}"
            graph.add_tensor(name, row["shape"] if row.get("layout") != "NHWC" else _to_nchw(row["shape"]),
                             row.get("dtype", "float32"))
            if "value_range" in row:
                graph.metadata.setdefault(token_inputs.RANGES, {})[name] = tuple(row["value_range"])
            if row.get("fed_only"):
                graph.metadata.setdefault(feeds.FED_ONLY, []).append(name)
            if "fed_value" in row:
                graph.metadata.setdefault(feeds.FEEDS, {})[name] = row["fed_value"]
            graph.source_names[name] = row["source_name"]
            graph.source_layouts[name] = row.get("source_layout", "")
            names.append(name)
    return graph


def _to_nchw(shape: list[int]) -> list[int]:
    return [shape[0], shape[3], shape[1], shape[2]] if len(shape) == 4 else shape


def fmt_error(value: float | None) -> str:
    return "-" if value is None else f"{value:.2e}"


def verdict_label(v: dict[str, Any]) -> str:
    """OK / FAILED / CANNOT TELL for a verify record (records before the verdict field: from `passed`)."""
    return {"ok": "OK", "failed": "FAILED", "cannot tell": "CANNOT TELL"}.get(
        v.get("verdict", ""), "OK" if v.get("passed") else "FAILED")


def summary_line(doc: dict[str, Any]) -> str:
    """One line per conversion: what a person at a shell or a CI log wants to see."""
    v = doc.get("verify")
    check = "not verified"
    if v:
        snr = "exact" if v.get("snr_db") is None else f"SNR {v['snr_db']:.1f} dB"
        check = f"{verdict_label(v)} max_rel {fmt_error(v['max_rel'])} ({snr})"
        compared = [s for s in v.get("sizes", []) if "skipped" not in s]
        if compared:
            check += f" at {1 + len(compared)} sizes"
        check += stored_note(v)
        skipped = [s for s in v.get("sizes", []) if "skipped" in s]
        if skipped:
            shown = ", ".join("x".join(map(str, _sized(s["input_shapes"][0]))) for s in skipped)
            check += f" (not at {shown}: {skipped[0]['skipped']})"
    pads = len(doc.get("pad_layers", []))
    sizes = doc.get("input_sizes", {}).get("spatial") == "any"
    fed = {row["source_name"] for row in doc.get("inputs", []) if "fed_value" in row}  # parameters, not sizes
    shown = {k: "x".join(map(str, v[1:])) for k, v in doc.get("pads_computed_for", {}).items() if k not in fed}
    size_note = (f"any {doc['input_sizes'].get('free', 'H x W')}" if sizes else
                 f"fixed size {', '.join(shown.values())}" if shown else "sizes follow the fed values")
    return (
        f"{doc['target']:<6} {check}; {pads} pad layer(s); {size_note}; {doc['seconds'].get('total', 0):.2f} s"
        f" -> {doc.get('out', '')}"
    )


def stored_note(v: dict[str, Any]) -> str:
    """Where the verdict's TF outputs came from, when a reference store was used (app.verify.reference_store):
    " vs stored TF outputs" (TF did not run), " vs TF now and stored TF outputs", or, for a check that failed
    against the store and was run again, " vs TF now (stored outputs disagreed; replaced)"; "" without a store."""
    reference = v.get("reference") or {}
    if reference.get("rechecked"):
        return " vs TF now (stored outputs disagreed; replaced)"
    return {"store": " vs stored TF outputs", "store and tensorflow": " vs TF now and stored TF outputs"}.get(
        reference.get("verdict_from"), "")


def _sized(shape: list[int]) -> list[int]:
    """The axes a size is told by: an image's H, W (NCHW); a volume's D, H, W (NDHWC); a sequence's length
    and what follows it."""
    return shape[2:] if len(shape) == 4 else shape[1:4] if len(shape) == 5 else shape[1:]
