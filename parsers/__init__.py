"""Source formats: recognise a path by its content and dispatch to the parser for it.

Which parser reads which kind of source: `source.KIND_PARSERS`. Heavy frameworks are imported only by the
parser that needs them.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from tf_convert.convert.errors import InputError

from .base import ParseOptions
from .source import KIND_PARSERS, Source, detect, kinds_of, open_source

__all__ = ["KERAS_KINDS", "KINDS", "TF_KINDS", "ParseOptions", "Source", "detect", "open_source", "parse",
           "run_reference", "run_reference_sets", "run_reference_tensors"]

if TYPE_CHECKING:
    from tf_convert.convert.ir import Graph

TF_KINDS, KERAS_KINDS, TFLITE_KINDS = kinds_of("tensorflow"), kinds_of("keras"), kinds_of("tflite")
KINDS = tuple(KIND_PARSERS)

def _module(kind: str) -> ModuleType:
    if kind not in KIND_PARSERS:
        raise InputError(f"unknown source kind {kind!r}")
    return importlib.import_module(f"tf_convert.parsers.{KIND_PARSERS[kind]}")


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
    each weight read once for all sets), else one set after another. Raises what TF raises
    for any set."""
    source = open_source(path)
    module = _module(source.kind)
    many = getattr(module, "run_reference_sets", None)
    if many is not None:
        return many(source if source.kind in TF_KINDS else source.path, graph, input_sets)
    return [run_reference(source, graph, inputs) for inputs in input_sets]
