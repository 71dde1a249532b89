"""`convert batch MANIFEST`: many conversions for CI, in parallel worker processes.

Only light modules are imported here (cli.py imports this module to register the command, and
`convert --help` must stay fast): the workers import TensorFlow and the target runtimes.

    manifest (TOML/YAML) -> validate everything -> select (--only, --targets, --shard, --changed-only)
    -> one task per entry x target -> worker pool (--jobs, --timeout) -> batch-report.json (+ JUnit)
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import click

from . import __version__
from . import batch_manifest as manifest_mod
from . import batch_report
from .batch_manifest import Entry, ManifestError
from .batch_pool import Pool, Task, cores

# modules each worker imports before its first task (so no task pays for them), per target
RUNTIMES = {"torch": ["torch"], "onnx": ["onnx", "onnxruntime"], "caffe": ["cv2"], "mxnet": [], "ir": []}
DEFAULT_TIMEOUT = 1800.0


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


def code_sha256() -> str:
    """Hash of the converter's own source (convert/, parsers/, emitters/): --changed-only must not
    skip an entry converted by different code, even when the version string did not move."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent
    for package in ("convert", "parsers", "emitters"):
        for file in sorted((root / package).rglob("*.py")):
            if file.name.startswith("batch"):
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
            "emit": dict(entry.emit)}


def _base_record(entry: Entry, target: str, manifest: Path | None, code: str) -> dict[str, Any]:
    return {"name": entry.name, "target": target, "source": str(entry.source), "out": str(entry.outs[target]),
            "manifest": str(manifest) if manifest else None, "line": entry.line,
            "fingerprint": entry.fingerprint(target), "tool_version": __version__, "code_sha256": code}


def _unchanged(record: dict[str, Any], previous: dict[str, Any] | None, source_sha: str) -> bool:
    keys = ("fingerprint", "tool_version", "code_sha256")
    return (previous is not None and previous.get("status") in batch_report.PASSING
            and previous.get("source_sha256") == source_sha and all(previous.get(k) == record[k] for k in keys))


def run_batch(entries: list[Entry], options: BatchOptions,
              on_result: Callable[[dict[str, Any]], None] = lambda r: None) -> dict[str, Any]:
    """Run every entry x target; write the report(s); return the report document."""
    from .pipeline import sha256_of

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
            records[index] = record
            spec = _spec(entry, target, options.memo, options.discard_outputs)
            tasks.append(Task(index, "convert.batch_worker:convert_task", {"spec": spec},
                              timeout=entry.timeout or options.timeout, label=f"{entry.name}->{target}",
                              expected=float((prev or {}).get("seconds") or (prev or {}).get("last_seconds") or 0.0),
                              group=entry.name))
    # longest first (by the previous report) so one slow model does not finish last on its own
    tasks.sort(key=lambda t: -t.expected)

    progress = batch_report.Progress(len(records), tty=options.tty, quiet=options.quiet)
    for record in records.values():
        if record.get("status") == "skipped":
            progress.finish("", record)
            on_result(record)

    def done(task: Task, result: dict[str, Any]) -> None:
        record = records[task.id]
        record.update(result)
        if result["status"] in ("timeout", "error"):
            _remove_partial_output(Path(record["out"]))
        record["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        progress.finish(task.label, record)
        on_result(record)

    targets = sorted({t for e in entries for t in e.targets})
    warm = ["tensorflow", "convert.pipeline", "parsers"] + [m for t in targets for m in RUNTIMES.get(t, [])]
    warm += [f"emitters.{t}" for t in targets if t != "ir"]
    pool = Pool(min(options.jobs, max(1, len(tasks))), warm=warm, max_tasks=options.max_tasks_per_worker)
    interrupted = False
    try:  # CI cancels a job with SIGTERM: stop the workers and still write the report
        previous_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    except ValueError:  # not the main thread
        previous_term = None
    try:
        if tasks:
            pool.run(tasks, on_start=lambda t: progress.start(t.label), on_done=done, on_tick=progress.tick)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
        progress.close()
        pool.close()
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
        "jobs": pool.jobs, "timeout": options.timeout, "started_at": started_at, "wall_seconds": wall,
        "worker_warmup_seconds": pool.warmup_seconds,
        "summary": batch_report.summary(results),
        "exit_code": 130 if interrupted else batch_report.exit_code(results),
        "results": results,
    }
    batch_report.write_json(options.report, doc)
    if options.junit:
        batch_report.write_junit(options.junit, results, wall)
    return doc


def _remove_partial_output(out: Path) -> None:
    """A killed worker cannot clean up: drop the pipeline's temporary directory beside OUT."""
    import shutil

    for tmp in out.parent.glob(f".{out.name}.*.tmp"):
        shutil.rmtree(tmp, ignore_errors=True)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _parse_shard(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        return manifest_mod.parse_shard(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc).replace("--shard ", "")) from None


def _fmt_wall(seconds: float) -> str:
    return f"{int(seconds) // 60}:{seconds % 60:04.1f}"


EPILOG = (
    "Exit codes: 0 every conversion passed (or was skipped as unchanged); 2, 3 or 4 when every failing "
    "conversion failed that way (bad input / unsupported / verification); 1 otherwise (mixed failures, "
    "an internal error, a crash or a timeout); 2 also for an invalid manifest (then nothing runs)."
)


@click.command("batch", epilog=EPILOG)
@click.argument("manifest", type=click.Path(path_type=Path, dir_okay=False))
@click.option("-j", "--jobs", type=click.IntRange(1), default=None,
              help="Worker processes [number of cores]. Each imports TensorFlow once and converts many models.")
@click.option("--timeout", type=click.FloatRange(0, min_open=True), default=DEFAULT_TIMEOUT, show_default=True,
              help="Seconds per conversion (entry x target); an overrunning worker is killed and replaced.")
@click.option("--report", type=click.Path(path_type=Path, dir_okay=False), default=Path("batch-report.json"),
              show_default=True, help="Where to write the JSON report.")
@click.option("--junit", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write JUnit XML: one test case per entry x target.")
@click.option("--shard", callback=_parse_shard, metavar="I/N",
              help="Run only shard I of N (entries sorted by name, every N-th); shards 1..N cover all once.")
@click.option("--changed-only", is_flag=True,
              help="Skip conversions whose source hash, options and tool version match the previous report.")
@click.option("--previous", type=click.Path(path_type=Path, dir_okay=False),
              help="The report --changed-only compares with [the --report file].")
@click.option("--out-root", type=click.Path(path_type=Path, file_okay=False), default=Path("."), show_default=True,
              help="Where entries without `out` go: OUT_ROOT/<name>-<target>/.")
@click.option("--only", metavar="NAME[,NAME]", help="Only these entries (shell globs allowed).")
@click.option("--targets", metavar="T[,T]", help="Only these targets of each entry.")
@click.option("--dry-run", is_flag=True, help="Validate the manifest and list the conversions; run nothing.")
@click.option("--no-memo", is_flag=True,
              help="Parse the source and run TensorFlow again for every target (default: once per source and worker).")
@click.option("--max-tasks-per-worker", type=click.IntRange(0), default=0, show_default=True,
              help="Replace a worker after this many conversions (0: never); bounds memory a framework leaks.")
@click.option("--discard-outputs", is_flag=True,
              help="Delete each converted model once it is verified and reported (checks only; saves disk).")
@click.option("-q", "--quiet", is_flag=True, help="No progress output; only the final summary line.")
def command(manifest: Path, jobs: int | None, timeout: float, report: Path, junit: Path | None,
            shard: tuple[int, int] | None, changed_only: bool, previous: Path | None, out_root: Path,
            only: str | None, targets: str | None, dry_run: bool, no_memo: bool, max_tasks_per_worker: int,
            discard_outputs: bool, quiet: bool) -> None:
    """Convert every model of MANIFEST (TOML or YAML) in parallel and write a report for CI.

    \b
    MANIFEST (TOML; YAML takes the same keys under `defaults:` and `model:`):
      [defaults]                        # optional; applies to every [[model]]
      targets = ["torch", "onnx"]
      rtol = 1e-4
      [[model]]
      name = "mobilenet_v2"             # unique; names the output directory
      source = "models/mobilenet_v2.keras"   # relative to the manifest; ${VAR} expands
      input_shape = [1, 224, 224, 3]    # or "1,224,224,3", or {input = [1,224,224,3], ...}
      inputs = ["input"]                # optional, as --inputs; outputs likewise
      out = "build/{name}/{target}"     # optional [OUT_ROOT/<name>-<target>]
      verify = true                     # default true; also: seed, timeout, keep_ir, opset, caffe_pad, nhwc
    """
    try:
        code = _command(manifest, jobs, timeout, report, junit, shard, changed_only, previous, out_root, only,
                        targets, dry_run, quiet, memo=not no_memo, max_tasks=max_tasks_per_worker,
                        discard=discard_outputs)
    except ManifestError as exc:
        for problem in exc.problems:
            click.echo(problem, err=True)
        click.echo(f"convert: error: {len(exc.problems)} problem(s) in {manifest}; nothing was converted", err=True)
        code = 2
    except KeyboardInterrupt:
        click.echo("convert: error: interrupted", err=True)
        code = 130
    except Exception as exc:  # a bug in batch itself: one line, like the CLI's other commands
        from .batch_worker import internal_error_line

        if os.environ.get("CONVERT_DEBUG"):
            import traceback

            traceback.print_exc()
        click.echo(f"convert: error: {internal_error_line(exc)}", err=True)
        code = 1
    sys.exit(code)


def _command(manifest: Path, jobs: int | None, timeout: float, report: Path, junit: Path | None,
             shard: tuple[int, int] | None, changed_only: bool, previous: Path | None, out_root: Path,
             only: str | None, targets: str | None, dry_run: bool, quiet: bool, memo: bool = True,
             max_tasks: int = 0, discard: bool = False) -> int:
    entries = manifest_mod.load(manifest, out_root=out_root)
    if only and not select(entries, only):
        raise ManifestError([f"{manifest}:0: --only {only!r} matches no entry (names: "
                             f"{', '.join(sorted(e.name for e in entries)[:8])}{', ...' if len(entries) > 8 else ''})"])
    chosen = select(entries, only, targets, shard)
    count = sum(len(e.targets) for e in chosen)
    where = f" (shard {shard[0]}/{shard[1]})" if shard else ""
    if dry_run:
        for e in chosen:
            for t in e.targets:
                click.echo(f"{e.name} -> {t}: {e.source} => {e.outs[t]}")
        click.echo(f"{len(chosen)} of {len(entries)} entries{where}, {count} conversion(s); manifest OK")
        return 0
    options = BatchOptions(jobs=jobs or cores(), timeout=timeout, report=report, junit=junit,
                           changed_only=changed_only, previous=previous, shard=shard, manifest=manifest.resolve(),
                           quiet=quiet, memo=memo, max_tasks_per_worker=max_tasks, discard_outputs=discard)
    if not quiet:
        click.echo(f"convert batch: {len(chosen)} of {len(entries)} entries{where}, {count} conversion(s), "
                   f"{min(options.jobs, count)} worker(s)", err=True)
    doc = run_batch(chosen, options)
    counts = ", ".join(f"{v} {k}" for k, v in doc["summary"].items() if k != "total")
    click.echo(f"convert batch: {doc['summary']['total']} conversion(s) in {_fmt_wall(doc['wall_seconds'])}: "
               f"{counts or 'nothing to do'} -> {report}{f' + {junit}' if junit else ''}")
    return doc["exit_code"]
