"""Variables become constants read straight from the checkpoint files (parsers/tensorflow/bundle reads
them; none of the graph's own restore/save ops ever runs). `--use-ema` takes each variable's
ExponentialMovingAverage shadow when the checkpoint has one."""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.errors import InputError, Unsupported, UnsupportedError, UsageError

from ..loops import input_dependent, loop_hint
from ..protos import AttrValue, DataType
from ..safety import LOOP_OPS
from .graph import GraphView, make_const
from .loop_variables import read_before_loops

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

    names = [n for n, node in view.nodes.items() if node.op in VARIABLES]
    if not names:
        if use_ema:
            raise UsageError("--use-ema: the graph the outputs need holds no variables")
        return
    if reader is None:
        raise InputError(f"the graph holds variables without values (e.g. '{names[0]}'), so it is not "
                         "frozen; pass the checkpoint prefix (model.ckpt) or the SavedModel instead")
    stored = reader.get_variable_to_shape_map()
    stored_dtypes = reader.get_variable_to_dtype_map() if hasattr(reader, "get_variable_to_dtype_map") else {}
    resource_variables = {n for n in names if view.nodes[n].op == "VarHandleOp"}
    read_before_loops(view, resource_variables)  # a loop's read-only kernels: their values ride the loop
    handles = _resource_uses(view, resource_variables)
    shadows = 0
    for name in names:
        key = _key(view.nodes[name])
        if use_ema and key + EMA_SUFFIX in stored:
            key, shadows = key + EMA_SUFFIX, shadows + 1
        if key not in stored:
            raise InputError(f"{prefix}: the checkpoint has no value for variable '{key}' that the "
                             "outputs need; the .index/.data-* files may be from another graph")
        _check_declared(view.nodes[name], key, stored[key], stored_dtypes.get(key), prefix)
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
    for node in list(view.graph_def.node):  # reads of resource variables are now reads of constants
        if node.op == "ReadVariableOp":
            node.op = "Identity"
            node.attr["T"].CopyFrom(AttrValue(type=node.attr["dtype"].type))
            del node.attr["dtype"]
        elif node.op in ("Identity", "Enter") and node.name in handles:  # a handle passed on: now its value
            node.attr["T"].type = view.nodes[handles[node.name]].attr["dtype"].type
        elif node.op == "ResourceGather" and node.input[0].split(":")[0] in handles:
            _gather_of_constant(view, node)
    record = {"pass": "variables", "count": len(names), "ema": shadows if use_ema else None}
    if use_ema:
        record["note"] = f"--use-ema: {shadows} of {len(names)} variables taken from their ExponentialMovingAverage"
    records.append(record)


def _check_declared(node: Any, key: str, shape: list[int], stored_dtype: int | None, prefix: str) -> None:
    """The stored tensor has the shape and dtype the graph declares for its variable (TensorFlow refuses to
    restore it otherwise: read by name as it is, it would convert, and verify, a model that cannot run)."""
    declared = node.attr["shape"].shape if "shape" in node.attr else None
    if declared is not None and not declared.unknown_rank:
        dims = [d.size for d in declared.dim]
        if len(dims) != len(shape) or any(d >= 0 and d != s for d, s in zip(dims, shape)):
            raise InputError(f"{prefix}: variable '{key}' holds a tensor of shape {tuple(shape)} but the graph "
                             f"declares {tuple(dims)} (TensorFlow refuses to restore it); the .index/.data-* "
                             "files are from another model or were changed")
    if "dtype" in node.attr and stored_dtype is not None and node.attr["dtype"].type != stored_dtype:
        raise InputError(f"{prefix}: variable '{key}' holds {_dtype_name(stored_dtype)} values but the graph "
                         f"declares {_dtype_name(node.attr['dtype'].type)} (TensorFlow refuses to restore it); "
                         "the .index/.data-* files are from another model or were changed")


def _dtype_name(code: int) -> str:

    try:
        return DataType.Name(code).removeprefix("DT_").lower()
    except ValueError:
        return f"dtype {code}"


def _resource_uses(view: GraphView, variables: set[str]) -> dict[str, str]:
    """Resource variables are frozen by turning their reads (ReadVariableOp, ResourceGather, through
    Identity nodes passing the handle on) into uses of a constant. Returns handle-carrying node ->
    variable; any other use of a handle (a v2 cond or loop carrying it) is unsupported (exit 3, all listed)."""
    handles = {v: v for v in variables}
    problems = []
    library = {f.signature.name: f for f in view.graph_def.library.function}
    data: set[str] | None = None  # input-dependent nodes, found on the first loop
    for name in view.order():
        node = view.nodes[name]
        used = next((i for i in node.input if not i.startswith("^") and i.split(":")[0] in handles), None)
        if used is None or node.op in ("ReadVariableOp", "ResourceGather"):
            continue
        if node.op in ("Identity", "Enter"):  # passed on (into a TF1 loop frame: read there)
            handles[name] = handles[used.split(":")[0]]
            continue
        if node.op in LOOP_OPS:
            data = input_dependent(view.nodes) if data is None else data
            inputs = [i for i in node.input if not i.startswith("^")]
            hint = loop_hint(node, inputs, library, lambda tensor, data=data: tensor.split(":")[0] in data)
            problems.append(Unsupported(node.op, node.name, hint))
            continue
        problems.append(Unsupported(node.op, node.name, f"takes resource variable "
                                    f"'{_key(view.nodes[handles[used.split(':')[0]]])}' "
                                    "itself (a data-dependent cond or loop?); only reads of variables convert"))
    if problems:
        raise UnsupportedError(problems)
    return handles


def _gather_of_constant(view: GraphView, node: Any) -> None:
    """ResourceGather(handle, indices) -> GatherV2(value, indices, axis 0), as TF's own freezing does."""

    axis = make_const(view, f"{node.name}/axis", np.int32(0))
    dtype, batch_dims = node.attr["dtype"].type, node.attr["batch_dims"].i if "batch_dims" in node.attr else 0
    indices = node.attr["Tindices"].type
    node.op = "GatherV2"
    node.input.insert(2, axis.name)
    node.attr.clear()
    node.attr["Tparams"].CopyFrom(AttrValue(type=dtype))
    node.attr["Tindices"].CopyFrom(AttrValue(type=indices))
    node.attr["Taxis"].CopyFrom(AttrValue(type=axis.attr["dtype"].type))
    node.attr["batch_dims"].CopyFrom(AttrValue(i=batch_dims))
