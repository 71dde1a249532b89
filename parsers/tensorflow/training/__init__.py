"""Training graph -> inference graph, on the GraphDef, by passes this project owns.

Run in this order (each one module):
  1. prune.drop_hints          stale `_output_shapes` and `_class` colocation hints go;
     deprecated                ops current TF removed -> their equivalent (BatchNormWithGlobalNormalization)
     tables                    a lookup in a constant numeric hash table -> the lookup in plain ops
  2. flags                     scalar PlaceholderWithDefault -> its default, or the --set value
  3. cond_v1 / cond_v2         Switch/Merge and If/Case with a constant predicate -> branch taken
                               (repeated with inlining until nothing changes: branches nest)
  4. io.choose                 outputs, then the inputs they depend on (or the user's names);
                               a plain scalar placeholder the outputs need asks for --set, except
                               a bool one that only switches batch norm / dropout to training mode
                               (mode_flag): it is taken as false and its conds fold (3 again)
  5. batchnorm                 training-mode batch norm -> moving statistics
  6. dropout                   training-form dropout -> identity
  7. prune.cut_inputs          non-placeholder inputs (IteratorGetNext:0, batch:0) -> placeholders;
                               then `check` (the loader's safety check) sees what the outputs need
  8. prune.keep_needed         only what the outputs need; optimizer, summaries, savers, pipeline go
  9. variables.freeze          variables -> constants from the checkpoint files (--use-ema)
Nothing here runs the graph in a TF session (TF is used for its protos and, for a cut at a
non-placeholder tensor, shape inference).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tf_convert.convert.errors import UsageError

from ..graphio import node_of
from ..inline import inline_calls
from ..protos import GraphDef
from ..tensors import dtype_name
from . import batchnorm, cond_v1, cond_v2, deprecated, dropout, flags, io, mode_flag, prune, tables, variables
from .graph import GraphView

_MAX_ROUNDS = 64  # nesting depth of conds


@dataclass
class Prepared:
    graph_def: Any
    inputs: list[str]
    outputs: list[str]
    notes: list[str] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)
    weights: dict[str, Any] = field(default_factory=dict)  # Const node name -> its (lazy) value


def _fold_control_flow(graph_def: Any, records: list[dict], keep: list[str]) -> Any:
    rounds: list[dict] = []
    for _ in range(_MAX_ROUNDS):
        view = GraphView(graph_def)
        folded_v1 = cond_v1.apply(view, rounds)
        folded_v2 = cond_v2.apply(view, rounds)
        if not folded_v1 and not folded_v2:
            break
        graph_def = inline_calls(view.graph_def, keep=keep) if folded_v2 else view.graph_def
    records.extend(_summed(rounds))
    return graph_def


def _summed(rounds: list[dict]) -> list[dict]:
    """One record per kind of cond, however many rounds nesting took."""
    v1 = [r for r in rounds if r["pass"] == "cond_v1"]
    v2 = [r for r in rounds if r["pass"] == "cond_v2"]
    result = []
    if v1:
        switches, removed = sum(r["switches"] for r in v1), sum(r["removed"] for r in v1)
        result.append({"pass": "cond_v1", "switches": switches, "merges": sum(r["merges"] for r in v1),
                       "removed": removed, "note": f"v1 cond: {switches} Switch nodes with a constant "
                                                   f"predicate folded, {removed} nodes of untaken branches removed"})
    if v2:
        folded = sum(r["folded"] for r in v2)
        result.append({"pass": "cond_v2", "folded": folded,
                       "note": f"v2 cond: {folded} If/Case nodes with a constant predicate folded"})
    return result


def _unset_flags(view: GraphView, live: set[str], inputs: list[str]) -> list[str]:
    """The plain scalar placeholders (no default, not fed) the outputs depend on."""
    feeds = {node_of(t) for t in inputs}
    return [name for name in sorted(live) if view.nodes[name].op == "Placeholder"
            and flags.is_flag(view.nodes[name]) and name not in feeds]


def _default_mode_flags(view: GraphView, live: set[str], inputs: list[str], records: list[dict]) -> bool:
    """Bool flags that only switch batch norm / dropout to training mode become false (inference)."""
    chosen = [name for name in _unset_flags(view, live, inputs)
              if mode_flag.is_candidate(view.nodes[name]) and mode_flag.why_not(view, name, live) is None]
    for name in chosen:
        flags.fix(view, name, np.asarray(False), "inference default: it only switches batch norm and "
                  "dropout to training mode; --set to choose", records)
    return bool(chosen)


def _check_flags(view: GraphView, live: set[str], inputs: list[str]) -> None:
    for name in _unset_flags(view, live, inputs):
        node = view.nodes[name]
        dtype = dtype_name(node.attr["dtype"].type)
        example = "false" if dtype == "bool" else "1.0"
        why = mode_flag.why_not(view, name, live) if mode_flag.is_candidate(node) else None
        because = f" ({why}, so it is not taken as false for inference)" if why else ""
        raise UsageError(f"placeholder '{name}' ({dtype} scalar, no default) decides what the outputs "
                         f"compute{because}; pass --set {name}={example} (e.g. is_training=false for inference)")


def prepare(graph_def: Any, *, inputs: list[str] | None, outputs: list[str] | None,
            settings: dict[str, str], use_ema: bool = False, reader: Any = None, prefix: str = "",
            default_inputs: list[str] | None = None, default_outputs: list[str] | None = None,
            check: Any = None) -> Prepared:
    """The inference graph of `graph_def` (a copy): passes 1-9 above."""

    work = GraphDef()
    work.CopyFrom(graph_def)
    records: list[dict] = []
    notes: list[str] = []
    prune.drop_hints(work)
    view = GraphView(work)
    deprecated.apply(view, records)
    tables.apply(view, records)
    flags.apply(view, settings, records)
    view = GraphView(_fold_control_flow(view.graph_def, records, (inputs or []) + (outputs or [])))
    ins, outs = io.choose(view, inputs, outputs, [], default_inputs, default_outputs)
    live = view.ancestors([node_of(o) for o in outs], stop={node_of(i) for i in ins}, control=False)
    if _default_mode_flags(view, live, ins, records):  # their conds fold now: choose again after
        view = GraphView(_fold_control_flow(view.graph_def, records, (inputs or []) + (outputs or [])))
    ins, outs = io.choose(view, inputs, outputs, notes, default_inputs, default_outputs)
    io.check_outputs(view, outs)
    live = view.ancestors([node_of(o) for o in outs], stop={node_of(i) for i in ins}, control=False)
    _check_flags(view, live, ins)
    batchnorm.apply(view, live, records)
    dropout.apply(view, live, records)
    ins = prune.cut_inputs(view, ins)
    if check is not None:  # the safety check sees the control edges keep_needed drops
        view = GraphView(check(view.graph_def, outs))
    prune.keep_needed(view, outs)
    weights: dict[str, Any] = {}
    variables.freeze(view, reader, prefix, use_ema, records, weights)
    notes.extend(r["note"] for r in records if r.get("note"))
    return Prepared(view.graph_def, ins, outs, notes, records, weights)


__all__ = ["prepare", "Prepared"]
