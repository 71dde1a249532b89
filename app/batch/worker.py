"""What runs inside a Dask worker: its setup (a worker plugin) and the conversion task.

Imported by the workers and by cluster.py when a run starts (it needs `distributed`). The plugin
gives each worker process its own parse/reference cache, imports the frameworks once (so no
conversion's timeout pays for `import tensorflow`) and, on a worker started without one, declares a
`memory` resource (its memory limit) for memory-aware scheduling.
"""

from __future__ import annotations

import importlib
import os
import resource
import shutil
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from distributed import WorkerPlugin, get_worker

from tf_convert.app import pipeline
from tf_convert.convert.errors import ConvertError
from tf_convert.emitters.base import EmitOptions

from .cache import MemoryCache
from .report import internal_error_line
from .shared import EVENTS, MEMORY, PLUGIN, quiet_environment

STATUS_BY_EXIT = {0: "ok", 2: "failed", 3: "unsupported", 4: "verify_failed", 1: "error"}


class WorkerSetup(WorkerPlugin):
    """Dask worker plugin (registered by the runner; re-run on every restarted worker)."""

    name = PLUGIN

    def __init__(self, warm: list[str], memo: bool = True, log_dir: str | None = None):
        self.warm = list(warm)
        self.log_dir = log_dir  # local workers: their output goes to LOG_DIR/worker-PID.log, not the CI log
        self.memo = memo
        self.cache: MemoryCache | None = None
        self.warmup_seconds = 0.0
        self.ready: threading.Event | None = None  # made in setup (the plugin is pickled to workers)

    async def setup(self, worker: Any) -> None:
        if self.log_dir:
            fd = os.open(os.path.join(self.log_dir, f"worker-{os.getpid()}.log"),
                         os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
        self.cache = MemoryCache() if self.memo else None
        if MEMORY not in worker.state.total_resources:
            limit = worker.memory_manager.memory_limit or _total_memory()
            await worker.set_resources(**{**worker.state.total_resources, MEMORY: float(limit)})
        # imported in the background: the worker is up (and can be stopped) at once; a task waits
        # for the imports before its clock starts
        self.ready = threading.Event()
        threading.Thread(target=self._import, name="convert-batch-imports", daemon=True).start()

    def _import(self) -> None:
        t0 = time.perf_counter()
        for var, value in quiet_environment(1).items():
            os.environ.setdefault(var, value)
        for module in self.warm:
            try:
                importlib.import_module(module)
            except Exception as exc:  # noqa: BLE001 - a missing optional runtime shows up in its task
                print(f"convert batch: worker cannot import {module}: {exc}", file=sys.stderr, flush=True)
        self.warmup_seconds = round(time.perf_counter() - t0, 2)
        self.ready.set()


def _total_memory() -> int:
    import psutil

    return psutil.virtual_memory().total


# ---- memory ------------------------------------------------------------------------------------


def _reset_peak() -> None:
    """Reset the kernel's peak-RSS mark (Linux >= 4.0) so the next reading covers one task only."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass  # elsewhere the reading is the process' lifetime peak (ru_maxrss)


def _peak_rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20, 1)


# ---- the task ----------------------------------------------------------------------------------


def run_task(task_id: int, function: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Dask task: announce the start (the runner's --timeout clock), run `module:function(**kwargs)`
    (which returns a dict) and add seconds, peak memory and the worker's address."""
    worker = get_worker()
    plugin = worker.plugins.get(PLUGIN)
    if getattr(plugin, "ready", None) is not None:
        plugin.ready.wait()
    worker.log_event(EVENTS, {"task": task_id, "worker": worker.address, "pid": os.getpid()})
    _reset_peak()
    t0 = time.perf_counter()
    try:
        module, _, name = function.partition(":")
        call = getattr(importlib.import_module(module), name)
        result = dict(call(**kwargs))
    except Exception as exc:  # noqa: BLE001 - becomes the task's result, never kills the worker
        result = {"status": "error", "exit_code": 1, "error": internal_error_line(exc),
                  "traceback": traceback.format_exc()}
    result.setdefault("seconds", round(time.perf_counter() - t0, 3))
    result["peak_rss_mb"] = _peak_rss_mb()
    result["worker"] = worker.address
    result["worker_pid"] = os.getpid()
    return result


def worker_cache() -> MemoryCache | None:
    """This worker's cache (made by its WorkerSetup plugin); None outside a batch worker."""
    try:
        return getattr(get_worker().plugins.get(PLUGIN), "cache", None)
    except ValueError:  # not in a worker
        return None


def convert_task(spec: dict[str, Any]) -> dict[str, Any]:
    """One (entry, target) conversion through convert.pipeline.run; every outcome becomes a result."""
    cache = worker_cache() if spec.get("memo", True) else None
    hits_before = dict(cache.hits) if cache is not None else {}
    req = pipeline.Request(
        source=Path(spec["source"]), target=spec["target"], out=Path(spec["out"]),
        inputs=spec["inputs"], outputs=spec["outputs"],
        input_shapes={k: tuple(v) for k, v in spec["input_shapes"].items()},
        verify=spec["verify"], rtol=spec["rtol"], seed=spec["seed"], keep_ir=spec["keep_ir"],
        feeds=spec.get("feeds") or {}, force=True, options=EmitOptions(**spec["emit"]),
    )
    trace = None
    doc = None
    t0 = time.perf_counter()
    try:
        conversion = pipeline.run(req, cache=cache)
        doc = conversion.doc
        failure = conversion.error
        status, code, error = ("ok", 0, None) if failure is None else (
            STATUS_BY_EXIT[failure.exit_code], failure.exit_code, str(failure))
    except ConvertError as exc:
        status, code, error = STATUS_BY_EXIT.get(exc.exit_code, "error"), exc.exit_code, str(exc)
    except Exception as exc:  # noqa: BLE001 - a bug in the converter: reported, the batch goes on
        status, code, error = "error", 1, internal_error_line(exc)
        trace = traceback.format_exc()
    if spec.get("discard"):
        shutil.rmtree(spec["out"], ignore_errors=True)
    result: dict[str, Any] = {
        "status": status, "exit_code": code,
        "error": error.replace("\n", " ") if error else None,
        "seconds": round(time.perf_counter() - t0, 3), "traceback": trace,
        # this conversion reused the parse / TF's outputs of an earlier target of the same source
        "reused": {k: cache.hits[k] > hits_before[k] for k in ("parse", "reference")} if cache else None,
    }
    if doc is not None:
        result.update(
            verify=_short_verify(doc.get("verify")),
            pad_layers=len(doc.get("pad_layers", [])),
            warnings=doc.get("warnings", []), notes=doc.get("notes", []),
            source_format=doc["source"]["format"], source_sha256=doc["source"]["sha256"],
            stages=doc.get("seconds", {}),
        )
    return result


def _short_verify(v: dict[str, Any] | None) -> dict[str, Any] | None:
    if not v:
        return None
    return {k: v.get(k) for k in ("max_abs", "max_rel", "snr_db", "psnr_db", "passed", "verdict", "why", "rtol",
                                   "worst_output")}
