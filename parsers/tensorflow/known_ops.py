"""Which op names TensorFlow itself defines (a node of any other op cannot run in TF).

TEMPORARY SHIM (issue 12): backed by TF's op registry; to be replaced by a vendored list of op names.
"""

from __future__ import annotations


def is_known_op(name: str) -> bool:
    from tensorflow.python.framework import op_def_registry

    return op_def_registry.get(name) is not None
