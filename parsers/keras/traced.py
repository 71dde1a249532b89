"""Keras files whose classes the config reader does not know (a keras-hub backbone, a layer a package
registers, a `Lambda`): Keras itself loads the file and traces its call into a TF graph, as
`model.export()` does, in a child process; the TF parser converts that graph.

Where the class's package is not installed (parsers.keras.installed: read from the distributions' metadata,
nothing imported), the file is refused (exit 3) naming the class, the package and the two ways out.
`Lambda` layers hold Python bytecode: they load only with Keras's safe_mode=False (`--no-safe-mode`),
which the user must ask for on that very command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tf_convert.convert import ir, isolated
from tf_convert.convert.errors import InputError, Unsupported, UnsupportedError
from tf_convert.convert.ir.lazy import is_lazy, materialize
from tf_convert.parsers import tensorflow as tf_parser
from tf_convert.parsers.base import ParseOptions

from .builder import is_model, layer_name
from .installed import installed
from .schema import keras_module
from .source import KerasSource
from .table import TABLE, table_key

TRACE_TIMEOUT_S = 600
UNSAFE_CLASSES = {"Lambda"}  # their config holds marshalled Python bytecode


@dataclass(frozen=True)
class Foreign:
    class_name: str
    layer: str
    module: str
    registered_name: str

    @property
    def package(self) -> str:
        """The Python package that defines the class ('' for one registered under Keras's default
        'Custom' package, which no import names)."""
        if self.module and not self.module.startswith("keras."):
            return self.module.split(".")[0]
        prefix = self.registered_name.partition(">")[0] if ">" in self.registered_name else ""
        return "" if prefix in ("", "Custom") else prefix.split(".")[0]

    @property
    def label(self) -> str:
        return self.registered_name or self.class_name


def foreign_classes(config: dict[str, Any]) -> list[Foreign]:
    """The top object if it is no model with layers, and every layer (nested models too) whose class
    is not a built-in Keras class: those only the class's own code can run."""
    try:
        return _foreign_classes(config)
    except (AttributeError, KeyError, TypeError):  # not the shape Keras writes: the builder says what is wrong
        return []


def _foreign_classes(config: dict[str, Any]) -> list[Foreign]:
    if not isinstance(config.get("class_name"), str):
        return []
    if not is_model(config):
        return [_foreign(config, str(config.get("config", {}).get("name", "")))]
    found = []
    for layer in config["config"]["layers"]:
        if is_model(layer):
            found.extend(_foreign_classes(layer))
        elif layer.get("class_name") != "InputLayer" and (
                _not_builtin(layer) or (table_key(layer) not in TABLE and layer.get("class_name") in UNSAFE_CLASSES)):
            found.append(_foreign(layer, layer_name(layer)))
    return found


def _foreign(layer: dict[str, Any], name: str) -> Foreign:
    return Foreign(str(layer.get("class_name")), name, str(layer.get("module") or ""),
                   str(layer.get("registered_name") or ""))


def _not_builtin(layer: dict[str, Any]) -> bool:
    """A class of another package (even one named as a Keras class: its code is its own)."""
    return not keras_module(layer.get("module")) or ">" in str(layer.get("registered_name") or "")


def refusal(path: Path, kind: str, found: list[Foreign], options: ParseOptions) -> UnsupportedError | None:
    """Why these classes cannot be traced here (None: they can)."""
    items = []
    for f in found:
        if f.class_name in UNSAFE_CLASSES and options.safe_mode:
            items.append(Unsupported(f.class_name, f.layer,
                                     "a Lambda layer is Python bytecode, which Keras loads only with safe_mode=False; "
                                     "pass --no-safe-mode if you trust this file (its code then runs), or export a "
                                     "SavedModel (model.export(path)) and convert that"))
        elif f.class_name not in UNSAFE_CLASSES and not installed(f.package, beside=path.parent):
            where = f"package '{f.package}'" if f.package else f"module '{f.module or '?'}'"
            items.append(Unsupported(f.label, f.layer or f.class_name,
                                     f"{where} is not installed: install it (Keras then traces the model) or "
                                     "convert a SavedModel exported where it is (model.export(path))"))
    if not items and kind != "keras_v3":  # a .h5 names no package: only a Lambda's code is in the file
        items = [Unsupported(f.label, f.layer or f.class_name,
                             "a class the .h5 reader does not know; re-save as .keras (model.save('m.keras')) "
                             "or export a SavedModel (model.export(path)) and convert that")
                 for f in found if f.class_name not in UNSAFE_CLASSES]
    return UnsupportedError(items, target="keras parser") if items else None


def parse_traced(path: Path, found: list[Foreign], options: ParseOptions) -> ir.Graph:
    """Keras loads `path` and exports its call as a SavedModel in a child process; the TF parser
    converts that graph. Nothing of the export outlives this call (weights are read into memory)."""
    work = Path(tempfile.mkdtemp(prefix="convert-keras-trace-"))
    try:
        exported = work / "saved_model"
        cmd = isolated.python_module("tf_convert.parsers.keras.trace_child", str(path), str(exported),
                                     "safe" if options.safe_mode else "unsafe")
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=TRACE_TIMEOUT_S, env=env)
        except subprocess.TimeoutExpired:
            raise InputError(f"{path}: Keras did not finish loading and tracing the model within "
                             f"{TRACE_TIMEOUT_S} s") from None
        if done.returncode != 0:
            lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
            why = lines[-1][:300] if lines else f"exit {done.returncode}"
            raise InputError(f"{path}: Keras cannot load and trace this model ({why})")
        graph = tf_parser.parse(exported, options)
        for node in graph.nodes:  # the export is deleted below: read every weight now
            for key, value in node.params.items():
                if is_lazy(value):
                    node.params[key] = materialize(value)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    classes = sorted({f.label for f in found})
    how = "Keras safe mode" if options.safe_mode else "Keras safe_mode=False (--no-safe-mode)"
    options.notes.append(f"path: traced ({', '.join(classes)} loaded by {how} and traced into a TF graph, "
                         "as model.export() does)")
    options.records.append({"pass": "keras_trace", "path": "traced", "classes": classes,
                            "safe_mode": options.safe_mode})
    graph.metadata["keras_path"] = "traced"
    graph.metadata.pop("source_path", None)
    return graph


def is_traced(path: Path) -> bool:
    """Whether `path` converts through Keras's trace (the reference then calls the model as a whole)."""
    with KerasSource(path) as source:
        return bool(foreign_classes(source.config)) if isinstance(source.config, dict) else False


def call_model(model: Any, graph: ir.Graph, feed: list[Any]) -> list[Any]:
    """The model's outputs, flattened as its export flattens them, on `feed` (source layout) given by
    the traced graph's input names."""
    import keras

    names = [graph.source_names.get(t, t).split(":")[0] for t in graph.inputs]
    by_name = dict(zip(names, feed))
    struct = getattr(model, "_inputs_struct", None)
    if isinstance(struct, dict):
        args = {key: by_name[key] for key in struct}
    else:
        ordered = [by_name.get(t.name.split(":")[0], x) for t, x in zip(model.inputs, feed)]
        args = ordered if len(ordered) > 1 else ordered[0]
    return keras.tree.flatten(model(args, training=False))
