"""Spectral ops: RFFT/IRFFT and FFT/IFFT (1-D, 2-D, 3-D), ComplexAbs, Real, Imag, Angle, Complex and a cast to
complex. A complex tensor is held as its real and imaginary parts (parsers/tensorflow/complex_values.py); a
DFT along an axis is two products with constant cos/sin tables (IR `linear`, float64 tables rounded to float32),
so every target computes it with the matrix products it has: the same sums as TF's FFT in another order, within
a few float32 roundings of the transform's largest value."""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.ir.graph import LOWERINGS

from ..complex_values import Pair, is_complex, pair, set_pair
from ..context import Context, NotConvertible
from ..lowering import Lowering
from ..table import tf_op


def _tables(n_in: int, n_out: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of 2 pi m k / n for input index m < n_in, output index k < n_out (float64)."""
    angle = 2 * np.pi * np.outer(np.arange(n_in), np.arange(n_out)) / n
    return np.cos(angle), np.sin(angle)


def _product(low: Lowering, part: str, x: str, table: np.ndarray) -> str:
    """x @ table along x's last axis (a linear layer with weight table.T)."""
    shape = low.shape(x)
    flat = x if len(shape) >= 2 else low.reshape(f"{part}/row", x, (1, *shape))
    out_shape = (*low.shape(flat)[:-1], table.shape[1])
    y = low.node("linear", part, [flat], out_shape)
    low.ctx.graph.nodes[-1].params["weight"] = np.ascontiguousarray(table.T.astype(np.float32))
    return y if len(shape) >= 2 else low.reshape(f"{part}/flat", y, (table.shape[1],))


def _sum(low: Lowering, part: str, terms: list[tuple[str, np.ndarray]]) -> str:
    """sum of x @ table over (x, table): terms whose table is all zeros are left out."""
    found = [_product(low, f"{part}/{i}", x, t) for i, (x, t) in enumerate(terms) if np.any(t)]
    total = found[0]
    for i, y in enumerate(found[1:]):
        total = low.binary("add", f"{part}/sum{i}", total, y)
    return total


def _last(low: Lowering, x: str, n: int) -> str:
    """x's last axis cut to at most n (the FFT length; a shorter one is padded with zeros: no table rows)."""
    shape = low.shape(x)
    return low.slice("cut", x, len(shape) - 1, 0, n) if shape[-1] > n else x


def _swap(low: Lowering, part: str, x: str, axis: int = -2) -> str:
    """x with `axis` (negative: from the end) and the last axis exchanged (its own inverse)."""
    shape = low.shape(x)
    perm = list(range(len(shape)))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return low.node("transpose", part, [x], tuple(shape[p] for p in perm), {"perm": tuple(perm)})


def _along(low: Lowering, part: str, z: Pair, axis: int, n: int, inverse: bool) -> Pair:
    """The complex DFT of length n along `axis` (negative: from the end)."""
    if axis == -1:
        return dft(low, part, z, n, inverse)
    z = dft(low, part, Pair(_swap(low, f"{part}_re_t", z.re, axis), _swap(low, f"{part}_im_t", z.im, axis)), n,
            inverse)
    return Pair(_swap(low, f"{part}_re", z.re, axis), _swap(low, f"{part}_im", z.im, axis))


def rfft(low: Lowering, x: str, n: int) -> Pair:
    """The real input's DFT along its last axis: bins 0 .. n // 2."""
    x = _last(low, x, n)
    bins = n // 2 + 1
    cos, sin = _tables(low.shape(x)[-1], bins, n)
    # bin 0 (and n / 2 for even n) is real: TF's imaginary part there is +0 exactly, as these constants
    # (a product with zeros could give -0, which turns an Angle of -1 into -pi)
    inner = bins - 1 if n % 2 == 0 else bins
    zero = low.const("zero", np.zeros((*low.shape(x)[:-1], 1), np.float32))
    pieces = [zero] + ([_product(low, "rfft_im", x, -sin[:, 1:inner])] if inner > 1 else [])
    pieces += [zero] if n % 2 == 0 and bins > 1 else []
    return Pair(_product(low, "rfft_re", x, cos), low.concat("rfft_im_bins", pieces, len(low.shape(x)) - 1))


def dft(low: Lowering, part: str, z: Pair, n: int, inverse: bool) -> Pair:
    """The complex DFT (inverse: divided by n, the conjugate kernel) along the last axis, length n."""
    re, im = _last(low, z.re, n), _last(low, z.im, n)
    cos, sin = _tables(low.shape(re)[-1], n, n)
    if inverse:
        cos, sin = cos / n, -sin / n
    return Pair(_sum(low, f"{part}_re", [(re, cos), (im, sin)]), _sum(low, f"{part}_im", [(im, cos), (re, -sin)]))


def irfft(low: Lowering, z: Pair, n: int) -> str:
    """The real signal of n samples whose DFT's bins 0 .. n // 2 are z (TF ignores the imaginary part of
    bin 0 and, for even n, of bin n / 2)."""
    bins = n // 2 + 1
    re, im = _last(low, z.re, bins), _last(low, z.im, bins)
    m = low.shape(re)[-1]
    cos, sin = _tables(m, n, n)
    weight = np.full((m, 1), 2.0)
    weight[0] = 1.0
    if n % 2 == 0 and m > n // 2:
        weight[n // 2] = 1.0
    a, b = weight * cos / n, -weight * sin / n
    b[0] = 0.0
    if n % 2 == 0 and m > n // 2:
        b[n // 2] = 0.0
    return _sum(low, "irfft", [(re, a), (im, b)])


# how every spectral op is lowered (a target refusing part of it names the op with this)
_LOWERED = ("converted as products with constant cos/sin tables on the real and imaginary parts held as two "
            "real tensors (a zero constant for the imaginary part of the real bins, transposes for the axes before "
            "the last)")


def _noted(ctx: Context, op: Any) -> Lowering:
    """The op's Lowering, its lowering recorded for refusals (graph.metadata[LOWERINGS])."""
    ctx.graph.metadata.setdefault(LOWERINGS, {})[op.type] = _LOWERED
    return Lowering(ctx, op)


def _lengths(ctx: Context, op: Any, count: int) -> list[int]:
    if not ctx.is_const(op.inputs[1]):
        raise NotConvertible(f"{op.type}'s fft_length depends on the model input: the cos/sin tables need it fixed")
    lengths = [int(v) for v in np.asarray(ctx.const(op.inputs[1])).reshape(-1)]
    if len(lengths) != count or min(lengths) < 1:
        raise NotConvertible(f"{op.type} with fft_length {lengths}")
    return lengths


def _real_input(ctx: Context, op: Any) -> str:
    if op.inputs[0].dtype.name != "float32":
        raise NotConvertible(f"{op.type} of {op.inputs[0].dtype.name}: float32 signals only")
    return ctx.tf_order(op.inputs[0])


@tf_op("RFFT")
def rfft_op(ctx: Context, op: Any) -> None:
    (n,) = _lengths(ctx, op, 1)
    z = rfft(_noted(ctx, op), _real_input(ctx, op), n)
    set_pair(ctx, op.outputs[0], z.re, z.im)


@tf_op("RFFT2D", "RFFT3D")
def rfft_nd_op(ctx: Context, op: Any) -> None:
    """The real transform along the last axis, then complex ones along the axes before it."""
    lengths = _lengths(ctx, op, 2 if op.type == "RFFT2D" else 3)
    low = _noted(ctx, op)
    z = rfft(low, _real_input(ctx, op), lengths[-1])
    for axis in range(-2, -len(lengths) - 1, -1):
        z = _along(low, f"axis{-axis}", z, axis, lengths[axis], inverse=False)
    set_pair(ctx, op.outputs[0], z.re, z.im)


@tf_op("IRFFT")
def irfft_op(ctx: Context, op: Any) -> None:
    (n,) = _lengths(ctx, op, 1)
    ctx.set(op.outputs[0], irfft(_noted(ctx, op), pair(ctx, op.inputs[0]), n))


@tf_op("IRFFT2D", "IRFFT3D")
def irfft_nd_op(ctx: Context, op: Any) -> None:
    """The inverse complex transforms along the leading axes, then the real one along the last."""
    lengths = _lengths(ctx, op, 2 if op.type == "IRFFT2D" else 3)
    low = _noted(ctx, op)
    z = pair(ctx, op.inputs[0])
    for axis in range(-len(lengths), -1):
        z = _along(low, f"axis{-axis}", z, axis, lengths[axis], inverse=True)
    ctx.set(op.outputs[0], irfft(low, z, lengths[-1]))


@tf_op("FFT", "IFFT", "FFT2D", "IFFT2D", "FFT3D", "IFFT3D")
def fft_op(ctx: Context, op: Any) -> None:
    """The complex transform along the innermost 1, 2 or 3 axes, each at its full length."""
    z, low = pair(ctx, op.inputs[0]), _noted(ctx, op)
    shape = ctx.shape(op.inputs[0])
    rank = int(op.type[-2]) if op.type[-2].isdigit() else 1
    if len(shape) < rank or any(d is None or d < 1 for d in shape[-rank:]):
        raise NotConvertible(f"{op.type} of a signal of shape {shape}: its last {rank} axes must be known "
                             "(the cos/sin tables need their lengths)")
    for axis in range(-1, -rank - 1, -1):
        z = _along(low, f"axis{-axis}", z, axis, shape[axis], inverse=op.type.startswith("I"))
    set_pair(ctx, op.outputs[0], z.re, z.im)


@tf_op("ComplexAbs")
def complex_abs(ctx: Context, op: Any) -> None:
    z, low = pair(ctx, op.inputs[0]), _noted(ctx, op)
    shape = low.shape(z.re)
    squares = low.binary("add", "norm2", low.node("square", "re2", [z.re], shape), low.node("square", "im2", [z.im],
                                                                                            shape))
    ctx.set(op.outputs[0], low.node("sqrt", "", [squares], shape))


@tf_op("Real", "Imag")
def part(ctx: Context, op: Any) -> None:
    if not is_complex(op.inputs[0]):  # Real of a real tensor is itself, its Imag zeros
        x = ctx.tf_order(op.inputs[0])
        ctx.set(op.outputs[0], x if op.type == "Real" else _noted(ctx, op).const(
            "zeros", np.zeros(ctx.shape(op.inputs[0]), np.float32)))
        return
    z = pair(ctx, op.inputs[0])
    ctx.set(op.outputs[0], z.re if op.type == "Real" else z.im)


@tf_op("Angle")
def angle(ctx: Context, op: Any) -> None:
    z, low = pair(ctx, op.inputs[0]), _noted(ctx, op)
    ctx.set(op.outputs[0], low.binary("atan2", "", z.im, z.re))


@tf_op("Complex")
def complex_op(ctx: Context, op: Any) -> None:
    re, im = op.inputs
    if ctx.shape(re) != ctx.shape(im):
        raise NotConvertible(f"Complex of parts shaped {ctx.shape(re)} and {ctx.shape(im)}: same shapes only")
    set_pair(ctx, op.outputs[0], ctx.tf_order(re), ctx.tf_order(im))
