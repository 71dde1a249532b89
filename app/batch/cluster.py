"""Run tasks on Dask distributed: an embedded LocalCluster, or an existing scheduler.

Dask places the work (memory resources, worker restarts past the nanny's memory limit, lost
workers); this module adds what a batch of conversions needs on top:
- a per-task timeout: a task announces its start (a worker event); one that overruns is cancelled
  and its worker restarted (a thread cannot be stopped), the others go on;
- no more tasks in flight than worker threads, so a task starts when it is sent (its clock is
  honest) and a worker that dies takes only its running task with it (reported as `error`);
- the targets of one source go to the worker that parsed it when it is free (its cache);
- `max_tasks` restarts a worker after that many tasks (memory a framework leaks).
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from tf_convert.convert import isolated

from .shared import EVENTS, MEMORY, PLUGIN, quiet_environment

NO_WORKERS_GRACE = 300.0  # seconds without any worker before the rest of the run is given up
INSTALL_HINT = "convert batch runs on Dask distributed: pip install 'tf-convert[batch]' (or pip install distributed)"
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"


class DaskMissing(RuntimeError):
    """`distributed` is not installed."""

    exit_code = 2


class SchedulerUnreachable(RuntimeError):
    """--scheduler names no running scheduler."""

    exit_code = 2


def require_distributed() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise DaskMissing(INSTALL_HINT) from None


def cores() -> int:
    """The cores this process may use (the affinity mask of a CI container, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass
class Task:
    id: int
    function: str  # "module:function" run in a worker with **kwargs; returns a dict
    kwargs: dict[str, Any]
    timeout: float | None = None
    label: str = ""
    expected: float = 0.0  # seconds it took last time (scheduling: longest first)
    group: str = ""  # tasks of one group go to the same worker when they can (it reuses their parse)
    memory: int = 0  # bytes it may need: it only goes to a worker with that much (0: any)


class Cluster:
    """Workers to run tasks on: `with Cluster(jobs=2) as c: c.run(tasks, ...)`."""

    def __init__(self, jobs: int = 0, scheduler: str | None = None, worker_memory: str | int | None = None,
                 warm: list[str] | None = None, max_tasks: int = 0):
        self.jobs = jobs or cores()
        self.scheduler = scheduler
        self.worker_memory = worker_memory
        self.warm = list(warm or [])
        self.max_tasks = max_tasks
        self.client: Any = None
        self._restarted = False
        self._logs: Any = None  # local workers' output (a TemporaryDirectory)
        self.local: Any = None
        self._environ: dict[str, str | None] = {}  # what Dask's nannies overwrite in this process's environment

    # ---- start / stop ------------------------------------------------------------------------

    def __enter__(self) -> Cluster:
        require_distributed()
        import dask
        from distributed import Client, LocalCluster

        from .worker import WorkerSetup  # worker.py imports `distributed` (the optional extra) at its top

        logging.getLogger("distributed").setLevel(logging.CRITICAL)  # the report says what went wrong
        if self.scheduler:
            try:
                self.client = Client(self.scheduler, timeout="20s")
            except OSError as exc:
                raise SchedulerUnreachable(f"cannot reach the Dask scheduler at {self.scheduler}: {exc}; "
                                           f"check the address and that it is running") from None
        else:
            # in-process scheduler: a worker that dies while converting fails that conversion at
            # once instead of retrying it elsewhere (a crashing model would crash worker after worker)
            # no statistical profiler in the workers: sampling every 10 ms slows `import tensorflow` down
            # workers start isolated from the working directory and the user's site-packages (a numpy.py
            # there never runs): the variables are read by the worker's interpreter as it starts
            spawn_environ = {**dask.config.get("distributed.nanny.pre-spawn-environ", {}), **isolated.ISOLATED_ENV}
            # a nanny writes these into this process's os.environ (its children inherit them): the caller's
            # environment gets its own values back at close
            overwritten = [*spawn_environ, "PYTHONHASHSEED", "__DASK_PARENT_PID"]
            self._environ = {key: os.environ.get(key) for key in overwritten}
            with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                                  "distributed.worker.profile.enabled": False,
                                  "distributed.nanny.pre-spawn-environ": spawn_environ}):
                memory = memory_limit(self.worker_memory, self.jobs)
                threads = max(1, cores() // self.jobs)
                self.local = LocalCluster(
                    n_workers=self.jobs, threads_per_worker=1, processes=True, memory_limit=memory,
                    resources={MEMORY: float(memory)},
                    dashboard_address=None, silence_logs=logging.CRITICAL, env=quiet_environment(threads))
                self.client = Client(self.local)
        if self.local is not None:
            self._logs = tempfile.TemporaryDirectory(prefix="convert-batch-")
        try:
            self.client.register_plugin(WorkerSetup(self.warm, log_dir=self._logs and self._logs.name), name=PLUGIN)
            self.client.wait_for_workers(1, timeout=120)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop what this object started (a LocalCluster; only the connection to a scheduler).
        A shutdown problem is not the conversions' problem: it never loses the report."""
        if self.scheduler and self.client is not None:
            try:  # a shared cluster's workers drop their cache (and new workers skip the setup)
                self.client.unregister_worker_plugin(PLUGIN)
            except Exception:  # noqa: BLE001
                pass
        for thing in (self.client, self.local):
            if thing is not None:
                try:
                    thing.close(timeout=30)
                except Exception:  # noqa: BLE001
                    pass
        self.client = self.local = None
        for key, value in self._environ.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._environ = {}
        if self._logs is not None:
            self._logs.cleanup()
            self._logs = None

    def output_tail(self, pid: int | None) -> str:
        """The last line a local worker process printed (why it died, often)."""
        if not pid or self._logs is None:
            return ""
        try:
            lines = Path(self._logs.name, f"worker-{pid}.log").read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1][:300] if lines else ""

    # ---- the cluster as it is now ------------------------------------------------------------

    def workers(self) -> dict[str, dict[str, Any]]:
        return self.client.scheduler_info(n_workers=-1)["workers"]

    def threads(self, leaving: set[str] = frozenset()) -> int:
        """Worker threads, not counting the workers in `leaving` (being restarted)."""
        return sum(w.get("nthreads", 1) for a, w in self.workers().items() if a not in leaving)

    def largest_memory(self) -> float:
        return max((w.get("resources", {}).get(MEMORY, 0) for w in self.workers().values()), default=0)

    def _restart(self, address: str, pid: int | None = None) -> None:
        """Have the worker's nanny kill it (a running thread cannot be stopped otherwise) and start a
        fresh one; tasks waiting there go back to the scheduler. Without a nanny it is removed.
        A local worker stuck in a task is killed at once (its nanny starts a fresh one)."""
        self._restarted = True
        if pid and self.local is not None:
            try:
                os.kill(pid, signal.SIGKILL)
                return
            except OSError:
                pass
        try:
            self.client.sync(self.client.scheduler.restart_workers, workers=[address], timeout=30,
                             on_error="return", wait_for_workers=False,
                             stimulus_id=f"convert-batch-restart-{time.time()}")
        except Exception:  # noqa: BLE001 - gone already: nothing more to do
            pass

    # ---- running tasks -----------------------------------------------------------------------

    def run(self, tasks: list[Task], on_start: Callable[[Task], None] = lambda t: None,
            on_done: Callable[[Task, dict[str, Any]], None] = lambda t, r: None,
            on_tick: Callable[[], None] = lambda: None, tick: float = 0.5) -> None:
        """Run every task; `on_done` gets each one's result dict exactly once."""
        from distributed import KilledWorker

        from .worker import run_task  # (as WorkerSetup above)

        events: queue.Queue[tuple[str, Any]] = queue.Queue()
        pending = list(tasks)
        futures: dict[int, Any] = {}  # task id -> future, while in flight
        started: dict[int, tuple[str, float]] = {}  # task id -> (worker, monotonic start)
        pids: dict[int, int] = {}  # task id -> its worker's process id
        resent: dict[int, int] = {}  # task id -> times sent again
        done_on: dict[str, int] = {}  # worker -> tasks finished there
        retiring: set[str] = set()
        hints: list[tuple[str, str]] = []  # (worker, group): the worker just freed, its last group
        by_id = {t.id: t for t in tasks}
        run_id = uuid.uuid4().hex[:8]
        self.client.subscribe_topic(EVENTS, lambda event: events.put(("start", event[1])))

        def finish(task: Task, result: dict[str, Any]) -> None:
            futures.pop(task.id, None)
            started.pop(task.id, None)
            on_done(task, result)

        def submit(task: Task, worker: str | None = None) -> None:
            largest = self.largest_memory() if task.memory else 0
            # more than any worker has: ask for the largest worker whole rather than wait forever
            resources = {MEMORY: float(min(task.memory, largest))} if largest else None
            # a key per attempt: a resent task under its old key gets the scheduler's record of the
            # failed attempt back at once (measured: four KilledWorkers within 10 ms)
            key = f"{task.label}-{run_id}-{task.id}-{resent.get(task.id, 0)}"
            future = self.client.submit(
                run_task, task.id, task.function, task.kwargs, key=key,
                resources=resources, pure=False,
                **({"workers": [worker], "allow_other_workers": True} if worker else {}))
            futures[task.id] = future
            future.add_done_callback(lambda f, i=task.id: events.put(("done", (i, f))))

        no_workers_since: list[float] = []

        def admit() -> None:
            threads = self.threads(leaving=retiring)
            if threads == 0 and not no_workers_since:
                no_workers_since.append(time.monotonic())
            elif threads:
                no_workers_since.clear()
            elif time.monotonic() - no_workers_since[0] > NO_WORKERS_GRACE:
                for future in futures.values():
                    future.cancel()
                for task in pending + [by_id[i] for i in futures]:  # give up rather than wait forever
                    finish(task, {"status": "error", "exit_code": 1, "error":
                                  f"no Dask worker for {NO_WORKERS_GRACE:g} s: the cluster lost all its workers"})
                pending.clear()
            free = threads - len(futures)
            while free > 0 and pending:
                busy = {by_id[i].group for i in futures}
                task, worker = None, None
                while hints and task is None:
                    worker, group = hints.pop(0)
                    task = next((t for t in pending if t.group and t.group == group), None)
                if task is None:
                    worker = None
                    task = next((t for t in pending if t.group not in busy), pending[0])
                pending.remove(task)
                submit(task, worker)
                free -= 1

        try:
            admit()
            while futures or pending:
                now = time.monotonic()
                deadlines = [s + by_id[i].timeout for i, (_, s) in started.items() if by_id[i].timeout]
                wait = max(0.0, min([tick, *(d - now for d in deadlines)]))
                try:
                    kind, payload = events.get(timeout=wait)
                except queue.Empty:
                    kind, payload = "tick", None
                if kind == "start":
                    task_id, worker = payload["task"], payload["worker"]
                    if task_id in futures and started.get(task_id, ("",))[0] != worker:
                        if task_id not in started:
                            on_start(by_id[task_id])
                        started[task_id] = (worker, time.monotonic())  # (again, when retried elsewhere)
                        pids[task_id] = payload.get("pid")
                elif kind == "done":
                    task_id, future = payload
                    if futures.get(task_id) is not future:
                        continue  # cancelled by a timeout and already reported
                    task = by_id[task_id]
                    worker = started.get(task_id, ("", 0.0))[0]
                    seconds = round(time.monotonic() - started[task_id][1], 3) if task_id in started else None
                    if future.status == "finished":
                        result = future.result()
                        worker = result.get("worker", worker)
                    else:
                        exc = future.exception() if future.status == "error" else None
                        # lost before it began, or on a worker this run killed (a timed-out task's, whose
                        # slot dask may hand this task before the kill lands): not its fault, send it again
                        innocent = task_id not in started or started[task_id][0] in retiring
                        if isinstance(exc, KilledWorker) and innocent and resent.get(task_id, 0) < 3:
                            resent[task_id] = resent.get(task_id, 0) + 1
                            futures.pop(task_id)
                            pending.insert(0, task)
                            admit()
                            continue
                        if isinstance(exc, KilledWorker):
                            tail = self.output_tail(pids.get(task_id))
                            error = ("worker process died while converting (a crash, or killed past its memory "
                                     "limit; its nanny restarted it)" + (f"; last output: {tail}" if tail else ""))
                        else:
                            error = f"the cluster lost this conversion ({future.status}: {exc!r})"
                        result = {"status": "error", "exit_code": 1, "error": error, "seconds": seconds,
                                  "worker": worker or None}
                    finish(task, result)
                    if worker:
                        done_on[worker] = done_on.get(worker, 0) + 1
                        if self.max_tasks and done_on[worker] >= self.max_tasks and worker not in retiring:
                            retiring.add(worker)
                            self._restart(worker, result.get("worker_pid"))
                        elif worker not in retiring:
                            hints.append((worker, task.group))
                now = time.monotonic()
                for task_id, (worker, start) in list(started.items()):
                    task = by_id[task_id]
                    if task.timeout and now - start >= task.timeout:
                        futures[task_id].cancel()
                        retiring.add(worker)
                        self._restart(worker, pids.get(task_id))
                        finish(task, {"status": "timeout", "exit_code": 1, "worker": worker,
                                      "error": f"timed out after {task.timeout:g} s (worker restarted)",
                                      "seconds": round(task.timeout, 3)})
                admit()
                on_tick()
        finally:
            try:
                self.client.unsubscribe_topic(EVENTS)
            except Exception:  # noqa: BLE001
                pass
            for future in futures.values():
                future.cancel()


def memory_limit(memory: str | int | None, jobs: int) -> int:
    """Bytes per worker: `memory` ("4GB", bytes), or by default the machine's memory / workers."""
    from dask.utils import parse_bytes
    from distributed.system import MEMORY_LIMIT

    if memory in (None, "", "auto"):
        return int(MEMORY_LIMIT // jobs)
    return int(parse_bytes(memory)) if isinstance(memory, str) else int(memory)
