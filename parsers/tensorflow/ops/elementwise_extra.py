"""Issue 22 part A, elementwise extras: the identity-likes TF graphs carry (copies and checks that pass their
input through at inference)."""

from __future__ import annotations

from typing import Any

from ..context import Context
from ..table import tf_op
from .elementwise import pass_through


@tf_op("CheckNumericsV2", "DeepCopy", "Copy", "CopyHost")
def identity_like(ctx: Context, op: Any) -> None:
    """Their output is their (first) input: CheckNumericsV2 only raises on nan/inf, the copies copy."""
    pass_through(ctx, op)
