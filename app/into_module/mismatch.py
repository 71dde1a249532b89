"""The two ways a module can fail to be the TF graph: its layers cannot hold the weights, or they hold them
and compute something else."""

from __future__ import annotations

from tf_convert.convert.errors import ConvertError, VerifyError


class ArchitectureMismatch(ConvertError):
    """The module's layers cannot hold the TF graph's weights (exit 3, like an unsupported graph)."""

    exit_code = 3


class SemanticsMismatch(VerifyError):
    """The weights fit but the module computes something else (padding, epsilon, ...): exit 4."""
