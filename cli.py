"""The `convert` command. Thin: parses options, calls the Python API (app/api.py), prints one line per result.

Nothing heavy is imported here: TensorFlow, torch and friends load inside the pipeline, so
`convert --help` stays fast. For the same reason each command imports the app module it runs (app.api,
app.diagnose, app.batch: numpy and the converter's own modules) when it runs: `--help`, a bad flag and a
shell completion pay click's start-up only (the 0.2 s goal of bench/cli_latency.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

from tf_convert.app import interrupts

_RUN_AS_PROGRAM = __name__ == "__main__" or Path(sys.argv[0]).name in ("convert", "tf-convert")
if _RUN_AS_PROGRAM:
    interrupts.remember_early()  # before anything else loads: a signal during the imports is not lost

import functools
import json
import logging
import os
import traceback
import warnings
from typing import Any, Callable

import click

from tf_convert.app.version import __version__
from tf_convert.convert.errors import ConvertError, Interrupted, UsageError
from tf_convert.emitters.options import OPTIONS, TARGETS, option_specs  # light: no framework

EXIT_CODES_HELP = (
    "Exit codes: 0 converted (and verified, if asked); 2 bad usage, unreadable input or a system error "
    "(disk full, permissions); 3 the graph uses something the target cannot express; 4 verification beyond "
    "tolerance; 124 --timeout ran out; 128+N ended by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP); "
    "1 internal error (a bug)."
)
MAX_LINE = 300  # characters of an error line; longer embedded texts are cut in the middle


def _quiet_frameworks() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("ABSL_MIN_LOG_LEVEL", "3")
    # TF's plain (Eigen) CPU kernels as the reference; oneDNN's also print a banner on every start
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    # TF and Keras log through Python's logging (absl), some with tracebacks (a corrupt fingerprint.pb):
    # a failure must stay one line, so only our own messages reach the terminal
    for name in ("absl", "tensorflow", "h5py"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _idle_threads_sleep() -> None:
    """torch's OpenMP threads sleep between parallel regions instead of spinning (read when torch loads):
    a spinning thread burns a core the TF reference child or another process needs (a 2.64 GB
    --verify's three torch runs took 12.8 CPU s spinning, 7.8 CPU s sleeping, on 2 shared cores)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _err(message: str) -> None:
    line = f"convert: error: {' '.join(str(message).split())}"
    if len(line) > MAX_LINE:  # keep the start (what, where) and the end (what to do)
        line = f"{line[:MAX_LINE - 95]} [...] {line[-88:]}"
    click.echo(line, err=True)


def guarded(fn: Callable) -> Callable:
    """Turn every failure into one line on stderr and the documented exit code. Run as the `convert` program,
    the process then ends at once (interrupts.exit_now: no teardown of the frameworks it loaded)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            result = _one_line_failures(fn, args, kwargs)
        except SystemExit as done:
            if _RUN_AS_PROGRAM:
                interrupts.exit_now(done.code)
            raise
        if _RUN_AS_PROGRAM:
            interrupts.exit_now(0)
        return result

    return wrapper


def _one_line_failures(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """fn(*args, **kwargs), every failure one line on stderr and its exit code (SystemExit)."""
    try:  # the handlers first: SIGINT/SIGTERM during the heavy imports inside fn end the run too
        with interrupts.handled(kwargs.get("timeout")), warnings.catch_warnings(record=True) as caught:
            _quiet_frameworks()
            _idle_threads_sleep()
            result = fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - a signal wins over whatever its exception became
        _signal_wins(interrupts.received())
        _report(exc)
    _signal_wins(interrupts.received())  # a framework swallowed the signal's exception: still not exit 0
    for w in caught:  # framework warnings only after a success: a failure stays one line
        click.echo(f"warning: {w.message}", err=True)
    return result


def _signal_wins(ending: BaseException | None) -> None:
    """A signal (or --timeout) came during the run: exit 128+N (124) with its line, whatever followed it."""
    if ending is not None:
        _err(str(ending))
        sys.exit(ending.exit_code)


def _report(exc: BaseException) -> None:
    """One line on stderr and the documented exit code for a failed command."""
    try:
        raise exc
    except (ConvertError, Interrupted) as failure:
        _err(str(failure))
        sys.exit(failure.exit_code)
    except KeyboardInterrupt:
        _err("interrupted")
        sys.exit(130)
    except (click.exceptions.Exit, SystemExit):
        raise
    except ImportError as failure:  # a framework missing where convert/requirements.py did not look first
        from tf_convert.app.requirements import for_failed_import

        missing = for_failed_import(failure)
        if missing is None:
            _internal_error(failure)
        _err(str(missing))
        sys.exit(missing.exit_code)
    except OSError as failure:  # the machine, not the model: disk full, permissions, ... (exit 2, not a bug)
        where = f"{failure.filename}: " if failure.filename else ""
        _err(f"{where}{failure.strerror or failure}: check the paths, permissions and free disk space")
        sys.exit(2)
    except Exception as failure:  # noqa: BLE001 - a bug: say where, and how to report it
        _internal_error(failure)


def _internal_error(exc: BaseException) -> None:
    """One line saying where the bug is, then exit 1."""
    if os.environ.get("CONVERT_DEBUG"):
        traceback.print_exc()  # called from the except clause: the exception being handled
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    where = f"{Path(frame.filename).name}:{frame.lineno} ({frame.name})"
    _err(
        f"internal error in {where}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} "
        f"-- this is a bug; please report it with the command line and `convert --version` "
        f"(set CONVERT_DEBUG=1 for the full traceback)"
    )
    sys.exit(1)


def parse_shapes(values: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """--input-shape 1,224,224,3  or  --input-shape name:1,224,224,3 (repeatable)."""
    from tf_convert.app.api import parse_shape

    shapes: dict[str, tuple[int, ...]] = {}
    for value in values:
        name, _, dims = value.rpartition(":")
        try:
            shapes[name] = parse_shape(dims)
        except UsageError:
            raise UsageError(f"--input-shape {value!r} must list positive integers, e.g. 1,224,224,3") from None
    return shapes


def conversion_options(fn: Callable) -> Callable:
    options = [
        click.argument("src", type=click.Path(path_type=Path)),
        click.option("-o", "--out", type=click.Path(path_type=Path), help="Output directory [./<model>-<target>/]."),
        click.option("--input-shape", "input_shape", multiple=True,
                     help="Input shape in the source layout, e.g. 1,224,224,3 (or NAME:1,224,224,3; repeatable)."),
        click.option("--inputs", help="Input tensor names, comma separated [auto: placeholders]."),
        click.option("--outputs", help="Output tensor names, comma separated, in the order wanted [auto: sinks]."),
        click.option("--set", "settings", multiple=True, metavar="NAME=VALUE",
                     help="Value of a scalar placeholder such as is_training=false (repeatable) "
                          "[auto: PlaceholderWithDefault defaults]."),
        click.option("--use-ema", is_flag=True, help="Take ExponentialMovingAverage shadow variables as weights."),
        click.option("--input-layout", "input_layout", type=click.Choice(["nchw", "nhwc"]), default=None,
                     help="Layout of the TF graph's 4-D inputs [auto: NCHW where the graph transposes the input to "
                          "NHWC first (Hugging Face's pixel_values), NHWC otherwise]."),
        click.option("--no-safe-mode", "unsafe", is_flag=True,
                     help="Keras's safe_mode=False: a .keras file's Lambda layers (Python bytecode) are loaded, "
                          "so their code runs, and the model is traced into a TF graph. Only for files you trust."),
        click.option("--signature", metavar="NAME", help="A .tflite file's SignatureDef [its main subgraph]."),
        click.option("--dequantize", is_flag=True,
                     help="A full-integer .tflite model as the float model it approximates (dequantized weights, "
                          "float arithmetic), judged with --rtol [TFLite's integer arithmetic, exact]."),
        click.option("--verify", is_flag=True, help="Run TF and the target runtime on the same input and compare."),
        click.option("--feed", "feeds", multiple=True, metavar="NAME=VALUE",
                     help="What --verify feeds input NAME, TF and the target alike: a number or a list such as "
                          "[4,15] (repeatable; needed for an input that sets sizes while the model runs)."),
        click.option("--rtol", type=float, default=1e-4, show_default=True,
                     help="Max relative error max|a-b|/max|ref| per output for --verify (plus a 40 dB SNR floor)."),
        click.option("--seed", type=int, default=0, show_default=True, help="Seed of the verification input."),
        click.option("--json", "as_json", is_flag=True, help="Print conversion.json instead of a summary line."),
        click.option("-q", "--quiet", is_flag=True,
                     help="No progress line on a terminal and no notes: only the summary (or error) line."),
        click.option("--keep-ir", is_flag=True, help="Also write the IR (OUT/ir/graph.json + weights.npz)."),
        click.option("--force", is_flag=True,
                     help="Replace OUT if it is a previous output of convert (the old one is removed last)."),
        click.option("--timeout", type=click.FloatRange(0, min_open=True), default=None,
                     help="Give up after this many seconds (exit 124, nothing written)."),
        click.option("--max-memory", "max_memory", metavar="SIZE",
                     help="Refuse models whose declared shapes need more memory than this, e.g. 8G "
                          "[80% of RAM]."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _with_signature(settings: tuple[str, ...], signature: str | None) -> tuple[str, ...]:
    """--signature NAME is the source setting `signature` (a .tflite file's SignatureDef), recorded in
    conversion.json's source_settings with the rest."""
    return (*settings, f"signature={signature}") if signature else settings


def _check_rtol(rtol: float | None) -> None:
    """--rtol is a relative error: 0 (bit-identical outputs) or more."""
    if rtol is not None and not rtol >= 0:
        raise UsageError(f"--rtol {rtol:g} must be 0 or more (a relative error; 0 asks for bit-identical outputs)")


def _convert(target: str, src: Path, *, out, input_shape, inputs, outputs, settings, use_ema, verify, rtol, seed,
             as_json, keep_ir, force, quiet=False, timeout=None, max_memory=None, unsafe=False, signature=None,
             input_layout=None, dequantize=False, feeds=(), **target_options) -> None:
    from tf_convert.app import api, report
    from tf_convert.app.verify import reference_store

    _check_rtol(rtol)
    settings = (*_with_signature(settings, signature), *(["dequantize=true"] if dequantize else []))
    try:
        doc = api.convert(src, target, out, input_shape=parse_shapes(input_shape), inputs=inputs, outputs=outputs,
                          verify=verify, rtol=rtol, seed=seed, keep_ir=keep_ir, force=force,
                          max_memory=max_memory, settings=settings, use_ema=use_ema, safe_mode=not unsafe,
                          progress=not (as_json or quiet), reference_child=True, input_layout=input_layout,
                          feeds=list(feeds),
                          reference_store=reference_store.location() if verify else None, **target_options)
    except ConvertError as exc:
        if as_json:
            click.echo(json.dumps({"error": str(exc), "exit_code": exc.exit_code}))
        raise
    if not (as_json or quiet):
        for note in doc.get("notes", []):
            click.echo(note, err=True)
        for warning in doc.get("warnings", []):  # the emitter's (also in conversion.json)
            click.echo(f"warning: {warning}", err=True)
    click.echo(json.dumps(doc, indent=2) if as_json else report.summary_line(doc))


def target_flags(targets: tuple[str, ...]) -> Callable:
    """The flags of `targets`' options, generated from their dataclasses (emitters/options.py)."""

    def decorate(fn: Callable) -> Callable:
        seen: set[str] = set()  # an option several targets share (--static-shapes) is one flag
        for target in reversed(targets):
            for spec in reversed(option_specs(target)):
                if spec.flag in seen:
                    continue
                seen.add(spec.flag)
                if spec.type is bool:
                    opt = click.option(spec.flag, is_flag=True, default=spec.default, help=spec.help)
                else:
                    kind = (click.Choice(list(spec.choices)) if spec.choices else
                            click.IntRange(*spec.range) if spec.range else spec.type)
                    opt = click.option(spec.flag, type=kind, default=spec.default, show_default=True, help=spec.help)
                fn = opt(fn)
        return fn

    return decorate


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES_HELP)
@click.version_option(__version__, prog_name="convert")
def main() -> None:
    """Convert TensorFlow models (checkpoints, frozen .pb, SavedModel, Keras .h5/.keras) to PyTorch,
    Caffe, MXNet and ONNX with TensorFlow's exact padding.

    \b
    Examples:
      convert tf2torch model.ckpt --verify
      convert tf2caffe frozen.pb --inputs input --outputs logits --input-shape 1,224,224,3
      convert inspect saved_model_dir/
    """
    if _RUN_AS_PROGRAM:
        try:
            interrupts.end_early()
        except Interrupted as ending:  # a signal while the program was starting
            _err(str(ending))
            sys.exit(ending.exit_code)


def into_flags(fn: Callable) -> Callable:
    """tf2torch's --into family: weights into a module the user already has (app/into_module)."""
    options = [
        click.option("--into", "into", metavar="FILE.py:NAME",
                     help="Write TF's weights for your own nn.Module (class or factory; or package.module:NAME) "
                          "instead of generating model.py: OUT/state_dict.pt, padding checked against TF."),
        click.option("--into-kwargs", "into_kwargs", metavar="JSON", help="Arguments for NAME(...), as a JSON object."),
        click.option("--fix-pads", is_flag=True,
                     help="With --into: write OUT/pads.py whose apply(model) pads (and sets eps) as TF does."),
        click.option("--map", "map_path", type=click.Path(path_type=Path, dir_okay=False), metavar="MAP.toml",
                     help='With --into: pin pairs by hand, lines like "features.0.0" = "Conv1".'),
        click.option("--layers", "into_layers", is_flag=True,
                     help="With --into --verify: the per-layer diff against TF, named by module path."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _into(src: Path, *, into: str, into_kwargs, fix_pads, map_path, into_layers, out, input_shape, inputs, outputs,
          verify, rtol, seed, as_json, force, quiet=False, input_layout=None, **_ignored) -> None:
    from tf_convert.app import api
    from tf_convert.app import into_kwargs as kwargs_json

    kwargs = kwargs_json.parse(into_kwargs) if into_kwargs else {}
    doc = api.into(src, into, out, kwargs=kwargs, fix_pads=fix_pads, map=map_path, verify=verify, rtol=rtol, seed=seed,
                   force=force, input_shape=parse_shapes(input_shape), inputs=inputs, outputs=outputs,
                   layers=into_layers, input_layout=input_layout)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    fixed = [d for d in doc["differences"] if d["fixed_by"]]
    checked = f", max rel error {doc['verify']['max_rel']:.2g} vs TF" if doc.get("verify") else ""
    for row in (doc.get("verify") or {}).get("layers", []):
        error = "shape differs" if row["max_rel"] is None else f"{row['max_rel']:.2g}"
        click.echo(f"  {row['module']:<32} {row['tf']:<40} {error}", err=True)
    click.echo(f"mapped {len(doc['parameters'])} tensors into {into}"
               + (f"; pads.py fixes {len(fixed)} difference(s)" if fixed else "") + f"{checked} -> {doc['out']}")


def _target_command(target: str) -> None:
    """`convert tf2<target>`: the shared conversion flags plus the target's own options."""

    @guarded
    def command(src: Path, **kw: Any) -> None:
        if kw.get("into"):
            _into(src, **kw)
            return
        into_only = [flag for flag, key in (("--into-kwargs", "into_kwargs"), ("--fix-pads", "fix_pads"),
                                            ("--map", "map_path"), ("--layers", "into_layers")) if kw.pop(key, None)]
        if into_only:
            raise UsageError(f"{', '.join(into_only)} only work with --into FILE.py:NAME")
        kw.pop("into", None)
        _convert(target, src, **kw)

    command.__doc__ = OPTIONS[target].COMMAND_HELP
    command.__name__ = f"tf2{target}"
    flags = target_flags((target,))(into_flags(command) if target == "torch" else command)
    main.command(f"tf2{target}", epilog=EXIT_CODES_HELP)(conversion_options(flags))


for _target in TARGETS:
    _target_command(_target)


@main.command("tf2ir", epilog=EXIT_CODES_HELP)
@conversion_options
@guarded
def tf2ir(src: Path, **kw: Any) -> None:
    """Write the neutral IR (graph.json + weights.npz) for reading or for tests."""
    kw["verify"] = False
    _convert("ir", src, **kw)


@main.command("inspect")
@click.argument("src", type=click.Path(path_type=Path))
@click.option("--input-shape", "input_shape", multiple=True, help="Input shape in the source layout.")
@click.option("--inputs", help="Input tensor names.")
@click.option("--outputs", help="Output tensor names.")
@click.option("--set", "settings", multiple=True, metavar="NAME=VALUE", help="Value of a scalar placeholder.")
@click.option("--use-ema", is_flag=True, help="ExponentialMovingAverage shadow variables as weights.")
@click.option("--signature", metavar="NAME", help="A .tflite file's SignatureDef [its main subgraph].")
@click.option("--json", "as_json", is_flag=True, help="Rows as JSON (per target: plan, pad_layer, details).")
@target_flags(TARGETS)
@guarded
def inspect_cmd(src: Path, input_shape, inputs, outputs, settings, use_ema: bool, as_json: bool,
                signature: str | None = None, **target_options: Any) -> None:
    """The IR as a table: op, shapes, per-side pads (t,b,l,r) and what each target will do
    (with the given target options, e.g. --caffe-pad kernel)."""
    from tf_convert.app import api, inspect

    graph, notes = api.load(src, input_shape=parse_shapes(input_shape), inputs=inputs, outputs=outputs,
                            settings=_with_signature(settings, signature), use_ema=use_ema)
    rows = inspect.rows(graph, target_options)
    click.echo(json.dumps(rows, indent=1) if as_json else inspect.render(graph, target_options, rows))
    for note in notes:
        click.echo(note, err=True)


@main.command("verify")
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--rtol", type=float, default=None, help="Override the recorded tolerance.")
@click.option("--layers", is_flag=True,
              help="Compare every intermediate tensor with TF: max_rel, border vs interior, first divergence.")
@click.option("--json", "as_json", is_flag=True, help="With --layers: the per-layer document as JSON.")
@click.option("--report", "report_path", type=click.Path(path_type=Path),
              help="With --layers: also write one self-contained HTML report (table, pad plans, heat maps).")
@click.option("--source", "source", type=click.Path(path_type=Path),
              help="The converted source, if not where conversion.json records it (relative to OUT); "
                   "its bytes must still be the ones converted.")
@click.option("--no-safe-mode", "unsafe", is_flag=True,
              help="Keras's safe_mode=False for the reference: the source's Lambda layers (Python bytecode) "
                   "load, so their code runs. Only for files you trust; never taken from OUT.")
@guarded
def verify_cmd(out: Path, rtol: float | None, layers: bool, as_json: bool, report_path: Path | None,
               source: Path | None, unsafe: bool) -> None:
    """Re-run the check recorded in OUT/conversion.json (--layers: find where it diverges). OUT is data:
    the source read is the one recorded relative to OUT (or --source), and its hash must match."""
    from tf_convert.app import api, report
    from tf_convert.app.verify import reference_store

    _check_rtol(rtol)
    if layers or report_path:
        _verify_layers(out, rtol, as_json, report_path, source, not unsafe)
        return
    if as_json:
        raise UsageError("--json needs --layers (the plain check prints one line)")
    result = api.verify(out, rtol, reference_store=reference_store.location(), source=source, safe_mode=not unsafe)
    snr = "exact" if result["snr_db"] is None else f"SNR {result['snr_db']:.1f} dB"
    click.echo(f"OK max_rel {report.fmt_error(result['max_rel'])} ({snr}){report.stored_note(result)}")
    for warning in result.get("warnings", []):
        click.echo(f"warning: {warning}", err=True)


def _verify_layers(out: Path, rtol: float | None, as_json: bool, report_path: Path | None, source: Path | None,
                   safe_mode: bool) -> None:
    from tf_convert.app import diagnose
    from tf_convert.app.diagnose import layers
    from tf_convert.convert.errors import VerifyError

    conversion, doc, graph = diagnose.diagnose(out, rtol, source=source, safe_mode=safe_mode)
    if report_path:
        from tf_convert.app.diagnose import html

        html.write(report_path, conversion, doc, graph)
    click.echo(json.dumps(layers.public(doc), indent=1) if as_json else layers.render(doc))
    if doc["first_divergence"] is not None:
        raise VerifyError(f"per-layer check beyond rtol {doc['rtol']:g}: {layers.divergence_line(doc)}")


BATCH_EPILOG = (
    "Exit codes: 0 every conversion passed (or was skipped as unchanged); 2, 3 or 4 when every failing "
    "conversion failed that way (bad input / unsupported / verification); 1 otherwise (mixed failures, "
    "an internal error, a crash or a timeout); 2 also for an invalid manifest (then nothing runs), "
    "an unreachable --scheduler, or without Dask distributed installed."
)


def _parse_shard(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, int] | None:
    from tf_convert.app.batch.manifest import parse_shard

    if value is None:
        return None
    try:
        return parse_shard(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc).replace("--shard ", "")) from None


@main.command("batch", epilog=BATCH_EPILOG)
@click.argument("manifest", type=click.Path(path_type=Path, dir_okay=False))
@click.option("-j", "--jobs", type=click.IntRange(1), default=None,
              help="Local worker processes [number of cores]. Each imports TensorFlow once and converts many models.")
@click.option("--scheduler", envvar="DASK_SCHEDULER_ADDRESS", metavar="ADDRESS",
              help="Run on this Dask scheduler's workers (e.g. tcp://head:8786) instead of local ones "
                   "[$DASK_SCHEDULER_ADDRESS]. Sources and outputs must be paths the workers can reach.")
@click.option("--worker-memory", metavar="SIZE",
              help="Memory limit of each local worker, e.g. 8GB; past it the worker is restarted and its "
                   "conversion reported as an error [memory / --jobs].")
@click.option("--timeout", type=click.FloatRange(0, min_open=True), default=1800.0, show_default=True,
              help="Seconds per conversion (entry x target); an overrunning one is cancelled and its worker restarted.")
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
              help="Where entries without `out` go: OUT_ROOT/<name>-<target>/. Every `out` must lie inside it.")
@click.option("--allow-outside-out-root", "allow_outside_root", is_flag=True,
              help="Let manifest `out` paths lie outside --out-root (they are still checked like -o).")
@click.option("--only", metavar="NAME[,NAME]", help="Only these entries (shell globs allowed).")
@click.option("--targets", metavar="T[,T]", help="Only these targets of each entry.")
@click.option("--dry-run", is_flag=True, help="Validate the manifest and list the conversions; run nothing.")
@click.option("--no-memo", is_flag=True,
              help="Parse the source and run TensorFlow again for every target (default: once per source and worker).")
@click.option("--max-tasks-per-worker", type=click.IntRange(0), default=0, show_default=True,
              help="Restart a worker after this many conversions (0: never); bounds memory a framework leaks.")
@click.option("--discard-outputs/--keep-outputs", default=False,
              help="Delete each converted model once it is verified and reported (checks only; saves disk) "
                   "[--keep-outputs].")
@click.option("-q", "--quiet", is_flag=True, help="No progress output; only the final summary line.")
def batch_cmd(manifest: Path, jobs: int | None, scheduler: str | None, worker_memory: str | None, timeout: float,
              report: Path, junit: Path | None, shard: tuple[int, int] | None, changed_only: bool,
              previous: Path | None, out_root: Path, only: str | None, targets: str | None, dry_run: bool,
              no_memo: bool, max_tasks_per_worker: int, discard_outputs: bool, quiet: bool,
              allow_outside_root: bool) -> None:
    """Convert every model of MANIFEST (TOML or YAML) on Dask workers and write a report for CI.

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
    if _RUN_AS_PROGRAM:
        try:  # batch takes Ctrl-C as KeyboardInterrupt and SIGTERM its own way (app/batch/runner.py)
            interrupts.usual_dispositions()
        except Interrupted as ending:  # a signal came before this line
            _err(str(ending))
            sys.exit(ending.exit_code)
    _quiet_frameworks()
    from tf_convert.app import batch

    options = batch.BatchOptions(
        timeout=timeout, report=report, junit=junit, changed_only=changed_only, previous=previous, shard=shard,
        quiet=quiet, memo=not no_memo, max_tasks_per_worker=max_tasks_per_worker, discard_outputs=discard_outputs,
        scheduler=scheduler or None, worker_memory=worker_memory)
    if jobs:
        options.jobs = jobs
    try:
        code = batch.main(manifest, options, out_root=out_root, only=only, targets=targets, dry_run=dry_run,
                          allow_outside_root=allow_outside_root)
    except batch.ManifestError as exc:
        for problem in exc.problems:
            click.echo(problem, err=True)
        _err(f"{len(exc.problems)} problem(s) in {manifest}; nothing was converted")
        code = 2
    except (batch.DaskMissing, batch.SchedulerUnreachable) as exc:
        _err(str(exc))
        code = 2
    except KeyboardInterrupt:
        _err("interrupted")
        code = 130
    except OSError as exc:  # the machine, not the models: disk full, permissions, ...
        _err(f"{exc.strerror or exc}{f' ({exc.filename})' if exc.filename else ''}: check the paths, "
             f"permissions and free disk space")
        code = 1
    except Exception as exc:  # noqa: BLE001 - a bug in batch itself: one line, like the other commands
        from tf_convert.app.batch.report import internal_error_line

        if os.environ.get("CONVERT_DEBUG"):
            traceback.print_exc()
        _err(internal_error_line(exc))
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    main()
