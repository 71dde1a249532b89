"""TFLite's sparse tensors (the schema's SparsityParameters: per dimension DENSE or SPARSE_CSR) made dense,
as the DENSIFY operator does at run time; block-sparse layouts and reordered traversals are left to the
DENSIFY handler, which refuses them by name."""

from __future__ import annotations

from typing import Any

import numpy as np
import tflite

_VECTORS = {tflite.SparseIndexVector.Int32Vector: tflite.Int32Vector,
            tflite.SparseIndexVector.Uint16Vector: tflite.Uint16Vector,
            tflite.SparseIndexVector.Uint8Vector: tflite.Uint8Vector}


def _vector(kind: int, table: Any) -> np.ndarray | None:
    cls = _VECTORS.get(kind)
    if cls is None or table is None:
        return None
    vector = cls()
    vector.Init(table.Bytes, table.Pos)
    return np.asarray(vector.ValuesAsNumpy(), np.int64).reshape(-1)


def densify(sparsity: Any, values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """The dense tensor of `shape` whose stored (compressed) `values` `sparsity` describes; None for a layout
    this does not read (a block map, a traversal order other than the tensor's own)."""
    order = sparsity.TraversalOrderAsNumpy().tolist() if not sparsity.TraversalOrderIsNone() else []
    if order != list(range(len(shape))) or sparsity.BlockMapLength() or \
            sparsity.DimMetadataLength() != len(shape):
        return None
    index = np.zeros(1, np.int64)  # position in the compressed tree of every entry reached so far
    coords: list[np.ndarray] = []
    for d in range(len(shape)):
        meta = sparsity.DimMetadata(d)
        if meta.Format() == tflite.DimensionType.DENSE:
            size = int(meta.DenseSize())
            coords = [np.repeat(c, size) for c in coords] + [np.tile(np.arange(size), len(index))]
            index = (index[:, None] * size + np.arange(size)).reshape(-1)
            continue
        segments = _vector(meta.ArraySegmentsType(), meta.ArraySegments())
        indices = _vector(meta.ArrayIndicesType(), meta.ArrayIndices())
        if segments is None or indices is None:
            return None
        starts, ends = segments[index], segments[index + 1]
        counts = ends - starts
        within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        index = np.repeat(starts, counts) + within
        coords = [np.repeat(c, counts) for c in coords] + [indices[index]]
    if index.size != values.size or any((c >= n).any() for c, n in zip(coords, shape)):
        return None
    dense = np.zeros(shape, values.dtype)
    dense[tuple(coords)] = values[index]
    return dense
