"""Complex tensors (an FFT's result) held as two real IR tensors, the real and the imaginary part, in TF's axis
order: the IR and every target stay real. Spectral handlers (ops/spectral.py) make and read the pairs; an op
that only moves values (a slice, a reshape) runs its own handler once per part; complex +, -, * are written
out on the parts; any other op reading a complex tensor is refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .context import Context, NotConvertible, Val
from .lowering import Lowering
from .table import TABLE

# ops that move values only: the same op on each part
_PARTWISE = ("Identity", "StopGradient", "Snapshot", "Reshape", "ExpandDims", "Squeeze", "StridedSlice", "Slice",
             "Transpose", "ConcatV2", "Pack", "Tile", "ReverseV2")
# the spectral handlers, which read the pairs themselves
READERS = ("IRFFT", "IRFFT2D", "IRFFT3D", "FFT", "IFFT", "FFT2D", "IFFT2D", "FFT3D", "IFFT3D", "ComplexAbs", "Real",
           "Imag", "Angle")


@dataclass(frozen=True)
class Pair:
    re: str
    im: str


def is_complex(t: Any) -> bool:
    return t.dtype is not None and t.dtype.name.startswith("complex")


def pair(ctx: Context, t: Any) -> Pair:
    """The parts of complex tensor `t` (a constant's parts become IR constants)."""
    if t.name in ctx.complex:
        return ctx.complex[t.name]
    if ctx.is_const(t):
        value = np.asarray(ctx.const(t))
        low = Lowering(ctx, t.op)
        found = Pair(low.const("re", value.real.astype(np.float32)), low.const("im", value.imag.astype(np.float32)))
        ctx.complex[t.name] = found
        return found
    raise NotConvertible(f"complex tensor {t.name} has no converted value")


def set_pair(ctx: Context, t: Any, re: str, im: str) -> None:
    ctx.complex[t.name] = Pair(re, im)


def follow(ctx: Context, op: Any) -> bool:
    """Before `op`'s handler: True when `op` was converted here (it moves or combines complex values)."""
    if not any(is_complex(t) for t in list(op.inputs) + list(op.outputs)) or op.type in READERS:
        return False
    if op.type in ("RFFT", "RFFT2D", "RFFT3D", "Complex"):
        return False  # they make a pair from real tensors: their own handlers
    if op.type == "Cast":
        _cast(ctx, op)
    elif op.type in _PARTWISE:
        _partwise(ctx, op)
    elif op.type in ("Mul", "AddV2", "Add", "Sub"):
        _arithmetic(ctx, op)
    else:
        raise NotConvertible(f"{op.type} of a complex tensor: the converted graph holds a complex tensor as its "
                             "real and imaginary parts, which only the FFT ops, ComplexAbs, Real, Imag, Angle, "
                             f"+, -, * and ops that move values ({', '.join(_PARTWISE)}) read")
    return True


def _partwise(ctx: Context, op: Any) -> None:
    """The op's own handler, on the real parts, then on the imaginary parts."""
    handler = TABLE.get(op.type)
    complex_in = [t for t in op.inputs if is_complex(t)]
    parts = {t.name: pair(ctx, t) for t in complex_in}
    saved = {t.name: ctx.vals.get(t.name) for t in complex_in}
    results = []
    try:
        for part in ("re", "im"):
            for t in complex_in:
                ctx.vals[t.name] = Val(getattr(parts[t.name], part))
            handler(ctx, op)
            results.append([ctx.tf_order(t) for t in op.outputs])
    finally:
        for name, v in saved.items():
            if v is None:
                ctx.vals.pop(name, None)
            else:
                ctx.vals[name] = v
    for t, re, im in zip(op.outputs, *results):
        ctx.vals.pop(t.name, None)
        set_pair(ctx, t, re, im)


def _real_or_pair(ctx: Context, low: Lowering, t: Any, i: int) -> Pair:
    if is_complex(t):
        return pair(ctx, t)
    return Pair(ctx.tf_order(t), low.const(f"zero{i}", np.zeros(ctx.shape(t), np.float32)))


def _arithmetic(ctx: Context, op: Any) -> None:
    low = Lowering(ctx, op)
    a, b = (_real_or_pair(ctx, low, t, i) for i, t in enumerate(op.inputs))
    if op.type == "Mul":  # (a + ib)(c + id) = (ac - bd) + i(ad + bc)
        re = low.binary("sub", "re", low.binary("mul", "ac", a.re, b.re), low.binary("mul", "bd", a.im, b.im))
        im = low.binary("add", "im", low.binary("mul", "ad", a.re, b.im), low.binary("mul", "bc", a.im, b.re))
    else:
        ir_op = "sub" if op.type == "Sub" else "add"
        re, im = low.binary(ir_op, "re", a.re, b.re), low.binary(ir_op, "im", a.im, b.im)
    set_pair(ctx, op.outputs[0], re, im)


def _cast(ctx: Context, op: Any) -> None:
    """real -> complex: a zero imaginary part; complex -> complex: the parts; complex -> real: the real part
    (as TF)."""
    x, out = op.inputs[0], op.outputs[0]
    if not is_complex(x):
        if x.dtype.name != "float32":
            raise NotConvertible(f"Cast {x.dtype.name} -> {out.dtype.name}: float32 parts only")
        re = ctx.tf_order(x)
        set_pair(ctx, out, re, Lowering(ctx, op).const("zero", np.zeros(ctx.shape(x), np.float32)))
    elif is_complex(out):
        z = pair(ctx, x)
        set_pair(ctx, out, z.re, z.im)
    elif out.dtype.name == "float32":
        ctx.set(out, pair(ctx, x).re)
    else:
        raise NotConvertible(f"Cast {x.dtype.name} -> {out.dtype.name}: to float32 only")
