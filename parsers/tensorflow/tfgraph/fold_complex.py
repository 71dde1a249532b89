"""Constant folds of the complex ops a tf.signal graph computes from constants (the DCT's phase factors of
mfccs_from_log_mel_spectrograms: Complex, then Exp and Mul, which numpy folds on complex arrays)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .fold import fold


@fold("Complex")
def _complex(op: Any, re: Any, im: Any) -> np.ndarray:
    dtype = np.complex128 if op.get_attr("Tout").name == "complex128" else np.complex64
    return (np.asarray(re) + 1j * np.asarray(im)).astype(dtype)


@fold("Real", "Imag")
def _part(op: Any, x: Any) -> np.ndarray:
    x = np.asarray(x)
    return (x.real if op.type == "Real" else x.imag).astype(np.float64 if x.dtype == np.complex128 else np.float32)
