"""A pool of long-lived worker processes with a per-task timeout.

concurrent.futures cannot stop one hanging task, so this small scheduler owns its workers: each has
a pipe, the parent waits on all pipes and process sentinels at once, kills (the process group of) a
worker whose task overran its deadline, and starts a fresh worker in its place. Workers are started
with 'spawn' (forking a process that has TensorFlow's threads is unsafe) and import the frameworks
once, so only the first task of each worker pays for `import tensorflow`.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Callable

from . import batch_worker

def cores() -> int:
    """The cores this process may use (the affinity mask of a CI container, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


START_ATTEMPTS = 3  # consecutive workers dying before "ready": give up instead of respawning forever


@dataclass
class Task:
    id: int
    function: str  # "module:function" run in the worker with **kwargs; returns a dict
    kwargs: dict[str, Any]
    timeout: float | None = None
    label: str = ""
    expected: float = 0.0  # seconds it took last time (scheduling: longest first)
    group: str = ""  # tasks of one group go to the same worker when they can (it reuses their parse)


@dataclass
class _Worker:
    process: Any
    conn: Any
    log: Path
    ready: bool = False
    task: Task | None = None
    deadline: float = float("inf")
    task_started: float = 0.0
    last_group: str = ""
    tasks_done: int = 0
    started: float = field(default_factory=time.monotonic)


def _log_tail(path: Path, lines: int = 3) -> str:
    try:
        text = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return " | ".join(text[-lines:])[-400:]


class Pool:
    """`run(tasks, on_start, on_done, on_tick)`; results are dicts (see batch_worker.call)."""

    def __init__(self, jobs: int, warm: list[str] | None = None, threads: int | None = None,
                 log_dir: Path | None = None, max_tasks: int = 0):
        self.jobs = max(1, jobs)
        self.max_tasks = max_tasks  # replace a worker after this many tasks (0: never), to bound leaks
        self.warm = list(warm or [])
        self.threads = threads or max(1, cores() // self.jobs)
        self._tmp = None if log_dir else tempfile.TemporaryDirectory(prefix="convert-batch-")
        self.log_dir = Path(log_dir or self._tmp.name)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._ctx = multiprocessing.get_context("spawn")
        self._workers: list[_Worker] = []
        self._spawned = 0
        self.warmup_seconds: list[float] = []

    # ---- workers -------------------------------------------------------------------------------

    def _spawn(self) -> _Worker:
        self._spawned += 1
        log = self.log_dir / f"worker-{self._spawned}.log"
        parent, child = self._ctx.Pipe(duplex=True)
        process = self._ctx.Process(target=batch_worker.main, args=(child, str(log), self.warm, self.threads),
                                    name=f"convert-batch-{self._spawned}")
        process.start()
        child.close()
        worker = _Worker(process, parent, log)
        self._workers.append(worker)
        return worker

    def _kill(self, worker: _Worker) -> None:
        """SIGKILL the worker's process group (it called setpgrp), then reap it."""
        pid = worker.process.pid
        try:
            if pid and os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                worker.process.kill()
        except (ProcessLookupError, PermissionError, OSError):
            pass
        worker.process.join(5)
        worker.conn.close()
        self._workers.remove(worker)

    def _retire(self, worker: _Worker) -> None:
        """Ask an idle worker to exit (it is replaced by a fresh one)."""
        try:
            worker.conn.send(None)
        except OSError:
            pass
        worker.process.join(10)
        self._kill(worker)

    def _pick(self, worker: _Worker, pending: deque) -> Task:
        """The next task for `worker`: one of the group it ran last, else one of a group no other
        worker is on (else the first), so that the targets of one source meet in one worker."""
        busy = {w.last_group for w in self._workers if w is not worker and w.last_group}
        chosen = next((i for i, t in enumerate(pending) if t.group and t.group == worker.last_group), None)
        if chosen is None:
            chosen = next((i for i, t in enumerate(pending) if t.group not in busy), 0)
        task = pending[chosen]
        del pending[chosen]
        return task

    def close(self) -> None:
        for worker in list(self._workers):
            if worker.task is None and worker.process.is_alive():
                try:
                    worker.conn.send(None)
                except OSError:
                    pass
        deadline = time.monotonic() + 5
        for worker in list(self._workers):
            if worker.task is None:
                worker.process.join(max(0.0, deadline - time.monotonic()))
            self._kill(worker)
        if self._tmp is not None:
            self._tmp.cleanup()

    # ---- scheduling ----------------------------------------------------------------------------

    def run(self, tasks: list[Task], on_start: Callable[[Task], None] = lambda t: None,
            on_done: Callable[[Task, dict[str, Any]], None] = lambda t, r: None,
            on_tick: Callable[[], None] = lambda: None, tick: float = 0.5) -> None:
        pending = deque(tasks)
        start_failures = 0
        for _ in range(min(self.jobs, len(pending))):
            self._spawn()
        while pending or any(w.task for w in self._workers):
            for worker in self._workers:
                if worker.ready and worker.task is None and pending:
                    task = self._pick(worker, pending)
                    worker.task, worker.last_group = task, task.group
                    worker.task_started = time.monotonic()
                    worker.deadline = worker.task_started + task.timeout if task.timeout else float("inf")
                    worker.conn.send((task.id, task.function, task.kwargs))
                    on_start(task)
            if not self._workers and pending:
                self._spawn()
            now = time.monotonic()
            next_deadline = min((w.deadline for w in self._workers), default=float("inf"))
            ready = wait([w.conn for w in self._workers] + [w.process.sentinel for w in self._workers],
                         timeout=max(0.0, min(tick, next_deadline - now)))
            for worker in list(self._workers):
                closed = False
                if worker.conn in ready:
                    try:
                        message = worker.conn.recv()
                    except (EOFError, OSError):
                        message, closed = None, True
                    if message and message[0] == "ready":
                        worker.ready = True
                        start_failures = 0
                        self.warmup_seconds.append(message[2])
                    elif message and message[0] == "done":
                        task, worker.task = worker.task, None
                        worker.deadline = float("inf")
                        worker.tasks_done += 1
                        on_done(task, message[2])
                        if self.max_tasks and worker.tasks_done >= self.max_tasks:
                            self._retire(worker)
                            if pending:
                                self._spawn()
                        continue
                if closed or worker.process.sentinel in ready or not worker.process.is_alive():
                    if not closed and worker.conn.poll():
                        continue  # drain its last message first
                    worker.process.join(1)
                    code = worker.process.exitcode
                    how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
                    tail = _log_tail(worker.log)
                    task = worker.task
                    self._kill(worker)
                    if task is not None:
                        on_done(task, {"status": "error", "exit_code": 1,
                                       "error": f"worker process died ({how}) while converting"
                                                + (f"; last output: {tail}" if tail else ""),
                                       "seconds": round(time.monotonic() - worker.task_started, 3)})
                    elif not worker.ready:
                        start_failures += 1
                        if start_failures >= START_ATTEMPTS:
                            reason = f"worker processes fail to start ({how})" + (f": {tail}" if tail else "")
                            while pending:
                                on_done(pending.popleft(), {"status": "error", "exit_code": 1, "error": reason})
                            continue
                    if pending or any(w.task for w in self._workers):
                        self._spawn()
            now = time.monotonic()
            for worker in list(self._workers):
                if worker.task is not None and now >= worker.deadline:
                    task = worker.task
                    self._kill(worker)
                    on_done(task, {"status": "timeout", "exit_code": 1,
                                   "error": f"timed out after {task.timeout:g} s (worker killed and replaced)",
                                   "seconds": round(task.timeout or 0, 3)})
                    if pending:
                        self._spawn()
            on_tick()
