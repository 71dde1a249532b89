"""`convert batch MANIFEST`: many conversions for CI, on Dask workers (local or a cluster).

Only light modules are imported here (`distributed` when the run starts; the workers import
TensorFlow and the target runtimes):

    manifest (TOML/YAML) -> validate everything -> select (--only, --targets, --shard, --changed-only)
    -> one task per entry x target -> Dask workers (--jobs or --scheduler; --timeout) -> batch-report.json (+ JUnit)
"""

from __future__ import annotations

import fnmatch
import hashlib
import signal
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from tf_convert.app.pipeline import sha256_of
from tf_convert.app.version import __version__

from . import manifest as manifest_mod
from . import report as batch_report
from .cluster import Cluster, Task, cores, require_distributed
from .manifest import Entry, ManifestError

# modules each worker imports before its first task (so no task pays for them), per target
RUNTIMES = {"torch": ["torch"], "onnx": ["onnx", "onnxruntime"], "caffe": ["cv2"], "mxnet": [], "ir": []}
DEFAULT_TIMEOUT = 1800.0
BASE_MEMORY = 1 << 30  # TensorFlow + a target runtime, imported
WEIGHT_COPIES = 6


@dataclass
class BatchOptions:
    jobs: int = field(default_factory=cores)
    timeout: float | None = DEFAULT_TIMEOUT  # per conversion (entry x target); an entry may override it
    report: Path = Path("batch-report.json")
    junit: Path | None = None
    changed_only: bool = False
    previous: Path | None = None  # report compared by --changed-only [default: `report`]
    shard: tuple[int, int] | None = None
    manifest: Path | None = None
    tty: bool | None = None  # progress style; None: ask the stream
    quiet: bool = False
    memo: bool = True  # a worker parses a source and runs TF once for all its targets
    max_tasks_per_worker: int = 0  # replace a worker after this many conversions (0: never)
    discard_outputs: bool = False  # delete each output once verified and reported (zoo-sized runs)
    scheduler: str | None = None  # an existing Dask scheduler; None: a LocalCluster of `jobs` workers
    worker_memory: str | None = None  # LocalCluster workers' memory limit ("4GB"); None: RAM / jobs


def code_sha256() -> str:
    """Hash of the converter's own source (convert/, parsers/, emitters/): --changed-only must not
    skip an entry converted by different code, even when the version string did not move."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent
    for package in ("convert", "tf_convert.parsers", "emitters"):
        for file in sorted((root / package).rglob("*.py")):
            if "batch" in file.relative_to(root).parts[:2]:
                continue  # the batch machinery itself does not change what a conversion writes
            digest.update(str(file.relative_to(root)).encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()


def select(entries: list[Entry], only: str | None = None, targets: str | None = None,
           shard: tuple[int, int] | None = None) -> list[Entry]:
    """--only NAME/GLOB[,..], --targets T[,..], then --shard I/N (over the name-sorted entries)."""
    import dataclasses

    if only:
        patterns = [p.strip() for p in only.split(",") if p.strip()]
        entries = [e for e in entries if any(fnmatch.fnmatchcase(e.name, p) for p in patterns)]
    if targets:
        wanted = {t.strip() for t in targets.split(",")}
        entries = [dataclasses.replace(e, targets=tuple(t for t in e.targets if t in wanted)) for e in entries]
        entries = [e for e in entries if e.targets]
    return manifest_mod.shard(entries, *shard) if shard else entries


def _spec(entry: Entry, target: str, memo: bool, discard: bool = False) -> dict[str, Any]:
    return {"memo": memo, "discard": discard, "source": str(entry.source), "target": target,
            "out": str(entry.outs[target]),
            "inputs": list(entry.inputs) if entry.inputs else None,
            "outputs": list(entry.outputs) if entry.outputs else None,
            "input_shapes": {k: list(v) for k, v in entry.input_shapes.items()},
            "verify": entry.verify, "rtol": entry.rtol, "seed": entry.seed, "keep_ir": entry.keep_ir,
            "feeds": dict(entry.feeds), "emit": dict(entry.emit)}


def _base_record(entry: Entry, target: str, manifest: Path | None, code: str) -> dict[str, Any]:
    return {"name": entry.name, "target": target, "source": str(entry.source), "out": str(entry.outs[target]),
            "manifest": str(manifest) if manifest else None, "line": entry.line,
            "fingerprint": entry.fingerprint(target), "tool_version": __version__, "code_sha256": code}


def _unchanged(record: dict[str, Any], previous: dict[str, Any] | None, source_sha: str) -> bool:
    keys = ("fingerprint", "tool_version", "code_sha256")
    return (previous is not None and previous.get("status") in batch_report.PASSING
            and previous.get("source_sha256") == source_sha and all(previous.get(k) == record[k] for k in keys))


def memory_estimate(source: Path) -> int:
    """Bytes a conversion of `source` may need: the frameworks, plus the weights held several times
    over (TF's graph, the IR, the emitted model, the target runtime)."""
    try:
        size = sum(f.stat().st_size for f in _source_files(source))
    except OSError:
        size = 0
    return BASE_MEMORY + WEIGHT_COPIES * size


def _source_files(source: Path) -> list[Path]:
    if source.is_dir():
        return [p for p in source.rglob("*") if p.is_file()]
    if source.exists():
        return [source]
    return list(source.parent.glob(source.name + ".*"))


def run_batch(entries: list[Entry], options: BatchOptions,
              on_result: Callable[[dict[str, Any]], None] = lambda r: None) -> dict[str, Any]:
    """Run every entry x target; write the report(s); return the report document."""
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    t0 = time.monotonic()
    code = code_sha256()
    previous = batch_report.read_previous(options.previous or options.report)
    records: dict[int, dict[str, Any]] = {}
    tasks: list[Task] = []
    for entry in entries:
        sha = None
        for target in entry.targets:
            record = _base_record(entry, target, options.manifest, code)
            prev = previous.get((entry.name, target))
            if options.changed_only and prev is not None:
                sha = sha or sha256_of(entry.source)
                if _unchanged(record, prev, sha):
                    records[len(records)] = {**prev, **record, "status": "skipped", "exit_code": 0,
                                             "error": None, "source_sha256": sha, "seconds": 0.0,
                                             "peak_rss_mb": None, "last_seconds": prev.get("seconds")
                                             if prev.get("status") == "ok" else prev.get("last_seconds")}
                    continue
            index = len(records)
            memory = memory_estimate(entry.source)
            records[index] = {**record, "memory_request_mb": round(memory / 2**20)}
            spec = _spec(entry, target, options.memo, options.discard_outputs)
            tasks.append(Task(index, "tf_convert.app.batch.worker:convert_task", {"spec": spec},
                              timeout=entry.timeout or options.timeout, label=f"{entry.name}->{target}",
                              expected=float((prev or {}).get("seconds") or (prev or {}).get("last_seconds") or 0.0),
                              group=entry.name, memory=memory))
    # longest first (by the previous report) so one slow model does not finish last on its own
    tasks.sort(key=lambda t: -t.expected)

    progress = batch_report.Progress(len(records), tty=options.tty, quiet=options.quiet)
    for record in records.values():
        if record.get("status") == "skipped":
            progress.finish("", record)
            on_result(record)

    sent_at: dict[int, float] = {}

    def start(task: Task) -> None:
        sent_at[task.id] = time.time()
        progress.start(task.label)

    def done(task: Task, result: dict[str, Any]) -> None:
        record = records[task.id]
        record.update(result)
        if result["status"] in ("timeout", "error"):
            _remove_partial_output(Path(record["out"]), since=sent_at.get(task.id))
        record["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        progress.finish(task.label, record)
        on_result(record)

    targets = sorted({t for e in entries for t in e.targets})
    reference = ["tensorflow"] if any(e.verify for e in entries) else []  # only checks run TensorFlow
    warm = (reference + ["tf_convert.app.pipeline", "tf_convert.parsers"]
            + [m for t in targets for m in RUNTIMES.get(t, [])])
    warm += [f"tf_convert.emitters.{t}" for t in targets if t != "ir"]
    cluster = Cluster(min(options.jobs, max(1, len(tasks))), scheduler=options.scheduler,
                      worker_memory=options.worker_memory, warm=warm, max_tasks=options.max_tasks_per_worker)
    interrupted = False
    workers = 0
    try:  # CI cancels a job with SIGTERM: stop the workers and still write the report
        previous_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    except ValueError:  # not the main thread
        previous_term = None
    try:
        if tasks:
            with cluster:
                workers = len(cluster.workers())
                cluster.run(tasks, on_start=start, on_done=done, on_tick=progress.tick)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
        progress.close()
        cluster.close()
    for record in records.values():
        if "status" not in record:
            record.update(status="cancelled", exit_code=1, error="interrupted before it finished")
            _remove_partial_output(Path(record["out"]))
    results = [records[i] for i in sorted(records)]
    wall = round(time.monotonic() - t0, 2)
    doc = {
        "format": batch_report.REPORT_FORMAT, "tool_version": __version__, "code_sha256": code,
        "manifest": str(options.manifest) if options.manifest else None,
        "shard": f"{options.shard[0]}/{options.shard[1]}" if options.shard else None,
        "jobs": workers, "scheduler": options.scheduler or "local", "timeout": options.timeout,
        "started_at": started_at, "wall_seconds": wall,
        "summary": batch_report.summary(results),
        "exit_code": 130 if interrupted else batch_report.exit_code(results),
        "results": results,
    }
    batch_report.write_json(options.report, doc)
    if options.junit:
        batch_report.write_junit(options.junit, results, wall)
    return doc


def _remove_partial_output(out: Path, since: float | None = None) -> None:
    """A killed worker cannot clean up: drop the pipeline's temporary directory beside OUT, and OUT
    itself when the cancelled conversion still wrote it after `since` (before its worker died)."""
    import shutil

    for tmp in out.parent.glob(f".{out.name}.*.tmp"):
        shutil.rmtree(tmp, ignore_errors=True)
    try:
        if since is not None and (out / "conversion.json").stat().st_mtime >= since - 1:
            shutil.rmtree(out, ignore_errors=True)
    except OSError:
        pass


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(manifest: Path, options: BatchOptions, out_root: Path = Path("."), only: str | None = None,
         targets: str | None = None, dry_run: bool = False, allow_outside_root: bool = False) -> int:
    """`convert batch`: load and check MANIFEST, select, run (or list with `dry_run`); the exit code.
    Raises ManifestError (exit 2) for an invalid manifest and DaskMissing without `distributed`."""
    entries = manifest_mod.load(manifest, out_root=out_root, allow_outside_root=allow_outside_root)
    if only and not select(entries, only):
        raise ManifestError([f"{manifest}:0: --only {only!r} matches no entry (names: "
                             f"{', '.join(sorted(e.name for e in entries)[:8])}{', ...' if len(entries) > 8 else ''})"])
    shard = options.shard
    chosen = select(entries, only, targets, shard)
    count = sum(len(e.targets) for e in chosen)
    where = f" (shard {shard[0]}/{shard[1]})" if shard else ""
    if dry_run:
        for e in chosen:
            for t in e.targets:
                print(f"{e.name} -> {t}: {e.source} => {e.outs[t]}")
        print(f"{len(chosen)} of {len(entries)} entries{where}, {count} conversion(s); manifest OK")
        return 0
    require_distributed()
    options.manifest = Path(manifest).resolve()
    if not options.quiet:
        workers = (f"scheduler {options.scheduler}" if options.scheduler
                   else f"{min(options.jobs, count)} local worker(s)")
        print(f"convert batch: {len(chosen)} of {len(entries)} entries{where}, {count} conversion(s), {workers}",
              file=sys.stderr, flush=True)
    doc = run_batch(chosen, options)
    counts = ", ".join(f"{v} {k}" for k, v in doc["summary"].items() if k != "total")
    junit = options.junit
    print(f"convert batch: {doc['summary']['total']} conversion(s) in {_fmt_wall(doc['wall_seconds'])}: "
          f"{counts or 'nothing to do'} -> {options.report}{f' + {junit}' if junit else ''}", flush=True)
    return doc["exit_code"]


def _fmt_wall(seconds: float) -> str:
    return f"{int(seconds) // 60}:{seconds % 60:04.1f}"
