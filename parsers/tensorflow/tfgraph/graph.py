"""A TF-free graph over a GraphDef: Graph / Op / Tensor with the part of tf.Graph's API the op
handlers use (op.type/.name/.inputs/.outputs/.get_attr/.node_def, tensor.name/.op/.value_index/
.dtype/.shape/.consumers()), static shapes from `shapes/` and constant values from `fold.py`.

An `input_map` replaces tensors by fixed-shape placeholders, as tf.import_graph_def's does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tf_convert.parsers.common.order import topological

from ..graphio import split_ref
from ..known_ops import attr_defaults, output_args
from ..protos import AttrValue, GraphDef
from .evaluate import Evaluator
from .shapes import infer
from .static import DType, ShapeError, TensorShape

__all__ = ["DType", "Graph", "NodeAttrs", "Op", "ShapeError", "Tensor", "TensorShape", "attr_value"]


def attr_value(value: Any) -> Any:
    """An AttrValue as tf.Operation.get_attr returns it: bytes, int, float, bool, DType,
    TensorShapeProto, TensorProto, NameAttrList, or a list of those."""
    kind = value.WhichOneof("value")
    if kind == "list":
        lst = value.list
        for field in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
            items = list(getattr(lst, field))
            if items:
                return [DType(t) for t in items] if field == "type" else items
        return []
    if kind == "type":
        return DType(value.type)
    if kind is None or kind == "placeholder":
        return None
    return getattr(value, kind)


class NodeAttrs:
    """get_attr over a bare NodeDef (the training passes' view has no Graph)."""

    def __init__(self, node_def: Any):
        self.node_def = node_def
        self.name = node_def.name
        self.type = node_def.op

    def get_attr(self, name: str) -> Any:
        """The attr, or its default from TF's op definition when the NodeDef leaves it out (as TF's
        import fills it in)."""
        if name in self.node_def.attr:
            return attr_value(self.node_def.attr[name])
        default = attr_defaults(self.type).get(name)
        if default is None:
            raise ValueError(f"operation '{self.name}' has no attr named '{name}'")
        return attr_value(default)


class Tensor:
    def __init__(self, op: Op, index: int):
        self.op = op
        self.value_index = index
        self.name = f"{op.name}:{index}"
        self.shape = TensorShape(None)
        self.dtype: DType | None = None
        self._consumers: list[Op] = []

    def consumers(self) -> list[Op]:
        return list(self._consumers)

    def __repr__(self) -> str:
        return f"<Tensor {self.name} {self.shape.dims}>"


class Op(NodeAttrs):
    def __init__(self, node_def: Any, num_outputs: int):
        super().__init__(node_def)
        self.inputs: tuple[Tensor, ...] = ()
        self.control_inputs: tuple[Op, ...] = ()
        self.outputs = tuple(Tensor(self, i) for i in range(num_outputs))

    def __repr__(self) -> str:
        return f"<Op {self.name} ({self.type})>"


def _num_outputs(node: Any, referenced: int) -> int:
    """From TF's op definition (Split's num_split, IdentityN's T, ...); for an op TF does not
    define, as many as the graph uses."""
    args = output_args(node.op)
    if args is None:
        return referenced
    count = 0
    for _, number_attr, type_list_attr in args:
        if number_attr:
            count += node.attr[number_attr].i
        elif type_list_attr:
            count += len(node.attr[type_list_attr].list.type)
        else:
            count += 1
    return max(count, referenced)


def _order(nodes: dict[str, Any]) -> list[str]:
    """Every node after its inputs (data and control), otherwise in GraphDef order; a cycle
    (a while loop's back edge) is cut where it closes."""
    return topological(nodes, lambda node: [split_ref(r)[0] for r in node.input])


class Graph:
    """The ops of `graph_def` in topological order, with static shapes and dtypes.

    input_map: tensor name -> (DType, dims or None): each becomes a Placeholder op
    `convert_input_<i>` whose output replaces that tensor wherever it is used.
    weights: Const node name -> value (possibly lazy) that replaces the node's attr value.
    """

    def __init__(self, graph_def: Any, input_map: dict[str, tuple[Any, Sequence | None]] | None = None,
                 weights: dict[str, Any] | None = None):
        self.graph_def = graph_def
        self.weights = weights or {}
        nodes = {n.name: n for n in graph_def.node}
        referenced: dict[str, int] = {}
        for n in graph_def.node:
            for ref in n.input:
                name, index, control = split_ref(ref)
                if not control:
                    referenced[name] = max(referenced.get(name, 0), index + 1)
        self._ops: dict[str, Op] = {}
        mapped: dict[str, Tensor] = {}
        for i, (tensor, (dtype, dims)) in enumerate((input_map or {}).items()):
            op = Op(_placeholder_def(f"convert_input_{i}", dtype, dims), 1)
            op.outputs[0].dtype, op.outputs[0].shape = DType(dtype), TensorShape(dims)
            self._ops[op.name] = op
            mapped[_canonical(tensor)] = op.outputs[0]
        for name in _order(nodes):
            self._ops[name] = Op(nodes[name], _num_outputs(nodes[name], referenced.get(name, 0)))
        for name in list(self._ops):
            op = self._ops[name]
            if name not in nodes:
                continue
            data, control = [], []
            for ref in op.node_def.input:
                src, index, is_control = split_ref(ref)
                if src not in self._ops:
                    raise ShapeError(f"node '{name}' reads '{ref}', which is not in the graph")
                if is_control:
                    control.append(self._ops[src])
                    continue
                t = mapped.get(f"{src}:{index}") or self._ops[src].outputs[index]
                t._consumers.append(op)
                data.append(t)
            op.inputs, op.control_inputs = tuple(data), tuple(control)
        self.evaluator = Evaluator(self)
        for op in self._ops.values():
            if op.name in nodes:
                infer(op, self.evaluator)

    def get_operations(self) -> list[Op]:
        return list(self._ops.values())

    def get_operation_by_name(self, name: str) -> Op:
        return self._ops[name]

    def get_tensor_by_name(self, name: str) -> Tensor:
        node, index, _ = split_ref(name)
        if node not in self._ops or index >= len(self._ops[node].outputs):
            raise KeyError(f"the graph has no tensor '{name}'")
        return self._ops[node].outputs[index]


def _canonical(name: str) -> str:
    node, index, _ = split_ref(name)
    return f"{node}:{index}"


def _placeholder_def(name: str, dtype: Any, dims: Sequence | None) -> Any:

    node = GraphDef().node.add()
    node.name, node.op = name, "Placeholder"
    node.attr["dtype"].CopyFrom(AttrValue(type=int(dtype)))
    node.attr["shape"].CopyFrom(AttrValue(shape=TensorShape(dims).as_proto()))
    return node
