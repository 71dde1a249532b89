"""WHILE: unrolled while its trip count is fixed in the file, an IR `while_loop` from the step where the data
decides it. The condition subgraph is run on the loop's known values (counters start as constants and count
by constants: the comparisons and logic below fold them), the body is inlined once per step on the loop's
state, until the condition says stop. That is the loop TFLite's converter writes for a Keras
LSTM/GRU/SimpleRNN over a sequence of static length (and any loop over a constant range): each step is the
body's own operators, so the unrolled graph computes what TFLite's does. A condition that reads run-time
values (a trip count that depends on the data) makes the rest of the loop one `while_loop` node per loop
value, the condition and body nested IR graphs (Builder.nested): a loop value the body passes back unchanged
is an invariant (a known one folds into them), the others are carried and keep their shape and dtype."""

from __future__ import annotations

import numpy as np

from . import layout
from .op import Op
from .table import FOLD, TABLE

# more steps than this is not a sequence model's loop: refused rather than an enormous graph; the node count
# bounds loops nested in loops
MAX_STEPS = 4096
MAX_NODES = 200_000

_COMPARE = {"LESS": np.less, "LESS_EQUAL": np.less_equal, "GREATER": np.greater,
            "GREATER_EQUAL": np.greater_equal, "EQUAL": np.equal, "NOT_EQUAL": np.not_equal,
            "LOGICAL_AND": np.logical_and, "LOGICAL_OR": np.logical_or}


def _compare(fn):
    def fold(op: Op, values: list[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(fn(values[0], values[1]), bool)]

    return fold


for _name, _fn in _COMPARE.items():
    FOLD.register(_name)(_compare(_fn))


@FOLD.register("LOGICAL_NOT")
def logical_not(op: Op, values: list[np.ndarray]) -> list[np.ndarray]:
    return [np.logical_not(values[0])]


def _materialised(op: Op, k: int, state: str | np.ndarray) -> str:
    """A loop output as an IR tensor; a known value also stays known to the operators that read it."""
    if isinstance(state, str):
        return state
    op.values[op.op.outputs[k]] = state
    value = state.astype(np.float32) if state.dtype.kind == "f" else state
    if value.ndim == 4:
        value = value.transpose(layout.TO_NCHW)
    value = np.ascontiguousarray(value).reshape(value.shape)  # a 0-d value stays 0-d
    return op.add("const", [], value.shape, params={"value": value}, suffix=f"/out{k}",
                  out_dtype=str(value.dtype))


@TABLE.register("WHILE")
def while_(op: Op) -> list[str]:
    cond, body = int(op.options.CondSubgraphIndex()), int(op.options.BodySubgraphIndex())
    state: list[str | np.ndarray] = []
    for k in range(len(op.op.inputs)):
        value = op.value(k)
        if value is None and op.tensor(k).variable and op.op.inputs[k] not in op.ir:
            raise op.unsupported(f"input {k} is a variable tensor, state TFLite keeps between invocations (and its "
                                 "recurrent kernels overwrite): a loop starting from it is not converted")
        state.append(value if value is not None else op.x(k))
    for step in range(MAX_STEPS + 1):
        decision = op.call(cond, state, keep_values=True)
        if len(decision) != 1:
            raise op.unsupported(f"its condition (subgraph {cond}) has {len(decision)} outputs, not one boolean")
        go = decision[0]
        if not isinstance(go, np.ndarray):
            return _run_time_loop(op, cond, body, state)
        if go.size != 1:
            raise op.unsupported(f"its condition gives shape {go.shape}, not one boolean")
        if not bool(go.reshape(-1)[0]):
            break
        if step == MAX_STEPS:
            raise op.unsupported(f"it runs more than {MAX_STEPS} steps: too many to unroll")
        if len(op.graph.nodes) > MAX_NODES:
            raise op.unsupported(f"unrolled, the graph passes {MAX_NODES} nodes (loops nested in loops?)")
        state = op.call(body, state, keep_values=True)
        if len(state) != len(op.op.inputs):
            raise op.unsupported(f"its body (subgraph {body}) gives {len(state)} values for a loop of "
                                 f"{len(op.op.inputs)}")
    return [_materialised(op, k, s) for k, s in enumerate(state)]


def _as_tensor(op: Op, k: int, value: str | np.ndarray) -> str:
    """Loop value k as an IR tensor of the outer graph (a known one as a constant)."""
    if isinstance(value, str):
        return value
    value = value.astype(np.float32) if value.dtype.kind == "f" else value
    if value.ndim == 4:
        value = value.transpose(layout.TO_NCHW)
    value = np.ascontiguousarray(value).reshape(value.shape)  # a 0-d value stays 0-d
    return op.add("const", [], value.shape, params={"value": value}, suffix=f"/in{k}", out_dtype=str(value.dtype))


def _run_time_loop(op: Op, cond: int, body: int, state: list[str | np.ndarray]) -> list[str]:
    """The loop from `state` on as IR while_loop nodes (one per loop value), its condition and body nested."""
    tensors = [_as_tensor(op, k, v) for k, v in enumerate(state)]
    probe = op.nested(body, tensors, f"{op.name}/probe")
    invariant = [out == inp for out, inp in zip(probe.outputs, probe.inputs)]
    bound = [v if invariant[k] and isinstance(v, np.ndarray) else tensors[k] for k, v in enumerate(state)]
    runtime = [k for k, b in enumerate(bound) if isinstance(b, str)]
    carried = [k for k in runtime if not invariant[k]]
    if not carried:
        raise op.unsupported(f"its body (subgraph {body}) changes none of the loop's values: the loop never ends "
                             "once it starts")
    order = carried + [k for k in runtime if invariant[k]]  # the node's inputs: loop variables first
    graphs = {"cond": op.nested(cond, bound, f"{op.name}/cond"), "body": op.nested(body, bound, f"{op.name}/body")}
    for graph in graphs.values():
        graph.inputs = [graph.inputs[runtime.index(k)] for k in order]
    go = graphs["cond"].outputs
    if len(go) != 1 or graphs["cond"].tensors[go[0]].dtype != "bool" or int(np.prod(graphs["cond"].shape(go[0]))) != 1:
        raise op.unsupported(f"its condition (subgraph {cond}) does not return one boolean")
    step = graphs["body"]
    step.outputs = [step.outputs[k] for k in carried]
    step.prune()
    for k, out in zip(carried, step.outputs):
        have, want = (step.shape(out), step.tensors[out].dtype), (op.shape(tensors[k]), op.dtype(tensors[k]))
        if have != want:
            raise op.unsupported(f"loop value {k} changes from {want[1]} {list(want[0])} to {have[1]} "
                                 f"{list(have[0])}; a converted loop keeps static shapes and dtypes")
    inputs = [tensors[k] for k in order]
    outs = []
    for k, value in enumerate(state):
        if k not in carried:  # an invariant leaves the loop as it entered
            outs.append(_materialised(op, k, value))
            continue
        i = carried.index(k)
        outs.append(op.add("while_loop", inputs, op.shape(tensors[k]), {**graphs, "carried": len(carried), "output": i},
                           suffix=f"/out{k}" if k else "", out_dtype=op.dtype(tensors[k])))
    return outs
