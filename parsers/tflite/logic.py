"""LOGICAL_NOT, SELECT / SELECT_V2, and IF: a run-time predicate chooses a subgraph (the comparisons and the
binary logical builtins are catalog rows' `tflite=`, registered with the elementwise ones). An IF whose
predicate folds to a number inlines the branch it takes; otherwise it is an IR `cond` (one node per output),
its branches nested IR graphs (Builder.nested): only the branch the predicate picks runs, as in TFLite."""

from __future__ import annotations

import numpy as np

from tf_convert.parsers.common.layout import nhwc_reshape

from .elementwise import operand
from .op import Op
from .table import TABLE


@TABLE.register("LOGICAL_NOT")
def logical_not(op: Op) -> list[str]:
    x = op.x()
    return [op.add("logical_not", [x], op.shape(x), out_dtype="bool")]


def _select(op: Op, rank_one_rows: bool) -> str:
    """where(cond, a, b) with numpy broadcasting; SELECT (v1) also takes a rank-1 condition over a higher-rank
    a/b as one flag per row (TFLite's RankOneSelect)."""
    shapes = [op.source_shape(k) for k in range(3)]
    rank = max(len(s) for s in shapes)
    if rank_one_rows and len(shapes[0]) == 1 and rank > 1:
        rows = (shapes[0][0],) + (1,) * (rank - 1)
        value = op.value(0)
        cond = (op.add("const", [], rows, params={"value": value.reshape(rows)}, suffix="/c0", out_dtype="bool")
                if value is not None else nhwc_reshape(op, op.x(0), rows))
    else:
        cond = operand(op, 0, rank)
    a, b = operand(op, 1, rank), operand(op, 2, rank)
    shape = tuple(np.broadcast_shapes(op.shape(cond), op.shape(a), op.shape(b)))
    return op.add("select", [cond, a, b], shape, out_dtype=op.dtype(a))


@TABLE.register("SELECT")
def select(op: Op) -> list[str]:
    return [_select(op, rank_one_rows=True)]


@TABLE.register("SELECT_V2")
def select_v2(op: Op) -> list[str]:
    return [_select(op, rank_one_rows=False)]


@TABLE.register("IF")
def if_(op: Op) -> list[str]:
    """The branch the predicate takes; a `cond` when the predicate is computed at run time."""
    then_index, else_index = int(op.options.ThenSubgraphIndex()), int(op.options.ElseSubgraphIndex())
    # constants go in as values, so a branch's FULLY_CONNECTED or CONV_2D reads its weights as constants
    args = [op.value(k) if op.value(k) is not None else op.x(k) for k in range(1, len(op.op.inputs))]
    known = op.value(0)
    if known is not None:
        return op.call(then_index if bool(np.asarray(known).reshape(-1)[0]) else else_index, args)
    predicate = op.x(0)
    if int(np.prod(op.shape(predicate))) != 1 or op.dtype(predicate) != "bool":
        raise op.unsupported(f"a predicate of shape {op.source_shape(0)} and dtype {op.dtype(predicate)} (TFLite "
                             "takes one boolean)")
    branches = {"then_branch": op.nested(then_index, args, f"{op.name}/then"),
                "else_branch": op.nested(else_index, args, f"{op.name}/else")}
    then, other = branches["then_branch"], branches["else_branch"]
    inputs = [predicate] + [t for t in args if isinstance(t, str)]
    outs = []
    for k, (t, e) in enumerate(zip(then.outputs, other.outputs)):
        if (then.shape(t), then.tensors[t].dtype) != (other.shape(e), other.tensors[e].dtype):
            raise op.unsupported(f"output {k}: the branches give {then.tensors[t].dtype} {list(then.shape(t))} and "
                                 f"{other.tensors[e].dtype} {list(other.shape(e))}")
        outs.append(op.add("cond", inputs, then.shape(t), {**branches, "output": k}, suffix=f"/out{k}" if k else "",
                           out_dtype=then.tensors[t].dtype))
    return outs
