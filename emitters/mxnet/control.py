"""The MXNet handler of the control family: a conditional with a run-time predicate runs both branches and
`where` picks each output by the predicate (convert.ir.subgraph.branches_selected): exact, every value is the
taken branch's own. The first node of one conditional (convert.ir.subgraph.siblings) computes every output
read (`Fragment.computes`), the branches once. Not MXNet's contrib.cond: its branches are nested symbol
graphs, which the plain symbol file this emitter writes does not hold. A loop of run-time length stays
refused (the catalog row says why).
"""

from __future__ import annotations

from tf_convert.convert import ir
from tf_convert.convert.ir.subgraph import branches_selected, siblings

from .contract import TABLE, Ctx, Fragment
from .symbol import safe_name


@TABLE.register("cond", limit=TABLE.nested_limit)
def cond(ctx: Ctx) -> Fragment:
    inline = branches_selected(ctx.graph, siblings(ctx.index, ctx.node))
    refs = dict(zip(ctx.node.inputs, ctx.inputs))
    index = ir.GraphIndex(inline)
    f, inner = Fragment(), len(ctx.node.name) + 1  # inlined nodes are named `<node>/<part>`
    for node in inline.nodes:
        if node.output in refs:  # a nested conditional's other output, computed with its first one
            continue
        name = ctx.name if node.output == ctx.node.output else safe_name(f"{ctx.name}/{node.name[inner:]}")
        part = TABLE.get(node.op)(Ctx(node, inline, ctx.options, index, [refs[i] for i in node.inputs], name))
        f.nodes += part.nodes
        f.params.update(part.params)
        f.aux |= part.aux
        f.pad_layers += part.pad_layers
        refs[node.output] = part.output
        refs.update(part.computes)
    f.output = refs[ctx.node.output]
    f.computes = {t: refs[t] for t in inline.outputs if t != ctx.node.output}
    return f
