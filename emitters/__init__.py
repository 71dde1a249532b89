"""One package per target. Each exposes TARGET, unsupported(graph), emit(graph, out_dir, options)
and run(out_dir, inputs). Imported lazily so that `convert --help` loads no framework."""

from __future__ import annotations

import importlib
from types import ModuleType

TARGETS = ("torch", "caffe", "mxnet", "onnx")


def get(target: str) -> ModuleType:
    if target not in TARGETS:
        raise KeyError(target)
    return importlib.import_module(f"emitters.{target}")
