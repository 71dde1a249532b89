"""The two ways a module can fail to take TF's weights: its layers cannot hold them (exit 3), or they fit and
the module computes something else (exit 4)."""

from __future__ import annotations

from tf_convert.convert.errors import ConvertError, VerifyError


class ArchitectureMismatch(ConvertError):
    """The module's layers cannot hold the TF graph's weights (exit 3, like an unsupported graph)."""

    exit_code = 3


class SemanticsMismatch(VerifyError):
    """The weights fit but the module computes something else (padding, epsilon, ...): exit 4."""
