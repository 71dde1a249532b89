"""--into --verify --layers: each paired module's output against the TF tensor that holds the same value,
named by module path, in the module's order. The first row beyond rtol is where the module diverges."""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert import parsers

from .. import verify
from . import record
from .layers import Layer


def rows(model, source, graph, pairs: list[tuple[Layer, Layer]], inputs: list[np.ndarray],
         rtol: float, keywords: list[str] | None = None) -> list[dict[str, Any]]:
    """[{module, tf, max_rel, passed}] for every paired module whose TF tensor the source exposes."""
    import torch



    known = graph.metadata.get("source_tensors") or {}
    wanted = {t.id: known[i.node.output] for t, i in pairs
              if i.node is not None and t.node is not None and i.node.output in known}
    captured: dict[str, np.ndarray] = {}
    hooks = []
    for path in wanted:
        module = model.get_submodule(path)  # after pads.apply(): the module that runs now
        hooks.append(module.register_forward_hook(
            # cloned: an inplace ReLU after it would change the captured output
            lambda _m, _a, out, key=path: captured.__setitem__(key, out.detach().clone().numpy())))
    try:
        with torch.no_grad():
            record.call(model, [torch.from_numpy(x) for x in inputs], keywords)
    finally:
        for hook in hooks:
            hook.remove()
    values = parsers.run_reference_tensors(source, graph, inputs, [w["tensor"] for w in wanted.values()])
    result = []
    for path, where in wanted.items():
        if where["tensor"] not in values or path not in captured:
            continue
        expected = values[where["tensor"]]
        expected = np.transpose(expected, where["perm"]) if where.get("perm") is not None else expected
        row = {"module": path, "tf": where["tensor"]}
        got = captured[path]
        if got.shape != expected.shape and got.size == expected.size and got.shape[-1:] == expected.shape[-1:]:
            captured[path] = got.reshape(expected.shape)  # TF's dense layers run on (batch*tokens, features)
        if tuple(expected.shape) != tuple(captured[path].shape):
            row.update(max_rel=None, passed=False, why=f"shape {captured[path].shape} vs TF {expected.shape}")
        else:
            row["max_rel"] = verify.metrics(captured[path], expected)["max_rel"]
            row["passed"] = row["max_rel"] <= rtol
        result.append(row)
    return result
