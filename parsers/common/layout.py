"""A channels-last source (Keras, TFLite, TF's NHWC) <-> IR (NCHW) axis bookkeeping, and reshapes that keep the
source's element order. Only rank-4 tensors change layout."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

TO_NCHW = (0, 3, 1, 2)  # perm turning an NHWC array into NCHW
TO_NHWC = (0, 2, 3, 1)


def ir_axis(keras_axis: int, rank: int) -> int:
    axis = keras_axis % rank
    return TO_NCHW.index(axis) if rank == 4 else axis


def ir_shape(keras_shape: Sequence[int]) -> tuple[int, ...]:
    shape = tuple(int(d) for d in keras_shape)
    return tuple(shape[p] for p in TO_NCHW) if len(shape) == 4 else shape


def keras_shape(ir_shape_: Sequence[int]) -> tuple[int, ...]:
    shape = tuple(int(d) for d in ir_shape_)
    return tuple(shape[p] for p in TO_NHWC) if len(shape) == 4 else shape


def ir_array(keras_value, rank: int):
    """A constant shaped for broadcasting against a keras tensor of `rank`, in IR layout."""
    import numpy as np

    value = np.asarray(keras_value, dtype=np.float32)
    value = value.reshape((1,) * (rank - value.ndim) + value.shape)
    return value.transpose(TO_NCHW) if rank == 4 else value


def moves_only_unit_dims(shape: Sequence[int], perm: Sequence[int]) -> bool:
    """True when transposing `shape` by `perm` keeps the order of the non-1 dims (a reshape will do)."""
    kept = [p for p in perm if shape[p] != 1]
    return kept == sorted(kept)


class Builder(Protocol):
    """What a parser's per-op helper offers a shared lowering (the Keras parser's Call, the TFLite parser's Op)."""

    def shape(self, tensor: str) -> tuple[int, ...]: ...

    def add(self, op: str, inputs: list[str], shape: Sequence[int], attrs: dict[str, Any] | None = None,
            **kwargs: Any) -> str: ...


def nhwc_reshape(builder: Builder, x: str, target_kshape: tuple[int, ...]) -> str:
    """Reshape x to `target_kshape` (channels-last layout) keeping the source's (NHWC) element order."""
    shape = builder.shape(x)
    if len(shape) == 4 and not moves_only_unit_dims(shape, TO_NHWC):
        nhwc = keras_shape(shape)
        x = builder.add("transpose", [x], nhwc, {"perm": TO_NHWC}, suffix="/nhwc")
    if len(target_kshape) == 4 and not moves_only_unit_dims(target_kshape, TO_NCHW):
        x = builder.add("reshape", [x], target_kshape, {"shape": target_kshape}, suffix="/reshape")
        out = ir_shape(target_kshape)
        return builder.add("transpose", [x], out, {"perm": TO_NCHW})
    out = ir_shape(target_kshape)
    return builder.add("reshape", [x], out, {"shape": out})
