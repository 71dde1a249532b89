"""The source a written conversion names, as `convert verify OUT` may read it: OUT is data.

OUT may come from someone else, and its conversion.json says anything its author wants. So the source is
read at one place only: the path the conversion recorded relative to OUT (`source.relative_path`), or the
one the user passes (`--source`); an absolute or missing relative path is refused. And before anything
loads it, its bytes must hash to the recorded `source.sha256` (a source replaced since, by a file that
holds code or by any other, is refused with both hashes).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

from tf_convert import parsers
from tf_convert.convert.errors import UsageError

from . import report


def relative_path(source: Path, out: Path) -> str:
    """The source's path relative to OUT (symlinks of existing parts resolved), as conversion.json records it."""
    return PurePosixPath(os.path.relpath(os.path.realpath(source), os.path.realpath(out))).as_posix()


def read(out: Path, source: Path | None = None) -> tuple[dict[str, Any], Path, Path]:
    """(conversion.json of OUT, its path, the source to read): `source` if the user gave one, else the path
    recorded relative to OUT; UsageError (exit 2, one line) when OUT is not a conversion, names no source
    relative to itself, or when the source is gone or its bytes are not the ones converted."""
    doc_path = Path(out) / "conversion.json"
    if not doc_path.is_file():
        raise UsageError(f"{doc_path} not found: pass a directory written by `convert tf2<target>`")
    try:
        doc = report.read(doc_path)
    except (ValueError, UnicodeDecodeError):
        raise UsageError(f"{doc_path} is not valid JSON: re-run the conversion") from None
    recorded = doc.get("source") if isinstance(doc, dict) else None
    if not isinstance(recorded, dict) or not isinstance(recorded.get("sha256"), str):
        raise UsageError(f"{doc_path} records no source hash: re-run the conversion")
    path = Path(source) if source is not None else _recorded_path(recorded, out, doc_path)
    if not (path.exists() or any(path.parent.glob(path.name + ".*"))):
        given = "given with --source" if source is not None else f"recorded in {doc_path}"
        raise UsageError(f"source {path} {given} does not exist: pass the source with --source, "
                         "or re-run the conversion")
    actual = parsers.open_source(path).sha256
    if actual != recorded["sha256"]:
        raise UsageError(f"source {path} is not the file converted: sha256 {_short(actual)}, "
                         f"{doc_path} records {_short(recorded['sha256'])}; pass the converted source with "
                         "--source, or re-run the conversion")
    return doc, doc_path, path


def _short(sha256: str) -> str:
    """A hash as a one-line error shows it: its first 16 hex digits (the CLI caps a line at 300 characters)."""
    return f"{sha256[:16]}..." if len(sha256) > 16 else sha256


def _recorded_path(recorded: dict[str, Any], out: Path, doc_path: Path) -> Path:
    """OUT/<relative_path>: never an absolute path a received conversion.json names."""
    relative = recorded.get("relative_path")
    if not isinstance(relative, str) or not relative or PurePosixPath(relative).is_absolute():
        raise UsageError(f"{doc_path} records no source path relative to {out} (an older or edited "
                         "conversion.json): pass the source with --source")
    return Path(os.path.normpath(Path(os.path.realpath(out)) / relative))
