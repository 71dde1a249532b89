"""Which op names TensorFlow itself defines (a node of any other op cannot run in TF).

TEMPORARY SHIM (issue 12): backed by TF's op registry; to be replaced by a vendored list of op names.
"""

from __future__ import annotations


def is_known_op(name: str) -> bool:
    from tensorflow.python.framework import op_def_registry

    return op_def_registry.get(name) is not None


def output_args(name: str) -> list[tuple[str, str, str]] | None:
    """The output arguments of op `name` as (arg name, number_attr, type_list_attr) — "" where the
    argument is a single tensor — in OpDef order; None for an op TF does not define. A FunctionDef's
    node refers to output `i` of argument `arg` as "node:arg:i"; this is what flattens it."""
    from tensorflow.python.framework import op_def_registry

    op_def = op_def_registry.get(name)
    if op_def is None:
        return None
    return [(a.name, a.number_attr, a.type_list_attr) for a in op_def.output_arg]


def attr_defaults(name: str) -> dict:
    """Op `name`'s attrs that have a default, as AttrValues: what TF fills in for an attr a NodeDef
    leaves out (a FunctionDef's nodes often do); {} for an op TF does not define."""
    from tensorflow.python.framework import op_def_registry

    op_def = op_def_registry.get(name)
    if op_def is None:
        return {}
    return {a.name: a.default_value for a in op_def.attr if a.HasField("default_value")}
