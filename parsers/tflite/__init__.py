"""TFLite sources: `.tflite` flatbuffers, read through TFLite's own schema (the `tflite` package of
flatc-generated classes) without TensorFlow. TensorFlow's TFLite interpreter runs only the reference
(`reference.py`, for --verify)."""

from __future__ import annotations

from pathlib import Path

from tf_convert.convert import ir
from tf_convert.convert.errors import UsageError
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.source import kinds_of

# importing the handler modules registers them in TABLE (one module per family)
from . import (  # noqa: F401
    elementwise,
    logic,
    loops,
    mediapipe,
    mediapipe_pooling,
    nn,
    pieces,
    quantized,
    quantized_batch,
    quantized_softmax,
    quantized_unary,
    recurrent,
    reduce,
    resize,
    shape,
    spatial,
    weights,
)
from .builder import Builder
from .dequantize import dequantized
from .reference import run_reference, run_reference_sets, run_tensors
from .schema import is_tflite, read
from .table import FOLD, TABLE

KINDS = kinds_of("tflite")
DEQUANTIZE = "dequantize"  # the source setting --dequantize sets ("true"), recorded with --signature's

__all__ = ["FOLD", "KINDS", "TABLE", "is_tflite", "parse", "run_reference", "run_reference_sets",
           "run_tensors"]


def parse(path: str | Path, options: ParseOptions | None = None) -> ir.Graph:
    """Read a `.tflite` file into an IR graph (NCHW): its main subgraph, or the SignatureDef that
    `--signature NAME` (the source setting `signature`) names."""
    options = options or ParseOptions()
    other = sorted(set(options.settings) - {"signature", DEQUANTIZE})
    if other:
        raise UsageError(f"--set {other[0]}: a .tflite file has no placeholders to set; --signature NAME picks "
                         "one of its SignatureDefs")
    model = read(path)
    dequantize = options.settings.get(DEQUANTIZE) == "true"  # --dequantize: the float model it approximates
    graph = Builder(dequantized(model, options) if dequantize else model, options,
                    options.settings.get("signature")).build()
    if dequantize:  # the per-layer diff compares only the tensors the file itself holds in float
        floats = {t.name for s in model.subgraphs for t in s.tensors if t.type == "FLOAT32"}
        graph.metadata["source_tensors"] = {k: v for k, v in graph.metadata["source_tensors"].items() if k in floats}
    if options.settings:  # recorded in conversion.json (source_settings): `convert verify` runs the same signature
        graph.metadata["tf_settings"] = dict(options.settings)
    return graph
