"""The matrix diagonal and band TF ops: MatrixBandPart, MatrixDiag[V2,V3],
MatrixDiagPart[V2,V3], MatrixSetDiag[V2,V3], Diag, DiagPart, and the BatchMatrix* names of old graphs.

Each one only moves elements: every output element is one input element or the padding value. So each
lowers to one gather with a constant index table over the input flattened on its matrix axes (with the
padding value, or the new diagonal, appended as extra slots), then a reshape: copies only, exact in every
target that has gather, for every dtype. k, num_rows, num_cols and padding_value must be constants.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..context import Context, NotConvertible
from ..lowering import Lowering
from ..table import tf_op

_MAX_TABLE = 1 << 20  # entries of one index table (a constant of the converted model)
# V1 and its pre-2016 spelling (TF removed the Batch* names at GraphDef version 14): the main diagonal only
_MAIN_DIAGONAL_ONLY = ("MatrixDiag", "MatrixDiagPart", "MatrixSetDiag", "BatchMatrixDiag", "BatchMatrixDiagPart",
                       "BatchMatrixSetDiag")


def _ints(ctx: Context, t: Any) -> list[int]:
    return [int(v) for v in np.atleast_1d(np.asarray(ctx.const(t))).reshape(-1)]


def _band(ctx: Context, op: Any, t: Any) -> tuple[int, int]:
    """TF's diagonal range k: one offset, or (low, high) with low <= high."""
    k = _ints(ctx, t)
    low, high = (k[0], k[0]) if len(k) == 1 else (k[0], k[1])
    if low > high:
        raise NotConvertible(f"{op.name}: diagonal range k = ({low}, {high}) has low > high")
    return low, high


def _align(op: Any, default: str) -> tuple[bool, bool]:
    """(superdiagonals left-aligned, subdiagonals left-aligned): V3's `align`; V1/V2 align left."""
    if op.type.endswith("V3"):
        value = op.get_attr("align")
        value = value.decode() if isinstance(value, bytes) else value
    else:
        value = default
    sup, sub = value.split("_")
    return sup == "LEFT", sub == "LEFT"


def diagonal_layout(m: int, n: int, low: int, high: int, align: tuple[bool, bool]) -> tuple[int, dict[int, int]]:
    """(max_diag_len, {d: where diagonal d starts in its row}) of the packed diagonals of an (m, n) matrix,
    TF's rule: diagonal d has min(m + min(d, 0), n - max(d, 0)) elements; a right-aligned one is
    left-padded to max_diag_len."""
    longest = min(m + min(high, 0), n - max(low, 0))
    offsets = {}
    for d in range(low, high + 1):
        length = min(m + min(d, 0), n - max(d, 0))
        left = (d >= 0 and align[0]) or (d <= 0 and align[1])
        offsets[d] = 0 if left else longest - length
    return longest, offsets


def _gather_table(ctx: Context, op: Any, pieces: list[tuple[str, int]], batch: tuple[int, ...],
                  table: np.ndarray, out_shape: tuple[int, ...], pad: Any = None) -> str:
    """The output as a gather of `table` (flat slot numbers) from the concatenation of `pieces`
    (IR tensors in TF order, each batch + its own matrix shape, flattened to `size` slots), plus one slot
    holding `pad` (slot number = the total size) where pad is not None."""
    if table.size > _MAX_TABLE:
        raise NotConvertible(f"{op.name}: an index table of {table.size} entries (at most {_MAX_TABLE})")
    dtype = op.outputs[0].dtype.name
    flat = []
    for i, (x, size) in enumerate(pieces):
        shape = batch + (size,)
        if tuple(ctx.graph.shape(x)) != shape:
            x = ctx.emit("reshape", f"{op.name}/flat{i}", [x], shape, {"shape": shape}, source_op=op.type)
        flat.append(x)
    if pad is not None:
        value = np.full(batch + (1,), pad, np.dtype(dtype))
        flat.append(ctx.emit("const", f"{op.name}/padding", [], value.shape, params={"value": value},
                             source_op=op.type, out_dtype=dtype))
    total = sum(size for _, size in pieces) + (pad is not None)
    data = flat[0] if len(flat) == 1 else ctx.emit("concat", f"{op.name}/slots", flat, batch + (total,),
                                                   {"axis": len(batch)}, source_op=op.type)
    index = np.ascontiguousarray(table, np.int32)
    index_ir = ctx.emit("const", f"{op.name}/index", [], index.shape, params={"value": index}, source_op=op.type,
                        out_dtype="int32")
    gathered = ctx.emit("gather", f"{op.name}/gather" if index.shape != out_shape[len(batch):] else op.name,
                        [data, index_ir], batch + index.shape, {"axis": len(batch)}, source_op=op.type,
                        out_dtype=dtype)
    if tuple(ctx.graph.shape(gathered)) == tuple(out_shape):
        return gathered
    return ctx.emit("reshape", op.name, [gathered], out_shape, {"shape": tuple(out_shape)}, source_op=op.type)


def _pad_value(ctx: Context, op: Any, index: int) -> Any:
    if len(op.inputs) <= index:
        return 0
    return np.asarray(ctx.const(op.inputs[index])).reshape(-1)[0]


@tf_op("MatrixBandPart", "BatchMatrixBandPart")
def matrix_band_part(ctx: Context, op: Any) -> None:
    """Keep (r, c) where r - c <= num_lower and c - r <= num_upper (negative: no bound), zeros elsewhere."""
    shape = tuple(ctx.shape(op.inputs[0]))
    batch, (m, n) = shape[:-2], shape[-2:]
    if not all(ctx.is_const(t) for t in op.inputs[1:3]):
        ctx.set(op.outputs[0], _band_at_run_time(ctx, op, shape))
        return
    lower, upper = (_ints(ctx, t)[0] for t in op.inputs[1:3])
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    keep = ((lower < 0) | (r - c <= lower)) & ((upper < 0) | (c - r <= upper))
    table = np.where(keep, r * n + c, m * n)
    out = _gather_table(ctx, op, [(ctx.tf_order(op.inputs[0]), m * n)], batch, table, shape, pad=0)
    ctx.set(op.outputs[0], out)


def _band_at_run_time(ctx: Context, op: Any, shape: tuple[int, ...]) -> str:
    """Widths the graph computes: the mask (r - c <= lower or lower < 0) and (c - r <= upper or upper < 0)
    worked out by the converted model, then zeros where it is False."""
    low = Lowering(ctx, op)
    m, n = shape[-2:]
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    x = ctx.tf_order(op.inputs[0])
    keep = None
    for side, (t, offsets) in enumerate(zip(op.inputs[1:3], (r - c, c - r))):
        width = ctx.tf_order(t)
        dtype = low.dtype(width)
        unbounded = low.node("less", f"unbounded{side}", [width, low.const(f"zero{side}", 0, dtype)], (), dtype="bool")
        inside = low.node("less_equal", f"inside{side}", [low.const(f"offsets{side}", offsets, dtype), width], (m, n),
                          dtype="bool")
        kept = low.node("logical_or", f"kept{side}", [unbounded, inside], (m, n), dtype="bool")
        keep = kept if keep is None else low.node("logical_and", "keep", [keep, kept], (m, n), dtype="bool")
    zero = low.const("zero", 0, low.dtype(x))
    return low.node("select", "", [keep, x, zero], shape, dtype=low.dtype(x))


@tf_op("MatrixDiagPart", "MatrixDiagPartV2", "MatrixDiagPartV3", "BatchMatrixDiagPart")
def matrix_diag_part(ctx: Context, op: Any) -> None:
    """Diagonals low..high of the innermost matrices, packed one per row (the highest first)."""
    shape = tuple(ctx.shape(op.inputs[0]))
    batch, (m, n) = shape[:-2], shape[-2:]
    low, high = (0, 0) if op.type in _MAIN_DIAGONAL_ONLY else _band(ctx, op, op.inputs[1])
    longest, offsets = diagonal_layout(m, n, low, high, _align(op, "LEFT_LEFT"))
    table = np.full((high - low + 1, longest), m * n, np.int64)
    for d, start in offsets.items():
        for j in range(min(m + min(d, 0), n - max(d, 0))):
            table[high - d, start + j] = (j - min(d, 0)) * n + j + max(d, 0)
    out_shape = tuple(ctx.shape(op.outputs[0]))
    pad = _pad_value(ctx, op, 2) if op.type not in _MAIN_DIAGONAL_ONLY else None
    needs_pad = bool((table == m * n).any())
    out = _gather_table(ctx, op, [(ctx.tf_order(op.inputs[0]), m * n)], batch, table, out_shape,
                        pad=pad if needs_pad else None)
    ctx.set(op.outputs[0], out)


def _diagonal_source(op: Any, diag_shape: tuple[int, ...], low: int, high: int) -> tuple[tuple[int, ...], int, int]:
    """(batch, rows of packed diagonals, their length) of a diagonal input for range low..high."""
    if low == high:
        return diag_shape[:-1], 1, diag_shape[-1]
    if diag_shape[-2] != high - low + 1:
        raise NotConvertible(f"{op.name}: {diag_shape[-2]} diagonals given for k = ({low}, {high})")
    return diag_shape[:-2], diag_shape[-2], diag_shape[-1]


def _diagonal_slots(m: int, n: int, low: int, high: int, longest: int, offsets: dict[int, int],
                    base: int, missing: np.ndarray) -> np.ndarray:
    """The (m, n) table taking (r, c) on a diagonal in low..high from the packed diagonals (slots from
    `base`), every other position from `missing`."""
    table = missing.copy()
    for r in range(m):
        for c in range(n):
            d = c - r
            if low <= d <= high:
                table[r, c] = base + (high - d) * longest + min(r, c) + offsets[d]
    return table


@tf_op("MatrixDiag", "MatrixDiagV2", "MatrixDiagV3", "BatchMatrixDiag")
def matrix_diag(ctx: Context, op: Any) -> None:
    """Matrices holding the given diagonals (low..high), the padding value elsewhere."""
    diag_shape = tuple(ctx.shape(op.inputs[0]))
    low, high = (0, 0) if op.type in _MAIN_DIAGONAL_ONLY else _band(ctx, op, op.inputs[1])
    batch, _, longest = _diagonal_source(op, diag_shape, low, high)
    out_shape = tuple(ctx.shape(op.outputs[0]))
    m, n = out_shape[-2:]
    longest_here, offsets = diagonal_layout(m, n, low, high, _align(op, "LEFT_LEFT"))
    if longest_here != longest:
        raise NotConvertible(f"{op.name}: diagonals of length {longest} for a {m}x{n} matrix "
                             f"(k = ({low}, {high}) needs {longest_here})")
    size = (high - low + 1) * longest
    table = _diagonal_slots(m, n, low, high, longest, offsets, 0, np.full((m, n), size, np.int64))
    pad = _pad_value(ctx, op, 4) if op.type not in _MAIN_DIAGONAL_ONLY else 0
    out = _gather_table(ctx, op, [(ctx.tf_order(op.inputs[0]), size)], batch, table, out_shape, pad=pad)
    ctx.set(op.outputs[0], out)


@tf_op("MatrixSetDiag", "MatrixSetDiagV2", "MatrixSetDiagV3", "BatchMatrixSetDiag")
def matrix_set_diag(ctx: Context, op: Any) -> None:
    """The input with its diagonals low..high replaced by the given ones."""
    shape = tuple(ctx.shape(op.inputs[0]))
    batch, (m, n) = shape[:-2], shape[-2:]
    low, high = (0, 0) if op.type in _MAIN_DIAGONAL_ONLY else _band(ctx, op, op.inputs[2])
    diag_shape = tuple(ctx.shape(op.inputs[1]))
    _, rows, longest = _diagonal_source(op, diag_shape, low, high)
    longest_here, offsets = diagonal_layout(m, n, low, high, _align(op, "LEFT_LEFT"))
    if longest_here != longest:
        raise NotConvertible(f"{op.name}: diagonals of length {longest} for a {m}x{n} matrix "
                             f"(k = ({low}, {high}) needs {longest_here})")
    own = np.arange(m * n).reshape(m, n)
    table = _diagonal_slots(m, n, low, high, longest, offsets, m * n, own)
    pieces = [(ctx.tf_order(op.inputs[0]), m * n), (ctx.tf_order(op.inputs[1]), rows * longest)]
    ctx.set(op.outputs[0], _gather_table(ctx, op, pieces, batch, table, shape))


@tf_op("Diag")
def diag(ctx: Context, op: Any) -> None:
    """Rank k -> rank 2k: out[i..., i...] = x[i...], zeros elsewhere."""
    shape = tuple(ctx.shape(op.inputs[0]))
    size = int(np.prod(shape))
    table = np.where(np.eye(size, dtype=bool), np.arange(size)[None, :], size)
    out = _gather_table(ctx, op, [(ctx.tf_order(op.inputs[0]), size)], (), table, shape + shape, pad=0)
    ctx.set(op.outputs[0], out)


@tf_op("DiagPart")
def diag_part(ctx: Context, op: Any) -> None:
    """Rank 2k -> rank k: x[i..., i...]."""
    shape = tuple(ctx.shape(op.outputs[0]))
    size = int(np.prod(shape))
    table = np.arange(size) * (size + 1)
    out = _gather_table(ctx, op, [(ctx.tf_order(op.inputs[0]), size * size)], (), table, shape)
    ctx.set(op.outputs[0], out)


# ---- row ops: ParallelConcat, InplaceUpdate / InplaceAdd / InplaceSub (constant row indices) ----------------

@tf_op("ParallelConcat")
def parallel_concat(ctx: Context, op: Any) -> None:
    """Its inputs (each one row, [1, ...]) stacked along axis 0: a concat."""
    rows = [ctx.tf_order(t) for t in op.inputs]
    out_shape = tuple(ctx.shape(op.outputs[0]))
    out = rows[0] if len(rows) == 1 else ctx.emit("concat", op.name, rows, out_shape, {"axis": 0}, source_op=op.type)
    ctx.set(op.outputs[0], out)


def _rows(ctx: Context, op: Any, base: str, pieces: list[str], table: np.ndarray, shape: tuple[int, ...]) -> str:
    """Rows `table` (numbers into the concatenation of `pieces` along axis 0), a gather along axis 0."""
    total = sum(ctx.graph.shape(p)[0] for p in pieces)
    data = pieces[0] if len(pieces) == 1 else ctx.emit("concat", f"{base}/rows", pieces, (total,) + shape[1:],
                                                       {"axis": 0}, source_op=op.type)
    index = np.ascontiguousarray(table, np.int32)
    index_ir = ctx.emit("const", f"{base}/index", [], index.shape, params={"value": index}, source_op=op.type,
                        out_dtype="int32")
    return ctx.emit("gather", base, [data, index_ir], shape, {"axis": 0}, source_op=op.type,
                    out_dtype=op.outputs[0].dtype.name)


@tf_op("InplaceUpdate", "InplaceAdd", "InplaceSub")
def inplace(ctx: Context, op: Any) -> None:
    """x with rows i set to (update) or added / subtracted the rows of v: a gather of rows from [x, v], or x
    plus or minus a gather from [zero row, v] (+ 0 and - 0 leave x's values as they are)."""
    shape = tuple(ctx.shape(op.inputs[0]))
    rows = [int(r) for r in np.atleast_1d(np.asarray(ctx.const(op.inputs[1]))).reshape(-1)]
    if any(not 0 <= r < shape[0] for r in rows):
        raise NotConvertible(f"{op.name}: row index out of range 0..{shape[0] - 1} in {rows}")
    if len(set(rows)) != len(rows):
        raise NotConvertible(f"{op.name}: repeated row indices {rows} (TF leaves their order undefined)")
    x, v = ctx.tf_order(op.inputs[0]), ctx.tf_order(op.inputs[2])
    where = dict(zip(rows, range(len(rows))))
    if op.type == "InplaceUpdate":
        table = np.array([shape[0] + where[r] if r in where else r for r in range(shape[0])])
        ctx.set(op.outputs[0], _rows(ctx, op, op.name, [x, v], table, shape))
        return
    dtype = np.dtype(op.outputs[0].dtype.name)
    zero = ctx.emit("const", f"{op.name}/zero_row", [], (1,) + shape[1:], params={"value": np.zeros((1,) + shape[1:],
                    dtype)}, source_op=op.type, out_dtype=dtype.name)
    table = np.array([1 + where[r] if r in where else 0 for r in range(shape[0])])
    delta = _rows(ctx, op, f"{op.name}/delta", [zero, v], table, shape)
    out = ctx.emit("add" if op.type == "InplaceAdd" else "sub", op.name, [x, delta], shape, source_op=op.type,
                   out_dtype=dtype.name)
    ctx.set(op.outputs[0], out)
