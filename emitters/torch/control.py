"""The PyTorch handlers of the control family: a run-time loop as a plain Python `while`, a conditional as
`if`/`else` in forward(), their nested graphs lowered node by node with the same handlers.

A loop is written `while True:` + the condition's lines + `if not bool(cond): break` + the body's lines +
the loop variables' update, so the condition is written once. The loop variables are the identifiers of the
nodes reading them (the IR's one node per output read, `convert.ir.subgraph.siblings`): the first node writes
the one loop, the others are the variables it leaves (`Lowered.computes`). A conditional likewise assigns
every output read in each branch. Nested nodes take identifiers from the model's namer (codegen.py passes it
in the Ctx): their buffers and submodules join the model's.
"""

from __future__ import annotations

from collections.abc import Sequence

from tf_convert.convert import ir
from tf_convert.convert.ir.subgraph import siblings

from .contract import TABLE, Ctx, Lowered


def _lower(ctx: Ctx, graph: ir.Graph, args: Sequence[str], into: Lowered) -> list[str]:
    """The lines computing `graph` from the expressions `args` (one per graph input) added to `into.lines`;
    its buffers, submodules and state go to `into`. Returns the expressions of its outputs."""
    exprs = dict(zip(graph.inputs, args))
    index = ir.GraphIndex(graph)
    for node in graph.nodes:
        if node.output in exprs:  # another output of a loop or branch lowered already
            continue
        var = ctx.namer.name(f"{ctx.node.name}/{node.name}", node.op)
        sub = Ctx(node=node, graph=graph, options=ctx.options, index=index,
                  args=tuple(exprs[i] for i in node.inputs), in_shapes=tuple(graph.shape(i) for i in node.inputs),
                  out_shape=graph.shape(node.output), var=var, namer=ctx.namer)
        result = TABLE.get(node.op)(sub)
        exprs[node.output] = result.expr or var
        exprs.update(result.computes)
        into.lines += result.lines
        into.modules += result.modules
        into.buffers += result.buffers
        into.state.update(result.state)
        into.pad_layers += result.pad_layers
    return [exprs[t] for t in graph.outputs]


def _indented(lines: list[str]) -> list[str]:
    return [f"    {line}" for line in lines]


def _readers(ctx: Ctx) -> tuple[dict[int, str], dict[str, int]]:
    """The identifiers of the outputs read (output -> identifier; this node's is its own `var`) and the
    outputs of the other nodes of the same loop or branch (IR tensor -> output)."""
    names, others = {int(ctx.attrs["output"]): ctx.var}, {}
    for node in siblings(ctx.index, ctx.node):
        k = int(node.attrs["output"])
        if node is not ctx.node:
            names.setdefault(k, ctx.namer.name(node.name, node.op))
            others[node.output] = k
    return names, others


@TABLE.register("while_loop", limit=TABLE.nested_limit)
def while_loop(ctx: Ctx) -> Lowered:
    carried = int(ctx.attrs["carried"])
    cond, body = ctx.attrs["cond"], ctx.attrs["body"]
    read, others = _readers(ctx)
    names = [read.get(k) or ctx.namer.name(f"{ctx.node.name}/{t}", "v") for k, t in enumerate(body.inputs[:carried])]
    state = names + list(ctx.args[carried:])
    out = Lowered(lines=[f"# a loop of run-time length ({ctx.node.source_op or 'while_loop'} '{ctx.node.name}')"])
    out.lines += [f"{n} = {a}" for n, a in zip(names, ctx.args[:carried])]
    inner = Lowered()
    [go] = _lower(ctx, cond, state, inner)
    inner.lines.append(f"if not bool({go}):")
    inner.lines.append("    break")
    following = _lower(ctx, body, state, inner)
    inner.lines.append(f"{', '.join(names)} = {', '.join(following)}")
    out.lines += ["while True:", *_indented(inner.lines)]
    out.modules, out.buffers, out.state, out.pad_layers = inner.modules, inner.buffers, inner.state, inner.pad_layers
    out.computes = {t: names[k] for t, k in others.items()}
    return out


@TABLE.register("cond", limit=TABLE.nested_limit)
def cond(ctx: Ctx) -> Lowered:
    read, others = _readers(ctx)
    out = Lowered(lines=[f"# a branch chosen at run time ({ctx.node.source_op or 'cond'} '{ctx.node.name}')"])
    for keyword, attr in ((f"if bool({ctx.args[0]}):", "then_branch"), ("else:", "else_branch")):
        inner = Lowered()
        results = _lower(ctx, ctx.attrs[attr], ctx.args[1:], inner)
        inner.lines += [f"{name} = {results[k]}" for k, name in sorted(read.items())]
        out.lines += [keyword, *_indented(inner.lines)]
        out.modules += inner.modules
        out.buffers += inner.buffers
        out.state.update(inner.state)
        out.pad_layers += inner.pad_layers
    out.computes = {t: read[k] for t, k in others.items()}
    return out
