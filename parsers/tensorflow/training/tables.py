"""Constant hash tables with numeric keys (tf.lookup.StaticHashTable of a KeyValueTensorInitializer of
constants, its init op in the graph) become their lookup in plain TF ops, value for value.

A table is graph state: HashTable(V2) makes it, one LookupTableImport(V2) / InitializeTable(V2) of two Const
tensors fills it (TF runs that op once, from the table initializers), LookupTableFind(V2) reads it. When the
keys and values are numbers read from Const nodes (read as data: nothing runs), each find becomes
    hits = Equal(ExpandDims(query, -1), keys); of the values and the default after them, the one at ArgMax(hits)
    where Any(hits), else the default
in TF ops the parser converts; the table and its init op are then read by nothing and go with the pruning.
A string key or value, a table filled from a file or by the graph, or two init ops keep the table (refused by
name: parsers/tensorflow/refused_ops.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graphio import split_ref
from ..protos import AttrValue
from ..tensors import dtype_enum, to_proto
from .graph import GraphView, const_value

_TABLES = ("HashTable", "HashTableV2")
_FILLS = ("LookupTableImport", "LookupTableImportV2", "InitializeTable", "InitializeTableV2")
_FINDS = ("LookupTableFind", "LookupTableFindV2")
_PASS_THROUGH = ("Identity",)
_NUMBERS = ("int32", "int64", "float32")


def _table(view: GraphView, ref: str) -> Any:
    node = view.nodes.get(split_ref(ref)[0])
    while node is not None and node.op in _PASS_THROUGH and node.input:
        node = view.nodes.get(split_ref(node.input[0])[0])
    return node if node is not None and node.op in _TABLES else None


def _contents(view: GraphView, table: Any, consumers: dict[str, list[Any]]) -> tuple[np.ndarray, np.ndarray] | None:
    """The table's (keys, values), each key once, when one init op fills it from numeric constants."""
    fills = [n for n in consumers.get(table.name, []) if n.op in _FILLS]
    if len(fills) != 1 or len(fills[0].input) < 3:
        return None
    keys, values = (const_value(view, ref) for ref in fills[0].input[1:3])
    if keys is None or values is None or np.size(keys) == 0 or np.shape(keys) != np.shape(values):
        return None
    keys, values = np.asarray(keys).reshape(-1), np.asarray(values).reshape(-1)
    if keys.dtype.name not in _NUMBERS or values.dtype.name not in _NUMBERS:
        return None
    _, first = np.unique(keys, return_index=True)
    kept = np.sort(first)
    if len(kept) != len(keys) and any(values[keys == k].tolist() != [values[i]] * int((keys == k).sum())
                                      for k, i in zip(keys[kept], kept)):
        return None  # one key, two values: TF's init fails
    return keys[kept], values[kept]


def _lookup(view: GraphView, find: Any, keys: np.ndarray, values: np.ndarray) -> None:
    """`find` becomes Gather(values + [default], ArgMax(hits) where Any(hits), else past the values), keeping
    its name."""
    name, query, default = find.name, find.input[1], find.input[2]
    controls = [r for r in find.input if r.startswith("^")]

    def const(part: str, value: np.ndarray) -> str:
        node = view.add(view.unique(f"{name}/{part}"), "Const", dtype=AttrValue(type=dtype_enum(value.dtype.name)))
        node.attr["value"].CopyFrom(AttrValue(tensor=to_proto(value)))
        return node.name

    def typed(dtype: str) -> AttrValue:
        return AttrValue(type=dtype_enum(dtype))

    last = const("last_axis", np.asarray(-1, np.int32))
    column = view.add(view.unique(f"{name}/column"), "ExpandDims", [query, last], T=typed(keys.dtype.name),
                      Tdim=typed("int32")).name
    hits = view.add(view.unique(f"{name}/hits"), "Equal", [column, const("keys", keys)],
                    T=typed(keys.dtype.name)).name
    found = view.add(view.unique(f"{name}/found"), "Any", [hits, last], Tidx=typed("int32"),
                     keep_dims=AttrValue(b=False)).name
    ones = view.add(view.unique(f"{name}/hit_ones"), "Cast", [hits], SrcT=typed("bool"), DstT=typed("int32")).name
    at = view.add(view.unique(f"{name}/position"), "ArgMax", [ones, last], T=typed("int32"), Tidx=typed("int32"),
                  output_type=typed("int32")).name
    # the default is one more value, after the table's: a select of positions, not of values (onnxruntime's
    # Where drops the sign of a -0.0 value)
    past = const("default_position", np.asarray(len(keys), np.int32))
    at = view.add(view.unique(f"{name}/taken"), "SelectV2", [found, at, past], T=typed("int32")).name
    row = view.add(view.unique(f"{name}/default_row"), "Reshape", [default, const("one", np.asarray([1], np.int32))],
                   T=typed(values.dtype.name), Tshape=typed("int32")).name
    table = view.add(view.unique(f"{name}/with_default"), "ConcatV2", [const("values", values), row, const(
        "axis", np.asarray(0, np.int32))], T=typed(values.dtype.name), Tidx=typed("int32"), N=AttrValue(i=2)).name
    find.op = "GatherV2"
    del find.input[:]
    find.input.extend([table, at, const("gather_axis", np.asarray(0, np.int32)), *controls])
    find.attr.clear()
    for key, dtype in (("Tparams", values.dtype.name), ("Tindices", "int32"), ("Taxis", "int32")):
        find.attr[key].CopyFrom(typed(dtype))
    find.attr["batch_dims"].CopyFrom(AttrValue(i=0))


def apply(view: GraphView, records: list[dict]) -> None:
    consumers = view.consumers()
    for find in [n for n in view.graph_def.node if n.op in _FINDS]:
        table = _table(view, find.input[0]) if find.input else None
        contents = _contents(view, table, consumers) if table is not None else None
        if contents is None:
            continue
        _lookup(view, find, *contents)
        records.append({"pass": "tables", "node": find.name, "keys": int(contents[0].size),
                        "note": f"hash table {table.name}: {contents[0].size} constant keys, its lookup "
                                f"{find.name} computed from them"})
