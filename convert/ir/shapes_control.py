"""Shape rules of the control ops (`while_loop`, `cond`): a nested graph's output, picked by `output`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Shape = tuple[int, ...]


def loop_output(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """A loop variable keeps its shape: output k has the shape of input k (its first value)."""
    return tuple(inputs[int(attrs["output"])])


def branch_output(inputs: Sequence[Shape], attrs: Mapping[str, Any], params: Mapping[str, Shape]) -> Shape:
    """Both branches return the same shapes: output k is then_branch's output k."""
    branch = attrs["then_branch"]
    return tuple(branch.shape(branch.outputs[int(attrs["output"])]))
