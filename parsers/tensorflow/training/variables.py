"""Variables become constants read straight from the checkpoint files (parsers/tensorflow/bundle reads
them; none of the graph's own restore/save ops ever runs). `--use-ema` takes each variable's
ExponentialMovingAverage shadow when the checkpoint has one."""

from __future__ import annotations

from typing import Any

import numpy as np

from convert.errors import InputError, UsageError

from .graph import GraphView, make_const

VARIABLES = ("VariableV2", "Variable", "VarHandleOp")
EMA_SUFFIX = "/ExponentialMovingAverage"


def _key(node: Any) -> str:
    shared = node.attr["shared_name"].s.decode() if "shared_name" in node.attr else ""
    return shared or node.name


def freeze(view: GraphView, reader: Any, prefix: str, use_ema: bool, records: list[dict],
           weights: dict[str, Any] | None = None) -> None:
    """Each variable becomes a Const. With `weights` (a dict to fill), the Const holds dtype and shape
    only and its value, a lazy array read from the checkpoint when it is used, goes into
    weights[node name]; without it, the value is read now and copied into the Const."""
    from ..protos import AttrValue

    names = [n for n, node in view.nodes.items() if node.op in VARIABLES]
    if not names:
        if use_ema:
            raise UsageError("--use-ema: the graph the outputs need holds no variables")
        return
    if reader is None:
        raise InputError(f"the graph holds variables without values (e.g. '{names[0]}'), so it is not "
                         "frozen; pass the checkpoint prefix (model.ckpt) or the SavedModel instead")
    stored = reader.get_variable_to_shape_map()
    shadows = 0
    for name in names:
        key = _key(view.nodes[name])
        if use_ema and key + EMA_SUFFIX in stored:
            key, shadows = key + EMA_SUFFIX, shadows + 1
        if key not in stored:
            raise InputError(f"{prefix}: the checkpoint has no value for variable '{key}' that the "
                             "outputs need; the .index/.data-* files may be from another graph")
        try:
            lazy = weights is not None and hasattr(reader, "lazy")
            value = reader.lazy(key) if lazy else np.asarray(reader.get_tensor(key))
        except InputError as e:  # the bundle reader's one-line message names the file and the fault
            raise InputError(f"cannot restore the weights: {e}") from None
        except Exception as e:  # noqa: BLE001 - a truncated or corrupt data shard
            line = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
            raise InputError(f"{prefix}: cannot restore the weights (variable '{key}': {line}); the "
                             ".index/.data-* files may be corrupt or from another graph") from None
        make_const(view, name, value)
        if lazy:
            weights[name] = value
    if use_ema and not shadows:
        raise UsageError(f"--use-ema: {prefix} holds no ExponentialMovingAverage shadow variables")
    for node in view.graph_def.node:  # reads of resource variables are now reads of constants
        if node.op == "ReadVariableOp":
            node.op = "Identity"
            node.attr["T"].CopyFrom(AttrValue(type=node.attr["dtype"].type))
            del node.attr["dtype"]
    record = {"pass": "variables", "count": len(names), "ema": shadows if use_ema else None}
    if use_ema:
        record["note"] = f"--use-ema: {shadows} of {len(names)} variables taken from their ExponentialMovingAverage"
    records.append(record)
