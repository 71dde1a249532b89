"""Which op names TensorFlow itself defines (a node of any other op cannot run in TF), their output
arguments (tf_ops.txt) and their attr defaults (tf_op_defaults.txt): TF's op registry written out by
scripts/vendor_tf_ops.py."""

from __future__ import annotations

import base64
from functools import lru_cache
from pathlib import Path
from typing import Any

TABLE_PATH = Path(__file__).with_name("tf_ops.txt")
DEFAULTS_PATH = Path(__file__).with_name("tf_op_defaults.txt")


@lru_cache(maxsize=1)
def _table() -> dict[str, tuple[tuple[str, str, str], ...]]:
    """Op name -> its output arguments as (name, number_attr, type_list_attr)."""
    table = {}
    for line in TABLE_PATH.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        name, *args = line.split()
        table[name] = tuple(_arg(a) for a in args)
    return table


def _arg(text: str) -> tuple[str, str, str]:
    if "*" in text:
        name, number_attr = text.split("*")
        return name, number_attr, ""
    if "+" in text:
        name, type_list_attr = text.split("+")
        return name, "", type_list_attr
    return text, "", ""


def is_known_op(name: str) -> bool:
    return name in _table()


def output_args(name: str) -> list[tuple[str, str, str]] | None:
    """The output arguments of op `name` as (arg name, number_attr, type_list_attr) — "" where the
    argument is a single tensor — in OpDef order; None for an op TF does not define. A FunctionDef's
    node refers to output `i` of argument `arg` as "node:arg:i"; this is what flattens it."""
    args = _table().get(name)
    return None if args is None else list(args)


def attr_defaults(name: str) -> dict[str, Any]:
    """Op `name`'s attr defaults as AttrValue messages ({} for an op without any): what TF's import
    fills in for an attr a NodeDef (e.g. a FunctionDef's node) leaves out."""
    encoded = _defaults_table().get(name)
    if not encoded:
        return {}
    from .protos import AttrValue

    return {attr: AttrValue.FromString(base64.b64decode(b64)) for attr, b64 in encoded.items()}


@lru_cache(maxsize=1)
def _defaults_table() -> dict[str, dict[str, str]]:
    """Op name -> attr -> base64 of its serialized default AttrValue, from tf_op_defaults.txt."""
    table = {}
    for line in DEFAULTS_PATH.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        name, *pairs = line.split()
        table[name] = dict(pair.split("=", 1) for pair in pairs)
    return table
