"""Run-time control flow: a While whose condition reads the data (unroll.py unrolls the others) becomes an
IR `while_loop`, an If whose predicate is computed at run time (training/cond_v2.py folds constant ones)
an IR `cond`; their functions become nested IR graphs (subgraphs.py).

A loop variable the body passes back unchanged is an invariant: a constant one (a weight) is a constant of
the body, a run-time one an extra input. The others are carried and must keep their static shape and dtype.
One IR node per output read (the catalog rows' `output`); a rank-4 tensor crosses into a nested graph as
NCHW.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.ir.subgraph import inputs_reaching
from tf_convert.parsers.common.layout import TO_NCHW

from ..context import Context, NotConvertible
from ..loops import loop_hint
from ..subgraphs import Binding, FunctionNotConvertible
from ..table import tf_op

_VARIANT = ("variant", "resource")  # TensorList / TensorArray handles, resources: no IR tensor holds them


def _perm(ctx: Context, t: Any) -> tuple[int, ...] | None:
    return TO_NCHW if len(ctx.shape(t)) == 4 else None


def _function(ctx: Context, op: Any, attr: str) -> Any:
    name = op.node_def.attr[attr].func.name
    found = next((f for f in ctx.library.function if f.signature.name == name), None)
    if found is None:
        raise NotConvertible(f"its function '{name}' is not in the graph's library; the file is corrupt")
    return found


def _binding(ctx: Context, t: Any, constant: bool) -> Binding:
    if t.dtype is None or t.dtype.name in _VARIANT:
        raise NotConvertible(f"its input '{ctx.shown(t)}' is a {t.dtype.name if t.dtype else 'untyped'} handle "
                             "(a TensorList/TensorArray of run-time length, or a resource): not converted")
    if constant and ctx.is_const(t):
        return Binding(value=ctx.const(t))
    return Binding(dtype=int(t.dtype), dims=ctx.shape(t))


def _build(ctx: Context, op: Any, attr: str, bindings: list[Binding], why: str,
           wanted: list[int] | None = None) -> Any:
    try:
        return ctx.build_function(_function(ctx, op, attr), bindings, f"{op.name}/{attr}", wanted)
    except FunctionNotConvertible as e:
        raise NotConvertible(f"{why}: its {attr} function cannot be converted: {e}") from None


def _same_signature(ctx: Context, op: Any, what: str, tensors: list[str], graph: Any) -> None:
    """Each of `graph`'s outputs has the shape and dtype of IR tensor `tensors[k]`."""
    for k, (tensor, out) in enumerate(zip(tensors, graph.outputs)):
        have, want = (graph.shape(out), graph.tensors[out].dtype), (ctx.graph.shape(tensor),
                                                                   ctx.graph.tensors[tensor].dtype)
        if have != want:
            raise NotConvertible(f"{what} {k} changes from {want[1]} {list(want[0])} to {have[1]} {list(have[0])}; "
                                 "a converted loop or branch keeps static shapes and dtypes")


def _predicate(graph: Any, what: str) -> None:
    out = graph.outputs[0]
    if graph.tensors[out].dtype != "bool" or int(np.prod(graph.shape(out))) != 1:
        raise NotConvertible(f"its {what} returns {graph.tensors[out].dtype} {list(graph.shape(out))}, not one "
                             "boolean")


def _label(ctx: Context, tensor: str) -> str:
    """A tensor as the user knows it: a model input by its own name (`steps`, not `steps:0`)."""
    name = ctx.input_names.get(tensor, tensor)
    return name[:-2] if name.endswith(":0") else name


@tf_op("While", "StatelessWhile")
def while_loop(ctx: Context, op: Any) -> None:
    cond, body = _function(ctx, op, "cond"), _function(ctx, op, "body")
    args = [a.name for a in body.signature.input_arg]
    if not (len(args) == len(op.inputs) == len(body.signature.output_arg) == len(cond.signature.input_arg)):
        raise NotConvertible("its cond/body functions do not take its loop variables; the file is corrupt")
    invariant = {i for i, out in enumerate(body.signature.output_arg) if body.ret.get(out.name) == args[i]}
    why = loop_hint(op.node_def, [t.name for t in op.inputs], {f.signature.name: f for f in ctx.library.function},
                    lambda tensor: tensor not in ctx.consts, lambda tensor: _label(ctx, tensor))
    why = "a While loop whose trip count depends on the data" if "depends on the data" not in why else \
        why.split(": not convertible")[0]
    bindings = [_binding(ctx, t, i in invariant) for i, t in enumerate(op.inputs)]
    runtime = [i for i, b in enumerate(bindings) if not b.is_const]
    carried = [i for i in runtime if i not in invariant]
    order = carried + [i for i in runtime if i in invariant]  # the node's inputs: loop variables first
    inputs = [ctx.ir(op.inputs[i], _perm(ctx, op.inputs[i])) for i in order]
    ir_of = dict(zip(order, inputs))
    cond_graph = _build(ctx, op, "cond", bindings, why)
    body_graph = _build(ctx, op, "body", bindings, why, carried)
    for graph in (cond_graph, body_graph):  # their inputs are the run-time arguments, in argument order
        graph.inputs = [graph.inputs[runtime.index(i)] for i in order]
    _predicate(cond_graph, "condition")
    _same_signature(ctx, op, "loop variable", inputs[:len(carried)], body_graph)
    kept = _live_variables(op, carried, cond_graph, body_graph)
    if len(kept) < len(carried):  # TF2's iteration counter, a bound nothing reads: no need to carry them
        inputs = [inputs[k] for k in kept] + inputs[len(carried):]
        for graph in (cond_graph, body_graph):
            graph.inputs = [graph.inputs[k] for k in kept] + graph.inputs[len(carried):]
        body_graph.outputs = [body_graph.outputs[k] for k in kept]
        body_graph.prune()
        cond_graph.prune()
        carried = [carried[k] for k in kept]
    for i, t in enumerate(op.outputs):
        if i not in carried:  # an invariant leaves the loop as it entered
            if i in invariant and not bindings[i].is_const:
                ctx.set(t, ir_of[i], _perm(ctx, op.inputs[i]))
            elif bindings[i].is_const:
                ctx.consts[t.name] = bindings[i].value
            continue
        k = carried.index(i)
        name = ctx.emit("while_loop", f"{op.name}/{k}" if k else op.name, inputs, ctx.graph.shape(inputs[k]),
                        {"cond": cond_graph, "body": body_graph, "carried": len(carried), "output": k},
                        source_op=op.type, out_dtype=ctx.graph.tensors[inputs[k]].dtype)
        ctx.set(t, name, _perm(ctx, op.inputs[i]))


def _live_variables(op: Any, carried: list[int], cond: Any, body: Any) -> list[int]:
    """The positions in `carried` of the loop variables that matter: read after the loop or by the
    condition, or needed for the next value of one that is (all, when the loop's outputs have no readers
    in the graph: an output picked by --outputs then keeps its variable)."""
    if not any(op.outputs[i].consumers() for i in carried):
        return list(range(len(carried)))
    live = {k for k, i in enumerate(carried) if op.outputs[i].consumers()}
    live |= {k for k in inputs_reaching(cond, cond.outputs) if k < len(carried)}
    grown = True
    while grown:
        more = {j for k in live for j in inputs_reaching(body, [body.outputs[k]]) if j < len(carried)}
        grown = not more <= live
        live |= more
    return sorted(live)


@tf_op("If", "StatelessIf")
def if_(ctx: Context, op: Any) -> None:
    pred, operands = op.inputs[0], list(op.inputs[1:])
    if ctx.is_const(pred):  # folded before the parser in the usual case (training/cond_v2.py)
        raise NotConvertible("its predicate is a constant the converter did not fold; pass a frozen graph")
    if pred.dtype is None or pred.dtype.name != "bool":
        raise NotConvertible(f"its predicate '{ctx.shown(pred)}' is {pred.dtype.name if pred.dtype else 'untyped'}, "
                             "not bool")
    why = "an If whose predicate is computed at run time"
    bindings = [_binding(ctx, t, True) for t in operands]
    runtime = [i for i, b in enumerate(bindings) if not b.is_const]
    inputs = [ctx.ir(pred, None)] + [ctx.ir(operands[i], _perm(ctx, operands[i])) for i in runtime]
    if ctx.graph.shape(inputs[0]) not in ((), (1,)):
        raise NotConvertible(f"its predicate '{ctx.shown(pred)}' has shape {list(ctx.graph.shape(inputs[0]))}, "
                             "not one boolean")
    branches = {attr: _build(ctx, op, attr, bindings, why) for attr in ("then_branch", "else_branch")}
    then_graph, else_graph = branches["then_branch"], branches["else_branch"]
    for k, (a, b) in enumerate(zip(then_graph.outputs, else_graph.outputs)):
        if (then_graph.shape(a), then_graph.tensors[a].dtype) != (else_graph.shape(b), else_graph.tensors[b].dtype):
            raise NotConvertible(f"{why}: its branches return different shapes or dtypes for output {k} "
                                 f"({list(then_graph.shape(a))} vs {list(else_graph.shape(b))}); a converted "
                                 "branch keeps static shapes")
    for k, t in enumerate(op.outputs):
        out = then_graph.outputs[k]
        name = ctx.emit("cond", f"{op.name}/{k}" if k else op.name, inputs, then_graph.shape(out),
                        {"then_branch": then_graph, "else_branch": else_graph, "output": k},
                        source_op=op.type, out_dtype=then_graph.tensors[out].dtype)
        ctx.set(t, name, TO_NCHW if len(then_graph.shape(out)) == 4 else None)
