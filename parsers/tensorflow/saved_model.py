"""A TF2 SavedModel's signature as a plain GraphDef, without TensorFlow.

A TF2 SavedModel is an object graph (SavedObjectGraph) plus a library of functions. The root's
"signatures" child lists the signatures; each is a concrete function whose last arguments are
captured resources (`bound_inputs`: object-graph node ids). We build the graph TF's own loader
would trace: one Placeholder per signature argument (named as the argument, as TF names it), the
function's body at top level (nested calls inlined by inline.py), its return values as outputs.
A captured variable becomes a VarHandleOp whose shared_name is its checkpoint key, so the TF1
path (training/variables.freeze + the Bundle reader) freezes it like any checkpoint variable:
the key comes from the TrackableObjectGraph the checkpoint stores under
`_CHECKPOINTABLE_OBJECT_GRAPH` (its node ids are the SavedObjectGraph's). A captured constant
becomes a Const.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tf_convert.convert.errors import InputError

from .inline import body_nodes, inline_calls
from .protos import GraphDef, TensorShapeProto, TrackableObjectGraph

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
VARIABLE_VALUE = "VARIABLE_VALUE"
DT_RESOURCE = 20


class NotTF2(Exception):
    """The object graph gives no usable signature (the caller falls back to the TF1 meta graph)."""


@dataclass
class Signature:
    key: str
    graph_def: Any
    inputs: list[str]
    outputs: list[str]


def signature_names(meta: Any) -> dict[str, str]:
    """Signature key -> concrete function name, from the root's "signatures" child."""
    nodes = meta.object_graph_def.nodes
    holder = next((c.node_id for c in nodes[0].children if c.local_name == "signatures"), None)
    if holder is None or holder >= len(nodes):
        return {}
    result = {}
    for child in nodes[holder].children:
        if child.node_id >= len(nodes):
            raise NotTF2(f"signature '{child.local_name}' refers to object {child.node_id}, which does not exist")
        node = nodes[child.node_id]
        kind = node.WhichOneof("kind")
        if kind == "bare_concrete_function":
            result[child.local_name] = node.bare_concrete_function.concrete_function_name
        elif kind == "function" and node.function.concrete_functions:
            result[child.local_name] = node.function.concrete_functions[0]
    return result


def _paths(children_of: list[Any]) -> dict[int, tuple[str, ...]]:
    """Node id -> its first path of child names from the root (breadth first)."""
    paths: dict[int, tuple[str, ...]] = {0: ()}
    queue = [0]
    while queue:
        node = queue.pop(0)
        for child in children_of[node]:
            if child.node_id not in paths and child.node_id < len(children_of):
                paths[child.node_id] = paths[node] + (child.local_name,)
                queue.append(child.node_id)
    return paths


class CheckpointKeys:
    """Object-graph node id -> checkpoint key of the variable's value."""

    def __init__(self, reader: Any, saved_nodes: Any, where: Path):

        self.where = where
        self.reader = reader
        if reader is None or not reader.has_tensor(OBJECT_GRAPH_KEY):
            raise InputError(f"{where}: the SavedModel's variables/ checkpoint has no object graph "
                             f"({OBJECT_GRAPH_KEY}), so its variables cannot be found; re-export it with "
                             "tf.saved_model.save or pass a frozen .pb")
        graph = TrackableObjectGraph()
        values = reader.read_strings(OBJECT_GRAPH_KEY)
        try:
            graph.ParseFromString(values[0])
        except Exception:  # noqa: BLE001 - any decode failure (or no element)
            raise InputError(f"{where}: the checkpoint's object graph is corrupt; re-export the SavedModel") from None
        self.nodes = graph.nodes
        self.saved_nodes = saved_nodes
        self._by_path: dict[tuple[str, ...], int] | None = None

    def _value_key(self, node_id: int) -> str | None:
        if node_id >= len(self.nodes):
            return None
        return next((a.checkpoint_key for a in self.nodes[node_id].attributes if a.name == VARIABLE_VALUE), None)

    def key(self, node_id: int) -> str:
        """Matched by the object's path of child names from the root (as TF's own restore does), else by
        node id (the two graphs number their objects alike in every TF2 save)."""
        if self._by_path is None:
            self._by_path = {p: i for i, p in _paths([n.children for n in self.nodes]).items()}
            self._saved_paths = _paths([n.children for n in self.saved_nodes])
        path = self._saved_paths.get(node_id)
        target = self._by_path.get(path) if path is not None else None
        key = self._value_key(node_id if target is None else target)
        if key is None:
            name = self.saved_nodes[node_id].variable.name
            raise InputError(f"{self.where}: variable '{name}' (object {node_id}) has no value in the "
                             "checkpoint's object graph; the variables/ files may be from another model")
        self._check_shape(node_id, key)
        return key

    def _check_shape(self, node_id: int, key: str) -> None:
        """What TF's restore checks: the value saved under `key` has the variable's shape (a variables/
        directory copied from another model of the same layers has the keys but not the shapes)."""
        variable = self.saved_nodes[node_id].variable
        if (variable.shape.unknown_rank or any(d.size < 0 for d in variable.shape.dim)
                or not self.reader.has_tensor(key)):
            return
        expected = tuple(d.size for d in variable.shape.dim)
        found = tuple(self.reader.shape(key))
        if found != expected:
            raise InputError(f"{self.where}: variable '{variable.name}' has shape {expected} in the SavedModel but "
                             f"{found} in variables/: its variables are from another model (TensorFlow refuses "
                             "it too); re-export the SavedModel")


def _input_shape(fdef: Any, index: int, signature_def: Any) -> Any:

    attrs = fdef.arg_attr[index].attr if index in fdef.arg_attr else {}
    if "_output_shapes" in attrs and attrs["_output_shapes"].list.shape:
        return attrs["_output_shapes"].list.shape[0]
    arg = fdef.signature.input_arg[index]
    user = attrs["_user_specified_name"].s.decode() if "_user_specified_name" in attrs else arg.name
    spec = signature_def.inputs.get(user) if signature_def is not None else None
    return spec.tensor_shape if spec is not None else TensorShapeProto(unknown_rank=True)


def _captured(graph_def: Any, arg: Any, node_id: int, meta: Any, keys: Any, where: Path) -> None:
    """The node standing for captured argument `arg` (object-graph node `node_id`)."""
    nodes = meta.object_graph_def.nodes
    if node_id >= len(nodes):
        raise NotTF2(f"argument '{arg.name}' captures object {node_id}, which does not exist")
    saved = nodes[node_id]
    kind = saved.WhichOneof("kind")
    if kind == "variable" and arg.type == DT_RESOURCE:
        node = graph_def.node.add(name=arg.name, op="VarHandleOp")
        node.attr["dtype"].type = saved.variable.dtype
        node.attr["shape"].shape.CopyFrom(saved.variable.shape)
        node.attr["shared_name"].s = keys().key(node_id).encode()
        node.attr["container"].s = b""
        return
    if kind == "constant":
        source = next((n for n in meta.graph_def.node if n.name == saved.constant.operation), None)
        if source is None or source.op != "Const":
            raise InputError(f"{where}: captured constant '{arg.name}' refers to node "
                             f"'{saved.constant.operation}', which is not a constant of the SavedModel's graph")
        node = graph_def.node.add(name=arg.name, op="Const")
        node.attr["dtype"].CopyFrom(source.attr["dtype"])
        node.attr["value"].CopyFrom(source.attr["value"])
        return
    raise InputError(f"{where}: the signature captures a {kind or 'unknown object'} ('{arg.name}'), which this "
                     "converter cannot read (only variables and constants); pass a frozen .pb")


def signature_graph(saved_model: Any, directory: Path, reader: Any) -> Signature:
    """The chosen signature ('serving_default', else the first by name) as a GraphDef with every call
    inlined; its variables are VarHandleOps named by checkpoint key (not yet frozen)."""

    meta = saved_model.meta_graphs[0]
    names = signature_names(meta)
    if not names:
        if "serving_default" in meta.signature_def:  # a TF1 graph with a stray object graph
            raise NotTF2("the object graph lists no signatures")
        raise InputError(f"{directory}: the SavedModel has no signature; export it with a "
                         "'serving_default' signature or pass a frozen .pb")
    key = "serving_default" if "serving_default" in names else sorted(names)[0]
    library = {f.signature.name: f for f in meta.graph_def.library.function}
    fdef = library.get(names[key])
    if fdef is None:
        raise NotTF2(f"signature '{key}' calls function '{names[key]}', which the SavedModel does not hold")
    bound = list(meta.object_graph_def.concrete_functions[names[key]].bound_inputs) \
        if names[key] in meta.object_graph_def.concrete_functions else []
    args = list(fdef.signature.input_arg)
    if len(bound) > len(args):
        raise NotTF2(f"function '{names[key]}' captures {len(bound)} objects but takes {len(args)} arguments")
    user_args = args[:len(args) - len(bound)]
    unbound = next((a.name for a in user_args if a.type == DT_RESOURCE), None)
    if unbound is not None:
        raise InputError(f"{directory}: signature '{key}' takes resource '{unbound}', which the object graph "
                         "does not bind; the SavedModel is corrupt")

    graph_def = GraphDef()
    graph_def.versions.CopyFrom(meta.graph_def.versions)
    graph_def.library.CopyFrom(meta.graph_def.library)
    signature_def = meta.signature_def.get(key)
    for index, arg in enumerate(user_args):
        node = graph_def.node.add(name=arg.name, op="Placeholder")
        node.attr["dtype"].type = arg.type
        node.attr["shape"].shape.CopyFrom(_input_shape(fdef, index, signature_def))
    cache: list[CheckpointKeys] = []

    def keys() -> CheckpointKeys:  # read only when a variable is captured
        if not cache:
            cache.append(CheckpointKeys(reader, meta.object_graph_def.nodes, directory))
        return cache[0]

    for arg, node_id in zip(args[len(user_args):], bound):
        _captured(graph_def, arg, node_id, meta, keys, directory)
    nodes, returns = body_nodes(fdef, library, "", {a.name: a.name for a in args})
    graph_def.node.extend(nodes)
    outputs = [r if ":" in r else f"{r}:0" for r in returns]
    inputs = [f"{a.name}:0" for a in user_args]
    return Signature(key, inline_calls(graph_def, keep=inputs + outputs), inputs, outputs)
