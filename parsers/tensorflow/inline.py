"""Inline function calls of a GraphDef, without TensorFlow.

Keras 3 wraps some layers in functions (grouped convolutions run as an XLA-compiled function), TF2
SavedModels are nothing but functions, and a folded v2 cond becomes a call of its branch. Each call
(PartitionedCall, StatefulPartitionedCall, or a node whose op is a library function's name) is
replaced by the function's body: its nodes copied under the call's name, its arguments wired to the
call's inputs, attr placeholders filled from the call's attrs, and the call's consumers wired to the
body's return values. A call whose name was already chosen as an input or output stays as an
Identity / IdentityN of the return values (a NoOp when it returns nothing), so `call:1` keeps its
meaning.

Inside a FunctionDef a node's output is named "node:out_arg:index" and an argument by its name;
`function_refs` flattens those to GraphDef references ("node:K"), using the op's output arguments
(known_ops.output_args) and, for list outputs, the node's number_attr / type_list_attr value.
"""

from __future__ import annotations

from typing import Any, Callable

from tf_convert.convert.errors import InputError

from .known_ops import output_args
from .protos import GraphDef

CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
_MAX_DEPTH = 32  # nesting of functions (Keras layers in models in signatures: a handful in practice)


def _free_prefix(call: str, taken: set[str]) -> str:
    """`call/`, or `call/_inlined/` ... when the graph already has nodes under `call/` (v2 cond
    writes `cond/Identity` beside the call named `cond`)."""
    prefix = call + "/"
    while any(name.startswith(prefix) for name in taken):
        prefix += "_inlined/"
    return prefix


def called_function(node: Any, library: dict[str, Any]) -> str | None:
    """The library function `node` calls, or None."""
    if node.op in CALL_OPS and "f" in node.attr and node.attr["f"].func.name in library:
        return node.attr["f"].func.name
    return node.op if node.op in library else None


def _call_attrs(node: Any) -> Any:
    """The attrs a call passes to its function's placeholders."""
    return node.attr["f"].func.attr if node.op in CALL_OPS else node.attr


def _list_size(node: Any, number_attr: str, type_list_attr: str) -> int:
    if number_attr:
        return node.attr[number_attr].i if number_attr in node.attr else 1
    if type_list_attr:
        return len(node.attr[type_list_attr].list.type) if type_list_attr in node.attr else 0
    return 1


def _output_offsets(node: Any, library: dict[str, Any], where: str) -> dict[str, int]:
    """Output argument name -> index of its first tensor among the node's flat outputs."""
    if node.op in library:
        args = [(a.name, a.number_attr, a.type_list_attr) for a in library[node.op].signature.output_arg]
    else:
        args = output_args(node.op)
        if args is None:
            raise InputError(f"{where}: node '{node.name}' uses op {node.op[:60]!r}, which TensorFlow does not know "
                             "(a corrupt file, or a custom op library); pass a graph of standard TF ops")
    offsets, position = {}, 0
    for name, number_attr, type_list_attr in args:
        offsets[name] = position
        position += _list_size(node, number_attr, type_list_attr)
    return offsets


def function_refs(fdef: Any, library: dict[str, Any], prefix: str,
                  args: dict[str, str]) -> Callable[[str], str]:
    """A function mapping a reference inside `fdef` ("node:out_arg:i", "arg", "^node") to the GraphDef
    reference of the copied node (`prefix` + node) or the tensor bound to the argument ("" for a
    control edge on an argument: it is dropped)."""
    where = f"function '{fdef.signature.name}'"
    nodes = {n.name: n for n in fdef.node_def}
    offsets: dict[str, dict[str, int]] = {}

    def ref(name: str) -> str:
        if name.startswith("^"):
            target = name[1:]
            return "" if target in args else "^" + prefix + target
        parts = name.split(":")
        if len(parts) == 1 or (len(parts) == 2 and parts[1].isdigit() and parts[0] in args):
            if parts[0] not in args:
                raise InputError(f"{where}: reference '{name}' names no argument of the function; the file is corrupt")
            return args[parts[0]]
        node, arg, index = parts[0], parts[1], parts[2] if len(parts) > 2 else "0"
        if node not in nodes or not index.isdigit():
            raise InputError(f"{where}: reference '{name}' names no node of the function; the file is corrupt")
        if node not in offsets:
            offsets[node] = _output_offsets(nodes[node], library, where)
        if arg not in offsets[node]:
            raise InputError(f"{where}: node '{node}' ({nodes[node].op}) has no output '{arg}'; the file is corrupt")
        flat = offsets[node][arg] + int(index)
        return prefix + node if flat == 0 else f"{prefix}{node}:{flat}"

    return ref


def _fill_placeholders(node: Any, attrs: Any, where: str) -> None:
    """Attr values that name a function attr (`placeholder: "T"`) take the call's value."""
    for value in node.attr.values():
        if value.placeholder:
            if value.placeholder not in attrs:
                raise InputError(f"{where}: node '{node.name}' needs attr '{value.placeholder}', which the call "
                                 "does not give; the file is corrupt")
            value.CopyFrom(attrs[value.placeholder])


def body_nodes(fdef: Any, library: dict[str, Any], prefix: str, args: dict[str, str],
               attrs: Any = None) -> tuple[list[Any], list[str]]:
    """Copies of `fdef`'s nodes renamed under `prefix`, their inputs flattened and wired to `args`
    (argument name -> GraphDef tensor), placeholders filled from `attrs`; and the GraphDef tensors
    of its return values, in output order."""

    where = f"function '{fdef.signature.name}'"
    ref = function_refs(fdef, library, prefix, args)
    holder = GraphDef()
    for node in fdef.node_def:
        copy = holder.node.add()
        copy.CopyFrom(node)
        copy.name = prefix + node.name
        del copy.input[:]
        copy.input.extend(r for r in map(ref, node.input) if r)
        _fill_placeholders(copy, attrs if attrs is not None else {}, where)
    returns = []
    for out in fdef.signature.output_arg:
        if out.name not in fdef.ret:
            raise InputError(f"{where}: output '{out.name}' returns nothing; the file is corrupt")
        returns.append(ref(fdef.ret[out.name]))
    return list(holder.node), returns


def _output_types(call: Any, fdef: Any) -> list[int]:
    if call.op in CALL_OPS and "Tout" in call.attr:
        return list(call.attr["Tout"].list.type)
    attrs = _call_attrs(call)
    return [a.type or (attrs[a.type_attr].type if a.type_attr in attrs else 0) for a in fdef.signature.output_arg]


def _forwarder(call: Any, fdef: Any, returns: list[str]) -> None:
    """Turn the call node into Identity/IdentityN (NoOp) of the body's return values, in place."""
    types = _output_types(call, fdef)
    controls = [i for i in call.input if i.startswith("^")]
    del call.input[:]
    call.input.extend(returns + controls)
    call.attr.clear()
    if not returns:
        call.op = "NoOp"
    elif len(returns) == 1:
        call.op = "Identity"
        call.attr["T"].type = types[0] if types else 1
    else:
        call.op = "IdentityN"
        call.attr["T"].list.type.extend(types)


def _split(ref: str) -> tuple[str, int]:
    node, _, index = ref.partition(":")
    return node, int(index) if index.isdigit() else 0


def rewire(nodes: Any, returns: dict[str, list[str]]) -> None:
    """Inputs that named a removed call's output name the returned tensor instead (through chains of
    calls passing an argument straight back); control edges on a removed call go."""
    def resolve(ref: str) -> str:
        for _ in range(_MAX_DEPTH + 1):
            node, index = _split(ref)
            if node not in returns:
                return ref
            if index >= len(returns[node]):
                raise InputError(f"a node reads output {index} of call '{node}', which returns "
                                 f"{len(returns[node])}; the file is corrupt")
            ref = returns[node][index]
        raise InputError(f"call '{ref}' returns its own output; the file is corrupt")

    for node in nodes:
        if not any(_split(r.lstrip("^"))[0] in returns for r in node.input):
            continue
        inputs = [r if r.startswith("^") and r[1:] not in returns else resolve(r)
                  for r in node.input if not (r.startswith("^") and r[1:] in returns)]
        del node.input[:]
        node.input.extend(inputs)


def inline_calls(graph_def: Any, keep: Any = (), max_depth: int = _MAX_DEPTH) -> Any:
    """A copy of `graph_def` with every call of a library function inlined (nested calls too); its
    consumers read the body's tensors. A call named in `keep` (tensor or node names chosen before
    inlining) stays as a forwarder of the body's return values, so those names keep their meaning.
    The library is kept (If/While bodies still refer to it)."""
    library = {f.signature.name: f for f in graph_def.library.function}
    if not library or not any(called_function(n, library) for n in graph_def.node):
        return graph_def
    kept = {_split(k.lstrip("^"))[0] for k in keep}
    current = type(graph_def)()
    current.CopyFrom(graph_def)
    for _ in range(max_depth):
        calls = [n for n in current.node if called_function(n, library)]
        if not calls:
            return current
        taken = {n.name for n in current.node}
        added, returns = [], {}
        for call in calls:
            fdef = library[called_function(call, library)]
            arg_names = _input_arg_names(fdef)
            data = [i for i in call.input if not i.startswith("^")]
            if len(data) != len(arg_names):
                raise InputError(f"node '{call.name}' passes {len(data)} inputs to function "
                                 f"'{fdef.signature.name}', which takes {len(arg_names)}; the file is corrupt")
            prefix = _free_prefix(call.name, taken)
            nodes, returned = body_nodes(fdef, library, prefix, dict(zip(arg_names, data)), _call_attrs(call))
            taken.update(n.name for n in nodes)
            added.extend(nodes)
            if call.name in kept:
                _forwarder(call, fdef, returned)
            else:
                returns[call.name] = returned
        remaining = [n for n in current.node if n.name not in returns] + added
        rewire(remaining, returns)
        del current.node[:]
        current.node.extend(remaining)
    raise InputError(f"function calls nest deeper than {max_depth} levels (or call themselves); "
                     "pass a frozen .pb of the inference graph")


def _input_arg_names(fdef: Any) -> list[str]:
    for a in fdef.signature.input_arg:
        if a.number_attr or a.type_list_attr:
            raise InputError(f"function '{fdef.signature.name}' takes a list argument '{a.name}'; "
                             "this converter inlines functions of single-tensor arguments only")
    return [a.name for a in fdef.signature.input_arg]
