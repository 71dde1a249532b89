"""Whether a package a model file names is installed, read from the installed distributions' metadata.

Nothing is imported or found through the import system: `importlib.util.find_spec("a.b")` imports `a`, and even
a top-level lookup finds a `helpers.py` in the working directory or beside the model. Only distributions
installed on the import path count, and never one in the working directory or the model's folder (where a
`helpers-1.0.dist-info` could lie as easily as a `helpers.py`).
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

_NOT_PACKAGES = ("__pycache__", "..")  # first path parts of installed files that name no import package


def installed(package: str, beside: Path | None = None) -> bool:
    """Whether the top-level import package `package` belongs to an installed distribution (`beside`: the
    model's folder, never searched)."""
    if not package or not package.isidentifier():
        return False
    return package in top_level_packages(beside)


def top_level_packages(beside: Path | None = None) -> set[str]:
    """The top-level import names of every distribution installed on the import path, except in the
    working directory and `beside`."""
    found: set[str] = set()
    for dist in importlib.metadata.distributions(path=_search_path(beside)):
        try:
            found.update(_top_level(dist))
        except (OSError, UnicodeDecodeError, ValueError):  # a damaged record: that distribution names nothing
            continue
    return found


def _search_path(beside: Path | None) -> list[str]:
    excluded = {_resolved(os.getcwd())} | ({_resolved(beside)} if beside is not None else set())
    return [entry for entry in sys.path if entry and _resolved(entry) not in excluded]


def _resolved(entry: str | Path) -> str:
    try:
        return str(Path(entry).resolve())
    except (OSError, RuntimeError):
        return str(entry)


def _top_level(dist: importlib.metadata.Distribution) -> Iterable[str]:
    """What importlib.metadata.packages_distributions reads: top_level.txt, else the first part of each
    installed file (`pkg/__init__.py` -> pkg, `mod.py` -> mod)."""
    declared = dist.read_text("top_level.txt")
    if declared is not None:
        return [line.strip() for line in declared.splitlines() if line.strip()]
    names = []
    for file in dist.files or ():
        parts = PurePosixPath(str(file)).parts
        if not parts or parts[0] in _NOT_PACKAGES or parts[0].endswith((".dist-info", ".egg-info", ".data")):
            continue
        name = parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")
        if name.isidentifier():
            names.append(name)
    return names
