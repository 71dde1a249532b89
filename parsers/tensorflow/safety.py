"""Read only what the user gave: a TF graph is checked before anything of it runs in TensorFlow.

`check_graph` (the one entry point) walks what the chosen outputs (and, for a checkpoint, its
restore op; for a SavedModel, its init ops) depend on and refuses, in one line naming the node:
- ops that read or write files or run Python (ReadFile, WriteFile, PyFunc, dataset readers, summary
  writers, save/restore ops outside the checkpoint's own restore, ImmutableConst, ...),
- loops (While, TF1 Enter/NextIteration/...) on the constant path, where nothing bounds them,
and drops debug ops (Print, PrintV2 to stderr, Assert), which only print or check.
Functions of the graph's library are scanned for the refused ops as well.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from tf_convert.convert.errors import InputError

from .known_ops import attr_names, is_known_op

# Ops that touch files, run Python or have effects outside the graph.
IO_OPS = frozenset({
    "ReadFile", "WriteFile", "MatchingFiles", "PyFunc", "PyFuncStateless", "EagerPyFunc",
    "ImmutableConst", "Save", "SaveV2", "SaveSlices", "Restore", "RestoreV2", "RestoreSlice",
    "MergeV2Checkpoints", "InitializeTableFromTextFile", "InitializeTableFromTextFileV2",
    "LoadAndRemapMatrix", "DebugIdentity", "DebugIdentityV2", "DebugIdentityV3", "DebugNanCount",
    "DebugNumericSummary", "DebugNumericSummaryV2", "DecodeProtoV2", "EncodeProto",  # descriptor files
})
# Families recognised by name: readers of record files, dataset sources, summary writers, queues.
IO_PATTERN = re.compile(r"(Reader|Record|Dataset|SummaryWriter|SummaryFileWriter|Write\w*Summary|File|Queue"
                        r"|Iterator|Snapshot|Checkpoint)")
# The checkpoint's own restore (and save) ops are allowed where the caller says so.
CHECKPOINT_OPS = frozenset({"RestoreV2", "Restore", "RestoreSlice", "SaveV2", "Save", "SaveSlices",
                            "MergeV2Checkpoints", "ShardedFilename", "ShardedFilespec"})
LOOP_OPS = frozenset({"While", "StatelessWhile", "_While", "For", "Enter", "RefEnter", "Exit", "RefExit",
                      "NextIteration", "RefNextIteration", "LoopCond"})
# why a loop is refused where nothing more precise can be said: While loops and TF1
# frames of a static trip count are unrolled (unroll.py, frames.py); other forms are not
LOOP_HINT = ("a TF loop of a form that is not unrolled (While loops and TF1 while frames with a static trip count "
             "are, reading variables only); convert the model's Keras .keras/.h5 file instead")
_FRAME_OPS = LOOP_OPS | {"Merge", "RefMerge", "Switch", "RefSwitch"}
DEBUG_OPS = frozenset({"Print", "PrintV2", "Assert"})
INPUT_OPS = frozenset({"Placeholder", "PlaceholderV2", "PlaceholderWithDefault"})
NOT_IO = frozenset({"Snapshot"})  # ops the IO_PATTERN would catch wrongly (Snapshot is an identity)


def is_io(op: str) -> bool:
    return op in IO_OPS or (op not in NOT_IO and bool(IO_PATTERN.search(op)))


def _node(name: str) -> str:
    return name.lstrip("^").split(":", 1)[0]


def _called_functions(node: Any) -> Iterable[str]:
    for value in node.attr.values():
        if value.HasField("func"):
            yield value.func.name
        for f in value.list.func:
            yield f.name


def check_graph(graph_def: Any, roots: Iterable[str], where: Any, *, restore: Iterable[str] = ()) -> Any:
    """A copy of `graph_def` without debug ops, after refusing what `roots` (tensor or node names) and the
    restore op(s) `restore` depend on, if it reads or writes files, runs Python or loops on constants.

    Given a parsed SavedModel proto instead, checks what loading it runs (restore, init ops, functions)."""
    if hasattr(graph_def, "meta_graphs"):
        _check_saved_model(graph_def, where)
        return graph_def
    nodes = {n.name: n for n in graph_def.node}
    restore_closure = _closure(nodes, restore)
    closure = _closure(nodes, roots) | restore_closure
    functions = {f.signature.name: f for f in graph_def.library.function}
    for name in sorted(closure):
        node = nodes[name]
        allowed = node.op in CHECKPOINT_OPS and name in restore_closure
        _refuse_io(node.op, node.name, where, allowed, node)
        _refuse_unknown(node, functions, where)
        _refuse_bad_attrs(node, functions, where)
    restoring = _reachable_functions([nodes[n] for n in restore_closure], functions)
    for fname in sorted(_reachable_functions([nodes[n] for n in closure], functions)):
        for node in functions[fname].node_def:
            _refuse_io(node.op, f"{fname}/{node.name}", where, fname in restoring and node.op in CHECKPOINT_OPS, node)
    _refuse_constant_loops(nodes, closure, functions, where)
    return _without_debug_ops(graph_def)


def _check_saved_model(saved_model: Any, where: Any) -> None:
    """Refuse a SavedModel (the parsed proto) whose graphs or functions do I/O beyond their checkpoint:
    TensorFlow runs its restore and init ops while loading it."""
    for meta in saved_model.meta_graphs:
        graph_def = meta.graph_def
        nodes = {n.name: n for n in graph_def.node}
        roots = [t.name for sig in meta.signature_def.values() for t in sig.outputs.values()]
        for key in ("saved_model_main_op", "legacy_init_op", "init_op", "table_initializer"):
            if key in meta.collection_def:
                roots += list(meta.collection_def[key].node_list.value)
        restore = [meta.saver_def.restore_op_name] if meta.saver_def.restore_op_name else []
        roots = [r for r in roots if _node(r) in nodes]
        restore = [r for r in restore if _node(r) in nodes]
        check_graph(graph_def, roots, where, restore=restore)
        for function in graph_def.library.function:  # TF2: every function may run while loading
            for node in function.node_def:
                _refuse_io(node.op, f"{function.signature.name}/{node.name}", where,
                           node.op in CHECKPOINT_OPS, node)


def _closure(nodes: dict[str, Any], roots: Iterable[str]) -> set[str]:
    seen: set[str] = set()
    stack = [_node(r) for r in roots]
    while stack:
        name = stack.pop()
        if name in seen or name not in nodes:
            continue
        seen.add(name)
        stack.extend(_node(i) for i in nodes[name].input)
    return seen


def _reachable_functions(start: list[Any], functions: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    stack = [f for n in start for f in _called_functions(n)]
    while stack:
        name = stack.pop()
        if name in found or name not in functions:
            continue
        found.add(name)
        stack.extend(f for n in functions[name].node_def for f in _called_functions(n))
    return found


def _refuse_io(op: str, name: str, where: Any, allowed: bool, node: Any) -> None:
    if op == "PrintV2":
        stream = node.attr["output_stream"].s.decode(errors="replace") if "output_stream" in node.attr else ""
        if stream and not stream.startswith(("stderr", "stdout", "log(")):
            raise InputError(f"{where}: node '{name}' (PrintV2) writes to {stream[:80]!r}; refusing a graph "
                             "that writes files")
        return
    if allowed or op in DEBUG_OPS or not is_io(op):
        return
    raise InputError(f"{where}: node '{name}' ({op}) reads or writes files or runs code outside the graph; "
                     "refusing to run it (export the inference graph alone)")


def _refuse_unknown(node: Any, functions: dict[str, Any], where: Any) -> None:
    """An op TensorFlow does not know (a flipped byte in its name, a custom op library): TF cannot run it."""
    if node.op not in functions and not is_known_op(node.op):
        raise InputError(f"{where}: node '{node.name}' uses op {node.op[:60]!r}, which TensorFlow does not know "
                         "(a corrupt file, or a custom op library); pass a graph of standard TF ops")


def _refuse_bad_attrs(node: Any, functions: dict[str, Any], where: Any) -> None:
    """An attr the op does not define (a flipped byte in its name): TF's import refuses the node, and
    the attr it stands for is missing. Underscored attrs are TF's internal annotations."""
    if node.op in functions:
        return
    defined = attr_names(node.op)
    unknown = sorted(a for a in node.attr if not a.startswith("_") and a not in defined)
    if unknown:
        raise InputError(f"{where}: node '{node.name}' ({node.op}) has an attr {unknown[0][:40]!r} that "
                         f"{node.op} does not define, so TensorFlow cannot load it (a corrupt file?); pass "
                         "the graph as TensorFlow wrote it")


def _refuse_constant_loops(nodes: dict[str, Any], closure: set[str], functions: dict[str, Any],
                           where: Any) -> None:
    """A loop that does not depend on an input is evaluated while converting: nothing bounds it."""
    fed = _depends_on_input(nodes, closure)
    for name in sorted(closure):
        node = nodes[name]
        loops = node.op in LOOP_OPS or any(
            n.op in LOOP_OPS for f in _reachable_functions([node], functions) for n in functions[f].node_def)
        if loops and name not in fed and not _in_fed_frame(nodes, closure, name, fed):
            raise InputError(f"{where}: node '{name}' ({node.op}) is a loop on the constant path (it does not "
                             "depend on an input); refusing to run it")


def _in_fed_frame(nodes: dict[str, Any], closure: set[str], name: str, fed: set[str]) -> bool:
    """A TF1 frame node (a constant's Enter, the LoopCond of a counter) of a loop that an input feeds:
    inside its frame (forward, up to the Exits) it reaches a control-flow node of the loop (NextIteration,
    Merge, Switch, ...) that depends on an input."""
    if nodes[name].op in ("While", "StatelessWhile", "_While", "For"):
        return False
    consumers: dict[str, list[str]] = {}
    for n in closure:
        for i in nodes[n].input:
            consumers.setdefault(_node(i), []).append(n)
    seen, stack = {name}, [name]
    while stack:
        current = stack.pop()
        if current in fed and nodes[current].op in _FRAME_OPS:
            return True
        if nodes[current].op in ("Exit", "RefExit"):
            continue
        for consumer in consumers.get(current, ()):
            if consumer not in seen:
                seen.add(consumer)
                stack.append(consumer)
    return False


def _depends_on_input(nodes: dict[str, Any], closure: set[str]) -> set[str]:
    """The nodes of `closure` reachable forward from an input (data or control edges; cycles are fine)."""
    consumers: dict[str, list[str]] = {}
    for name in closure:
        for i in nodes[name].input:
            consumers.setdefault(_node(i), []).append(name)
    fed = {n for n in closure if nodes[n].op in INPUT_OPS}
    stack = list(fed)
    while stack:
        for consumer in consumers.get(stack.pop(), []):
            if consumer not in fed:
                fed.add(consumer)
                stack.append(consumer)
    return fed


def _without_debug_ops(graph_def: Any) -> Any:
    """Print becomes Identity of its input; PrintV2 and Assert (no data outputs) go with their control edges."""
    out = type(graph_def)()
    out.CopyFrom(graph_def)
    dropped = {n.name for n in out.node if n.op in ("PrintV2", "Assert")}
    kept = [n for n in out.node if n.name not in dropped]
    for node in kept:
        if node.op == "Print":
            data = [i for i in node.input if not i.startswith("^")][:1]
            controls = [i for i in node.input if i.startswith("^")]
            dtype = node.attr["T"].type
            node.op = "Identity"
            del node.input[:]
            node.input.extend(data + controls)
            node.attr.clear()
            node.attr["T"].type = dtype
        if any(_node(i) in dropped for i in node.input):
            remaining = [i for i in node.input if not (i.startswith("^") and _node(i) in dropped)]
            del node.input[:]
            node.input.extend(remaining)
    del out.node[:]
    out.node.extend(kept)
    return out
