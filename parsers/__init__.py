"""Source formats: recognise a path by its content and dispatch to the parser for it.

Kinds: 'tf_checkpoint', 'saved_model', 'frozen_pb' (parsers.tensorflow), 'keras_h5', 'keras_v3'
(parsers.keras) and 'tflite' (parsers.tflite). Heavy frameworks are imported only by the parser that
needs them.
"""

from __future__ import annotations

import importlib
import zipfile
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from tf_convert.convert.errors import InputError

from .base import ParseOptions
from .source import Source, is_tflite, open_source

if TYPE_CHECKING:
    from tf_convert.convert.ir import Graph

TF_KINDS = ("tf_checkpoint", "saved_model", "frozen_pb")
KERAS_KINDS = ("keras_h5", "keras_v3")
TFLITE_KINDS = ("tflite",)
KINDS = TF_KINDS + KERAS_KINDS + TFLITE_KINDS

_WHAT_TO_PASS = (
    "pass a checkpoint prefix (model.ckpt), a directory holding a 'checkpoint' file, "
    "a SavedModel directory, a frozen .pb, a Keras .h5/.keras file or a .tflite file"
)
_CKPT_SUFFIXES = (".meta", ".index")


def _is_checkpoint_file(p: Path) -> bool:
    """model.ckpt.meta / .index / .data-*, also with an empty prefix (files named '.meta')."""
    return p.name.endswith(_CKPT_SUFFIXES) or ".data-" in p.name


def _checkpoint_prefix_of(p: Path) -> Path | None:
    """The checkpoint prefix when `p` is a prefix or one of its files (.meta/.index/.data-*)."""
    if _is_checkpoint_file(p):
        return p
    siblings = [Path(str(p) + s) for s in _CKPT_SUFFIXES]
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
        raise InputError(
            f"{p}: HDF5 file without a model_config attribute (weights only, no architecture); "
            "pass the full model saved with model.save('model.h5') or a .keras file"
        )
    return "keras_h5"


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


def _module(kind: str) -> ModuleType:
    if kind in TF_KINDS:
        return importlib.import_module("tf_convert.parsers.tensorflow")
    if kind in KERAS_KINDS:
        return importlib.import_module("tf_convert.parsers.keras")
    if kind in TFLITE_KINDS:
        return importlib.import_module("tf_convert.parsers.tflite")
    raise InputError(f"unknown source kind {kind!r}")


def parse(path: str | Path | Source, options: ParseOptions | None = None) -> Graph:
    """Parse the source at `path` (or an opened Source) into an IR graph (NCHW, explicit pads)."""
    source = open_source(path)
    module = _module(source.kind)
    return module.parse(source if source.kind in TF_KINDS else source.path, options or ParseOptions())


def run_reference(path: str | Path | Source, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run the source itself (in TensorFlow) on IR-layout inputs; outputs in IR layout."""
    source = open_source(path)
    module = _module(source.kind)
    return module.run_reference(source if source.kind in TF_KINDS else source.path, graph, inputs)


def run_reference_tensors(
    path: str | Path | Source, graph: Graph, inputs: list[np.ndarray], names: list[str]
) -> dict[str, np.ndarray]:
    """Intermediate source tensors `names` (source layout) on IR-layout inputs, for the per-layer
    diff; {} for a source kind that cannot expose them."""
    source = open_source(path)
    module = _module(source.kind)
    fetch = getattr(module, "run_tensors", None)
    return fetch(source if source.kind in TF_KINDS else source.path, graph, inputs, names) if fetch else {}


def run_reference_sets(path: str | Path | Source, graph: Graph,
                       input_sets: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """run_reference for each of `input_sets`, in one TF run where the source kind allows it (TF graphs:
    each weight read once for all sets, issue 25), else one set after another. Raises what TF raises
    for any set."""
    source = open_source(path)
    module = _module(source.kind)
    many = getattr(module, "run_reference_sets", None)
    if many is not None:
        return many(source if source.kind in TF_KINDS else source.path, graph, input_sets)
    return [run_reference(source, graph, inputs) for inputs in input_sets]
