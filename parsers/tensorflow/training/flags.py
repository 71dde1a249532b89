"""Scalar flags (`is_training`, `keep_prob`, dropout rates...) become constants.

A scalar PlaceholderWithDefault takes its default; `--set NAME=VALUE` overrides it, and is how a
plain scalar Placeholder gets a value. What was chosen is recorded for the CLI and conversion.json.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.errors import UsageError

from ..tensors import numpy_dtype
from .graph import GraphView, const_value, make_const, split_ref


def _is_scalar(node: Any) -> bool:
    shape = node.attr["shape"].shape if "shape" in node.attr else None
    return shape is not None and not shape.unknown_rank and len(shape.dim) == 0


def _parse(name: str, text: str, dtype: np.dtype) -> np.ndarray:
    lowered = text.strip().lower()
    try:
        if dtype == np.bool_:
            if lowered not in ("true", "false", "1", "0"):
                raise ValueError
            return np.asarray(lowered in ("true", "1"))
        return np.asarray(text.strip()).astype(dtype)
    except ValueError:
        raise UsageError(f"--set {name}={text}: not a {np.dtype(dtype).name} value") from None


def _dtype(node: Any) -> np.dtype:
    return numpy_dtype(node.attr["dtype"].type)


_FLAG_TYPES = (1, 2, 3, 9, 10)  # float, double, int32, int64, bool
_BOOL = 10


def _unknown_rank(node: Any) -> bool:
    return "shape" not in node.attr or node.attr["shape"].shape.unknown_rank


def is_flag(node: Any) -> bool:
    """A numeric or bool scalar placeholder: a switch of the graph's mode, not a model input
    (savers' file-name placeholders are strings and stay untouched). A bool placeholder of unknown
    rank is one too: TF 1.x's `tf.placeholder(tf.bool)` (musicnn's is_training) declares no shape."""
    if node.op not in ("Placeholder", "PlaceholderWithDefault") or node.attr["dtype"].type not in _FLAG_TYPES:
        return False
    return _is_scalar(node) or (node.attr["dtype"].type == _BOOL and _unknown_rank(node))


def apply(view: GraphView, settings: dict[str, str], records: list[dict]) -> None:
    known = {name for name, node in view.nodes.items() if node.op in ("Placeholder", "PlaceholderWithDefault")}
    for name in settings:
        if name.split(":")[0] not in known:
            flags = sorted(n for n in known if is_flag(view.nodes[n]))
            hint = f"; the graph's scalar placeholders: {', '.join(flags[:10])}" if flags else ""
            raise UsageError(f"--set {name}: no placeholder of that name in the graph{hint}")
    for name in list(view.nodes):
        node = view.nodes[name]
        if not is_flag(node):
            continue
        if name in settings:
            value, how = _parse(name, settings[name], _dtype(node)), "--set"
        elif node.op == "PlaceholderWithDefault":
            value = const_value(view, node.input[0])
            if value is None:
                continue
            how = "default"
        else:
            continue  # a plain scalar placeholder: refused later only if the outputs need it
        fix(view, name, value, how, records)


def fix(view: GraphView, name: str, value: np.ndarray, how: str, records: list[dict]) -> None:
    """Placeholder `name` becomes a constant `value`; the record says how it was chosen."""
    node = view.nodes[name]
    value = np.asarray(value)
    controls = [r for r in node.input if split_ref(r)[2]]
    make_const(view, name, value.astype(_dtype(node)), controls)
    shown = str(value.item()).lower() if value.dtype == np.bool_ else str(value.item())
    records.append({"pass": "flags", "node": name, "value": value.item(), "how": how,
                    "note": f"flag {name} = {shown} ({how})"})
