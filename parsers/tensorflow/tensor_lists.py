"""TensorLists as compile-time lists of tensors: no runtime op.

Once its loop is unrolled (unroll.py), every TensorList a TF2 RNN uses has a size and indices known
while converting: `TensorListFromTensor(x)` is the slices of x (one Unpack), `SetItem` at a constant
index replaces one element, `GetItem` is that element (an Identity), `Stack` packs the elements
(one Pack), `Length`/`ElementShape` are constants. This pass walks the unrolled GraphDef in order,
keeps a Python list of element tensors per list-valued tensor, and writes each list op as those
plain nodes (same name where the op has a tensor output, so its consumers need no rewiring). A list
op whose index or size is not known while converting, or any other op taking a list, is refused by
name (exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tf_convert.convert.errors import Unsupported, UnsupportedError

from .graphio import split_ref
from .protos import GraphDef
from .tensors import const_node, numpy_dtype
from .tfgraph import Graph

_LIST_MAKERS = frozenset({"TensorListFromTensor", "TensorListReserve", "EmptyTensorList", "TensorListSetItem",
                          "TensorListPushBack", "TensorArrayScatterV3", "TensorArrayWriteV3"})  # output: a list
_PASS_THROUGH = frozenset({"Identity", "StopGradient", "Snapshot"})
# TF1 TensorArrays (a dynamic_rnn frame): a list per version of the array's flow tensor; the handle
# only names the array (its ops are lowered, so nothing else may read it)
_ARRAY_OPS = frozenset({"TensorArrayV3", "TensorArrayScatterV3", "TensorArrayReadV3", "TensorArrayWriteV3",
                        "TensorArrayGatherV3", "TensorArraySizeV3", "TensorArrayCloseV3"})
_LIST_OPS = _ARRAY_OPS | frozenset({
    "TensorListFromTensor", "TensorListReserve", "EmptyTensorList", "TensorListGetItem", "TensorListSetItem",
    "TensorListStack", "TensorListGather", "TensorListLength", "TensorListElementShape", "TensorListPushBack",
})


@dataclass
class _List:
    elements: list[str | None]  # GraphDef tensor refs; None where nothing was set
    dtype: int
    shape: list[int] | None  # the element shape where known (-1 for an unknown size)


class _Refused(Exception):
    pass


def _node(name: str, op: str, inputs: list[str] = (), **attrs: Any) -> Any:

    node = GraphDef().node.add(name=name, op=op)
    node.input.extend(inputs)
    for key, value in attrs.items():
        if isinstance(value, list):
            node.attr[key].list.i.extend(value) if key != "T" else node.attr[key].list.type.extend(value)
        elif key in ("T", "dtype"):
            node.attr[key].type = value
        else:
            node.attr[key].i = value
    return node


def _known(graph: Graph, tensor: Any, what: str) -> np.ndarray:
    value = graph.evaluator.value(tensor)
    if value is None:
        raise _Refused(f"its {what} is not known while converting (it depends on the data); only lists of a "
                       "fixed size read at constant positions convert")
    return np.asarray(value)


def _shape_of(value: np.ndarray | None) -> list[int] | None:
    if value is None or value.ndim != 1:
        return None  # unknown rank (-1 scalar)
    return [int(d) for d in value]


class _Lowering:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.lists: dict[str, _List] = {}
        self.handles: set[str] = set()  # TensorArray handles: read by the lowered ops only
        self.out: list[Any] = []

    def list_of(self, op: Any, k: int) -> _List:
        tensor = op.inputs[k]
        if tensor.name not in self.lists:
            raise _Refused(f"its list input '{tensor.name}' is not a list built by the ops this converter lowers")
        return self.lists[tensor.name]

    def element(self, lst: _List, index: int, op: Any, shape_hint: list[int] | None) -> str:
        if not -len(lst.elements) <= index < len(lst.elements):
            raise _Refused(f"it reads item {index} of a list of {len(lst.elements)}")
        ref = lst.elements[index]
        if ref is not None:
            return ref
        shape = shape_hint if shape_hint and all(d >= 0 for d in shape_hint) else lst.shape
        if shape is None or any(d < 0 for d in shape):
            raise _Refused(f"item {index} of its list was never set and its shape is not known")
        name = f"{op.name}/unset_{index}"
        if name not in {n.name for n in self.out}:
            self.out.append(const_node(name, np.zeros(shape, numpy_dtype(lst.dtype))))
        return name

    def unstacked(self, op: Any, k: int) -> list[str]:
        """Refs of the slices of input `k` of `op` along its first axis (one Unpack node)."""
        x = op.inputs[k]
        dims = x.shape.dims
        unstack = f"{op.name}/unstacked"
        if dims[0]:
            self.out.append(_node(unstack, "Unpack", [op.node_def.input[k]], T=int(x.dtype), num=dims[0], axis=0))
        return [unstack if i == 0 else f"{unstack}:{i}" for i in range(dims[0])]

    def lower_array(self, op: Any) -> None:
        node, outputs, kind = op.node_def, op.outputs, op.type
        if kind == "TensorArrayV3":
            size = int(_known(self.graph, op.inputs[0], "size"))
            shape = node.attr["element_shape"].shape if "element_shape" in node.attr else None
            dims = None if shape is None or shape.unknown_rank else [d.size for d in shape.dim]
            self.lists[outputs[1].name] = _List([None] * max(size, 0), node.attr["dtype"].type, dims)
            self.handles.add(outputs[0].name)
        elif kind == "TensorArrayScatterV3":
            lst = self.list_of(op, 3)
            indices = [int(i) for i in _known(self.graph, op.inputs[1], "indices").reshape(-1)]
            slices = self.unstacked(op, 2)
            if len(slices) != len(indices) or any(not 0 <= i < len(lst.elements) for i in indices):
                raise _Refused(f"it scatters {len(slices)} items to {len(indices)} positions of {len(lst.elements)}")
            elements = list(lst.elements)
            for i, ref in zip(indices, slices):
                elements[i] = ref
            self.lists[outputs[0].name] = _List(elements, lst.dtype, lst.shape)
        elif kind == "TensorArrayWriteV3":
            self.set_item(op, self.list_of(op, 3), "writes item {} of an array of {}")
        elif kind == "TensorArrayReadV3":
            lst = self.list_of(op, 2)
            index = int(_known(self.graph, op.inputs[1], "index"))
            self.out.append(_node(op.name, "Identity", [self.element(lst, index, op, None)], T=lst.dtype))
        elif kind == "TensorArrayGatherV3":
            lst = self.list_of(op, 2)
            indices = [int(i) for i in _known(self.graph, op.inputs[1], "indices").reshape(-1)]
            if not indices:
                raise _Refused("it gathers no items (no fixed-size tensor holds them)")
            refs = [self.element(lst, i, op, None) for i in indices]
            self.out.append(_node(op.name, "Pack", refs, T=lst.dtype, N=len(refs), axis=0))
        elif kind == "TensorArraySizeV3":
            self.out.append(const_node(op.name, np.int32(len(self.list_of(op, 1).elements))))

    def set_item(self, op: Any, lst: _List, refusal: str) -> None:
        """Output 0 of `op` is `lst` with item inputs[1] (a known index) replaced by inputs[2] (TensorList's
        SetItem and TensorArray's Write alike)."""
        index = int(_known(self.graph, op.inputs[1], "index"))
        if not 0 <= index < len(lst.elements):
            raise _Refused("it " + refusal.format(index, len(lst.elements)))
        elements = list(lst.elements)
        elements[index] = op.node_def.input[2]
        self.lists[op.outputs[0].name] = _List(elements, lst.dtype, lst.shape)

    def lower(self, op: Any) -> None:
        node, outputs = op.node_def, op.outputs
        kind = op.type
        if kind in _ARRAY_OPS:
            return self.lower_array(op)
        if kind == "TensorListFromTensor":
            x = op.inputs[0]
            elements = self.unstacked(op, 0)
            self.lists[outputs[0].name] = _List(elements, int(x.dtype),
                                                [d if d is not None else -1 for d in x.shape.dims[1:]])
        elif kind in ("TensorListReserve", "EmptyTensorList"):
            shape = _shape_of(self.graph.evaluator.value(op.inputs[0]))
            size = int(_known(self.graph, op.inputs[1], "size")) if kind == "TensorListReserve" else 0
            self.lists[outputs[0].name] = _List([None] * max(size, 0), node.attr["element_dtype"].type, shape)
        elif kind == "TensorListSetItem":
            self.set_item(op, self.list_of(op, 0), "sets item {} of a list of {}")
        elif kind == "TensorListPushBack":
            lst = self.list_of(op, 0)
            self.lists[outputs[0].name] = _List(lst.elements + [node.input[1]], lst.dtype, lst.shape)
        elif kind == "TensorListGetItem":
            lst = self.list_of(op, 0)
            index = int(_known(self.graph, op.inputs[1], "index"))
            ref = self.element(lst, index, op, _shape_of(self.graph.evaluator.value(op.inputs[2])))
            self.out.append(_node(op.name, "Identity", [ref], T=lst.dtype))
        elif kind in ("TensorListStack", "TensorListGather"):
            lst = self.list_of(op, 0)
            hint = _shape_of(self.graph.evaluator.value(op.inputs[-1]))
            if kind == "TensorListGather":
                indices = [int(i) for i in _known(self.graph, op.inputs[1], "indices").reshape(-1)]
                hint = _shape_of(self.graph.evaluator.value(op.inputs[2]))
            else:
                indices = list(range(len(lst.elements)))
            if not indices:
                raise _Refused("it stacks an empty list (no fixed-size tensor holds it)")
            refs = [self.element(lst, i, op, hint) for i in indices]
            self.out.append(_node(op.name, "Pack", refs, T=lst.dtype, N=len(refs), axis=0))
        elif kind == "TensorListLength":
            self.out.append(const_node(op.name, np.int32(len(self.list_of(op, 0).elements))))
        elif kind == "TensorListElementShape":
            lst = self.list_of(op, 0)
            if lst.shape is None:
                raise _Refused("the shape of its list's items is not known while converting")
            self.out.append(const_node(op.name, np.asarray(lst.shape, np.dtype(outputs[0].dtype.as_numpy_dtype))))


def _takes_list(op: Any, lists: dict[str, Any]) -> bool:
    return any(t.name in lists for t in op.inputs)


def lower_tensor_lists(graph_def: Any, input_map: dict[str, tuple[Any, Any]], weights: dict[str, Any]) -> Any:
    """`graph_def` with its TensorList ops written as plain nodes (itself when it has none). A list
    made from a tensor whose length shape inference cannot see yet (the stack of an earlier loop:
    a stacked RNN) waits for the next round, once that earlier list is lowered."""
    left = sum(n.op in _LIST_OPS for n in graph_def.node)
    while left:
        graph_def = _lower_once(graph_def, input_map, weights)
        now = sum(n.op in _LIST_OPS for n in graph_def.node)
        if now == left:
            node = next(n for n in graph_def.node if n.op in _LIST_OPS)
            raise UnsupportedError([Unsupported(node.op, node.name, "a TensorList op of a loop: the length "
                                                "of its list is not known while converting")])
        left = now
    return graph_def


def _lower_once(graph_def: Any, input_map: dict[str, tuple[Any, Any]], weights: dict[str, Any]) -> Any:

    graph = Graph(graph_def, input_map, weights)
    names = {n.name for n in graph_def.node}
    lowering = _Lowering(graph)
    waiting: set[str] = set()  # list tensors lowered on a later round
    problems = []
    for op in graph.get_operations():
        if op.name not in names:
            continue  # a placeholder standing for an input
        try:
            if _takes_list(op, waiting) or not _length_known(op):
                if op.type in _LIST_MAKERS or op.type in _PASS_THROUGH:  # lists only: items are tensors
                    waiting.add(op.outputs[0].name)
                lowering.out.append(op.node_def)
            elif op.type in _LIST_OPS:
                lowering.lower(op)
            elif op.type in _PASS_THROUGH and _takes_list(op, lowering.lists):
                lowering.lists[op.outputs[0].name] = lowering.lists[op.inputs[0].name]
            elif _takes_list(op, lowering.lists) or any(t.name in lowering.handles for t in op.inputs):
                raise _Refused("it takes a TensorList, which converts only through the TensorList ops of an "
                               "unrolled loop")
            else:
                lowering.out.append(op.node_def)
        except _Refused as e:
            problems.append(Unsupported(op.type, op.name, f"a TensorList op of a loop: {e}"))
    if problems:
        raise UnsupportedError(problems)
    dropped = names - {n.name for n in lowering.out}
    for node in lowering.out:  # control edges on the list nodes that are gone
        if any(split_ref(r)[0] in dropped for r in node.input):
            kept = [r for r in node.input if not (r.startswith("^") and split_ref(r)[0] in dropped)]
            del node.input[:]
            node.input.extend(kept)
    lowered = GraphDef()
    lowered.library.CopyFrom(graph_def.library)
    lowered.versions.CopyFrom(graph_def.versions)
    lowered.node.extend(lowering.out)
    return lowered


def _length_known(op: Any) -> bool:
    """False for an op that splits a tensor whose length shape inference does not know (yet)."""
    split = {"TensorListFromTensor": 0, "TensorArrayScatterV3": 2}.get(op.type)
    if split is None:
        return True
    dims = op.inputs[split].shape.dims
    return bool(dims) and dims[0] is not None
