"""Progress of one conversion: the stage it is in, tensors and bytes of weights written.

The pipeline creates one `Progress` per conversion (`for_stderr`) and hands it to the emitter;
writers call `written()` per tensor. `SILENT` does nothing (the default: tests, the API, batch
workers, stderr not a terminal, `--json`, `--quiet`). `Terminal` draws one line on a terminal's
stderr, e.g. `emit  312/560 tensors  1.2/2.6 GB  4.1 s`, redrawn at most 10 times a second (also
while a stage reports nothing, so the seconds keep counting) and cleared at the end, so that the
summary or error line is all that stays.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, TextIO


class Progress:
    """Reports nothing; subclasses draw. One instance per conversion."""

    def stage(self, name: str, total_bytes: int | None = None, total_tensors: int | None = None) -> None:
        """A new stage begins ('parse', 'emit', 'verify'); `total_bytes`/`total_tensors`: what it will
        write, when known."""

    def written(self, name: str, nbytes: int) -> None:
        """One tensor of `nbytes` bytes was written to the output."""

    def close(self) -> None:
        """The conversion ended (success or not): clear what was drawn."""


SILENT = Progress()

CLEAR_LINE = "\r\x1b[K"  # carriage return + erase to the end of the line (every ANSI terminal)


def size_text(done: int, total: int | None) -> str:
    """`1.2/2.6 GB` (the unit of the total), `340 MB` without one."""
    top = max(done, total or 0)
    unit, scale = next(((u, s) for u, s in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)) if top >= s), ("B", 1))
    if total is None:
        return f"{done / scale:.1f} {unit}"
    return f"{done / scale:.1f}/{total / scale:.1f} {unit}"


class Terminal(Progress):
    """One line on `stream` (a terminal), redrawn at most every `interval` seconds; with `tick`, a
    daemon thread redraws it that often during quiet stages too (parse, verify)."""

    def __init__(self, stream: TextIO, interval: float = 0.1, clock: Callable[[], float] = time.monotonic,
                 tick: bool = True):
        self.stream = stream
        self.interval = interval
        self.clock = clock
        self.name = ""
        self.total_bytes: int | None = None
        self.total_tensors: int | None = None
        self.tensors = 0
        self.nbytes = 0
        self.started = clock()
        self.drawn_at: float | None = None
        self.width = 0  # characters on the line now
        self.lock = threading.Lock()  # the writers' thread and the ticker
        self.stopped = threading.Event()
        self.ticker = threading.Thread(target=self._tick, name="convert-progress", daemon=True) if tick else None

    def stage(self, name: str, total_bytes: int | None = None, total_tensors: int | None = None) -> None:
        with self.lock:
            self.name, self.total_bytes, self.total_tensors = name, total_bytes, total_tensors
            self.tensors = self.nbytes = 0
            self.started = self.clock()
            self._draw()
        if self.ticker is not None and not self.ticker.is_alive() and not self.stopped.is_set():
            self.ticker.start()

    def written(self, name: str, nbytes: int) -> None:
        with self.lock:
            self.tensors += 1
            self.nbytes += int(nbytes)
            self._draw_if_due()

    def close(self) -> None:
        self.stopped.set()
        if self.ticker is not None and self.ticker.is_alive():
            self.ticker.join(timeout=1)
        with self.lock:
            if self.width:
                self._put(CLEAR_LINE)
                self.width = 0

    def _tick(self) -> None:
        while not self.stopped.wait(self.interval):
            with self.lock:
                if not self.stopped.is_set():
                    self._draw_if_due()

    def _draw_if_due(self) -> None:
        if self.drawn_at is None or self.clock() - self.drawn_at >= self.interval:
            self._draw()

    def line(self) -> str:
        """What is drawn now: the stage, then tensors and bytes written once there are any, then seconds."""
        parts = [f"{self.name:<8}"]
        if self.tensors:
            total = f"/{self.total_tensors}" if self.total_tensors and self.total_tensors >= self.tensors else ""
            parts.append(f"{self.tensors}{total} tensors")
            total_bytes = self.total_bytes if self.total_bytes and self.total_bytes >= self.nbytes else None
            parts.append(size_text(self.nbytes, total_bytes))
        parts.append(f"{self.clock() - self.started:.1f} s")
        return "  ".join(parts)

    def _draw(self) -> None:
        self.drawn_at = self.clock()
        text = self.line()
        self._put(CLEAR_LINE + text)
        self.width = len(text)

    def _put(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: progress is never worth a failure
            pass


def for_stderr(wanted: bool, stream: TextIO | None = None) -> Progress:
    """A `Terminal` on stderr when `wanted` and stderr is a terminal, else SILENT."""
    stream = stream if stream is not None else sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return Terminal(stream) if wanted and tty else SILENT
