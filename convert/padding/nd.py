"""TF's padding rules on any number of spatial axes (3-D volumes), built from the 1-D rules
in rules.py. Pads are flat (begin, end) pairs, one pair per spatial axis, in axis order."""

from __future__ import annotations

from collections.abc import Sequence

from .rules import PaddingError, output_size_1d, same_pads_1d, transposed_full_size


def tf_pads_nd(size: Sequence[int], kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
               padding: str) -> tuple[int, ...]:
    """(b0, e0, b1, e1, ...) TF applies for padding 'SAME' or 'VALID'."""
    padding = padding.upper()
    if padding == "VALID":
        return (0,) * (2 * len(size))
    if padding != "SAME":
        raise PaddingError(f"unknown padding {padding!r}")
    if any(n is None or n < 0 for n in size):
        raise PaddingError("SAME padding depends on the spatial input size, which is unknown")
    return tuple(p for n, k, s, d in zip(size, kernel, stride, dilation) for p in same_pads_1d(int(n), k, s, d))


def output_size_nd(size: Sequence[int], kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
                   pads: Sequence[int]) -> tuple[int, ...]:
    return tuple(output_size_1d(n, k, s, d, pads[2 * i], pads[2 * i + 1])
                 for i, (n, k, s, d) in enumerate(zip(size, kernel, stride, dilation)))


def transposed_full_size_nd(size: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
                            dilation: Sequence[int]) -> tuple[int, ...]:
    return tuple(transposed_full_size(n, k, s, d) for n, k, s, d in zip(size, kernel, stride, dilation))


def transposed_crop_nd(out_size: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
                       dilation: Sequence[int], padding: str) -> tuple[int, ...]:
    """First kept index per axis of the full transposed output (TF's Conv3DBackpropInputV2 rule)."""
    return tf_pads_nd(out_size, kernel, stride, dilation, padding)[0::2]
