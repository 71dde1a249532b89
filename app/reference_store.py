"""TensorFlow's reference outputs kept on disk between `convert` runs, so that converting one model to four
targets, or converting it again, runs TensorFlow once (issue 25: TF's import and a Keras load are most of a
small model's --verify, and they give the same outputs every time).

An entry is TF's outputs for one input set. Its key holds everything those outputs depend on:
- the source's content (sha256 of every file; never its path or mtime: a file rewritten in place with the
  same size and time is a new source);
- the graph's inputs and outputs as TF names them, their layouts, the parse settings and the input bytes
  (app.cache.reference_key's parts);
- the reference's environment: TensorFlow's and Keras's versions, the variables that change TF's kernels
  (TF_ENABLE_ONEDNN_OPTS, ...), and this tool's reference code (its parsers, size and mtime of each file).
So a hit is the output TF would give now; anything else is a miss, and TF runs. What TF refuses is not
kept: it runs again and says why.

Where: $TF_CONVERT_CACHE_DIR, else $XDG_CACHE_HOME/tf-convert/reference (~/.cache/...); the value `off`
turns it off. It is the user's own (mode 0700; a directory another user owns or may write is not used:
entries decide a verdict). Entries are written atomically (a temp file renamed) and a damaged one is a
miss; above MAX_BYTES the sources used least recently are removed.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .cache import Cache, with_content

ENV = "TF_CONVERT_CACHE_DIR"
OFF = ("off", "0", "no", "false", "none")
MAX_BYTES = 1 << 30  # the whole store; an entry above half of it is not kept
# environment variables that change which kernels TF runs, or which Keras loads the model
KERNEL_SETTINGS = ("TF_ENABLE_ONEDNN_OPTS", "TF_USE_LEGACY_KERAS", "KERAS_BACKEND", "TF_DETERMINISTIC_OPS")
_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "keras", "tf-keras")


def location(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The store's directory, or None when the user turned it off."""
    chosen = environ.get(ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in OFF or not chosen.strip() else Path(chosen).expanduser()
    base = environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tf-convert" / "reference"


def environment(environ: Mapping[str, str] = os.environ) -> tuple:
    """What besides the source and the inputs decides TF's outputs here (read without importing TF)."""
    from importlib import metadata

    versions = []
    for name in _DISTRIBUTIONS:
        try:
            versions.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            continue
    settings = tuple((k, environ.get(k)) for k in KERNEL_SETTINGS)
    return tuple(versions), settings, _reference_code()


def _reference_code() -> str:
    """The tool's code that runs TF for the check (its parsers and the reference child): a change to it
    (a fix of how inputs are fed, a new version) leaves every older entry unused."""
    package = Path(__file__).resolve().parents[1]
    files = sorted((package / "parsers").rglob("*.py")) + [package / "app" / "reference_process.py"]
    digest = hashlib.sha256()
    for file in files:
        stat = file.stat()
        digest.update(f"{file.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()


class StoredReferences:
    """A Cache (app.cache) of one source's reference outputs on disk, in front of `inner` (a batch worker's
    memory, or None): reference keys of that source are looked up and kept here, all other keys go to
    `inner`. `content` gives the source's sha256 (asked once, when first needed: the pipeline hashes the
    source beside the parse). record() says how many sets came from disk."""

    def __init__(self, root: Path, source_stamp: tuple, content: Callable[[], str], inner: Cache | None = None,
                 environ: Mapping[str, str] = os.environ, max_bytes: int = MAX_BYTES) -> None:
        self.root, self.stamp, self.inner, self.max_bytes = root, source_stamp, inner, max_bytes
        self._content, self._environ, self._folder = content, environ, None
        self._asked: set[tuple] = set()  # this source's reference keys looked up, and those found on disk
        self._found: set[tuple] = set()

    @property
    def folder(self) -> Path:
        """This source's entries (in this environment): one directory, so knows() is one stat."""
        if self._folder is None:
            mark = repr((self._content(), environment(self._environ))).encode()
            self._folder = self.root / hashlib.sha256(mark).hexdigest()[:32]
        return self._folder

    def knows(self) -> bool:
        """Has TF run on this source here before? (Then a reference child may not be needed at all.)"""
        try:
            return any(self.folder.glob("*.npz"))
        except OSError:
            return False

    def get(self, key: tuple) -> Any | None:
        if not self._ours(key):
            return self.inner.get(key) if self.inner is not None else None
        self._asked.add(key)
        hit = self.inner.get(key) if self.inner is not None else None
        if hit is None:
            hit = self._read(self._entry(key))
            if hit is not None:
                self._found.add(key)
        return hit

    def record(self) -> dict[str, Any]:
        """For conversion.json's verify record: where the store is, and how many of the input sets TF was
        asked about were answered from it (the others TF ran now)."""
        return {"store": str(self.root), "sets_from_store": len(self._found),
                "sets_run": len(self._asked - self._found)}

    def put(self, key: tuple, value: Any) -> None:
        if self.inner is not None:
            self.inner.put(key, value)
        if self._ours(key) and _usable(self.root):
            self._write(self._entry(key), value)

    def _ours(self, key: tuple) -> bool:
        return key[0] == "reference" and key[1] == self.stamp

    def _entry(self, key: tuple) -> Path:
        name = hashlib.sha256(repr(with_content(key, self._content())).encode()).hexdigest()[:40]
        return self.folder / f"{name}.npz"

    def _read(self, entry: Path) -> list[np.ndarray] | None:
        if not entry.is_file() or not _usable(self.root):
            return None
        try:
            with np.load(entry, allow_pickle=False) as saved:
                values = [np.array(saved[f"y{i}"]) for i in range(len(saved.files))]
            os.utime(entry.parent)  # used now: pruned last
            return values
        except Exception:  # noqa: BLE001 - a damaged or half-copied entry is a miss (TF runs; put rewrites it)
            entry.unlink(missing_ok=True)
            return None

    def _write(self, entry: Path, value: list[np.ndarray]) -> None:
        arrays = {f"y{i}": np.asarray(v) for i, v in enumerate(value)}
        if sum(a.nbytes for a in arrays.values()) > self.max_bytes // 2:
            return
        temp = None
        try:
            entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(dir=entry.parent, suffix=".part")
            temp = Path(name)
            with os.fdopen(handle, "wb") as f:
                np.savez(f, **arrays)
            os.replace(temp, entry)
            temp = None
            _prune(self.root, self.max_bytes, keep=entry.parent)
        except OSError:  # a full or read-only disk, another process pruning: the check stands, unremembered
            pass
        finally:
            if temp is not None:
                temp.unlink(missing_ok=True)


def _usable(root: Path) -> bool:
    """The store is ours alone: created 0700 when missing; one owned or writable by another user is not
    trusted (an entry there could make a wrong conversion pass)."""
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        stat = root.stat()
    except OSError:
        return False
    return stat.st_uid == os.geteuid() and not stat.st_mode & 0o022


def _prune(root: Path, max_bytes: int, keep: Path) -> None:
    """Remove the sources used least recently until the store holds at most `max_bytes` (never `keep`)."""
    folders = []
    for folder in root.iterdir():
        if folder.is_dir():
            size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
            folders.append((folder.stat().st_mtime, size, folder))
    total = sum(size for _, size, _ in folders)
    for _, size, folder in sorted(folders):
        if total <= max_bytes:
            break
        if folder != keep:
            for f in folder.iterdir():
                f.unlink(missing_ok=True)
            folder.rmdir()
            total -= size
