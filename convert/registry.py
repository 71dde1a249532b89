"""Op tables: one handler per op, registered by decorator (cf. tf2onnx's @tf_op). Every name -> function
table of the project is an OpTable (subclassed where a table carries more, as emitters.base.HandlerTable)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)


class OpTable:
    """Maps an op name to its handler. Parsers key it by source op, emitters by IR op."""

    def __init__(self, name: str):
        self.name = name
        self._handlers: dict[str, Callable] = {}

    def register(self, *ops: str) -> Callable[[F], F]:
        def decorate(fn: F) -> F:
            for op in ops:
                if op in self._handlers:
                    raise ValueError(f"{self.name}: two handlers for {op!r}")
                self._handlers[op] = fn
            return fn

        return decorate

    def get(self, op: str) -> Callable | None:
        return self._handlers.get(op)

    def __contains__(self, op: str) -> bool:
        return op in self._handlers

    def ops(self) -> Iterable[str]:
        return sorted(self._handlers)

    def __iter__(self) -> Iterator[str]:
        return iter(self.ops())

    def __len__(self) -> int:
        return len(self._handlers)


def import_family_modules(package: ModuleType | str, families: Iterable[str]) -> list[ModuleType]:
    """Import the handler modules of `package` (the module itself, or its name: a package's __init__ passes
    its own name while it loads): each module named after a family (`spatial`) or a part of one
    (`spatial_3d`). Importing them fills the package's table; a new family file needs no list of its own."""
    name = package if isinstance(package, str) else package.__name__
    path = importlib.import_module(name).__path__
    wanted = set(families)
    found = sorted(m.name for m in pkgutil.iter_modules(path) if m.name.split("_")[0] in wanted)
    return [importlib.import_module(f"{name}.{module}") for module in found]
