"""Run the source in TensorFlow and the converted model in its real runtime; compare every output."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

from .ir import Graph


def make_inputs(graph: Graph, seed: int = 0) -> list[np.ndarray]:
    """The same random inputs for both sides: standard normal, fixed seed, IR layout."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(graph.shape(name)).astype(np.float32) for name in graph.inputs]


def metrics(actual: np.ndarray, expected: np.ndarray) -> dict[str, Any]:
    """max_abs, max_rel (max|a-b| / max(1, max|ref|)), SNR and PSNR in dB (None when exact)."""
    if actual.shape != expected.shape:
        raise ValueError(f"shape {tuple(actual.shape)} differs from TensorFlow's {tuple(expected.shape)}")
    a = actual.astype(np.float64)
    b = expected.astype(np.float64)
    diff = a - b
    max_abs = float(np.max(np.abs(diff))) if diff.size else 0.0
    peak = float(np.max(np.abs(b))) if b.size else 0.0
    noise = float(np.mean(diff**2)) if diff.size else 0.0
    signal = float(np.mean(b**2)) if b.size else 0.0
    finite = bool(np.all(np.isfinite(a)))
    return {
        "max_abs": max_abs,
        "max_rel": max_abs / max(1.0, peak) if finite else math.inf,
        "snr_db": None if noise == 0 else round(10 * math.log10(max(signal, 1e-300) / noise), 2),
        "psnr_db": None if noise == 0 else round(10 * math.log10(max(peak**2, 1e-300) / noise), 2),
    }


def verify(
    source: Path, graph: Graph, emitter: ModuleType, out_dir: Path, rtol: float = 1e-4, seed: int = 0,
    run_reference: Callable[[Path, Graph, list[np.ndarray]], list[np.ndarray]] | None = None,
) -> dict[str, Any]:
    """Compare TF (reference) with the target runtime on the same input; `passed` if max_rel <= rtol.
    `run_reference` replaces parsers.run_reference (e.g. one that reuses earlier outputs)."""
    import parsers

    inputs = make_inputs(graph, seed)
    expected = (run_reference or parsers.run_reference)(source, graph, inputs)
    actual = emitter.run(Path(out_dir), inputs)
    per_output = []
    for name, a, b in zip(graph.outputs, actual, expected):
        m = metrics(np.asarray(a), np.asarray(b))
        m["output"] = graph.source_names.get(name, name)
        per_output.append(m)
    worst = max(per_output, key=lambda m: m["max_rel"])
    snrs = [m["snr_db"] for m in per_output if m["snr_db"] is not None]
    psnrs = [m["psnr_db"] for m in per_output if m["psnr_db"] is not None]
    return {
        "max_abs": max(m["max_abs"] for m in per_output),
        "max_rel": worst["max_rel"],
        "snr_db": min(snrs) if snrs else None,
        "psnr_db": min(psnrs) if psnrs else None,
        "passed": bool(worst["max_rel"] <= rtol),
        "rtol": rtol,
        "seed": seed,
        "worst_output": worst["output"],
        "outputs": per_output,
    }
