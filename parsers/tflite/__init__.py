"""TFLite sources: `.tflite` flatbuffers, read through TFLite's own schema (the `tflite` package of
flatc-generated classes) without TensorFlow. TensorFlow's TFLite interpreter runs only the reference
(`reference.py`, for --verify)."""

from __future__ import annotations

from pathlib import Path

from tf_convert.convert import ir
from tf_convert.parsers.base import ParseOptions

# importing the handler modules registers them in TABLE (one module per family)
from . import elementwise, nn, reduce, resize, shape, spatial, weights  # noqa: F401
from .builder import Builder
from .reference import run_reference, run_reference_sets
from .schema import is_tflite, read
from .table import FOLD, TABLE

KINDS = ("tflite",)

__all__ = ["FOLD", "KINDS", "TABLE", "is_tflite", "parse", "run_reference", "run_reference_sets"]


def parse(path: str | Path, options: ParseOptions | None = None) -> ir.Graph:
    """Read a `.tflite` file into an IR graph (NCHW): its main subgraph, or the signature options names."""
    options = options or ParseOptions()
    return Builder(read(path), options, options.signature).build()
