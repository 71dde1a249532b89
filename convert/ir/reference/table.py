"""The reference table: IR op -> its numpy meaning, `@reference_op("add")`, and the error it raises."""

from __future__ import annotations

from typing import Callable

import numpy as np

from tf_convert.convert.registry import OpTable

OpFunction = Callable[..., np.ndarray]  # fn(node, *inputs) -> output

REFERENCE = OpTable("IR reference")  # IR op -> fn(node, *inputs) -> output


class EvaluationError(ValueError):
    """The graph cannot be evaluated as declared (missing feed, op without a function, wrong shape)."""


# @reference_op("add", ...): `fn(node, *inputs) -> ndarray` is the meaning of the op(s)
reference_op = REFERENCE.register
