"""What a static TF graph's tensors carry without TensorFlow: their dtype (TF's DataType enum) and their
static shape, and the error for shapes that do not fit together."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..protos import TensorShapeProto
from ..tensors import dtype_name, numpy_dtype


class ShapeError(ValueError):
    """The graph's shapes do not fit together (TF's import would refuse it)."""


class DType(int):
    """TF's DataType enum, with tf.DType's `.name` (an int, so == and != work as TF's do)."""

    @property
    def name(self) -> str:
        return dtype_name(int(self))

    @property
    def as_numpy_dtype(self) -> type:
        return numpy_dtype(int(self)).type

    @property
    def as_datatype_enum(self) -> int:
        return int(self)

    def __repr__(self) -> str:
        return f"DType({self.name})"


class TensorShape:
    """A static shape: dims (None where unknown), or unknown rank (dims None)."""

    def __init__(self, dims: Iterable[int | None] | None):
        self.dims = None if dims is None else [None if d is None or d < 0 else int(d) for d in dims]

    @classmethod
    def from_proto(cls, proto: Any) -> TensorShape:
        return cls(None if proto.unknown_rank else [d.size for d in proto.dim])

    @property
    def rank(self) -> int | None:
        return None if self.dims is None else len(self.dims)

    def as_list(self) -> list[int | None]:
        if self.dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape")
        return list(self.dims)

    def is_fully_defined(self) -> bool:
        return self.dims is not None and all(d is not None for d in self.dims)

    def as_proto(self) -> Any:

        proto = TensorShapeProto()
        if self.dims is None:
            proto.unknown_rank = True
        for d in self.dims or []:
            proto.dim.add(size=-1 if d is None else d)
        return proto

    def __len__(self) -> int:
        return len(self.as_list())

    def __iter__(self):
        return iter(self.as_list())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorShape) and self.dims == other.dims

    def __repr__(self) -> str:
        return f"TensorShape({self.dims})"
