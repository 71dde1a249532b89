"""TensorFlow's reference outputs kept on disk between `convert` runs, so that converting one model to four
targets, or converting it again, runs TensorFlow once (TF's import and a Keras load are most of a
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
turns it off. Everything the store writes lies in its own subdirectory of that location (STORE_DIR), in
folders and files named as it names them (hex digests); it reads, replaces and deletes nothing else there,
never follows a symbolic link, and deletes only its own entries (a folder is removed only once it is empty).
A location that is a symbolic link, is not a directory, belongs to another user or may be written by others
is refused (`refusal` says why, in one line) and the run goes on without a store: entries decide a verdict.

Each entry carries two checksums: of what it was computed from (the whole key: source content, inputs,
environment) and of its outputs. An entry whose checksums do not hold (damaged, copied from another source,
edited) is a miss. A verification that fails against stored outputs is run again against TensorFlow before it
is reported (app/verify/reference.py), so a stored entry can never be the only reason for an exit 4. Entries are
written atomically (a temp file renamed); above MAX_BYTES the sources used least recently are removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..cache import Cache, with_content

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
    package = Path(__file__).resolve().parents[2]
    files = sorted((package / "parsers").rglob("*.py")) + [Path(__file__).with_name("reference_process.py").resolve()]
    digest = hashlib.sha256()
    for file in files:
        stat = file.stat()
        digest.update(f"{file.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()


STORE_DIR = "tf-convert-reference-v2"  # the store's own subdirectory of its location: all it writes is in here
_FOLDER = re.compile(r"[0-9a-f]{32}")  # one source in one environment
_ENTRY = re.compile(r"[0-9a-f]{40}\.npz")  # one input set's outputs
_PART = re.compile(r"[0-9a-f]{40}\.npz\.[A-Za-z0-9_]+\.part")  # an entry being written (mkstemp's name)
_CHECK = "check"  # the entry's array holding its checksums (JSON)


def refusal(root: Path) -> str | None:
    """Why the store cannot live at `root` (one line), or None when it can: `root` and its subdirectory must,
    where they exist, be real directories (not symbolic links) of this user that no one else may write, and
    no directory above may be a symbolic link another user planted."""
    for path in (root, root / STORE_DIR):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError as error:
            return f"{path} cannot be read ({error.strerror})"
        if stat.S_ISLNK(info.st_mode):
            return f"{path} is a symbolic link"
        if not stat.S_ISDIR(info.st_mode):
            return f"{path} is not a directory"
        if info.st_uid != os.geteuid():
            return f"{path} belongs to another user"
        if info.st_mode & 0o022:
            return f"{path} may be written by other users"
    for above in Path(os.path.abspath(root)).parents:
        try:
            info = os.lstat(above)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode) and info.st_uid not in (os.geteuid(), 0):
            return f"{above} is a symbolic link of another user"
    return None


def refusal_line(root: Path, why: str) -> str:
    """The one line a run says when the store at `root` is refused (it goes on without one)."""
    return (f"reference store not used: {why}; TensorFlow runs every check (point {ENV} at a directory of "
            f"your own, or set it to off)")


def _store_dir(root: Path) -> Path | None:
    """The store's own subdirectory, created (0700) when missing; None when `root` is refused."""
    if refusal(root) is not None:
        return None
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        (root / STORE_DIR).mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    return root / STORE_DIR if refusal(root) is None else None  # checked again: created by someone else meanwhile


def _digest(arrays: list[np.ndarray]) -> str:
    digest = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        digest.update(f"{a.dtype.str}{a.shape};".encode())
        digest.update(a.tobytes())
    return digest.hexdigest()


class StoredReferences:
    """A Cache (app.cache) of one source's reference outputs on disk, in front of `inner` (a batch worker's
    memory, or None): reference keys of that source are looked up and kept here, all other keys go to
    `inner`. `content` gives the source's sha256 (asked once, when first needed: the pipeline hashes the
    source beside the parse). record() says how many sets came from disk. bypass(): from then on the disk is
    not read (TF answers), and what TF answers replaces the entries (the re-check of a failed verdict)."""

    def __init__(self, root: Path, source_stamp: tuple, content: Callable[[], str], inner: Cache | None = None,
                 environ: Mapping[str, str] = os.environ, max_bytes: int = MAX_BYTES) -> None:
        self.root, self.stamp, self.inner, self.max_bytes = root, source_stamp, inner, max_bytes
        self._content, self._environ, self._folder = content, environ, None
        self._asked: set[tuple] = set()  # this source's reference keys looked up, and those found on disk
        self._found: set[tuple] = set()
        self.bypassed = False

    @property
    def folder(self) -> Path:
        """This source's entries (in this environment): one directory, so knows() is one stat."""
        if self._folder is None:
            mark = repr((self._content(), environment(self._environ))).encode()
            self._folder = self.root / STORE_DIR / hashlib.sha256(mark).hexdigest()[:32]
        return self._folder

    def knows(self) -> bool:
        """Has TF run on this source here before? (Then a reference child may not be needed at all.)"""
        if refusal(self.root) is not None:
            return False
        try:
            return any(_ENTRY.fullmatch(p.name) for p in self.folder.glob("*.npz"))
        except OSError:
            return False

    def bypass(self) -> None:
        """TensorFlow answers from now on: the disk is not read, and TF's outputs replace its entries."""
        self.bypassed = True
        self._asked, self._found = set(), set()

    @property
    def answered(self) -> bool:
        """Did any set come from disk (so far, since the last bypass)?"""
        return bool(self._found)

    def get(self, key: tuple) -> Any | None:
        if not self._ours(key):
            return self.inner.get(key) if self.inner is not None else None
        self._asked.add(key)
        if self.bypassed:
            return None
        hit = self.inner.get(key) if self.inner is not None else None
        if hit is None:
            hit = self._read(key)
            if hit is not None:
                self._found.add(key)
        return hit

    def record(self) -> dict[str, Any]:
        """For conversion.json's verify record: where the store is, how many of the input sets TF was asked
        about were answered from it (the others TF ran now), and so where the verdict came from."""
        found, run = len(self._found), len(self._asked - self._found)
        return {"store": str(self.root), "sets_from_store": found, "sets_run": run,
                "verdict_from": "store" if found and not run else "tensorflow" if not found
                else "store and tensorflow"}

    def put(self, key: tuple, value: Any) -> None:
        if self.inner is not None:
            self.inner.put(key, value)
        if self._ours(key):
            self._write(key, value)

    def _ours(self, key: tuple) -> bool:
        return key[0] == "reference" and key[1] == self.stamp

    def _names(self, key: tuple) -> tuple[str, str]:
        """(the entry's file name, the checksum of what its outputs are computed from)."""
        computed_from = hashlib.sha256(repr(with_content(key, self._content())).encode()).hexdigest()
        return f"{computed_from[:40]}.npz", computed_from

    def _read(self, key: tuple) -> list[np.ndarray] | None:
        name, computed_from = self._names(key)
        if _store_dir(self.root) is None:
            return None
        entry = self.folder / name
        try:
            handle = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:  # missing, or a symbolic link
            return None
        try:
            with os.fdopen(handle, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    return None
                with np.load(f, allow_pickle=False) as saved:
                    check = json.loads(str(saved[_CHECK]))
                    values = [np.array(saved[f"y{i}"]) for i in range(len(saved.files) - 1)]
        except Exception:  # noqa: BLE001 - a damaged or half-copied entry is a miss (TF runs; put rewrites it)
            return None
        if check.get("computed_from") != computed_from or check.get("outputs") != _digest(values):
            return None  # another source's outputs, or edited ones: a miss
        try:
            os.utime(self.folder)  # used now: pruned last
        except OSError:
            pass
        return values

    def _write(self, key: tuple, value: list[np.ndarray]) -> None:
        arrays = [np.asarray(v) for v in value]
        if sum(a.nbytes for a in arrays) > self.max_bytes // 2:
            return
        store = _store_dir(self.root)
        if store is None:
            return
        name, computed_from = self._names(key)
        check = json.dumps({"computed_from": computed_from, "outputs": _digest(arrays)})
        temp = None
        try:
            self.folder.mkdir(mode=0o700, exist_ok=True)
            if self.folder.is_symlink() or not self.folder.is_dir():
                return
            handle, temp_name = tempfile.mkstemp(dir=self.folder, prefix=name + ".", suffix=".part")
            temp = Path(temp_name)
            with os.fdopen(handle, "wb") as f:
                np.savez(f, **{f"y{i}": a for i, a in enumerate(arrays)}, **{_CHECK: np.asarray(check)})
            os.replace(temp, self.folder / name)
            temp = None
            _prune(store, self.max_bytes, keep=self.folder)
        except OSError:  # a full or read-only disk, another process pruning: the check stands, unremembered
            pass
        finally:
            if temp is not None:
                temp.unlink(missing_ok=True)


def _own_files(folder: Path) -> list[tuple[Path, int]]:
    """The store's files in one of its folders (regular files it names so), with their sizes."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if (_ENTRY.fullmatch(entry.name) or _PART.fullmatch(entry.name)) and entry.is_file(follow_symlinks=False):
                found.append((Path(entry.path), entry.stat(follow_symlinks=False).st_size))
    return found


def _prune(store: Path, max_bytes: int, keep: Path) -> None:
    """Remove the sources used least recently until the store holds at most `max_bytes` (never `keep`).
    Only the store's own folders and files count and go; anything else in `store` is left as it is."""
    folders = []
    with os.scandir(store) as entries:
        for entry in entries:
            if not (_FOLDER.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)):
                continue
            info = entry.stat(follow_symlinks=False)
            if info.st_uid != os.geteuid():
                continue
            files = _own_files(Path(entry.path))
            folders.append((info.st_mtime, sum(size for _, size in files), Path(entry.path), files))
    total = sum(size for _, size, _, _ in folders)
    for _, size, folder, files in sorted(folders, key=lambda f: f[:2]):
        if total <= max_bytes:
            break
        if folder == keep:
            continue
        for file, _ in files:
            file.unlink(missing_ok=True)
        try:
            folder.rmdir()  # only once empty: a file the store did not write keeps its folder
        except OSError:
            pass
        total -= size
