"""parse -> plan -> emit -> verify -> write, atomically.

The output directory is built under a temporary name beside OUT and renamed into place only when
every step succeeded, so a failed run never leaves a half-written OUT behind (app/outdir.py says
where OUT may be and how it replaces a previous output). TensorFlow's outputs for the check come through
one door, app/verify/reference.py (in process, a child process, or the store), chosen once per run.
"""

from __future__ import annotations

import dataclasses
import inspect
import resource
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from tf_convert import emitters, parsers
from tf_convert.convert import ir, padding
from tf_convert.convert.errors import ConvertError, UnsupportedError, UsageError, VerifyError
from tf_convert.convert.padding.sizes import size_bound
from tf_convert.convert.progress import Progress, for_stderr
from tf_convert.emitters.options import options_for
from tf_convert.parsers.base import SAFE_MODE

from . import memory, outdir, recorded, report, requirements, verify
from .cache import Cache
from .diagnose import explain, explain_out
from .loading import Request, check_target, default_out, load_graph
from .verify import feeds as verify_feeds
from .verify.reference import Reference
from .version import __version__


def sha256_of(path: Path) -> str:
    """Hash of the bytes a conversion of `path` reads (parsers/source.py: Source.files)."""
    return parsers.open_source(path).sha256


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (MB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


@dataclass
class Conversion:
    """What run() returns: the conversion.json document (its metrics also when verification
    failed) and the error that makes it a failure (then nothing was written to OUT)."""

    doc: dict[str, Any]
    error: VerifyError | None = None

    @property
    def passed(self) -> bool:
        return self.error is None

    def check(self) -> dict[str, Any]:
        """The document, or raise the failure (exit 4)."""
        if self.error is not None:
            raise self.error
        return self.doc


def _size_free_guess(graph, target: str, options: Any) -> bool:
    """Before emitting: will the target model run at any size (emitted.size_bound None)? The graph lets it
    and the target has a --static-shapes option (the targets that can write a size-free model) left off. A
    wrong guess costs TF a few sets more or one more reference run later, never a wrong verdict."""
    chosen = options_for(target, options)
    return hasattr(chosen, "static_shapes") and not chosen.static_shapes and size_bound(graph) is None


def weight_totals(graph) -> tuple[int, int]:
    """(bytes, tensors) of the graph's weights, from shapes and dtypes (lazy weights stay unread)."""
    values = [v for node in graph.nodes for v in node.params.values() if hasattr(v, "shape") and hasattr(v, "dtype")]
    return sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize for v in values), len(values)


def _progress_arg(emit, progress: Progress) -> dict[str, Progress]:
    """`progress=` for an emit() that takes it (its weight writers report each tensor written)."""
    return {"progress": progress} if "progress" in inspect.signature(emit).parameters else {}


def _in_background(compute: Callable[[], Any]) -> Callable[[], Any]:
    """Start `compute()` on a worker thread; the returned function waits for its result (or raises its error)."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = compute()
        except BaseException as error:  # noqa: BLE001 - raised in the caller by result()
            box["error"] = error

    thread = threading.Thread(target=work, name="background", daemon=True)
    thread.start()

    def result() -> Any:
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["value"]

    return result


def run(req: Request, cache: Cache | None = None) -> Conversion:
    """Convert `req.source` for `req.target`; `cache` (optional) holds parses and TF outputs to reuse."""
    shown = req.progress if isinstance(req.progress, Progress) else for_stderr(req.progress)
    try:
        return _run(req, cache, shown)
    finally:
        shown.close()  # before the summary or the error line is printed


def _run(req: Request, cache: Cache | None, progress: Progress) -> Conversion:
    started = time.perf_counter()
    source = parsers.open_source(req.source)  # built once, passed down
    source_sha256 = _in_background(lambda: source.sha256)  # reads every source file: overlaps parse and write
    req = dataclasses.replace(req, source=source)
    out = Path(req.out) if req.out else default_out(source, req.target)
    outdir.check_out(out, source, force=req.force)
    check_target(req.target)
    progress.stage("imports")
    checks = req.verify and req.target != "ir"
    reference = Reference.open(source, checks=checks, small_too=req.reference_child, store_root=req.reference_store,
                               cache=cache, sha256=source_sha256)
    try:
        reference.start()  # a child imports TF beside the parse; the runtime's import waits for TF's question
        requirements.check(req.target, verify=req.verify and not reference.child, kind=source.kind,
                           reference=not reference.child)
        progress.stage("parse")
        graph, kind, seconds, notes = load_graph(req, reference.cache, progress)
        if req.feeds:
            verify_feeds.attach(graph, req.feeds)
        if checks:  # refuse what the check cannot hold before anything is written
            verify_feeds.require(graph, req.target)
            memory.check_verify(graph, req.max_memory, str(source), reference.child)
        try:
            tmp = outdir.temp_dir(out)
            emitter, emitted, files = _emit(req, graph, tmp, reference, progress, seconds)
            verified = _verify(req, source, graph, emitter, emitted, tmp, reference, progress, seconds)
            seconds["total"] = round(time.perf_counter() - started, 3)
            doc = _document(req, source, out, kind, source_sha256(), graph, emitted, files, verified, seconds,
                            notes)
            doc["warnings"] += reference.warnings
            report.write(doc, tmp / "conversion.json")
            if verified is not None and not verified["passed"]:
                where = explain(source, graph, emitter, tmp, emitted.tensor_names, req.rtol, req.seed)
                shutil.rmtree(tmp, ignore_errors=True)
                return Conversion(doc, VerifyError(
                    verify.failure_message(req.target, verified, req.rtol) + (f"; {where}" if where else "")))
            outdir.commit(tmp, out, force=req.force)
        except BaseException as exc:
            outdir.discard_temps(out)  # not just tmp: an interrupt may come before tmp is assigned
            failed_write = outdir.as_os_error(exc, out) if not isinstance(exc, ConvertError) else None
            if failed_write is not None and failed_write is not exc:
                raise failed_write from None
            raise
    finally:
        reference.cancel()  # a child started early and never read (a failure, an interrupt) ends
    doc["out"] = str(out)
    return Conversion(doc)


def _emit(req: Request, graph: Any, tmp: Path, reference: Reference, progress: Progress,
          seconds: dict[str, float]) -> tuple[Any, Any, list[str]]:
    """Write the model into `tmp`: (emitter, emitted, files); None for both with target ir. With a reference
    child, TF is given the planned input sets first, so that it runs while the model is written."""
    if req.target == "ir":
        ir.save(graph, tmp)
        return None, None, ["graph.json", "weights.npz"]
    emitter = emitters.get(req.target)
    problems = emitter.unsupported(graph, req.options)
    if problems:
        raise UnsupportedError(problems, req.target)
    if reference.child:
        planned = verify.plan(req.source, graph, req.seed, _size_free_guess(graph, req.target, req.options),
                              child=True)
        reference.ask(graph, planned.sets)
        requirements.check(req.target, verify=True, kind=req.source.kind, reference=False, write=False)
    t0 = time.perf_counter()
    total_bytes, total_tensors = weight_totals(graph)
    progress.stage("emit", total_bytes=total_bytes, total_tensors=total_tensors)
    emitted = emitter.emit(graph, tmp, req.options, **_progress_arg(emitter.emit, progress))
    seconds["emit"] = round(time.perf_counter() - t0, 3)
    files = list(emitted.files)
    if req.keep_ir:
        ir.save(graph, tmp / "ir")
        files += ["ir/graph.json", "ir/weights.npz"]
    return emitter, emitted, files


def _verify(req: Request, source: Any, graph: Any, emitter: Any, emitted: Any, tmp: Path, reference: Reference,
            progress: Progress, seconds: dict[str, float]) -> dict[str, Any] | None:
    """The written model against TF's outputs (None without --verify or with target ir)."""
    if not req.verify or emitted is None:
        return None
    progress.stage("verify")
    t0 = time.perf_counter()
    verified = reference.checked(lambda references: verify.verify(
        source, graph, emitter, tmp, rtol=req.rtol, seed=req.seed, run_references=references,
        size_free=emitted.size_bound is None, target_first=reference.target_first))
    seconds["verify"] = round(time.perf_counter() - t0, 3)
    return verified


def _document(req: Request, source: Any, out: Path, kind: str, sha256: str, graph: Any, emitted: Any,
              files: list[str], verified: dict[str, Any] | None, seconds: dict[str, float],
              notes: list[str]) -> dict[str, Any]:
    """conversion.json's document. The source's `relative_path` (to OUT) is the one `convert verify OUT` reads."""
    doc = report.conversion_doc(
        tool_version=__version__,
        source={"path": str(source.path.resolve()), "relative_path": recorded.relative_path(source.path, out),
                "format": kind, "sha256": sha256},
        target=req.target, graph=graph, emitted=emitted, files=files + ["conversion.json"], verified=verified,
        seconds=seconds, options={"rtol": req.rtol, "seed": req.seed,
                                  "input_shapes": {k: list(v) for k, v in req.input_shapes.items()}})
    doc["notes"] = notes
    if verified is not None:  # an output the input does not move: the check says nothing there
        doc["warnings"] += verified.pop("warnings", [])
    if emitted is not None:  # per layer, the lowering the padding module chose (`convert inspect` shows the same)
        doc["lowerings"] = padding.lowerings(graph, options_for(req.target, req.options).plan_options())
    doc["inference_passes"] = graph.metadata.get("inference_passes", [])
    doc["source_settings"] = graph.metadata.get("tf_settings")
    if graph.metadata.get(verify_feeds.FEEDS):  # the values the check fed (the sizes followed them)
        doc[verify_feeds.FEEDS] = graph.metadata[verify_feeds.FEEDS]
    doc["peak_rss_mb"] = peak_rss_mb()
    return doc


def reverify(out: Path, rtol: float | None = None, reference_store: Path | None = None, *,
             source: Path | None = None, safe_mode: bool = True) -> dict[str, Any]:
    """`convert verify OUT`: run the check recorded in OUT/conversion.json again (TF's outputs from
    `reference_store` where it has them: app.verify.reference_store). OUT is data (app.recorded): the source
    read is the one recorded relative to OUT (or `source`), its bytes the ones converted; Keras loads it in
    safe mode unless `safe_mode` is False (what the user says on this very call, never the file)."""
    doc, doc_path, source = recorded.read(out, source)
    if doc["target"] not in emitters.TARGETS:
        raise UsageError(f"{doc_path} records target {doc['target']!r}, which has no runtime to verify")
    reference = Reference.open(parsers.open_source(source), checks=True, store_root=reference_store)
    # a large source's reference runs in a child, which checks TensorFlow itself: no TF import here; nor for a
    # source TF's outputs are stored for (seconds of import for nothing; a set it lacks imports TF then, and a
    # missing TF is still one line: the CLI's requirements.for_failed_import)
    requirements.check(doc["target"], verify=True, kind=doc["source"].get("format"), write=False,
                       reference=not reference.child and not (reference.store and reference.store.knows()))
    graph = report.skeleton_graph(doc)
    graph.metadata[SAFE_MODE] = safe_mode
    if doc.get("source_settings"):
        graph.metadata["tf_settings"] = doc["source_settings"]
    tol = rtol if rtol is not None else doc.get("options", {}).get("rtol", 1e-4)
    model = _written_model(emitters.get(doc["target"]), Path(out))
    result = reference.checked(lambda references: verify.verify(
        source, graph, model, Path(out), rtol=tol, run_references=references,
        seed=doc.get("options", {}).get("seed", 0), size_free=doc.get("input_sizes", {}).get("spatial") == "any",
        depth=(doc.get("verify") or {}).get("depth") or doc.get("graph", {}).get("nodes")))
    result["warnings"] = result.get("warnings", []) + reference.warnings
    if not result["passed"]:
        where = explain_out(Path(out), tol, source=source, safe_mode=safe_mode)
        raise VerifyError(
            verify.failure_message(doc["target"], result, tol)
            + (f"; {where} (details: convert verify {out} --layers)" if where else ""))
    return result


def _written_model(emitter: Any, out: Path) -> Any:
    """The target's runtime over OUT's files as `convert verify OUT` finds them: files the runtime cannot load
    or run (truncated, edited, damaged since they were written) are bad input, one line and exit 2, not an
    internal error. Right after a conversion such a failure stays a bug (exit 1): there it is our file."""
    def guarded(run: Callable) -> Callable:
        def call(*args: Any) -> Any:
            try:
                return run(*args)
            except (ConvertError, MemoryError):
                raise
            except Exception as error:  # noqa: BLE001 - whatever the runtime raises on a file it cannot read
                raise verify.unreadable_output(emitter.TARGET, out, error) from None
        return call

    run_sets = getattr(emitter, "run_sets", None)
    return SimpleNamespace(TARGET=emitter.TARGET, run=guarded(emitter.run),
                           **({"run_sets": guarded(run_sets)} if run_sets else {}))


__all__ = ["Request", "Conversion", "run", "reverify", "load_graph", "default_out", "ConvertError"]
