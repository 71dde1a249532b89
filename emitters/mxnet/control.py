"""The MXNet handler of the control family: a conditional with a run-time predicate runs both branches and
`where` picks each output by the predicate (convert.ir.subgraph.branches_selected): exact, every value is the
taken branch's own. Not MXNet's contrib.cond: its branches are nested symbol graphs, which the plain symbol
file this emitter writes does not hold. A loop of run-time length stays refused (the catalog row says why).
"""

from __future__ import annotations

from tf_convert.convert import ir
from tf_convert.convert.ir.subgraph import branches_selected

from .contract import TABLE, Ctx, Fragment
from .symbol import safe_name


@TABLE.register("cond", limit=TABLE.nested_limit)
def cond(ctx: Ctx) -> Fragment:
    inline = branches_selected(ctx.graph, ctx.node)
    refs = dict(zip(ctx.node.inputs, ctx.inputs))
    index = ir.GraphIndex(inline)
    f, inner = Fragment(), len(ctx.node.name) + 1  # inlined nodes are named `<node>/<branch>/<name>`
    for node in inline.nodes:
        name = ctx.name if node.output == ctx.node.output else safe_name(f"{ctx.name}/{node.name[inner:]}")
        part = TABLE.get(node.op)(Ctx(node, inline, ctx.options, index, [refs[i] for i in node.inputs], name))
        f.nodes += part.nodes
        f.params.update(part.params)
        f.aux |= part.aux
        f.pad_layers += part.pad_layers
        refs[node.output] = part.output
    f.output = refs[ctx.node.output]
    return f
