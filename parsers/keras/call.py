"""What a layer handler receives: one call of one Keras layer, and helpers to add IR nodes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.errors import Unsupported, UnsupportedError

from ..common import layout


@dataclass(frozen=True)
class TensorRef:
    """Stands for an IR tensor inside a call's (otherwise constant) args."""

    name: str


@dataclass
class Call:
    graph: ir.Graph
    name: str  # IR base name for this call (unique in the graph)
    layer: str  # Keras layer name
    class_name: str
    config: dict[str, Any]
    inputs: list[str]  # IR tensors, in the order the layer received them
    args: list[Any] = field(default_factory=list)  # raw args, tensors as TensorRef
    kwargs: dict[str, Any] = field(default_factory=dict)
    weights: list[np.ndarray] = field(default_factory=list)
    weight_names: list[str] = field(default_factory=list)  # as the file names them ('' when it does not)
    masks: list[str | None] = field(default_factory=list)  # each input's Keras step mask (keras.masks)
    legacy: bool = False  # written by Keras 1/2 (tf_keras), whose hard_sigmoid is clip(0.2 x + 0.5, 0, 1)

    # ---- queries ---------------------------------------------------------------------------
    @property
    def x(self) -> str:
        return self.inputs[0]

    def shape(self, tensor: str | None = None) -> tuple[int, ...]:
        return self.graph.shape(tensor or self.x)

    def kshape(self, tensor: str | None = None) -> tuple[int, ...]:
        """The tensor's shape as Keras sees it (NHWC for rank 4)."""
        return layout.keras_shape(self.shape(tensor))

    def cfg(self, key: str, default: Any = None) -> Any:
        value = self.config.get(key, default)
        return default if value is None else value

    def unsupported(self, hint: str) -> UnsupportedError:
        return UnsupportedError([Unsupported(self.class_name, self.layer, hint)])

    def require_channels_last(self) -> None:
        if self.cfg("data_format", "channels_last") != "channels_last":
            raise self.unsupported("data_format='channels_first' is not supported")

    # ---- building --------------------------------------------------------------------------
    def add(
        self,
        op: str,
        inputs: Sequence[str],
        shape: Sequence[int],
        attrs: dict[str, Any] | None = None,
        params: dict[str, np.ndarray] | None = None,
        suffix: str = "",
        out_dtype: str | None = None,
    ) -> str:
        name = self.graph.unique_name(self.name + suffix)
        return self.graph.add_node(
            op, name, list(inputs), shape, attrs, params, source_op=self.class_name, out_dtype=out_dtype
        )

    def const(self, value: np.ndarray, suffix: str) -> str:
        value = np.asarray(value, dtype=np.float32)
        return self.add("const", [], value.shape, params={"value": value}, suffix=suffix)
