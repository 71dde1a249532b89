"""Errors the CLI turns into one-line messages and exit codes: 2 bad usage or input, 3 unsupported, 4 verification
failed, 124 and 128 + N interrupted; anything else escaping is a bug (exit 1)."""

from __future__ import annotations

from dataclasses import dataclass


class ConvertError(Exception):
    """Base class: `str(err)` is the one-line message shown to the user."""

    exit_code = 1


class UsageError(ConvertError):
    """Bad usage or unreadable input (exit 2)."""

    exit_code = 2


class InputError(UsageError):
    """The source is missing, incomplete, corrupt or not a model (exit 2)."""


class MissingDependency(UsageError):
    """What was asked needs a framework that is not installed (exit 2); the message says which
    `pip install` adds it. Raised before anything is read or written (convert/requirements.py)."""


@dataclass(frozen=True)
class Unsupported:
    op: str
    node: str
    hint: str = ""

    def __str__(self) -> str:
        text = f"{self.op} (node '{self.node}')"
        return f"{text}: {self.hint}" if self.hint else text


class UnsupportedError(ConvertError):
    """The graph uses something the target cannot express (exit 3). Lists every such node."""

    exit_code = 3

    def __init__(self, items: list[Unsupported], target: str = ""):
        self.items = list(items)
        self.target = target
        where = f" for {target}" if target else ""
        super().__init__(f"{len(self.items)} unsupported node(s){where}: {_grouped(self.items)}")


def _grouped(items: list[Unsupported]) -> str:
    """The items, those of one op with one reason together ("Cos (nodes 'a', 'b'): why"), in first-seen order."""
    groups: dict[tuple[str, str], list[str]] = {}
    for item in items:
        groups.setdefault((item.op, item.hint), []).append(item.node)
    parts = []
    for (op, hint), nodes in groups.items():
        text = str(Unsupported(op, nodes[0], hint)) if len(nodes) == 1 else \
            f"{op} (nodes {', '.join(repr(n) for n in nodes)})" + (f": {hint}" if hint else "")
        parts.append(text)
    return "; ".join(parts)


class VerifyError(ConvertError):
    """Verification found a difference beyond tolerance (exit 4). pipeline.run returns it inside
    its Conversion (with the metrics) rather than raising it."""

    exit_code = 4

class Interrupted(BaseException):
    """A signal ended the run (exit 128 + signal number). A BaseException, like KeyboardInterrupt,
    so that no `except Exception` on the way up turns it into an input error."""

    def __init__(self, signum: int, message: str = ""):
        import signal

        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__(message or f"interrupted by {signal.Signals(signum).name}")


class TimedOut(Interrupted):
    """--timeout ran out (exit 124, as coreutils' `timeout`)."""

    def __init__(self, seconds: float):
        import signal

        super().__init__(signal.SIGALRM, f"timed out after {seconds:g} s (--timeout); nothing was written")
        self.exit_code = 124
