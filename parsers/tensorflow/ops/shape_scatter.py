"""Issue 22 part B (opsb): scatters into a tensor at constant indices -- TensorScatterUpdate/Add/Sub/Max/Min,
ScatterNdNonAliasingAdd and SparseToDense. The output, flattened to rows (the indexed axes), is a concat of
runs of the base tensor's rows and the updated rows; an updated row is the update itself (Update) or the
base row combined with each update aimed at it in index order, as TF's kernel applies them. Copies and
those elementwise steps only: exact in every target."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..context import Context, NotConvertible
from ..table import tf_op
from .lowering import Lowering

_MAX_INDICES = 512  # one slice per index tuple


def flat_rows(indices: np.ndarray, lead: tuple[int, ...], what: str) -> np.ndarray:
    """Constant index tuples (..., depth) -> the flat row each addresses in `lead`, checked in range."""
    depth = indices.shape[-1] if indices.ndim else 1
    rows = indices.reshape(-1, depth).astype(np.int64)
    if len(rows) > _MAX_INDICES:
        raise NotConvertible(f"{what} {len(rows)} index tuples (one slice each, at most {_MAX_INDICES})")
    for row in rows:
        if any(not 0 <= i < n for i, n in zip(row, lead)):
            raise NotConvertible(f"index {row.tolist()} is out of range for shape {list(lead)}")
    return np.ravel_multi_index(tuple(rows.T), lead) if depth else np.zeros(len(rows), np.int64)


def scatter_rows(low: Lowering, n_rows: int, base: Callable[[int, int], str], updates: str, flat: np.ndarray,
                 combine: str | None) -> str:
    """Rows 0..n_rows of the result: base(start, end) gives base rows, `updates` (k, *rest) row k goes
    to row flat[k], combined by IR op `combine` with what is there (None: it replaces it)."""
    pieces, start = [], 0
    for target in sorted(set(flat.tolist())):
        if target > start:
            pieces.append(base(start, target))
        row = None if combine is None else base(target, target + 1)
        for k in np.flatnonzero(flat == target):
            update = low.slice(f"update{k}", updates, 0, int(k), int(k) + 1)
            row = update if row is None else low.binary(combine, f"row{target}_{k}", row, update)
        pieces.append(row)
        start = target + 1
    if start < n_rows:
        pieces.append(base(start, n_rows))
    return low.concat("rows", pieces, 0)


_COMBINE = {"TensorScatterUpdate": None, "TensorScatterAdd": "add", "TensorScatterSub": "sub",
            "TensorScatterMax": "maximum", "TensorScatterMin": "minimum", "ScatterNdNonAliasingAdd": "add"}


@tf_op(*_COMBINE)
def tensor_scatter(ctx: Context, op: Any) -> None:
    low = Lowering(ctx, op)
    shape = ctx.shape(op.inputs[0])
    indices = np.asarray(ctx.const(op.inputs[1]))
    depth = indices.shape[-1]
    lead, rest = shape[:depth], shape[depth:] or (1,)  # rows of one element stay 2-D (OpenCV's Eltwise)
    flat = flat_rows(indices, lead, "scattering")
    combine = _COMBINE[op.type]
    if combine is None and len(set(flat.tolist())) < len(flat):
        raise NotConvertible("TensorScatterUpdate with a repeated index: TF leaves which update wins unspecified")
    n_rows = int(np.prod(lead))
    x = low.reshape("base", ctx.tf_order(op.inputs[0]), (n_rows,) + rest)
    updates = low.reshape("updates", ctx.tf_order(op.inputs[2]), (len(flat),) + rest)
    out = scatter_rows(low, n_rows, lambda a, b: low.slice(f"base{a}", x, 0, a, b), updates, flat, combine)
    ctx.set(op.outputs[0], low.reshape("", out, shape))


@tf_op("SparseToDense")
def sparse_to_dense(ctx: Context, op: Any) -> None:
    """The default value everywhere but at the (constant, distinct) indices, which get their values."""
    low = Lowering(ctx, op)
    shape = tuple(int(d) for d in np.asarray(ctx.const(op.inputs[1])).reshape(-1))
    indices = np.asarray(ctx.const(op.inputs[0]))
    indices = indices.reshape(-1, 1) if indices.ndim < 2 else indices
    flat = flat_rows(indices, shape, "setting")
    if len(set(flat.tolist())) < len(flat):
        raise NotConvertible("SparseToDense with a repeated index (TF refuses it when validating, else the "
                             "winner is unspecified)")
    n = int(np.prod(shape))
    values = ctx.tf_order(op.inputs[2])
    if not low.shape(values):  # one value for every index
        one = low.reshape("value", values, (1, 1))
        values = low.repeat("values", one, 0, len(flat))
    values = low.reshape("values_rows", values, (len(flat), 1))  # rows of one element: 2-D (OpenCV's Eltwise)
    default = low.reshape("default", ctx.tf_order(op.inputs[3]), (1, 1))
    out = scatter_rows(low, n, lambda a, b: low.repeat(f"default{a}", default, 0, b - a), values, flat, None)
    ctx.set(op.outputs[0], low.reshape("", out, shape))
