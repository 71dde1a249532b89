"""Inline function calls (PartitionedCall / StatefulPartitionedCall) of a frozen GraphDef.

Keras 3 wraps some layers in functions (grouped convolutions run as an XLA-compiled function, for
instance); freezing keeps those calls. Grappler does not inline XLA functions, so we splice each
body in ourselves: its nodes are copied under the call's name, its arguments wired to the call's
inputs and the call's outputs to the body's return values.
"""

from __future__ import annotations

from typing import Any

_CALL_OPS = {"PartitionedCall", "StatefulPartitionedCall"}


def _split(ref: str) -> tuple[str, str]:
    node, _, index = ref.partition(":")
    return node, index or "0"


def _free_prefix(call: str, taken: set[str]) -> str:
    """`call/`, or `call/_inlined/` ... when the graph already has nodes under `call/` (v2 cond
    writes `cond/Identity` beside the call named `cond`)."""
    prefix = call + "/"
    while any(name.startswith(prefix) for name in taken):
        prefix += "_inlined/"
    return prefix


def inline_calls(graph_def: Any, max_depth: int = 10) -> Any:
    """A copy of `graph_def` with every call to a library function inlined (nested calls too)."""
    import tensorflow as tf
    from tensorflow.core.framework import graph_pb2

    from .protos import from_tensorflow, to_tensorflow  # TRANSITIONAL (issue 12): TF's classes inside

    library = {f.signature.name: f for f in graph_def.library.function}
    if not library:
        return graph_def
    given, graph_def = graph_def, to_tensorflow(graph_def)
    library = {f.signature.name: f for f in graph_def.library.function}
    # function_def_to_graph_def looks nested calls up in the default graph's library
    scope = tf.Graph()
    with scope.as_default():
        holder = graph_pb2.GraphDef()
        holder.library.CopyFrom(graph_def.library)
        tf.import_graph_def(holder, name="")
    with scope.as_default():
        result = _inline(graph_def, library, max_depth)
    return result if graph_def is given else from_tensorflow(result)


def _inline(graph_def: Any, library: dict, max_depth: int) -> Any:
    from tensorflow.core.framework import graph_pb2
    from tensorflow.python.framework.function_def_to_graph import function_def_to_graph_def

    current = graph_def
    for _ in range(max_depth):
        calls = [n for n in current.node if n.op in _CALL_OPS and n.attr["f"].func.name in library]
        if not calls:
            break
        result = graph_pb2.GraphDef()
        result.versions.CopyFrom(current.versions)
        result.library.CopyFrom(current.library)
        renames: dict[str, str] = {}  # "call:i" -> inlined tensor
        call_names = {c.name for c in calls}
        taken = {n.name for n in current.node}
        for call in calls:
            fdef = library[call.attr["f"].func.name]
            body, nested_to_flat = function_def_to_graph_def(fdef)
            args = [a.name for a in fdef.signature.input_arg]
            data_inputs = [i for i in call.input if not i.startswith("^")]
            arg_map = {a: data_inputs[k] for k, a in enumerate(args)}
            prefix = _free_prefix(call.name, taken)

            def wire(ref: str, prefix: str = prefix, arg_map: dict = arg_map) -> str:
                if ref.startswith("^"):
                    return "" if ref[1:] in arg_map else "^" + prefix + ref[1:]
                node, index = _split(ref)
                return arg_map[node] if node in arg_map else f"{prefix}{node}:{index}"

            for n in body.node:
                if n.name in arg_map and n.op == "Placeholder":
                    continue
                copy = result.node.add()
                copy.CopyFrom(n)
                copy.name = prefix + n.name
                del copy.input[:]
                copy.input.extend(w for w in (wire(i) for i in n.input) if w)
            for k, out in enumerate(fdef.signature.output_arg):
                flat = nested_to_flat.get(fdef.ret[out.name], fdef.ret[out.name])
                node, index = _split(flat)
                renames[f"{call.name}:{k}"] = arg_map[node] if node in arg_map else f"{prefix}{node}:{index}"
        for n in current.node:
            if n.name in call_names:
                continue
            copy = result.node.add()
            copy.CopyFrom(n)
            del copy.input[:]
            for ref in n.input:
                if ref.startswith("^"):
                    if ref[1:] not in call_names:
                        copy.input.append(ref)
                    continue
                node, index = _split(ref)
                copy.input.append(renames.get(f"{node}:{index}", ref) if node in call_names else ref)
        current = result
    return current
