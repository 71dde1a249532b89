"""`--into-kwargs`: the arguments NAME(...) is called with, a small JSON object, read and checked before
anything runs. Anything else (not JSON, not an object, nested deeper or holding more than a constructor's
arguments ever do, a number too large for Python's int) is bad input: exit 2, one line."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tf_convert.convert.errors import UsageError

MAX_CHARS = 64 << 10  # of the JSON text
MAX_DEPTH = 6  # objects and lists inside the top object: {"sizes": [[1, 2], [3, 4]]} is depth 2
MAX_VALUES = 10_000  # values in all, nested ones included
EXAMPLE = "e.g. --into-kwargs '{\"num_classes\": 10}'"


def parse(text: str) -> dict[str, Any]:
    """The JSON text of --into-kwargs as a checked dict."""
    if len(text) > MAX_CHARS:
        raise UsageError(f"--into-kwargs is {len(text)} characters long: a module's arguments fit in "
                         f"{MAX_CHARS}; {EXAMPLE}")
    try:
        value = json.loads(text)
    except RecursionError:
        raise UsageError(f"--into-kwargs nests deeper than a module's arguments do; {EXAMPLE}") from None
    except ValueError as exc:
        raise UsageError(f"--into-kwargs {text[:80]!r} is not JSON ({str(exc)[:120]}); {EXAMPLE}") from None
    return check(value)


def check(value: Any) -> dict[str, Any]:
    """`value` as NAME(**value) takes it: a mapping with string keys, at most MAX_DEPTH levels of mappings
    and lists and MAX_VALUES values in all; else UsageError."""
    if not isinstance(value, Mapping):
        raise UsageError(f"--into-kwargs must be a JSON object, {EXAMPLE}")
    count = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:  # iterative: a nesting deep enough to overflow a recursive walk is refused, not crashed on
        item, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise UsageError(f"--into-kwargs holds more than {MAX_VALUES} values: pass a module's arguments only; "
                             f"{EXAMPLE}")
        if isinstance(item, Mapping):
            children = list(item.values())
            if any(not isinstance(k, str) for k in item):
                raise UsageError(f"--into-kwargs: every key must be a string; {EXAMPLE}")
        elif isinstance(item, (list, tuple)):
            children = list(item)
        else:  # a number, a string; through the API any Python object (a norm layer's class)
            continue
        if children and depth >= MAX_DEPTH:
            raise UsageError(f"--into-kwargs nests more than {MAX_DEPTH} levels deep: a module's arguments do "
                             f"not; {EXAMPLE}")
        stack.extend((child, depth + 1) for child in children)
    return dict(value)
