"""Where did it go wrong? The per-layer diff behind `convert verify OUT --layers` and `--report`.

border.py   which positions of each feature map an upstream pad can reach
layers.py   run TF and the target with every intermediate exposed; compare; the text table
html.py     the self-contained HTML report (heat maps as inline PNGs, see png.py)
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from tf_convert import emitters
from tf_convert.app import recorded, requirements
from tf_convert.app.loading import Request, load_graph
from tf_convert.convert.errors import UsageError
from tf_convert.convert.ir import Graph

from . import layers


def tensor_names_of(conversion: dict[str, Any]) -> dict[str, str]:
    """IR tensor -> target name, as conversion.json recorded it at conversion time."""
    return {row["ir"]: row["target"] for row in conversion.get("tensors", []) if row.get("target")}


def load_for(out: Path, source: Path | None = None, safe_mode: bool = True) -> tuple[dict[str, Any], Path, Graph]:
    """conversion.json of OUT, the source read, and the IR graph re-parsed from it (same names). OUT is data
    (app.recorded): the source is the one recorded relative to OUT (or `source`), its hash the one recorded;
    Keras loads it in safe mode unless `safe_mode` is False."""
    doc, doc_path, source = recorded.read(out, source)
    # the diff runs TF and the target's runtime: say what is missing before parsing anything
    requirements.check(doc["target"], verify=True, kind=doc["source"].get("format"), write=False)
    if not doc.get("tensors"):
        raise UsageError(f"{doc_path} records no tensor names (written by an older convert): re-run the conversion")
    req = Request(
        source=source, target=doc["target"],
        inputs=[row["source_name"] for row in doc["inputs"]],
        outputs=[row["source_name"] for row in doc["outputs"]],
        input_shapes={k: tuple(v) for k, v in doc.get("pads_computed_for", {}).items()}, safe_mode=safe_mode,
        **_recorded_settings(doc.get("source_settings") or {}),  # the same signature / placeholders as converted
    )
    graph, _, _, _ = load_graph(req)
    return doc, source, graph


def _recorded_settings(recorded: dict[str, Any]) -> dict[str, Any]:
    """Request fields from conversion.json's source_settings: a TF source's {"set": ..., "use_ema": ...},
    a .tflite source's {"signature": NAME}."""
    if "set" in recorded:
        return {"settings": dict(recorded["set"]), "use_ema": bool(recorded.get("use_ema", False))}
    return {"settings": dict(recorded)}


def diagnose(out: Path, rtol: float | None = None, *, source: Path | None = None,
             safe_mode: bool = True) -> tuple[dict[str, Any], dict[str, Any], Graph]:
    """(conversion.json, the per-layer document, the graph) for the conversion in OUT (load_for: which source,
    in which Keras safe mode)."""
    conversion, source, graph = load_for(out, source, safe_mode)
    if conversion["target"] not in emitters.TARGETS:
        raise UsageError(f"OUT records target {conversion['target']!r}, which has no runtime to compare")
    options = conversion.get("options", {})
    tol = rtol if rtol is not None else options.get("rtol", 1e-4)
    doc = layers.run(source, graph, emitters.get(conversion["target"]), Path(out),
                     tensor_names_of(conversion), rtol=tol, seed=options.get("seed", 0))
    return conversion, doc, graph


def explain(source: Path, graph: Graph, emitter: ModuleType, out_dir: Path, tensor_names: dict[str, str],
            rtol: float, seed: int) -> str | None:
    """The first-divergence line for a failed check, or None when the diff itself cannot run:
    it only adds to an error that is raised anyway, so it must never replace it."""
    try:
        doc = layers.run(source, graph, emitter, out_dir, tensor_names, rtol=rtol, seed=seed)
    except Exception:  # noqa: BLE001 - best effort on top of a verification failure
        return None
    return layers.divergence_line(doc) if doc["first_divergence"] else None


def explain_out(out: Path, rtol: float | None = None, *, source: Path | None = None,
                safe_mode: bool = True) -> str | None:
    """explain() for a written OUT (`convert verify OUT` without --layers; `source`, `safe_mode`: diagnose's)."""
    try:
        _, doc, _ = diagnose(out, rtol, source=source, safe_mode=safe_mode)
    except Exception:  # noqa: BLE001 - best effort on top of a verification failure
        return None
    return layers.divergence_line(doc) if doc["first_divergence"] else None
