"""Which op names TensorFlow itself defines (a node of any other op cannot run in TF), their output
arguments (tf_ops.txt) and their attrs with defaults (tf_op_attrs.txt): TF's op registry written out by
scripts/vendor_tf_ops.py."""

from __future__ import annotations

import base64
from functools import lru_cache
from pathlib import Path
from typing import Any

from .protos import AttrValue

TABLE_PATH = Path(__file__).with_name("tf_ops.txt")
ATTRS_PATH = Path(__file__).with_name("tf_op_attrs.txt")


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


def attr_names(name: str) -> set[str]:
    """The attrs op `name` defines (empty for an unknown op)."""
    return set(_attrs_table().get(name, {}))


def attr_defaults(name: str) -> dict[str, Any]:
    """Op `name`'s attr defaults as AttrValue messages ({} for an op without any): what TF's import
    fills in for an attr a NodeDef (e.g. a FunctionDef's node) leaves out."""
    encoded = {attr: b64 for attr, b64 in _attrs_table().get(name, {}).items() if b64 is not None}
    if not encoded:
        return {}

    return {attr: AttrValue.FromString(base64.b64decode(b64)) for attr, b64 in encoded.items()}


@lru_cache(maxsize=1)
def _attrs_table() -> dict[str, dict[str, str | None]]:
    """Op name -> attr -> base64 of its serialized default AttrValue (None: required), from tf_op_attrs.txt."""
    table = {}
    for line in ATTRS_PATH.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        name, *attrs = line.split()
        table[name] = dict((a.split("=", 1) if "=" in a else (a, None)) for a in attrs)
    return table
