"""What a conversion's source is, decided once: kind, path, checkpoint prefix, files, sha256 and
default names. `open_source(path)` builds it (recognising the kind by content, once); everything
downstream (parsers, reference run, conversion.json, default OUT) reads it from here.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

CHECKPOINT_FILES = (".meta", ".index")
_STRIP = (".ckpt", ".pb", ".h5", ".keras", ".tflite", ".meta", ".index")
TFLITE_IDENTIFIER = b"TFL3"  # a TFLite flatbuffer's file identifier, bytes 4..8 (its schema's file_identifier)


@dataclass(frozen=True)
class Source:
    path: Path  # as given
    kind: str  # tf_checkpoint | saved_model | frozen_pb | keras_h5 | keras_v3 | tflite
    prefix: str = ""  # tf_checkpoint: the prefix its files share ('dir/model.ckpt', or 'dir/')

    def __fspath__(self) -> str:  # a Source works wherever a path did
        return str(self.path)

    def __str__(self) -> str:
        return str(self.path)

    @cached_property
    def files(self) -> list[Path]:
        """Every file of the source in name order (a directory: all below it)."""
        if self.path.is_dir():
            return sorted(p for p in self.path.rglob("*") if p.is_file())
        if self.path.is_file() and self.kind != "tf_checkpoint":
            return [self.path]
        head, _, name = self.prefix.replace("\\", "/").rpartition("/")
        parent = Path(head or ".")
        return sorted(p for p in parent.glob(name + ".*") if p.is_file()
                      and (p.name.endswith(CHECKPOINT_FILES) or ".data-" in p.name))

    @cached_property
    def sha256(self) -> str:
        """Hash of every file of the source, names (relative to the path's parent) included."""
        digest = hashlib.sha256()
        base = self.path.parent if not self.path.is_dir() else self.path.parent
        for file in self.files:
            digest.update(os.path.relpath(file, base).encode())
            with open(file, "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
        return digest.hexdigest()

    @property
    def stem(self) -> str:
        """The default OUT stem: the file name without its model suffixes."""
        name = self.path.name.rstrip("/")
        if ".data-" in name:
            name = name.split(".data-")[0]
        for suffix in _STRIP:
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        return name or (self.path.parent.name if not self.path.is_dir() else "") or "model"

    @property
    def model_name(self) -> str:
        """The graph's name: the checkpoint's stem (its directory's name for model.ckpt or an
        empty prefix), the SavedModel directory's name, or the file's stem."""
        if self.kind == "tf_checkpoint":
            head, _, name = self.prefix.replace("\\", "/").rpartition("/")
            stem = name.split(".ckpt")[0]
            if stem not in ("model", ""):
                return stem
            directory = self.path if self.path.is_dir() else Path(head or ".")
            return directory.resolve().name or stem or "model"
        if self.kind == "saved_model":
            return self.path.resolve().name
        return self.path.stem


def is_tflite(head: bytes) -> bool:
    """The file's first 8 bytes are a TFLite flatbuffer's: a root offset, then the 'TFL3' identifier."""
    return len(head) >= 8 and head[4:8] == TFLITE_IDENTIFIER


def special_kind(path: str | Path) -> str | None:
    """What `path` is when it exists but is neither a regular file nor a directory (reading a FIFO blocks
    forever, /dev/zero never ends): 'a FIFO (named pipe)', 'a character device', ...; else None."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    for test, what in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else "not a regular file"


def require_regular(path: str | Path, role: str) -> None:
    """InputError unless `path` (the model's `role`: 'the source', 'the checkpoint index', ...) is a
    regular file or absent (absence is reported by the caller, with what to copy)."""
    from tf_convert.convert.errors import InputError

    what = special_kind(path)
    if what is not None:
        raise InputError(f"{path}: {role} is {what}, not a regular file; convert reads only regular files "
                         f"(copy the model's files to disk and pass them)")


def open_source(path: str | Path | Source) -> Source:
    """The Source at `path` (a Source is returned as is). Raises InputError for anything else."""
    if isinstance(path, Source):
        return path
    from . import detect

    p = Path(path)
    require_regular(p, "the source")
    kind = detect(p)
    prefix = ""
    if kind == "tf_checkpoint":
        from .tensorflow.source import checkpoint_prefix

        prefix = checkpoint_prefix(p)
    return Source(p, kind, prefix)
