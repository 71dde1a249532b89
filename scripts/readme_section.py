"""A generated section of a docs page: the text between a script's two marker lines, rewritten or checked.

scripts/readme_layout.py and scripts/op_table.py own one section each; this is what they share.
"""

from __future__ import annotations

import sys
from pathlib import Path


def replace(text: str, begin: str, end: str, body: str) -> str:
    """`text` with what lies between the `begin` and `end` markers replaced by `body` (markers kept)."""
    if begin not in text or end not in text:
        raise SystemExit(f"the page has no markers {begin} ... {end}")
    head, rest = text.split(begin, 1)
    return f"{head}{begin}\n{body}\n{end}{rest.split(end, 1)[1]}"


def write_or_check(path: Path, text: str, updated: str, check: bool, what: str, command: str) -> int:
    """Write `updated` over `text` (path's content); with `check`, exit status 1 when they differ."""
    if not check:
        path.write_text(updated)
        return 0
    if updated != text:
        print(f"{path.name}'s {what} is stale: run `{command}`", file=sys.stderr)
        return 1
    return 0
