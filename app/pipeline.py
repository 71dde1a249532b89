"""parse -> passes -> emit -> verify -> write, atomically.

The output directory is built under a temporary name beside OUT and renamed into place only when
every step succeeded, so a failed run never leaves a half-written OUT behind (convert/outdir.py says
where OUT may be and how it replaces a previous output).
"""

from __future__ import annotations

import dataclasses
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

from tf_convert.convert.errors import ConvertError, UnsupportedError, UsageError, VerifyError
from tf_convert.convert.progress import SILENT, Progress, for_stderr

from . import __version__
from .cache import Cache, parse_key, reference_key


@dataclass
class Request:
    source: Path
    target: str  # torch | caffe | mxnet | onnx | ir
    out: Path | None = None
    inputs: list[str] | None = None
    outputs: list[str] | None = None
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    verify: bool = False
    rtol: float = 1e-4
    seed: int = 0
    keep_ir: bool = False
    force: bool = False
    options: Any = None  # the target's options (emitters.options), or None for its defaults
    settings: dict[str, str] = field(default_factory=dict)  # --set NAME=VALUE (scalar placeholders)
    use_ema: bool = False  # --use-ema
    safe_mode: bool = True  # False: --no-safe-mode (Keras Lambda layers load)
    max_memory: int | None = None  # bytes; None: 80% of the machine's RAM (convert/memory.py)
    # True: draw the stage and the weights written on stderr when it is a terminal; or a Progress to report to
    progress: bool | Progress = False
    # True: --verify runs TF's reference in a child started before the parse even for a small source (a process
    # that converts once, as the CLI: TF's import then overlaps the parse and the emit); False: a large one's only
    reference_child: bool = False
    # --verify's TF outputs are kept here between runs and reused for the same source, inputs and TF
    # (app.reference_store); None: TF runs every time
    reference_store: Path | None = None


def default_out(source: Path, target: str) -> Path:
    from tf_convert.parsers.source import Source

    stem = source.stem if isinstance(source, Source) else Source(Path(source), "").stem
    return Path.cwd() / f"{stem}-{target}"


def sha256_of(path: Path) -> str:
    """Hash of the file, or of every file of a directory / checkpoint prefix, in name order."""
    from tf_convert.parsers.source import open_source

    return open_source(path).sha256


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (MB)."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def load_graph(req: Request, cache: Cache | None = None, progress: Progress = SILENT, passes=None):
    """Parse the source (or take it from `cache`) and run the default passes (or the list `passes`).

    Returns (graph, source kind, seconds, notes); notes say what was auto-detected. They are
    printed only once the whole run succeeded, so a failure stays a single line.
    """
    from tf_convert import parsers
    from tf_convert.parsers.base import ParseOptions

    from . import memory
    from .diagnose import mapping

    t0 = time.perf_counter()
    source = parsers.open_source(req.source)  # the kind is recognised once, here
    kind = source.kind
    options = ParseOptions(inputs=req.inputs, outputs=req.outputs, input_shapes=dict(req.input_shapes),
                           settings=dict(req.settings), use_ema=req.use_ema, safe_mode=req.safe_mode)
    key = parse_key(source, options) if cache is not None else None
    hit = cache.get(key) if key is not None else None
    if hit is not None:
        graph = hit[0]
        options.notes.extend(hit[1])
        options.records.extend(hit[2])
    else:
        graph = parsers.parse(source, options)
        memory.check(graph, req.max_memory, str(source))  # before passes or emitters allocate anything
        if key is not None:
            cache.put(key, (graph, list(options.notes), list(options.records)))
    graph.metadata["inference_passes"] = list(options.records)
    t1 = time.perf_counter()
    progress.stage("optimize")
    graph = mapping.run_passes(graph, passes)  # (the default passes) keeping track of each tensor's TF source
    graph.validate()
    t2 = time.perf_counter()
    return graph, kind, {"parse": round(t1 - t0, 3), "passes": round(t2 - t1, 3)}, list(options.notes)


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


def _references(cache: Cache | None):
    """The reference runs of one verification (in ONE child process for a large source: reference_process),
    through `cache` when there is one: cached sets are not run again, the others in one call."""
    from .reference_process import run_references as references

    if cache is None:
        return references

    def run_references(source, graph, input_sets):
        keys = [reference_key(source, graph, inputs) for inputs in input_sets]
        outcomes = [cache.get(key) for key in keys]
        missing = [k for k, hit in enumerate(outcomes) if hit is None]
        for k, outcome in zip(missing, references(source, graph, [input_sets[k] for k in missing]) if missing else []):
            outcomes[k] = outcome
            if not isinstance(outcome, BaseException):  # a refusal is not cached: as before, it re-runs
                cache.put(keys[k], outcome)
        return outcomes

    return run_references


def _early_references(source, graph, sets: list, cache: Cache | None,
                      spawned=None, spare: Path | None = None) -> tuple[Callable[[], None], Callable]:
    """Ask TF's reference child for `sets` now (`spawned`, started before the parse, or one started here), so
    that TF's import and run overlap the emit (issue 25); returns (cancel, run_references). run_references
    answers the started sets from the child (waiting for it: for a large source it has ended, and freed TF's
    memory, before the target loads) and any other set through _references(cache); cancel() ends a child
    nobody will read (failure, interrupt)."""
    from .reference_process import spawn, start_references

    others = _references(cache)
    known: dict[tuple, Any] = {}
    keys = [reference_key(source, graph, inputs) for inputs in sets]
    for key in keys if cache is not None else []:
        hit = cache.get(key)
        if hit is not None:
            known[key] = hit
    missing = [(key, inputs) for key, inputs in zip(keys, sets) if key not in known]
    # TF reads its weights a few at a time (parsers/tensorflow/weight_stream.py): its run fits beside the
    # emit's; the target loads only once the child has ended (verify asks for these outcomes first)
    if missing and spawned is None:  # not started early: TF's outputs were thought to be in the store
        spawned = spawn(source, spare)
    started = [start_references(source, graph, [x for _, x in missing], spawned)] if missing else []
    if not started and spawned is not None:  # every set cached: nothing to ask the child
        spawned.cancel()

    def run_references(source_, graph_, input_sets):
        while started:  # the first call reads the child's answer (one pop: cancel() then has nothing to end)
            for (key, _), outcome in zip(missing, started.pop().outcomes()):
                known[key] = outcome
                if cache is not None and not isinstance(outcome, BaseException):
                    cache.put(key, outcome)
        wanted = [reference_key(source_, graph_, inputs) for inputs in input_sets]
        todo = [k for k, key in enumerate(wanted) if key not in known]
        outcomes = [known.get(key) for key in wanted]
        for k, outcome in zip(todo, others(source_, graph_, [input_sets[k] for k in todo]) if todo else []):
            outcomes[k] = outcome
        return outcomes

    def cancel() -> None:
        for pending in started:
            pending.cancel()

    return cancel, run_references


def _stored_references(root: Path | None, source, sha256: Callable[[], str], cache: Cache | None):
    """The on-disk store of TF's outputs for this source (app.reference_store) in front of `cache`; None
    without a store directory."""
    if root is None:
        return None
    from .cache import source_stamp
    from .reference_store import StoredReferences

    return StoredReferences(Path(root), source_stamp(source), sha256, inner=cache)


def _known_small(store, source) -> bool:
    """A small source TF has run on here before: its outputs are most likely in the store, so no child is
    started before the parse (one starts after it for any set that is not). A large source's child starts
    at once all the same: hashing it first would delay TF by seconds, and the child ends unasked on a hit."""
    from .reference_process import in_child

    return store is not None and not in_child(source) and store.knows()


def _size_free_guess(graph, target: str, options: Any) -> bool:
    """Before emitting: will the target model run at any size (emitted.size_bound None)? The graph lets it
    and the target has a --static-shapes option (the targets that can write a size-free model) left off. A
    wrong guess costs TF a few sets more or one more reference run later, never a wrong verdict."""
    from tf_convert.convert.padding.sizes import size_bound
    from tf_convert.emitters.options import options_for

    chosen = options_for(target, options)
    return hasattr(chosen, "static_shapes") and not chosen.static_shapes and size_bound(graph) is None


def weight_totals(graph) -> tuple[int, int]:
    """(bytes, tensors) of the graph's weights, from shapes and dtypes (lazy weights stay unread)."""
    import numpy as np

    values = [v for node in graph.nodes for v in node.params.values() if hasattr(v, "shape") and hasattr(v, "dtype")]
    return sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize for v in values), len(values)


def _progress_arg(emit, progress: Progress) -> dict[str, Progress]:
    """`progress=` for an emit() that takes it (its weight writers report each tensor written)."""
    import inspect

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
    from tf_convert import emitters, parsers
    from tf_convert.convert import ir, padding

    from . import interrupts, outdir, report, requirements, verify

    started = time.perf_counter()
    source = parsers.open_source(req.source)  # built once, passed down
    source_sha256 = _in_background(lambda: source.sha256)  # reads every source file: overlaps parse and write
    req = dataclasses.replace(req, source=source)
    out = Path(req.out) if req.out else default_out(source, req.target)
    outdir.check_out(out, source, force=req.force)
    if req.target != "ir" and req.target not in emitters.TARGETS:
        raise UsageError(f"unknown target {req.target!r}; choose one of {', '.join(emitters.TARGETS)}")
    progress.stage("imports")
    from . import reference_process, reference_spare

    # nothing read or written yet; a reference child checks TensorFlow itself (no TF import here: issue 25)
    child = req.verify and reference_process.wants_child(source, small_too=req.reference_child)
    # a small source's child (the CLI's): the target runs beside it; a large one's frees TF's memory first
    target_first = child and not reference_process.in_child(source)
    checks = req.verify and req.target != "ir"
    store = _stored_references(req.reference_store if checks else None, source, source_sha256, cache)
    cache = store if store is not None else cache
    # a warm spare (TF imported) takes the child's place where one waits, and this run leaves the next
    spare = reference_spare.socket_path(req.reference_store) if checks and child else None
    spares_before = reference_process.spares_claimed()
    spawned = None  # the child, started now: TF's import runs beside the parse and the emit (issue 25)
    try:
        if child and req.target != "ir" and not _known_small(store, source):
            with interrupts.deferred():  # a signal while it starts: raised once `spawned` can be cancelled
                spawned = reference_process.spawn(source, spare)
        # with a child, the runtime's import (torch: ~1.8 s) waits until TF has its question (below), so that
        # it runs beside TF's run instead of before the parse that question needs
        requirements.check(req.target, verify=req.verify and not child, kind=source.kind, reference=not child)

        progress.stage("parse")
        graph, kind, seconds, notes = load_graph(req, cache, progress)
        if req.verify and req.target != "ir":  # refuse what the check cannot hold before anything is written
            from . import memory

            memory.check_verify(graph, req.max_memory, str(source), child)
    except BaseException:
        if spawned is not None:
            spawned.cancel()
        raise
    # set when a reference child starts early; ends it when nobody reads it (failure, interrupt)
    cancel_reference: Callable[[], None] | None = spawned.cancel if spawned is not None else None
    references = _references(cache)
    try:
        tmp = outdir.temp_dir(out)
        if req.target == "ir":
            ir.save(graph, tmp)
            emitted = None
            files = ["graph.json", "weights.npz"]
        else:
            emitter = emitters.get(req.target)
            problems = emitter.unsupported(graph, req.options)
            if problems:
                raise UnsupportedError(problems, req.target)
            if child:  # TF's child runs while the model is written (issue 25)
                planned = verify.plan(source, graph, req.seed, _size_free_guess(graph, req.target, req.options),
                                      child=True)
                with interrupts.deferred():  # a signal while it starts: raised once cancel_reference can end it
                    cancel_reference, references = _early_references(source, graph, planned.sets, cache, spawned,
                                                                     spare)
                requirements.check(req.target, verify=True, kind=source.kind, reference=False, write=False)
            t0 = time.perf_counter()
            total_bytes, total_tensors = weight_totals(graph)
            progress.stage("emit", total_bytes=total_bytes, total_tensors=total_tensors)
            emitted = emitter.emit(graph, tmp, req.options, **_progress_arg(emitter.emit, progress))
            seconds["emit"] = round(time.perf_counter() - t0, 3)
            files = list(emitted.files)
            if req.keep_ir:
                ir.save(graph, tmp / "ir")
                files += ["ir/graph.json", "ir/weights.npz"]
        verified = None
        if req.verify and emitted is not None:
            progress.stage("verify")
            t0 = time.perf_counter()
            verified = verify.verify(source, graph, emitter, tmp, rtol=req.rtol, seed=req.seed,
                                     run_references=references, size_free=emitted.size_bound is None,
                                     target_first=target_first)
            if store is not None:
                verified["reference"] = dict(store.record(),
                                             spare=reference_process.spares_claimed() > spares_before)
            seconds["verify"] = round(time.perf_counter() - t0, 3)
        seconds["total"] = round(time.perf_counter() - started, 3)
        doc = report.conversion_doc(
            tool_version=__version__,
            source={"path": str(source.path.resolve()), "format": kind, "sha256": source_sha256()},
            target=req.target,
            graph=graph,
            emitted=emitted,
            files=files + ["conversion.json"],
            verified=verified,
            seconds=seconds,
            options={"rtol": req.rtol, "seed": req.seed,
                     "input_shapes": {k: list(v) for k, v in req.input_shapes.items()}},
        )
        doc["notes"] = notes
        if verified is not None:  # an output the input does not move: the check says nothing there
            doc["warnings"] += verified.pop("warnings", [])
        if emitted is not None:  # per layer, the lowering the padding module chose (`convert inspect` shows the same)
            from tf_convert.emitters.options import options_for

            doc["lowerings"] = padding.lowerings(graph, options_for(req.target, req.options))
        doc["inference_passes"] = graph.metadata.get("inference_passes", [])
        doc["source_settings"] = graph.metadata.get("tf_settings")
        doc["peak_rss_mb"] = peak_rss_mb()
        report.write(doc, tmp / "conversion.json")
        if verified is not None and not verified["passed"]:
            from .diagnose import explain

            where = explain(source, graph, emitter, tmp, emitted.tensor_names, req.rtol, req.seed)
            shutil.rmtree(tmp, ignore_errors=True)
            return Conversion(doc, VerifyError(
                verify.failure_message(req.target, verified, req.rtol) + (f"; {where}" if where else "")))
        outdir.commit(tmp, out, force=req.force)
        doc["out"] = str(out)
        reference_spare.leave(spare)
        return Conversion(doc)
    except BaseException as exc:
        outdir.discard_temps(out)  # not just tmp: an interrupt may come before tmp is assigned
        failed_write = outdir.as_os_error(exc, out) if not isinstance(exc, ConvertError) else None
        if failed_write is not None and failed_write is not exc:
            raise failed_write from None
        raise
    finally:
        if cancel_reference is not None:  # a child started early and never read (failure, interrupt) ends
            cancel_reference()


def reverify(out: Path, rtol: float | None = None, reference_store: Path | None = None) -> dict[str, Any]:
    """`convert verify OUT`: run the check recorded in OUT/conversion.json again (TF's outputs from
    `reference_store` where it has them: app.reference_store)."""
    from tf_convert import emitters

    from . import reference_process, report, requirements, verify

    doc, doc_path, source = report.read_recorded(out)
    if doc["target"] not in emitters.TARGETS:
        raise UsageError(f"{doc_path} records target {doc['target']!r}, which has no runtime to verify")
    store = _stored_references(reference_store, source, lambda: sha256_of(source), None)
    # a large source's reference runs in a child, which checks TensorFlow itself: no TF import here (issue 25);
    # nor for a source TF's outputs are stored for (seconds of import for nothing; a set it lacks imports TF
    # then, and a missing TF is still one line: the CLI's requirements.for_failed_import)
    requirements.check(doc["target"], verify=True, kind=doc["source"].get("format"), write=False,
                       reference=not reference_process.in_child(source) and not (store and store.knows()))
    graph = report.skeleton_graph(doc)
    if doc.get("source_settings"):
        graph.metadata["tf_settings"] = doc["source_settings"]
    tol = rtol if rtol is not None else doc.get("options", {}).get("rtol", 1e-4)
    result = verify.verify(source, graph, _written_model(emitters.get(doc["target"]), Path(out)), Path(out), rtol=tol,
                           run_references=_references(store), seed=doc.get("options", {}).get("seed", 0),
                           size_free=doc.get("input_sizes", {}).get("spatial") == "any",
                           depth=(doc.get("verify") or {}).get("depth") or doc.get("graph", {}).get("nodes"))
    if not result["passed"]:
        from .diagnose import explain_out

        where = explain_out(Path(out), tol)
        raise VerifyError(
            verify.failure_message(doc["target"], result, tol)
            + (f"; {where} (details: convert verify {out} --layers)" if where else "")
        )
    if store is not None:
        result["reference"] = store.record()
    return result


def _written_model(emitter: Any, out: Path) -> Any:
    """The target's runtime over OUT's files as `convert verify OUT` finds them: files the runtime cannot load
    or run (truncated, edited, damaged since they were written) are bad input, one line and exit 2, not an
    internal error. Right after a conversion such a failure stays a bug (exit 1): there it is our file."""
    from .verify import unreadable_output

    def guarded(run: Callable) -> Callable:
        def call(*args: Any) -> Any:
            try:
                return run(*args)
            except (ConvertError, MemoryError):
                raise
            except Exception as error:  # noqa: BLE001 - whatever the runtime raises on a file it cannot read
                raise unreadable_output(emitter.TARGET, out, error) from None
        return call

    run_sets = getattr(emitter, "run_sets", None)
    return SimpleNamespace(TARGET=emitter.TARGET, run=guarded(emitter.run),
                           **({"run_sets": guarded(run_sets)} if run_sets else {}))


__all__ = ["Request", "Conversion", "run", "reverify", "load_graph", "default_out", "ConvertError"]
