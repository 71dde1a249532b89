"""Resource variables a TF2 While loop carries become values the loop carries.

TF2 passes a variable's handle into a While loop (a Keras RNN's kernels): the body reads it with
ReadVariableOp and passes the handle back unchanged. Frozen, the variable is a constant, so the loop
can carry its value instead: the handle is read once before the loop, the loop variable's type
becomes the variable's dtype, and in copies of `cond` and `body` each ReadVariableOp of that argument
becomes an Identity. The graph stays one TensorFlow runs (the reference run uses it), and the loop
can then be unrolled (parsers/tensorflow/unroll.py). A handle the body does anything else with
(writes, passes on changed) is left alone: the variable pass refuses it by name as before.
"""

from __future__ import annotations

from typing import Any

from ..graphio import split_ref
from ..protos import AttrValue
from .graph import GraphView

WHILE_OPS = ("While", "StatelessWhile")
_READ = "ReadVariableOp"


def _variable_of(view: GraphView, ref: str, variables: set[str]) -> str | None:
    """The VarHandleOp that tensor `ref` is (through Identity nodes), or None."""
    name = split_ref(ref)[0]
    while name in view.nodes and view.nodes[name].op == "Identity" and name not in variables:
        name = split_ref(view.nodes[name].input[0])[0]
    return name if name in variables else None


def _only_read(fdef: Any, arg: str) -> bool:
    """`arg` is used only as the input of ReadVariableOp nodes (or as a control edge) in `fdef`."""
    for node in fdef.node_def:
        for ref in node.input:
            if ref.split(":")[0] == arg and not ref.startswith("^") and node.op != _READ:
                return False
    return True


def _returned_unchanged(body: Any, index: int) -> bool:
    arg = body.signature.input_arg[index].name
    out = body.signature.output_arg[index].name if index < len(body.signature.output_arg) else None
    return out is not None and body.ret.get(out) == arg


def _read_as_value(fdef: Any, indices: dict[int, int], name: str) -> Any:
    """A copy of `fdef` named `name` whose arguments `indices` (index -> dtype) are values, not handles."""
    copy = type(fdef)()
    copy.CopyFrom(fdef)
    copy.signature.name = name
    args = {copy.signature.input_arg[i].name: dtype for i, dtype in indices.items()}
    for i, dtype in indices.items():
        copy.signature.input_arg[i].type = dtype
        if i < len(copy.signature.output_arg) and copy.ret.get(copy.signature.output_arg[i].name) == \
                copy.signature.input_arg[i].name:
            copy.signature.output_arg[i].type = dtype
        if i in copy.arg_attr:  # its shape hints describe the handle (a scalar), not the value
            del copy.arg_attr[i]
    reads = set()
    for node in copy.node_def:
        if node.op == _READ and node.input and node.input[0] in args:
            dtype = node.attr["dtype"].type
            node.op = "Identity"
            node.attr.clear()
            node.attr["T"].type = dtype
            reads.add(node.name)
    for node in copy.node_def:  # ReadVariableOp's output is "value"; Identity's is "output"
        for k, ref in enumerate(node.input):
            parts = ref.split(":")
            if len(parts) == 3 and parts[0] in reads and parts[1] == "value":
                node.input[k] = f"{parts[0]}:output:{parts[2]}"
    for key, ref in list(copy.ret.items()):
        parts = ref.split(":")
        if len(parts) == 3 and parts[0] in reads and parts[1] == "value":
            copy.ret[key] = f"{parts[0]}:output:{parts[2]}"
    return copy


def read_before_loops(view: GraphView, variables: set[str]) -> None:
    """Each While input that is the handle of one of `variables` (VarHandleOp names), read-only in the
    loop, becomes that variable's value read before the loop (in place, in `view`)."""
    library = {f.signature.name: f for f in view.graph_def.library.function}
    for name in list(view.nodes):
        node = view.nodes[name]
        if node.op not in WHILE_OPS:
            continue
        cond = library.get(node.attr["cond"].func.name)
        body = library.get(node.attr["body"].func.name)
        if cond is None or body is None:
            continue
        data = [ref for ref in node.input if not ref.startswith("^")]
        if not (len(data) == len(body.signature.input_arg) == len(cond.signature.input_arg)):
            continue
        indices: dict[int, int] = {}
        for i, ref in enumerate(data):
            variable = _variable_of(view, ref, variables)
            if variable is None or not _returned_unchanged(body, i):
                continue
            if _only_read(body, body.signature.input_arg[i].name) and \
                    _only_read(cond, cond.signature.input_arg[i].name):
                indices[i] = variable
        if indices:
            _rewrite(view, node, data, cond, body, indices, library)


def _rewrite(view: GraphView, node: Any, data: list[str], cond: Any, body: Any, indices: dict[int, str],
             library: dict[str, Any]) -> None:

    dtypes = {i: view.nodes[v].attr["dtype"].type for i, v in indices.items()}
    positions = [k for k, ref in enumerate(node.input) if not ref.startswith("^")]
    for i, variable in indices.items():
        read = view.add(view.unique(f"{node.name}/read_{i}"), _READ, [data[i]],
                        dtype=AttrValue(type=dtypes[i]))
        node.input[positions[i]] = read.name
        node.attr["T"].list.type[i] = dtypes[i]
        for key in ("output_shapes", "_output_shapes"):
            if key in node.attr and i < len(node.attr[key].list.shape):
                node.attr[key].list.shape[i].CopyFrom(view.nodes[variable].attr["shape"].shape)
    if "_read_only_resource_inputs" in node.attr:
        kept = [i for i in node.attr["_read_only_resource_inputs"].list.i if i not in indices]
        del node.attr["_read_only_resource_inputs"].list.i[:]
        node.attr["_read_only_resource_inputs"].list.i.extend(kept)
    for key, fdef in (("cond", cond), ("body", body)):
        name = f"{fdef.signature.name}_values"
        while name in library:
            name += "_"
        copy = _read_as_value(fdef, dtypes, name)
        view.graph_def.library.function.add().CopyFrom(copy)
        library[name] = copy
        node.attr[key].func.name = name
