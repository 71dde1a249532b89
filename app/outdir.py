"""Where a conversion may write, and how its output lands there without ever losing a user's file.

Rules:
- OUT may not be, contain or sit inside the source; it may not be the current directory or one of its
  parents; no part of its path may be a regular file.
- An existing OUT is replaced only with --force, and only when it is a previous output of this tool
  (its conversion.json lists what it holds, and it holds nothing else).
- The result is built in a temp directory beside OUT whose name carries the pid; the last step is a
  rename that fails if OUT appeared meanwhile (RENAME_NOREPLACE). --force first moves the old output
  aside and deletes it only once the new one is in place.
- A later run removes the temp directories of processes that no longer exist.
- Durable: every file and directory of the result is fsynced before the rename, and OUT's parent after
  it, so once `convert` exits 0 the output survives a power cut whole or not at all (the big
  weight files are written around the page cache and fsynced as they close: convert/direct_file.py).
"""

from __future__ import annotations

import ctypes
import errno
import glob
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from tf_convert.convert.errors import UsageError

MARKER = "conversion.json"
_TEMP_NAME = re.compile(r"^\..+\.convert-(\d+)-[^.]+\.(tmp|old)$")
_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


def check_out(out: Path, source: Path, *, force: bool) -> None:
    """Raise UsageError (one line) unless writing a conversion of `source` to `out` is safe."""
    out = Path(out)
    where = _absolute(out)
    _check_parents_are_directories(out, where)
    cwd = Path.cwd().resolve()
    if where == cwd or where in cwd.parents:
        raise UsageError(f"-o {out} is the current directory or one of its parents; "
                         "name a new directory, e.g. -o ./model-out")
    for src in _source_paths(Path(source)):
        if where == src:
            raise UsageError(f"-o {out} is the source itself; name a different output directory")
        if where in src.parents:
            raise UsageError(f"-o {out} contains the source {src}; name a directory that does not hold it")
        if src in where.parents:
            raise UsageError(f"-o {out} is inside the source {src}; write the output elsewhere")
    if not (out.exists() or out.is_symlink()):
        return
    if out.is_symlink() or not out.is_dir():
        raise UsageError(f"-o {out} exists and is not a directory; name a new directory")
    if not force:
        raise UsageError(f"output directory {out} already exists: remove it or pass --force")
    problem = _not_a_previous_output(out)
    if problem:
        raise UsageError(f"-o {out} {problem}; --force only replaces a previous output of convert")


def temp_dir(out: Path) -> Path:
    """A fresh private directory beside OUT (name carries our pid); stale ones of dead runs go first."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(out.parent)
    return Path(tempfile.mkdtemp(prefix=_temp_prefix(out), suffix=".tmp", dir=out.parent))


def _temp_prefix(out: Path) -> str:
    return f".{out.name}.convert-{os.getpid()}-"


def discard_temps(out: Path) -> None:
    """Remove this process's temp directories beside OUT: a signal can land between mkdtemp and the
    caller holding the name, so the caller's own `tmp` is not enough."""
    out = Path(out)
    for entry in out.parent.glob(glob.escape(_temp_prefix(out)) + "*.tmp"):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)


def commit(tmp: Path, out: Path, *, force: bool) -> None:
    """Move the finished `tmp` to `out`, durably. Never deletes anything but a previous output (with --force)."""
    out = Path(out)
    sync_tree(tmp)
    aside = None
    if force and (out.exists() or out.is_symlink()):
        _check_replaceable(out)
        aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.convert-{os.getpid()}-", suffix=".old", dir=out.parent))
        aside.rmdir()
        os.rename(out, aside)  # aside's name is ours alone: nobody else creates it
        problem = _not_a_previous_output(aside)
        if problem:  # something replaced OUT after our check: put it back untouched
            _rename_noreplace(aside, out)
            raise UsageError(f"-o {out} changed while converting and {problem}; nothing was replaced")
    try:
        _rename_noreplace(tmp, out)
    except FileExistsError:
        if aside is not None:
            # another run wrote OUT in between: keep theirs, and say where the old output is
            raise UsageError(f"output directory {out} appeared while converting (another run?); "
                             f"kept it, the previous output is at {aside}") from None
        raise UsageError(f"output directory {out} appeared while converting (another run?); "
                         "kept it and discarded this result: remove it or pass --force") from None
    _fsync_path(out.parent)  # the rename itself
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def sync_tree(root: Path) -> None:
    """fsync every file and directory under `root` (itself included): their bytes and names are on disk."""
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                _fsync_path(Path(path))
        _fsync_path(Path(folder))


def _fsync_path(path: Path) -> None:
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if path.is_dir() else 0)
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _check_replaceable(out: Path) -> None:
    problem = "is not a directory" if out.is_symlink() or not out.is_dir() else _not_a_previous_output(out)
    if problem:
        raise UsageError(f"-o {out} {problem}; --force only replaces a previous output of convert")


def remove_stale(directory: Path) -> list[Path]:
    """Remove temp/aside directories in `directory` left by runs whose process no longer exists."""
    removed = []
    try:
        entries = list(Path(directory).iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP_NAME.match(entry.name)
        if not match or entry.is_symlink() or not entry.is_dir() or _alive(int(match.group(1))):
            continue
        if match.group(2) == "old" and not (entry / MARKER).is_file():
            continue  # an aside dir is only ever a previous output; anything else is not ours to delete
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


_WRITE_FAILURE = re.compile(r"inline_container|PytorchStreamWriter|file write failed|unexpected pos|"
                            r"No space left|Disk quota|write", re.IGNORECASE)


def as_os_error(exc: BaseException, out: Path) -> OSError | None:
    """An OSError naming OUT for a failure to write it (a full disk, a file size limit, permissions): the
    machine's problem, reported as such (exit 2), not as a bug. None for anything else."""
    if isinstance(exc, OSError):
        return exc if exc.filename else OSError(exc.errno, exc.strerror or str(exc), str(out))
    if isinstance(exc, RuntimeError) and _WRITE_FAILURE.search(str(exc)):  # torch.save's C++ writer
        try:
            full = shutil.disk_usage(Path(out).parent).free < (64 << 20)
        except OSError:
            full = False
        if full:
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out))
        return OSError(errno.EIO, "writing the output failed (disk full, file size limit or I/O error)", str(out))
    return None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _absolute(path: Path) -> Path:
    """Absolute path with symlinks of existing parts resolved (OUT itself need not exist)."""
    return Path(os.path.realpath(path))


def _check_parents_are_directories(out: Path, where: Path) -> None:
    for parent in [where, *where.parents][1:]:
        if parent.exists() and not parent.is_dir():
            raise UsageError(f"-o {out}: {parent} is a file, not a directory; choose another output path")


def _source_paths(source: Path) -> list[Path]:
    """The paths the source consists of (a checkpoint prefix is its .meta/.index/.data-* files)."""
    if source.exists():
        return [_absolute(source)]
    files = sorted(source.parent.glob(source.name + ".*")) if source.name else []
    return [_absolute(f) for f in files] + [_absolute(source)]


def _not_a_previous_output(out: Path) -> str:
    """'' when `out` is a directory this tool wrote (and holds nothing else), else why it is not."""
    try:
        entries = list(out.iterdir())
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if not entries:
        return ""  # empty: replacing it deletes nothing
    marker = out / MARKER
    try:
        listed = json.loads(marker.read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"is not a previous output of convert (no valid {MARKER})"
    if not isinstance(listed, list):
        return f"is not a previous output of convert (no valid {MARKER})"
    allowed = {str(f) for f in listed} | {MARKER}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).as_posix()
        if path.is_symlink() or (path.is_file() and rel not in allowed):
            return f"holds {rel}, which convert did not write"
        if path.is_dir() and not any(f.startswith(rel + "/") for f in allowed):
            return f"holds {rel}/, which convert did not write"
    return ""


def _rename_noreplace(src: Path, dst: Path) -> None:
    """rename(2) that fails with FileExistsError when `dst` exists, even as an empty directory."""
    libc = _libc()
    fn = getattr(libc, "renameat2", None) if libc is not None else None
    if fn is not None:
        if fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL):  # EINVAL: the file system lacks NOREPLACE
            raise OSError(err, os.strerror(err), str(dst))
    if os.path.lexists(dst):  # fallback: a small window remains on systems without renameat2
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(dst))
    os.rename(src, dst)


_LIBC: list = []


def _libc():
    if not _LIBC:
        try:
            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        except OSError:
            _LIBC.append(None)
    return _LIBC[0]
