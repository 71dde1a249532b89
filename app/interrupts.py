"""SIGINT, SIGTERM, SIGHUP and --timeout end a run: an exception unwinds the pipeline, which removes its
temp directory, and the CLI prints one line (exit 128 + signal, 124 for --timeout).

A signal always wins: the first one is remembered (`received`), so a framework that swallows the exception
(a bare `except` during an import) or wraps it (Python's "Error calling __set_name__") cannot turn it into
exit 0 or an internal error -- the CLI asks `received()` before it reports anything else."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from tf_convert.convert.errors import Interrupted, TimedOut

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_received: list[Interrupted] = []  # the first signal of this process's run, as the exception it raised
_early: list[Interrupted] = []  # a signal remembered before the command's handlers took over (remember_early)
_deferring: list[None] = []  # one entry per open `deferred()` block of the main thread
_handling: list[None] = []  # one entry per open `handled()` block: a run whose signals end it


def received() -> Interrupted | None:
    """The signal (or --timeout) that ended this run, if one came, whatever happened to its exception."""
    return _received[0] if _received else None


def remember_early() -> None:
    """From the program's first line: SIGINT/SIGTERM/SIGHUP are remembered, not acted on, until the command
    takes them over (handled(), or usual_dispositions() for a command without it): end_early() ends the run
    once the command line is parsed if one came while the program was starting, and one that comes after it,
    before the command's handlers are in place, ends the run as the command starts."""
    def _remember(signum: int, _frame) -> None:
        if not _early:
            _early.append(Interrupted(signum))

    for s in (signal.SIGINT, *ENDING_SIGNALS):
        signal.signal(s, _remember)


def end_early() -> None:
    """The command line is parsed: end the run if a signal came while the program was starting (the signals
    stay remembered until the command takes them over: there is no moment where SIGTERM kills outright)."""
    if _early:
        raise _early[0]


def usual_dispositions() -> None:
    """For a command that handles signals its own way (`convert batch`): Ctrl-C raises KeyboardInterrupt,
    SIGTERM/SIGHUP their default; a signal remembered since the start ends the run now (Interrupted)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for s in ENDING_SIGNALS:
        signal.signal(s, signal.SIG_DFL)
    if _early:
        raise _early.pop()


@contextlib.contextmanager
def handled(timeout: float | None = None) -> Iterator[None]:
    """Within the block, SIGINT/SIGTERM/SIGHUP raise Interrupted and the timeout raises TimedOut."""
    if threading.current_thread() is not threading.main_thread():  # signals go to the main thread only
        yield
        return

    def _end(signum: int, _frame) -> None:
        _ignore_more()  # a second signal must not cut the clean-up short
        ending = TimedOut(timeout or 0) if signum == signal.SIGALRM else Interrupted(signum)
        if not _received:
            _received.append(ending)
        if not _deferring:  # else raised when the outermost deferred() block ends
            raise ending

    def _quiet(unraisable: Any) -> None:
        # our exception raised inside a callback Python runs and swallows (an import lock's weakref callback):
        # the run still ends by it (`received()`, checked before exit), so no "Exception ignored" traceback
        if unraisable.exc_value is None or unraisable.exc_value not in _received:
            unraisable_hook(unraisable)

    _received.clear()  # this run's signals only
    watched = (signal.SIGINT, *ENDING_SIGNALS) + ((signal.SIGALRM,) if timeout else ())
    previous = {s: signal.signal(s, _end) for s in watched}
    if _early:  # came between the command line's parse and now: this run's, and it ends it
        _received.append(_early.pop())
        _ignore_more()
        for s, handler in previous.items():
            signal.signal(s, handler)
        raise _received[0]
    unraisable_hook, sys.unraisablehook = sys.unraisablehook, _quiet
    if timeout:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    _handling.append(None)
    try:
        yield
    finally:
        _handling.pop()
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)
        for s, handler in previous.items():
            signal.signal(s, handler)
        sys.unraisablehook = unraisable_hook


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Within the block a signal is remembered and raised only when the block ends. For importing
    compiled frameworks: torch's C++ start-up calls back into Python through pybind11, and an exception
    raised there (our handler's) is std::terminate -- SIGABRT, not a clean exit 128+N. Only a signal of the
    run in progress is raised: one that ended an earlier handled() run stays with that run (`received()`
    reports it), not with a later API call in the same process."""
    if threading.current_thread() is not threading.main_thread():  # the handler never runs there
        yield
        return
    _deferring.append(None)
    try:
        yield
    except BaseException as exc:
        _deferring.pop()
        if _received and _handling and not _deferring:
            raise _received[0] from exc  # a signal wins over what the block raised after it came
        raise
    _deferring.pop()
    if _received and _handling and not _deferring:
        raise _received[0]


def _ignore_more() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)
    for s in ENDING_SIGNALS + (signal.SIGINT, signal.SIGALRM):
        signal.signal(s, signal.SIG_IGN)


def exit_now(code: int | str | None) -> None:
    """End this process with `code` (SystemExit's: None is 0) once stdout and stderr are flushed, skipping
    Python's teardown: everything is written and closed by then, and unloading TF, Keras or torch module by
    module took 0.4-1 s of every run; the kernel frees the memory at once. For a process that has
    nothing left to do (the `convert` program after its command, the reference child after its answer)."""
    import os
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or log: nothing left to say
            pass
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)
