"""Running written MXNet models in real MXNet 1.9.1, in a subprocess of `.venv-mxnet/bin/python`.

Importing mxnet costs about a second, so `evaluate` / `run_many` run many models in one process.
Arrays travel as .npz files in a temporary directory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from tf_convert.convert.errors import UsageError, VerifyError

from . import params

REPO = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).with_name("runner.py")
PYTHON_ENV = "CONVERT_MXNET_PYTHON"
MODES = ("gluon", "module")  # verification runs both; runner.py also has "gluon-fused" (benchmarks)
STREAM_ABOVE_BYTES = 256 << 20  # a larger .params file is read one array at a time (evaluate's `stream`)


def mxnet_python() -> Path:
    """The interpreter with mxnet 1.9.1: $CONVERT_MXNET_PYTHON or <repo>/.venv-mxnet/bin/python."""
    configured = os.environ.get(PYTHON_ENV)
    path = Path(configured) if configured else REPO / ".venv-mxnet" / "bin" / "python"
    if not path.exists():
        raise UsageError(f"MXNet runtime not found at {path}: run `make mxnet-env`")
    return path


class MXNetRunError(RuntimeError):
    """MXNet could not load or run a written model (a bug in the emitter)."""


class LoadersDisagree(VerifyError):
    """`mx.gluon.SymbolBlock.imports` and `mx.mod.Module` give different outputs for one model: the check
    fails (exit 4), naming both results."""


class Runner:
    """A runner process (runner.py) started before its jobs are known: it imports mxnet (about a second)
    while its caller waits for something else, e.g. a check for TensorFlow's reference run, then
    runs one batch of jobs (`call`). `close()` ends one that was never given its jobs."""

    def __init__(self) -> None:
        env = dict(os.environ, MXNET_SUBGRAPH_VERBOSE="0")
        # -I: neither the working directory nor the user's site-packages on its path (runner.py needs nothing
        # beside it), so no file around a model or in the current directory runs in place of numpy or mxnet
        self.proc = subprocess.Popen([str(mxnet_python()), "-I", str(RUNNER), "-"], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)

    def call(self, jobs: list[dict], tmp: Path, timeout: float = 1800) -> list[dict]:
        """Raw runner jobs (see runner.py); one result dict per job."""
        jobs_path, results_path = tmp / "jobs.json", tmp / "results.jsonl"
        jobs_path.write_text(json.dumps(jobs))
        try:
            _, stderr = self.proc.communicate(f"{jobs_path}\n{results_path}\n", timeout=timeout)
        except BaseException:  # a timeout, or an interrupt (app/interrupts.py): the runner ends with the call
            self.close()
            raise
        results = []
        if results_path.exists():
            results = [json.loads(line) for line in results_path.read_text().splitlines() if line.strip()]
        if len(results) < len(jobs):
            why = f"MXNet runner exited with {self.proc.returncode}: {stderr.strip()[-2000:]}"
            if self.proc.returncode == -signal.SIGKILL:  # what the kernel's OOM killer sends
                why = ("MXNet runner was killed (SIGKILL), usually by the kernel's out-of-memory killer: MXNet holds "
                       "a model's weights at least once while running it; free memory or check on a larger machine")
            results += [{"ok": False, "error": why}] * (len(jobs) - len(results))
        return results

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


def call_runner(jobs: list[dict], tmp: Path, timeout: float = 1800, runner: Runner | None = None) -> list[dict]:
    """Run raw runner jobs (see runner.py) in one subprocess (`runner`: one started before); one result dict
    per job."""
    return (runner or Runner()).call(jobs, tmp, timeout)


def evaluate(
    jobs: Iterable[tuple[str | Path, Sequence[np.ndarray]]],
    modes: Sequence[str] = ("gluon",),
    bench: int = 0,
    stream: bool | None = None,
    runner: Runner | None = None,
) -> list[dict]:
    """Run each (out_dir, inputs) in every mode ('gluon' = SymbolBlock.imports, 'module' = mx.mod.Module).

    One result per job: {"outputs": {mode: [arrays]}, "ms": {mode: median ms}, "best_ms": {mode: fastest
    run}} (timings with `bench` runs) or {"error": message}. `stream` (default: a .params file over
    STREAM_ABOVE_BYTES) reads the weights one array at a time into each loader (runner._streamed), so
    MXNet holds the model about once instead of 2-3x. `runner`: the process to run them in,
    started before (Runner).
    """
    jobs = list(jobs)
    with tempfile.TemporaryDirectory(prefix="convert-mxnet-") as tmp_name:
        tmp = Path(tmp_name)
        specs = []
        for i, (out_dir, inputs) in enumerate(jobs):
            np.savez(tmp / f"in{i}.npz", *[_as_fed(x) for x in inputs])
            prefix = Path(out_dir).resolve() / "model"
            specs.append({"kind": "run", "prefix": str(prefix), "inputs": str(tmp / f"in{i}.npz"),
                          "out": str(tmp / f"out{i}"), "modes": list(modes), "bench": bench,
                          "weights": _weights_index(Path(f"{prefix}-0000.params"), stream)})
        results = []
        for raw in call_runner(specs, tmp, runner=runner):
            if not raw["ok"]:
                results.append({"error": raw["error"]})
                continue
            outputs = {}
            for mode, path in raw["outputs"].items():
                with np.load(path) as f:
                    outputs[mode] = [f[f"arr_{k}"] for k in range(len(f.files))]
            results.append({"outputs": outputs, "ms": raw.get("ms", {}), "best_ms": raw.get("best_ms", {})})
        return results


def _weights_index(path: Path, stream: bool | None) -> list | None:
    """The .params file's index for the runner to stream from, or None to load it with MXNet's own loader."""
    if stream is None:
        stream = path.exists() and path.stat().st_size > STREAM_ABOVE_BYTES
    if not stream:
        return None
    return [[r.name, list(r.shape), r.dtype, r.offset] for r in params.index(path)]


def run_many(jobs: Iterable[tuple[str | Path, Sequence[np.ndarray]]], mode: str = "gluon") -> list[list[np.ndarray]]:
    """Outputs of many written models, evaluated in one MXNet process (raises on the first failure)."""
    jobs = list(jobs)
    outputs = []
    for (out_dir, _), result in zip(jobs, evaluate(jobs, (mode,))):
        if "error" in result:
            raise MXNetRunError(f"MXNet failed on {out_dir}: {result['error']}")
        outputs.append(result["outputs"][mode])
    return outputs


def _as_fed(x: np.ndarray) -> np.ndarray:
    """Integer and bool inputs keep their type (token ids, masks); numbers are float32."""
    x = np.asarray(x)
    return np.ascontiguousarray(x if x.dtype.kind in "iub" else x.astype(np.float32))  # MXNet 1.x: 0-d as (1,)


def run(out_dir: str | Path, inputs: Sequence[np.ndarray], stream: bool | None = None,
        runner: Runner | None = None) -> list[np.ndarray]:
    """Run the model written in `out_dir` in MXNet through both loaders users have,
    `mx.gluon.SymbolBlock.imports` and `mx.mod.Module`; they must agree. Outputs in graph order. A large
    model (`stream`, see evaluate) goes through the same two paths with its weights read an array at a
    time, Module's being its graph executor bound once, unfused (runner._module). `runner`: the process
    to run it in, started before (Runner)."""
    (result,) = evaluate([(out_dir, inputs)], ("gluon", "module"), stream=stream, runner=runner)
    if "error" in result:
        raise MXNetRunError(f"MXNet failed on {out_dir}: {result['error']}")
    gluon, module = result["outputs"]["gluon"], result["outputs"]["module"]
    for k, (a, b) in enumerate(zip(gluon, module)):
        if not _loaders_agree(a, b):
            raise LoadersDisagree(f"MXNet's two loaders disagree on {out_dir}, output {k}: {_both(a, b)}; a model "
                                  "users load either way must compute the same (a random op, or files edited?)")
    return gluon


class StartedRun:
    """`run` with its runner process started ahead: a check starts it before it waits for TensorFlow's
    reference, so that importing mxnet overlaps TF's run. The first run uses it, a later one
    starts its own; `close()` ends it if no run came."""

    def __init__(self) -> None:
        self._runner: Runner | None = Runner()

    def run(self, out_dir: str | Path, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        runner, self._runner = self._runner, None
        return run(out_dir, inputs, runner=runner)

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None


def start_run() -> StartedRun:
    """MXNet's runner started now, for a `run` to come (see StartedRun)."""
    return StartedRun()


def _loaders_agree(a: np.ndarray, b: np.ndarray) -> bool:
    """The two loaders' outputs agree: the same infinities and NaNs in the same places, the rest within
    1e-6 of the output's own scale (no floor of 1: a small output gets the same scrutiny)."""
    if a.shape != b.shape:
        return False
    a, b = a.astype(np.float64), b.astype(np.float64)  # masks and integers compare as numbers
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(a - b))
    if not np.all(np.isfinite(diff)):
        return False
    scale = float(np.max(np.abs(a[np.isfinite(a)]), initial=0.0))
    return float(np.max(diff, initial=0.0)) <= 1e-6 * scale


def _both(gluon: np.ndarray, module: np.ndarray) -> str:
    """Both loaders' results, as one line: their shapes, or the first element where they differ."""
    if gluon.shape != module.shape:
        return f"SymbolBlock.imports gives shape {gluon.shape}, mx.mod.Module shape {module.shape}"
    a, b = gluon.astype(np.float64), module.astype(np.float64)
    differs = ~((a == b) | (np.isnan(a) & np.isnan(b)))
    where = tuple(int(i) for i in np.argwhere(differs)[0]) if differs.any() else ()
    with np.errstate(invalid="ignore"):
        largest = float(np.nanmax(np.abs(a - b), initial=0.0))
    return (f"SymbolBlock.imports gives {a[where]:.7g}, mx.mod.Module {b[where]:.7g} at index {where} "
            f"(shape {gluon.shape}; largest difference {largest:.3g})")


def run_internals(out_dir: str | Path, inputs: Sequence[np.ndarray], names: Sequence[str]) -> dict[str, np.ndarray]:
    """The internal outputs `names` (`<node>_output`, see get_internals()) of the model in `out_dir`."""
    with tempfile.TemporaryDirectory(prefix="convert-mxnet-") as tmp_name:
        tmp = Path(tmp_name)
        np.savez(tmp / "in.npz", *[_as_fed(x) for x in inputs])
        job = {"kind": "internals", "prefix": str(Path(out_dir).resolve() / "model"),
               "inputs": str(tmp / "in.npz"), "names": list(names), "out": str(tmp / "o.npz")}
        (raw,) = call_runner([job], tmp)
        if not raw["ok"]:
            raise MXNetRunError(f"MXNet failed on {out_dir}: {raw['error']}")
        with np.load(tmp / "o.npz") as f:
            return {n: f[f"arr_{i}"] for i, n in enumerate(raw["names"])}


def nd_load(path: str | Path) -> dict[str, np.ndarray]:
    """`mx.nd.load(path)` as numpy arrays (for checking the .params writer)."""
    with tempfile.TemporaryDirectory(prefix="convert-mxnet-") as tmp_name:
        tmp = Path(tmp_name)
        (raw,) = call_runner([{"kind": "load", "path": str(Path(path).resolve()), "out": str(tmp / "o.npz")}], tmp)
        if not raw["ok"]:
            raise MXNetRunError(raw["error"])
        with np.load(tmp / "o.npz") as f:
            return {n: f[n] for n in raw["names"]}


def nd_save_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """The bytes `mx.nd.save` writes for `arrays` (for checking the .params writer)."""
    with tempfile.TemporaryDirectory(prefix="convert-mxnet-") as tmp_name:
        tmp = Path(tmp_name)
        np.savez(tmp / "a.npz", *arrays.values())
        job = {"kind": "save", "arrays": str(tmp / "a.npz"), "names": json.dumps(list(arrays)),
               "out": str(tmp / "a.params")}
        (raw,) = call_runner([job], tmp)
        if not raw["ok"]:
            raise MXNetRunError(raw["error"])
        return (tmp / "a.params").read_bytes()


def mxnet_tojson(symbol_path: str | Path) -> str:
    """The symbol JSON as MXNet re-serialises it after loading (for checking the JSON writer)."""
    with tempfile.TemporaryDirectory(prefix="convert-mxnet-") as tmp_name:
        tmp = Path(tmp_name)
        job = {"kind": "tojson", "path": str(Path(symbol_path).resolve()), "out": str(tmp / "s.json")}
        (raw,) = call_runner([job], tmp)
        if not raw["ok"]:
            raise MXNetRunError(raw["error"])
        return (tmp / "s.json").read_text()
