"""Constant folds of matrix ops on constants: the band ops a causal mask is built with (OPT's `MatrixBandPart`,
CLIP's text encoder's `set_diag`) and `Einsum` (Mistral's rotary angles, positions x inverse frequencies): at
fixed sizes the mask and the angles are constants."""

from __future__ import annotations

from typing import Any

import numpy as np

from .fold import fold


@fold("MatrixBandPart")
def _band_part(op: Any, x: Any, lower: Any, upper: Any) -> np.ndarray:
    """Entries (i, j) of the last two axes with i - j <= lower and j - i <= upper kept (negative: no bound), the
    rest zero."""
    x = np.asarray(x)
    lower, upper = int(np.asarray(lower)), int(np.asarray(upper))
    rows, cols = np.indices(x.shape[-2:])
    keep = ((lower < 0) | (rows - cols <= lower)) & ((upper < 0) | (cols - rows <= upper))
    return np.where(keep, x, np.zeros((), x.dtype))


@fold("MatrixSetDiag", "MatrixSetDiagV2", "MatrixSetDiagV3")
def _set_diag(op: Any, x: Any, diagonal: Any, k: Any = 0) -> np.ndarray:
    """The main diagonal of the last two axes replaced (k = 0 only: the one a mask sets)."""
    if np.any(np.asarray(k) != 0):
        raise ValueError(f"a constant MatrixSetDiag off the main diagonal (k = {np.asarray(k).tolist()})")
    x, diagonal = np.array(x), np.asarray(diagonal)
    n = min(x.shape[-2:])
    x[..., np.arange(n), np.arange(n)] = diagonal[..., :n]
    return x


@fold("Einsum")
def _einsum(op: Any, *operands: Any) -> np.ndarray:
    equation = op.get_attr("equation")
    equation = equation.decode() if isinstance(equation, bytes) else equation
    return np.asarray(np.einsum(equation, *(np.asarray(x) for x in operands)))
