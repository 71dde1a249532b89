"""Parameters the module uses only through a constant selection of their entries: Swin's relative position bias
table, gathered at a constant index, reshaped and permuted, then added to the attention scores. TF's graph adds
the folded result (a constant); the module's parameter is recovered from it by replaying the module's own
selection on the entries' indices (record.py keeps the calls that computed the tensor from parameters and
buffers), after checking that the replay is a pure selection (it moves entries, it computes nothing)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import record
from .mismatch import ArchitectureMismatch


def source(traced, tensor, owners: dict[int, tuple[str, Any]]) -> tuple[str, Any] | None:
    """(state_dict key, parameter) of the one float parameter `tensor` was computed from (through calls the
    record kept), or None (not computed from exactly one parameter)."""
    import torch

    found: dict[int, Any] = {}
    seen: set[int] = set()

    def visit(v) -> None:
        if isinstance(v, torch.Tensor):
            if id(v) in seen:
                return
            seen.add(id(v))
            if isinstance(v, torch.nn.Parameter) and id(v) in owners:
                found[id(v)] = v
            elif id(v) in traced.derived:
                _, args, kwargs = traced.derived[id(v)]
                visit(args)
                visit(kwargs)
        elif isinstance(v, (list, tuple)):
            for x in v:
                visit(x)
        elif isinstance(v, dict):
            for x in v.values():
                visit(x)

    if id(tensor) not in traced.derived:
        return None
    visit(tensor)
    if len(found) != 1:
        return None
    param = next(iter(found.values()))
    if not param.dtype.is_floating_point:
        return None
    path, m = owners[id(param)]
    name = next(k for k, p in m.named_parameters(recurse=False) if p is param)
    return (f"{path}.{name}" if path else name), param


def without_constant_terms(traced, tensor, owners: dict[int, tuple[str, Any]]):
    """The term of `tensor` that comes from a parameter, where `tensor` adds to it terms computed from no parameter
    (Swin's shifted windows: the relative position bias plus the shift's mask, built from `arange`): TF adds the
    mask apart, a constant read through like any other mask."""
    import torch

    while id(tensor) in traced.derived:
        func, args, kwargs = traced.derived[id(tensor)]
        name = record.canonical(func)
        terms = [a for a in args if isinstance(a, torch.Tensor)]
        if name not in ("add", "__add__", "__radd__") or len(terms) != 2 or kwargs:
            break
        sources = [source(traced, t, owners) is not None or isinstance(t, torch.nn.Parameter) for t in terms]
        if sources.count(True) != 1 or any(_has_parameter(traced, t) for t, s in zip(terms, sources) if not s):
            break
        tensor = terms[sources.index(True)]
    return tensor


def _has_parameter(traced, tensor) -> bool:
    """Whether any parameter went into `tensor` (through the calls the record kept)."""
    import torch

    stack, seen = [tensor], set()
    while stack:
        v = stack.pop()
        if isinstance(v, torch.nn.Parameter):
            return True
        if isinstance(v, torch.Tensor):
            if id(v) in seen:
                continue
            seen.add(id(v))
            if id(v) in traced.derived:
                _, args, kwargs = traced.derived[id(v)]
                stack.extend([args, kwargs])
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return False


def replay(traced, tensor, substitutes: dict[int, Any]):
    """`tensor` computed again by the calls the record kept, with the tensors in `substitutes` (by id) replaced."""
    import torch

    def again(v):
        if isinstance(v, torch.Tensor):
            if id(v) in substitutes:
                return substitutes[id(v)]
            if id(v) in traced.derived:
                func, args, kwargs = traced.derived[id(v)]
                return func(*again(args), **again(kwargs))
            return v
        if isinstance(v, (list, tuple)):
            mapped = [again(x) for x in v]
            return type(v)(mapped) if isinstance(v, tuple) and not hasattr(v, "_fields") else mapped
        if isinstance(v, dict):
            return {k: again(x) for k, x in v.items()}
        return v

    with torch.no_grad():
        return again(tensor)


def parameter_value(traced, real_model, tensor, param, key: str, value: np.ndarray, tf_name: str) -> np.ndarray:
    """The parameter whose selection `tensor` (the module's) equals TF's constant `value`: entries TF never reads
    are zeros. `real_model`: a module built for real (its index buffers computed, where the record's module may
    hold uninitialized memory). ArchitectureMismatch where the module computes from the parameter (not a pure
    selection) or picks entries TF gives different values."""
    import torch

    buffers = dict(real_model.named_buffers())
    substitutes = {id(b): buffers[name] for name, b in traced.model.named_buffers() if name in buffers}
    size = param.numel()
    if size >= 2 ** 52:
        raise ArchitectureMismatch(f"module parameter '{key}': too large to follow its entries")
    index = torch.arange(size, dtype=torch.float64).reshape(param.shape)

    def selection(x):
        return np.asarray(replay(traced, tensor, {**substitutes, id(param): x}).detach().to(torch.float64).numpy())

    picked = selection(index)
    pure = (np.array_equal(selection(index + size), picked + size)
            and np.array_equal(selection(index * 2), picked * 2)
            and np.all(picked == np.round(picked)) and picked.min(initial=0) >= 0 and picked.max(initial=0) < size)
    want = np.asarray(value, np.float32)
    if not pure or want.size != picked.size:
        why = "computes from its entries" if not pure else f"gives {picked.shape} where TF adds {want.shape}"
        raise ArchitectureMismatch(f"module parameter '{key}' is used through a computation TF's constant "
                                   f"'{tf_name}' cannot be traced back through ({why})")
    flat = picked.reshape(-1).astype(np.int64)
    result = np.zeros(size, np.float32)
    result[flat] = want.reshape(-1)
    if not np.array_equal(result[flat], want.reshape(-1)):
        raise ArchitectureMismatch(f"module parameter '{key}': the module reads one entry in places where TF's "
                                   f"constant '{tf_name}' holds different values")
    return result.reshape(tuple(param.shape))
