"""TensorFlow's reference run, in a child process when the source is large or the CLI converts once.

TF keeps what its allocator took after the session closes: run in the converting process, the reference
and the target runtime would each hold every weight at once (2.2x the model in RAM). A child
returns all of TF's memory to the system before the target runs. Through the API small sources stay in
process: a child costs a TensorFlow import (seconds), and tests and `convert batch` verify hundreds of small
models in one process; the CLI converts once, and there the child's import runs beside the conversion.

The child gets the source path, a skeleton of the graph (inputs, outputs, names, layouts, parse
settings: it re-reads the source's graph, not its weights) and the inputs, through a temp dir (npz);
it writes the outputs back the same way, or the error (its class and one-line message), which the
parent raises again as the same class: a TF failure is the same exit code whichever side ran it.

One verification asks for several input sets (its size, other sizes, sensitivity probes): run_references
takes them all at once, so TF is imported and the graph read once per verification, not once per set
(39.5 s of a 2.64 GB checkpoint's --verify was mostly re-started children).

start_references starts that child without waiting for it, so TF's import and run overlap the model's
write; TF reads its weights a few at a time there (parsers/tensorflow/weight_stream.py), so the two fit in
memory together, and the target runtime loads only once the child has ended (verify reads the outcomes first).
A small source's child (the CLI's) holds little: there the target runs before its outcomes are read, beside
TF's import and run (verify's `target_first`).
spawn() starts a child before its question is known: it imports TensorFlow while the pipeline parses the
source (the input sets need the graph), and waits on its stdin until ask() has written the request. The CLI
(one conversion per process) has even a small source's reference run so (wants_child): TF's import, seconds
of CPU, then runs on the other core beside the parse and the emit instead of after them.
"""

from __future__ import annotations

import importlib
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tf_convert import parsers
from tf_convert.convert import isolated
from tf_convert.convert.errors import ConvertError, InputError
from tf_convert.convert.ir import Graph
from tf_convert.parsers.base import SAFE_MODE
from tf_convert.parsers.source import open_source

from ..interrupts import exit_now
from ..requirements import check_reference

# Above this many bytes of source files the reference runs in a child (or above a quarter of the memory
# available now, when that is less): below it TF's import costs more than its memory is worth.
CHILD_ABOVE_BYTES = 256 << 20
# Overrides CHILD_ABOVE_BYTES (a number of bytes; 0: always a child): tests force the child path with it.
THRESHOLD_ENV = "TF_CONVERT_REFERENCE_CHILD_ABOVE"
_REQUEST, _INPUTS, _OUTPUTS, _ERROR, _LOG = "request.pkl", "inputs.npz", "outputs.npz", "error.json", "stderr.txt"
_SOURCE = "source.txt"  # written before the child starts: it checks TF for that source's kind, then waits
_GO = b"go\n"  # on the child's stdin once the request is written (EOF without it: the parent gave up)
_children_started = 0  # read by children_started(): tests check that one verification starts one child

# One set's reference outputs, or what TF raised for that set (run_references goes on with the next set).
Outcome = list[np.ndarray] | BaseException


class ReferenceFailed(RuntimeError):
    """TF raised something that is not a ConvertError in the child; `str()` is its message, as in process."""


def refusal(error: BaseException) -> BaseException:
    """What TF raising on an input set the check needs is: a ConvertError or MemoryError as it is; any other
    failure (TF refusing to run the source on that input: NaN reaching a CheckNumerics, a failed Assert, its
    own crash) is about the source, not a bug of the converter: InputError (exit 2), the same whether TF ran
    in process (the API) or in a child (the CLI)."""
    if isinstance(error, (ConvertError, MemoryError)) or not isinstance(error, Exception):
        return error
    name = "" if isinstance(error, ReferenceFailed) else f"{type(error).__name__}: "
    return InputError(f"TensorFlow cannot run the source on the check's input ({name}{_telling_line(error)}); "
                      "convert without --verify, or fix the model")


def _telling_line(error: BaseException) -> str:
    """The line of a TF error that says what went wrong: TF's "Graph execution error:" heads a stack trace,
    and the message proper follows the "Node: 'NAME'" line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    for k, line in enumerate(lines[:-1]):
        if line.startswith("Node: "):
            return f"{line[6:]}: {lines[k + 1]}"[:200]
    return (lines[0] if lines else type(error).__name__)[:200]


def child_threshold() -> int:
    """Bytes of source files above which the reference runs in a child process."""
    forced = os.environ.get(THRESHOLD_ENV, "").strip()
    if forced:
        return int(forced)
    try:
        available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return CHILD_ABOVE_BYTES
    return min(CHILD_ABOVE_BYTES, available // 4)


def source_bytes(path: str | Path) -> int:
    """Size of every file of the source (checkpoint shards, SavedModel variables, .pb, .h5)."""
    total = 0
    for f in open_source(path).files:
        try:
            total += Path(f).stat().st_size
        except OSError:
            pass
    return total


def in_child(path: str | Path) -> bool:
    return source_bytes(path) > child_threshold()


def wants_child(path: str | Path, small_too: bool = False) -> bool:
    """Does a verification of `path` run its reference in a child? A large source's always (in_child);
    with `small_too` (a process that converts once: the CLI) any source's, unless this process has
    imported TensorFlow already (then the child would only pay its import again)."""
    return in_child(path) or (small_too and "tensorflow" not in sys.modules)


def run_reference(path: str | Path, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """parsers.run_reference, in a child process when the source is large (see the module doc)."""
    if not in_child(path):
        return parsers.run_reference(path, graph, inputs)
    outputs = _run_child(path, graph, inputs, None)
    return [outputs[f"y{i}"] for i in range(len(graph.outputs))]


def run_references(path: str | Path, graph: Graph, input_sets: list[list[np.ndarray]]) -> list[Outcome]:
    """run_reference for each of `input_sets`, in ONE child process when the source is large: per set its
    outputs, or the exception TF raised for it (the caller decides which ones are fatal)."""

    return start_references(path, graph, input_sets).outcomes()


class Started:
    """run_references' answer, asked for now and read later: for a large source its child runs meanwhile
    (the pipeline starts it before it emits the model); a small source's sets run in process when read."""

    def __init__(self, path: str | Path, graph: Graph, input_sets: list[list[np.ndarray]],
                 child: Child | None = None) -> None:
        self.path, self.graph, self.input_sets = path, graph, input_sets
        self.child = child if child is not None else spawn(path) if in_child(path) else None
        if self.child is not None:
            self.child.ask(graph, [x for inputs in input_sets for x in inputs], None, sets=len(input_sets))

    def outcomes(self) -> list[Outcome]:
        """Per set its outputs or TF's error; a child has ended (and freed TF's memory) when this returns."""
        if self.child is None:
            return all_sets(self.path, self.graph, self.input_sets)
        outputs = self.child.outputs()
        errors = json.loads(str(outputs["errors"]))
        n = len(self.graph.outputs)
        return [_error_from(errors[str(k)]) if str(k) in errors else [outputs[f"y{k}_{i}"] for i in range(n)]
                for k in range(len(self.input_sets))]

    def cancel(self) -> None:
        """End the child, if one runs (a conversion that fails or is interrupted before it reads it)."""
        if self.child is not None:
            self.child.cancel()


def start_references(path: str | Path, graph: Graph, input_sets: list[list[np.ndarray]],
                     child: Child | None = None) -> Started:
    """run_references, started now and read with `.outcomes()`; `.cancel()` when it is no longer wanted.
    `child`: a spawn()ed child to ask (whatever the source's size), else one of its own for a large source."""
    return Started(path, graph, input_sets, child)


def all_sets(path: str | Path, graph: Graph, input_sets: list[list[np.ndarray]]) -> list[Outcome]:
    """Every set in one TF run (parsers.run_reference_sets: each weight read once); when TF refuses that
    run, each set on its own, so that a refused set is told apart from the others."""
    try:
        return list(parsers.run_reference_sets(path, graph, input_sets))
    except Exception:  # noqa: BLE001 - some set fails: find which, one by one (the rare path)
        return [_outcome(lambda x=inputs: parsers.run_reference(path, graph, x)) for inputs in input_sets]


def children_started() -> int:
    """How many reference children this process has started (one per verification)."""
    return _children_started


def _outcome(run) -> Outcome:
    try:
        return run()
    except Exception as error:  # noqa: BLE001 - per set, as the child reports it; the caller raises what is fatal
        return error


def run_reference_tensors(path: str | Path, graph: Graph, inputs: list[np.ndarray],
                          names: list[str]) -> dict[str, np.ndarray]:
    """parsers.run_reference_tensors (the --layers diff), in a child process when the source is large."""
    if not in_child(path):
        return parsers.run_reference_tensors(path, graph, inputs, names)
    outputs = _run_child(path, graph, inputs, list(names))
    order = json.loads(str(outputs["names"])) if "names" in outputs else []
    return {name: outputs[f"t{i}"] for i, name in enumerate(order)}


def skeleton(graph: Graph) -> Graph:
    """What the reference run reads of `graph`: its inputs, outputs, their shapes, source names and layouts,
    and the parse settings (no nodes, no weights: the child re-reads the source's graph)."""
    kept = Graph(name=graph.name, inputs=list(graph.inputs), outputs=list(graph.outputs),
                 source_names=dict(graph.source_names), source_layouts=dict(graph.source_layouts),
                 metadata={k: graph.metadata[k] for k in ("tf_settings", "source_path", SAFE_MODE)
                           if k in graph.metadata})
    for name in dict.fromkeys(graph.inputs + graph.outputs):
        tensor = graph.tensors[name]
        kept.add_tensor(name, tensor.shape, tensor.dtype)
    return kept


def _run_child(path: str | Path, graph: Graph, inputs: list[np.ndarray], names: list[str] | None,
               sets: int | None = None) -> dict:
    """Run this module as a child on a temp dir; its outputs, or its error raised here. An interrupt (Ctrl-C,
    SIGTERM via app/interrupts.py) kills the child and removes the temp dir on its way up. `sets`: `inputs`
    holds that many input sets one after another (run_references)."""
    return spawn(path).ask(graph, inputs, names, sets).outputs()


def spawn(path: str | Path) -> Child:
    """A reference child for the source at `path`, started now: it imports TensorFlow (and checks it) while
    this process goes on, then waits for Child.ask()."""
    return Child(path)


class Child:
    """A reference child, started by the constructor (spawn): ask() gives it its question, outputs() waits
    for what it wrote (or raises its error), cancel() ends it; either way its temp dir is removed. Started
    early, TF's import and run overlap the parent's conversion."""

    def __init__(self, path: str | Path) -> None:
        global _children_started
        _children_started += 1
        self.work = Path(tempfile.mkdtemp(prefix="tf-convert-reference-"))
        self.proc: subprocess.Popen | None = None
        try:
            # absolute: the child runs in its own directory (nothing of the caller's on its import path)
            (self.work / _SOURCE).write_text(os.path.abspath(open_source(path).path))
            with open(self.work / _LOG, "wb") as log:
                # its own session: a terminal's Ctrl-C reaches the parent only, which ends the child itself
                self.proc = _start_child(self.work, log)
        except BaseException:
            self.cancel()
            raise

    def ask(self, graph: Graph, inputs: list[np.ndarray], names: list[str] | None,
            sets: int | None = None) -> Child:
        """Write the request (`sets`: `inputs` holds that many input sets one after another) and let the
        child run it; returns self, to read with outputs()."""
        try:
            with open(self.work / _REQUEST, "wb") as f:
                pickle.dump({"source": (self.work / _SOURCE).read_text(), "graph": skeleton(graph),
                             "names": names, "sets": sets}, f)
            np.savez(self.work / _INPUTS, *[np.asarray(x) for x in inputs])
            try:
                self.proc.stdin.write(_GO)
                self.proc.stdin.close()
            except BrokenPipeError:  # it has ended already (TF missing): outputs() raises what it wrote
                pass
        except BaseException:
            self.cancel()
            raise
        return self

    def outputs(self) -> dict:
        """Wait for the child (it has freed all of TF's memory when this returns); its outputs, or its error."""
        try:
            code = self.proc.wait()
            if (self.work / _ERROR).exists():
                raise _error_from(json.loads((self.work / _ERROR).read_text()))
            if code != 0 or not (self.work / _OUTPUTS).exists():
                raise _died(code, self.work / _LOG)
            with np.load(self.work / _OUTPUTS) as saved:
                return {k: saved[k] for k in saved.files}
        finally:
            self.cancel()

    def cancel(self) -> None:
        """End the child if it still runs and remove its temp dir (idempotent)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc is not None and self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:  # a broken pipe: the child is gone either way
                pass
        shutil.rmtree(self.work, ignore_errors=True)


_ENDING = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


# A child with several input sets runs one graph copy per set in one session: the copies give TF's executor
# ops to run side by side, so each op gets one thread (2.64 GB, 5 sets: 7.1-7.3 CPU s instead of
# 8.0-8.2, and less wall, on 2 cores that the converting process shares); the user's own settings win.
SIDE_BY_SIDE_THREADS = {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "2"}


def side_by_side_threads(sets: int | None, environ: Mapping[str, str]) -> dict[str, str]:
    """The thread settings a child sets for a request of `sets` input sets (TF reads them when its first
    session starts, after the request has come), leaving those in `environ` (the user's) as they are."""
    if (sets or 1) < 2:
        return {}
    return {k: v for k, v in SIDE_BY_SIDE_THREADS.items() if k not in environ}


def _start_child(work: Path, log) -> subprocess.Popen:
    """The child, started with the ending signals held back until Popen has returned: a signal that came
    between the fork and the return would leave no `proc` to kill (an orphan child running TF on)."""
    main = threading.current_thread() is threading.main_thread()
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _ENDING) if main else None
    try:
        return subprocess.Popen(isolated.python_module("tf_convert.app.verify.reference_process", str(work),
                                                       str(os.getpid())),
                                stdin=subprocess.PIPE, stdout=log, stderr=log, start_new_session=True)
    finally:
        if held is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a signal that came meanwhile is handled now


def _died(code: int, log: Path) -> BaseException:
    if code == -signal.SIGKILL:  # the kernel's OOM killer, most likely
        return MemoryError("the TensorFlow reference run was killed (out of memory?); verify on a machine "
                           "with more RAM, or convert without --verify")
    lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
    tail = [ln for ln in lines if ln.strip()][-1:]
    return ReferenceFailed(f"the TensorFlow reference run ended with exit {code}"
                           + (f": {tail[0][:200]}" if tail else ""))


def _error_from(record: dict[str, Any]) -> BaseException:
    """The child's error as this process would have raised it: same ConvertError class and message."""
    message = record["message"]
    # only the tool's own error classes: a name in the record never picks a module to import
    if record["kind"] == "convert" and str(record.get("module", "")).startswith("tf_convert."):
        try:
            cls = getattr(importlib.import_module(record["module"]), record["qualname"])
        except (ImportError, AttributeError):
            cls = None
        if isinstance(cls, type) and issubclass(cls, ConvertError):
            error = cls.__new__(cls)
            Exception.__init__(error, message)  # not cls.__init__: a subclass may take other arguments
            return error
    if record["kind"] == "memory":
        return MemoryError(message)
    return ReferenceFailed(message)


def _record(error: BaseException) -> dict[str, Any]:
    kind = "convert" if isinstance(error, ConvertError) else "memory" if isinstance(error, MemoryError) else "other"
    return {"kind": kind, "module": type(error).__module__, "qualname": type(error).__qualname__,
            "message": str(error) or type(error).__name__}


def _end_with_parent(parent: int, work: Path) -> None:
    """A child whose parent has gone (killed, or interrupted as another thread took the signal) ends too,
    and removes its temp dir, which nobody will read (a SIGKILLed parent could not)."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        shutil.rmtree(work, ignore_errors=True)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def child_main(work: Path, parent: int | None = None) -> int:
    """The child: read the request, run the reference in this process, write outputs (or the error)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _ENDING)  # held back by the parent while it started us
    if parent is not None:
        _end_with_parent(parent, work)
    if not _checked(work):
        return 0
    if sys.stdin.buffer.readline() != _GO:  # EOF: the parent has gone (cancel() kills us before it closes
        shutil.rmtree(work, ignore_errors=True)  # the pipe): nobody else removes the temp dir
        return 1
    return _answer(work)


def _checked(work: Path) -> bool:
    """TF (and Keras) for the source's kind import; else the error is written for the parent."""
    try:
        # the parent left TF's import to us: done while it parses, before its request exists
        check_reference(parsers.open_source((work / _SOURCE).read_text()).kind)
    except Exception as error:  # noqa: BLE001 - the parent raises it when it reads the outcomes
        (work / _ERROR).write_text(json.dumps(_record(error)))
        return False
    return True


def _answer(work: Path) -> int:
    """Run the request in `work` and write the outputs (or the error)."""
    with open(work / _REQUEST, "rb") as f:
        request = pickle.load(f)
    os.environ.update(side_by_side_threads(request.get("sets"), os.environ))
    with np.load(work / _INPUTS) as saved:
        inputs = [saved[f"arr_{i}"] for i in range(len(saved.files))]
    try:
        if request.get("sets") is not None:
            _write_sets(work, request, inputs)
        elif request["names"] is None:
            values = parsers.run_reference(request["source"], request["graph"], inputs)
            np.savez(work / _OUTPUTS, **{f"y{i}": np.asarray(v) for i, v in enumerate(values)})
        else:
            found = parsers.run_reference_tensors(request["source"], request["graph"], inputs, request["names"])
            np.savez(work / _OUTPUTS, names=np.asarray(json.dumps(list(found))),
                     **{f"t{i}": np.asarray(v) for i, v in enumerate(found.values())})
    except Exception as error:  # noqa: BLE001 - every failure goes back to the parent, which raises it
        (work / _ERROR).write_text(json.dumps(_record(error)))
        return 0
    return 0


def _write_sets(work: Path, request: dict, inputs: list[np.ndarray]) -> None:
    """run_references in the child: every set in this one process (TF imported, the graph read once);
    a set TF refuses is recorded as its error and the others still run."""
    per_set = len(inputs) // request["sets"]
    input_sets = [inputs[k * per_set:(k + 1) * per_set] for k in range(request["sets"])]
    values: dict[str, np.ndarray] = {}
    errors: dict[str, dict[str, Any]] = {}
    for k, outcome in enumerate(all_sets(request["source"], request["graph"], input_sets)):
        if isinstance(outcome, BaseException):  # this set's failure goes back to the parent with the others
            errors[str(k)] = _record(outcome)
            continue
        values.update({f"y{k}_{i}": np.asarray(v) for i, v in enumerate(outcome)})
    np.savez(work / _OUTPUTS, errors=np.asarray(json.dumps(errors)), **values)


if __name__ == "__main__":
    exit_now(child_main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else None))
