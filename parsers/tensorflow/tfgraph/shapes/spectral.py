"""Shapes of the spectral ops: the FFTs (their last axes follow fft_length), and the complex parts."""

from __future__ import annotations

from .base import Node, broadcast, shape_fn


@shape_fn("FFT", "IFFT", "FFT2D", "IFFT2D", "FFT3D", "IFFT3D", "ComplexAbs", "Real", "Imag", "Angle")
def _same(node: Node) -> list:
    return [node.dims(0)]


@shape_fn("Complex")
def _complex(node: Node) -> list:
    return [broadcast(node.dims(0), node.dims(1))]


@shape_fn("RFFT", "RFFT2D", "RFFT3D", "IRFFT", "IRFFT2D", "IRFFT3D")
def _fft(node: Node) -> list:
    x, lengths = node.dims(0), node.ints(1)
    if x is None:
        return [None]
    if lengths is None:
        return [list(x[:-1]) + [None]]
    forward = node.op.type.startswith("RFFT")
    last = lengths[-1] // 2 + 1 if forward else lengths[-1]
    return [list(x[:len(x) - len(lengths)]) + list(lengths[:-1]) + [last]]
