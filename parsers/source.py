"""What a conversion's source is, decided once: kind, path, checkpoint prefix, files, sha256 and
default names. `open_source(path)` builds it (recognising the kind by content, once); everything
downstream (parsers, reference run, conversion.json, default OUT) reads it from here.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import stat
import zipfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from tf_convert.convert.errors import InputError

CHECKPOINT_FILES = (".meta", ".index")
# what TensorFlow's SavedModel loader reads: these files at the top, everything below these directories
SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt", "keras_metadata.pb", "fingerprint.pb")
SAVED_MODEL_DIRS = ("variables", "assets", "assets.extra")
_STRIP = (".ckpt", ".pb", ".h5", ".keras", ".tflite", ".meta", ".index")
# source kind (what `detect` answers) -> the parser package that reads it
KIND_PARSERS = {"tf_checkpoint": "tensorflow", "saved_model": "tensorflow", "frozen_pb": "tensorflow",
                "keras_h5": "keras", "keras_v3": "keras", "tflite": "tflite"}


def kinds_of(parser: str) -> tuple[str, ...]:
    """The source kinds one parser package reads."""
    return tuple(kind for kind, name in KIND_PARSERS.items() if name == parser)


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
        """The files a conversion of the source reads, in name order: a checkpoint's graph, index and data
        shards of the prefix it reads (and the state file that chose that prefix in a directory), a
        SavedModel's graph, variables and assets; not other files lying beside them (an older checkpoint, a
        README), so that conversion.json's hash is of the bytes read."""
        if self.kind == "tf_checkpoint":
            head, _, name = self.prefix.replace("\\", "/").rpartition("/")
            parent = Path(head or ".")
            files = [p for p in parent.glob(glob.escape(name) + ".*") if p.is_file()
                     and (p.name.endswith(CHECKPOINT_FILES) or ".data-" in p.name)]
            state = self.path / "checkpoint"
            return sorted(files + ([state] if self.path.is_dir() and state.is_file() else []))
        if self.kind == "saved_model":
            return sorted([p for p in self.path.iterdir() if p.name in SAVED_MODEL_FILES and p.is_file()]
                          + [p for d in SAVED_MODEL_DIRS for p in (self.path / d).rglob("*") if p.is_file()])
        if self.path.is_dir():
            return sorted(p for p in self.path.rglob("*") if p.is_file())
        return [self.path]

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
    what = special_kind(path)
    if what is not None:
        raise InputError(f"{path}: {role} is {what}, not a regular file; convert reads only regular files "
                         f"(copy the model's files to disk and pass them)")


# ---- recognising a source by its content ------------------------------------------------------------

_WHAT_TO_PASS = (
    "pass a checkpoint prefix (model.ckpt), a directory holding a 'checkpoint' file, "
    "a SavedModel directory, a frozen .pb, a Keras .h5/.keras file or a .tflite file"
)


def _is_checkpoint_file(p: Path) -> bool:
    """model.ckpt.meta / .index / .data-*, also with an empty prefix (files named '.meta')."""
    return p.name.endswith(CHECKPOINT_FILES) or ".data-" in p.name


def _checkpoint_prefix_of(p: Path) -> Path | None:
    """The checkpoint prefix when `p` is a prefix or one of its files (.meta/.index/.data-*)."""
    if _is_checkpoint_file(p):
        return p
    siblings = [Path(str(p) + s) for s in CHECKPOINT_FILES]
    if any(s.exists() for s in siblings) or list(p.parent.glob(p.name + ".data-*")):
        return p
    return None


def _is_graph_def(data: bytes) -> bool:
    from tf_convert.parsers.tensorflow.protos import GraphDef  # lazily: only for .pb files

    gd = GraphDef()
    try:
        gd.ParseFromString(data)
    except Exception:  # noqa: BLE001 - any decode failure means "not a GraphDef"
        return False
    return len(gd.node) > 0 and all(n.op and n.name for n in gd.node)


def _check_h5(p: Path) -> str:
    """A Keras .h5 holds its architecture in the `model_config` attribute; weights-only files don't."""
    import h5py  # lazily: only for HDF5 files

    try:
        with h5py.File(p, "r") as f:
            has_config = "model_config" in f.attrs
    except Exception as e:  # noqa: BLE001 - OSError, or h5py's RuntimeError on a corrupt header
        raise InputError(f"{p}: corrupt HDF5 file ({(str(e).splitlines() or [''])[0]}); {_WHAT_TO_PASS}") from None
    if not has_config:
        raise InputError(_weights_only(p))
    return "keras_h5"


def _weights_only(p: Path) -> str:
    """Why a weights-only HDF5 file cannot be converted, and the save that can: for Hugging Face's
    `save_pretrained` (tf_model.h5 beside config.json: a subclassed model, which `model.save('model.h5')` cannot
    write), a SavedModel."""
    config = p.parent / "config.json"
    architectures: list[str] = []
    if config.is_file():
        try:
            architectures = list(json.loads(config.read_text()).get("architectures") or [])
        except (OSError, ValueError, AttributeError):
            architectures = []
    if config.is_file():
        name = f"TF{architectures[0].removeprefix('TF')}" if architectures else "the TF class"
        pt = architectures[0].removeprefix("TF") if architectures else "NAME"
        return (f"{p.name}: save_pretrained's weights, no architecture ({name} is Python code); "
                f"--into transformers:{pt} maps them, else convert a SavedModel: "
                "model.save_pretrained(dir, saved_model=True) -> dir/saved_model/1, or tf.saved_model.save(model, dir)")
    return (f"{p}: HDF5 file without a model_config attribute (weights only, no architecture); pass the full model "
            "saved with model.save('model.h5') or a .keras file, or, for a subclassed model, a SavedModel "
            "(tf.saved_model.save(model, dir))")


def _detect_file(p: Path) -> str:
    with open(p, "rb") as f:
        head = f.read(8)
    if is_tflite(head):
        return "tflite"
    if head.startswith(b"\x89HDF"):
        return _check_h5(p)
    if head.startswith(b"PK"):
        try:
            with zipfile.ZipFile(p) as z:
                names = set(z.namelist())
        except zipfile.BadZipFile as e:
            raise InputError(f"{p}: corrupt zip archive ({e}); {_WHAT_TO_PASS}") from None
        if "config.json" in names:
            return "keras_v3"
        raise InputError(f"{p}: zip archive without config.json is not a Keras model; {_WHAT_TO_PASS}")
    if p.stat().st_size == 0:
        raise InputError(f"{p}: empty file, not a model; {_WHAT_TO_PASS}")
    if _is_graph_def(p.read_bytes()):
        return "frozen_pb"
    what = "corrupt or not a GraphDef" if p.suffix == ".pb" else "not a model"
    raise InputError(f"{p}: {what} (could not read it as a TensorFlow GraphDef); {_WHAT_TO_PASS}")


def detect(path: str | Path) -> str:
    """The kind of source at `path`, recognised by content. Raises InputError for anything else."""
    p = Path(path)
    if p.is_dir():
        if (p / "saved_model.pb").exists() or (p / "saved_model.pbtxt").exists():
            return "saved_model"
        if (p / "checkpoint").exists():
            return "tf_checkpoint"
        raise InputError(
            f"{p}: directory holds neither saved_model.pb nor a 'checkpoint' file; {_WHAT_TO_PASS}"
        )
    if p.is_file() and not _is_checkpoint_file(p):
        return _detect_file(p)
    if _checkpoint_prefix_of(p) is not None:
        return "tf_checkpoint"
    raise InputError(f"{p}: no such file or directory; {_WHAT_TO_PASS}")


# ---- a checkpoint's prefix -----------------------------------------------------------------------------

def _latest_from_state(directory: Path) -> str:
    """The prefix named by `model_checkpoint_path` in a `checkpoint` state file, as TF loads it. A directory
    copied from the training machine still names the old absolute location: when that is gone, the
    files of the same name beside the state file are taken. When both exist and differ, InputError: the
    user says which. A prefix may be empty ('dir/' for files named dir/.meta, dir/.index)."""
    require_regular(directory / "checkpoint", "the checkpoint state file")
    text = (directory / "checkpoint").read_text(errors="replace")
    match = re.search(r'^model_checkpoint_path:\s*"(.*)"\s*$', text, re.MULTILINE)
    if not match:
        raise InputError(
            f"{directory / 'checkpoint'}: no model_checkpoint_path line; "
            f"pass the checkpoint prefix (e.g. {directory}/model.ckpt) instead"
        )
    recorded = match.group(1)
    name = "" if recorded.endswith(("/", "\\")) else recorded.replace("\\", "/").rsplit("/", 1)[-1]
    local = os.path.join(str(directory), name)
    named = recorded if os.path.isabs(recorded) else os.path.join(str(directory), recorded)
    if _is_checkpoint(local) and _is_checkpoint(named) and not _same_prefix(local, named):
        # TF's latest_checkpoint loads the named one: taking the one beside it would convert other weights
        raise InputError(
            f"{directory / 'checkpoint'} names {named}, and another checkpoint {local} lies beside it: "
            f"pass the prefix you mean ({named} or {local}) instead of the directory"
        )
    if _is_checkpoint(named):
        return named
    if _is_checkpoint(local):  # copied from the training machine: the state file names the old location
        return local
    return named


def _is_checkpoint(prefix: str) -> bool:
    return Path(prefix + ".index").exists() or Path(prefix + ".meta").exists()


def _same_prefix(a: str, b: str) -> bool:
    return os.path.realpath(a + ".index") == os.path.realpath(b + ".index")


def checkpoint_prefix(path: str | Path) -> str:
    """Resolve a checkpoint argument (prefix, one of its files, or a directory) to its prefix, a
    string: the prefix of files named `.meta`/`.index` is a directory followed by a separator."""
    p = Path(path)
    if p.is_dir():
        return _latest_from_state(p)
    for suffix in CHECKPOINT_FILES:
        if p.name.endswith(suffix):
            return str(p)[: -len(suffix)]
    if ".data-" in p.name:
        return str(p)[: len(str(p)) - len(p.name)] + p.name.split(".data-")[0]
    return str(p)


def open_source(path: str | Path | Source) -> Source:
    """The Source at `path` (a Source is returned as is). Raises InputError for anything else."""
    if isinstance(path, Source):
        return path
    p = Path(path)
    require_regular(p, "the source")
    kind = detect(p)
    prefix = ""
    if kind == "tf_checkpoint":
        prefix = checkpoint_prefix(p)
    return Source(p, kind, prefix)
