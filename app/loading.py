"""What a conversion asks for (Request) and its first step: the source parsed (or taken from a cache) and the
IR passes run (load_graph). The pipeline, `convert inspect` and the per-layer diff all start here."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tf_convert import parsers
from tf_convert.convert.errors import UsageError
from tf_convert.convert.progress import SILENT, Progress
from tf_convert.emitters.options import TARGETS
from tf_convert.parsers.base import SAFE_MODE, ParseOptions
from tf_convert.parsers.source import Source

from . import mapping, memory
from .cache import Cache, parse_key


def check_target(target: str) -> None:
    """A usage error (exit 2) unless `target` is an emitter's or "ir" (the IR itself)."""
    if target != "ir" and target not in TARGETS:
        raise UsageError(f"unknown target {target!r}; choose one of {', '.join(TARGETS + ('ir',))}")


@dataclass
class Request:
    source: Path
    target: str  # torch | caffe | mxnet | onnx | ir
    out: Path | None = None
    inputs: list[str] | None = None
    outputs: list[str] | None = None
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    verify: bool = False
    rtol: float = 1e-4
    seed: int = 0
    keep_ir: bool = False
    force: bool = False
    options: Any = None  # the target's options (emitters.options), or None for its defaults
    settings: dict[str, str] = field(default_factory=dict)  # --set NAME=VALUE (scalar placeholders)
    feeds: dict[str, object] = field(default_factory=dict)  # --feed NAME=VALUE: what --verify feeds that input
    use_ema: bool = False  # --use-ema
    safe_mode: bool = True  # False: --no-safe-mode (Keras Lambda layers load)
    input_layout: str | None = None  # --input-layout nchw|nhwc (rank-4 inputs); None: from the graph
    max_memory: int | None = None  # bytes; None: 80% of the machine's RAM (convert/memory.py)
    # True: draw the stage and the weights written on stderr when it is a terminal; or a Progress to report to
    progress: bool | Progress = False
    # True: --verify runs TF's reference in a child started before the parse even for a small source (a process
    # that converts once, as the CLI: TF's import then overlaps the parse and the emit); False: a large one's only
    reference_child: bool = False
    # --verify's TF outputs are kept here between runs and reused for the same source, inputs and TF
    # (app.verify.reference_store); None: TF runs every time
    reference_store: Path | None = None


def default_out(source: Path, target: str) -> Path:
    stem = source.stem if isinstance(source, Source) else Source(Path(source), "").stem
    return Path.cwd() / f"{stem}-{target}"


def load_graph(req: Request, cache: Cache | None = None, progress: Progress = SILENT, passes=None):
    """Parse the source (or take it from `cache`) and run the default passes (or the list `passes`).

    Returns (graph, source kind, seconds, notes); notes say what was auto-detected. They are
    printed only once the whole run succeeded, so a failure stays a single line.
    """
    t0 = time.perf_counter()
    source = parsers.open_source(req.source)  # the kind is recognised once, here
    kind = source.kind
    options = ParseOptions(inputs=req.inputs, outputs=req.outputs, input_shapes=dict(req.input_shapes),
                           settings=dict(req.settings), use_ema=req.use_ema, safe_mode=req.safe_mode,
                           input_layout=req.input_layout)
    key = parse_key(source, options) if cache is not None else None
    hit = cache.get(key) if key is not None else None
    if hit is not None:
        graph = hit[0]
        options.notes.extend(hit[1])
        options.records.extend(hit[2])
    else:
        graph = parsers.parse(source, options)
        memory.check(graph, req.max_memory, str(source))  # before passes or emitters allocate anything
        if key is not None:
            cache.put(key, (graph, list(options.notes), list(options.records)))
    graph.metadata["inference_passes"] = list(options.records)
    graph.metadata[SAFE_MODE] = req.safe_mode  # the reference loads the source as the user allowed, no more
    t1 = time.perf_counter()
    progress.stage("optimize")
    graph = mapping.run_passes(graph, passes)  # (the default passes) keeping track of each tensor's TF source
    graph.validate()
    t2 = time.perf_counter()
    return graph, kind, {"parse": round(t1 - t0, 3), "passes": round(t2 - t1, 3)}, list(options.notes)
