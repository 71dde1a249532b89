"""Runs one command and reports its own peak RSS and CPU time, free of the bench's.

Linux carries a process's RSS high-water mark across fork and exec: a command started straight from the
bench (hundreds of MB after building fixtures) reports at least the bench's size as its ru_maxrss. Started
from this small launcher instead (a fresh interpreter: its own mm is a few MB), the command's ru_maxrss is
its own. Usage (bench code calls `wrap`/`usage`):

    python -S bench/launch.py RESULT.json CMD [ARG...]

writes {"exit": ..., "maxrss_kb": ..., "cpu_s": ...} of CMD (exit as os.waitstatus_to_exitcode: -N when
signal N ended it; usage with its reaped children) and exits with CMD's status.
"""

from __future__ import annotations

import json
import os
import sys


def wrap(cmd: list[str], result: str) -> list[str]:
    """`cmd` run through this launcher, its usage written to `result`."""
    return [sys.executable, "-S", os.path.abspath(__file__), result, *cmd]


def usage(result: str) -> dict[str, float] | None:
    """What the launcher wrote (None when it was killed before writing)."""
    try:
        with open(result) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main(argv: list[str]) -> int:
    result, cmd = argv[0], argv[1:]
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    with open(result, "w") as f:
        json.dump({"exit": code, "maxrss_kb": ru.ru_maxrss, "cpu_s": ru.ru_utime + ru.ru_stime}, f)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
