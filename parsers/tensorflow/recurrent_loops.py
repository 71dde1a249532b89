"""TF While loops whose body is a known recurrent cell, raised to one IR lstm/gru/rnn node,
as tf2onnx's lstm/gru rewriters do; unroll.py calls `raise_loop` before unrolling a loop.

A Keras 3 RNN (exported SavedModel) and a TF1 `dynamic_rnn` both write the same loop: a time counter
t from 0, an input TensorList made from the time-major sequence (read with GetItem at t), an output
TensorList (SetItem of the new h at t), the states (h, and c for an LSTM) starting at zero, and the
weights passed through unchanged. The cell is matched from the body's results down, strictly:
- every gate pre-activation must be an affine form of x_t and h (MatMul by a constant, a ConcatV2
  [x_t, h] before the MatMul, BiasAdd/Add of constants, Split/StridedSlice into column blocks);
  constants the body computes from the weights alone (a sliced kernel) are evaluated here;
- the gates' wiring must be exactly Keras's LSTM (i, f, c, o; TF1's i, j, f, o and its forget bias
  come out of the wiring: which gate multiplies c, which the candidate), GRU (reset_after both ways;
  TF1 GRUCell's r, u split after the sigmoid) or SimpleRNN, with activations sigmoid, tanh, relu or
  none;
- the body may hold no op outside the few these are written with (a peephole, a clip, a mask...
  fall back).
Anything else returns None and the loop is unrolled as before (exact). The weights become the IR's
canonical ones (convert/ir/ops.py: gate blocks in Keras order, a constant added to a gate folded
into bias_ih); the loop becomes one RECURRENT_OP node (tfgraph/shapes/nn_recurrent.py) that the op
handler (ops/nn_recurrent_loop.py) turns into the IR node. TensorFlow is not needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .graphio import split_ref
from .inline import body_nodes
from .protos import GraphDef
from .tensors import const_node
from .tfgraph import Graph
from .tfgraph.shapes.nn_recurrent import RECURRENT_OP
from .tfgraph.static import TensorShape

_ACTIVATIONS = {"Sigmoid": "sigmoid", "Tanh": "tanh", "Relu": "relu"}  # else no op: 'linear'
_PASS = frozenset({"Identity", "Snapshot"})
# every op a recognized body may hold (dead ones included): anything else falls back to unrolling
_BODY_OPS = frozenset({"Const", "Identity", "Snapshot", "NoOp", "MatMul", "BiasAdd", "AddV2", "Add", "Sub", "Mul",
                       "Split", "Squeeze", "StridedSlice", "ConcatV2", "Sigmoid", "Tanh", "Relu",
                       "TensorListGetItem", "TensorListSetItem"})
_VARIANT = 21  # DT_VARIANT: a TensorList
_ARG = "recurrent_arg_"


@dataclass
class _Form:
    """An affine function of the step's vectors: sum over sources (x, h, rh: r * h) of source @ W
    (None: the source itself) plus a bias per side ('x' -> bias_ih, 'h' -> bias_hh)."""

    weights: dict[str, np.ndarray | None]
    biases: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class Raised:
    """What replaces a recognized loop: new GraphDef nodes, each loop variable's final value, and
    the node whose output 0 is the time-major sequence the output list holds (for stack_sequences)."""

    nodes: list[Any]
    finals: list[str]
    sequence_list: str
    note: str


class _Body:
    """The loop body's nodes, with its arguments bound to nodes `recurrent_arg_<i>` (a Const for a
    constant loop-invariant one), and the numpy value of what is computed from constants only."""

    def __init__(self, loop: Any, library: dict[str, Any], graph: Graph):

        self.loop = loop
        bound = {a: f"{_ARG}{i}" for i, a in enumerate(loop.args)}
        nodes, self.returns = body_nodes(loop.body, library, "body/", bound)
        self.nodes = {n.name: n for n in nodes}
        types = list(loop.node.attr["T"].list.type)
        graph_def = GraphDef()
        for i in range(len(loop.args)):
            outer = graph.get_tensor_by_name(_canonical(loop.refs[i]))
            if i in loop.invariant and i in loop.first and types[i] != _VARIANT:
                graph_def.node.append(const_node(f"{_ARG}{i}", loop.first[i]))
            else:
                graph_def.node.append(_placeholder(f"{_ARG}{i}", types[i], outer.shape.as_list()
                                                   if outer.shape.rank is not None else None))
        graph_def.node.extend(nodes)
        self.graph = Graph(graph_def)

    def source(self, ref: str) -> tuple[str, int]:
        name, index, _ = split_ref(ref)
        while name in self.nodes and self.nodes[name].op in _PASS:
            name, index, _ = split_ref(self.data_inputs(name)[0])
        return name, index

    def node(self, ref: str) -> Any:
        return self.nodes.get(self.source(ref)[0])

    def op(self, ref: str) -> str:
        node = self.node(ref)
        return node.op if node is not None else ""

    def data_inputs(self, name: str) -> list[str]:
        return [r for r in self.nodes[name].input if not r.startswith("^")]

    def arg(self, ref: str) -> int | None:
        name, _ = self.source(ref)
        return int(name[len(_ARG):]) if name.startswith(_ARG) else None

    def value(self, ref: str) -> np.ndarray | None:
        name, index = self.source(ref)
        value = self.graph.evaluator.value(self.graph.get_tensor_by_name(f"{name}:{index}"))
        return None if value is None else np.asarray(value)


def _canonical(ref: str) -> str:
    node, index, _ = split_ref(ref)
    return f"{node}:{index}"


def _placeholder(name: str, dtype: int, dims: list | None) -> Any:

    node = GraphDef().node.add(name=name, op="Placeholder")
    node.attr["dtype"].type = dtype
    node.attr["shape"].shape.CopyFrom(TensorShape(dims).as_proto())
    return node


# ---- affine forms of x_t and h ------------------------------------------------------------------


class _Forms:
    """The affine form (_Form) of a body tensor, or None where it is anything else."""

    def __init__(self, body: _Body, x_ref: str, sources: dict[int | str, str], features: int, units: int):
        self.body = body
        self.x = body.source(x_ref)
        self.sources = sources  # loop variable index or body node name -> source name ('h', 'rh')
        self.widths = {"x": features, "h": units, "rh": units}

    def width(self, form: _Form) -> int:
        """The number of columns of `form`."""
        for name, w in form.weights.items():
            return self.widths[name] if w is None else w.shape[1]
        raise ValueError("a form without a source")

    def identity(self, ref: str) -> str | None:
        if self.body.source(ref) == self.x:
            return "x"
        arg = self.body.arg(ref)
        key = arg if arg is not None else self.body.source(ref)[0]
        return self.sources.get(key)

    def form(self, ref: str) -> _Form | None:
        body = self.body
        name = self.identity(ref)
        if name is not None:
            return _Form({name: None})
        node = body.node(ref)
        if node is None or body.value(ref) is not None:
            return None
        inputs = body.data_inputs(node.name)
        if node.op == "MatMul" and len(inputs) == 2:
            return self._matmul(node, *inputs)
        if node.op in ("BiasAdd", "AddV2", "Add") and len(inputs) == 2:
            return self._add(*inputs)
        if node.op == "Split" and len(inputs) == 2:
            return self._split(node, ref, *inputs)
        if node.op == "StridedSlice" and len(inputs) == 4:
            return self._strided(node, *inputs)
        return None

    def _matmul(self, node: Any, a: str, w: str) -> _Form | None:
        if node.attr["transpose_a"].b or node.attr["transpose_b"].b:
            return None
        kernel = self.body.value(w)
        if kernel is None or kernel.ndim != 2:
            return None
        parts = [a]
        concat = self.body.node(a)
        if concat is not None and concat.op == "ConcatV2" and self.body.value(a) is None:
            *parts, axis = self.body.data_inputs(concat.name)
            if self.body.value(axis) is None or int(self.body.value(axis)) not in (1, -1):
                return None
        names = [self.identity(p) for p in parts]
        if None in names or len(set(names)) != len(names) or sum(self.widths[n] for n in names) != kernel.shape[0]:
            return None
        rows = np.cumsum([0, *(self.widths[n] for n in names)])
        return _Form({n: kernel[rows[k]:rows[k + 1]] for k, n in enumerate(names)})

    def _add(self, a: str, b: str) -> _Form | None:
        fa, fb = self.form(a), self.form(b)
        if fa is not None and fb is not None:
            if fa.weights.keys() & fb.weights.keys() or fa.biases.keys() & fb.biases.keys():
                return None
            return _Form(fa.weights | fb.weights, fa.biases | fb.biases)
        form, const = (fa, self.body.value(b)) if fa is not None else (fb, self.body.value(a))
        if form is None or const is None or const.dtype != np.float32 or const.ndim > 1:
            return None
        side = "h" if set(form.weights) == {"h"} else "x"
        biases = dict(form.biases)
        biases[side] = biases.get(side, np.float32(0)) + const  # broadcast as TF's add does
        return _Form(form.weights, biases)

    def _columns(self, form: _Form, start: int, stop: int, width: int) -> _Form:
        weights = {}
        for name, w in form.weights.items():
            w = np.eye(width, dtype=np.float32) if w is None else w
            weights[name] = w[:, start:stop]
        biases = {side: np.broadcast_to(b, (width,))[start:stop] for side, b in form.biases.items()}
        return _Form(weights, biases)

    def _split(self, node: Any, ref: str, axis: str, value: str) -> _Form | None:
        dim = self.body.value(axis)
        form = self.form(value)
        count = node.attr["num_split"].i
        if dim is None or int(dim) not in (1, -1) or form is None or not count or self.width(form) % count:
            return None
        width = self.width(form)
        size = width // count
        index = self.body.source(ref)[1]
        return self._columns(form, index * size, (index + 1) * size, width)

    def _strided(self, node: Any, x: str, *bounds: str) -> _Form | None:
        form = self.form(x)
        values = [self.body.value(b) for b in bounds]
        width = 0 if form is None else self.width(form)
        masks = {k: node.attr[k].i for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                             "shrink_axis_mask")}
        if form is None or not width or any(v is None or v.shape != (2,) for v in values) or \
                masks["ellipsis_mask"] or masks["new_axis_mask"] or masks["shrink_axis_mask"]:
            return None
        begin, end, strides = (v.tolist() for v in values)
        if not (masks["begin_mask"] & 1 and masks["end_mask"] & 1 and strides == [1, 1]):
            return None  # rows: every batch row
        start = None if masks["begin_mask"] & 2 else begin[1]
        stop = None if masks["end_mask"] & 2 else end[1]
        start, stop, _ = slice(start, stop).indices(width)
        return self._columns(form, start, stop, width) if stop > start else None


# ---- the cells --------------------------------------------------------------------------------


@dataclass
class _Gate:
    activation: str
    form: _Form
    node: str  # the activation's node (the pre-activation's where there is none)


class _Cells:
    def __init__(self, body: _Body, forms: _Forms):
        self.body, self.forms = body, forms

    def same(self, a: str, b: str) -> bool:
        return self.body.source(a) == self.body.source(b)

    def operands(self, ref: str, op: str) -> list[str] | None:
        node = self.body.node(ref)
        if node is None or node.op != op:
            return None
        inputs = self.body.data_inputs(node.name)
        return inputs if len(inputs) == 2 else None

    def pairs(self, ref: str, op: str) -> list[tuple[str, str]]:
        """(a, b) and (b, a) for a commutative op's operands."""
        inputs = self.operands(ref, op) or (self.operands(ref, "Add") if op == "AddV2" else None)
        return [] if inputs is None else [(inputs[0], inputs[1]), (inputs[1], inputs[0])]

    def activated(self, ref: str) -> tuple[str, str]:
        """(activation, its input) of tensor `ref`; ('linear', ref) where no activation op makes it."""
        node = self.body.node(ref)
        if node is not None and node.op in _ACTIVATIONS:
            return _ACTIVATIONS[node.op], self.body.data_inputs(node.name)[0]
        return "linear", ref

    def gate(self, ref: str, sources: set[str] = frozenset({"x", "h"})) -> _Gate | None:
        """An activation of an affine form; also Split(activation(form))[k] (TF1's GRUCell)."""
        body = self.body
        node = body.node(ref)
        if node is not None and node.op == "Split" and len(body.data_inputs(node.name)) == 2:
            axis, value = body.data_inputs(node.name)
            activation, inner = self.activated(value)
            form = self.forms.form(inner)
            width, count = (0 if form is None else self.forms.width(form)), node.attr["num_split"].i
            if activation != "linear" and form is not None and width and count and not width % count and \
                    body.value(axis) is not None and int(body.value(axis)) in (1, -1):
                size, index = width // count, body.source(ref)[1]
                form = self.forms._columns(form, index * size, (index + 1) * size, width)
                return _Gate(activation, form, f"{node.name}:{index}") if set(form.weights) <= sources else None
        activation, inner = self.activated(ref)
        form = self.forms.form(inner)
        if form is None or not set(form.weights) <= sources:
            return None
        return _Gate(activation, form, body.source(ref)[0] + f":{body.source(ref)[1]}")

    def lstm(self, h_next: str, c_next: str, c_arg: int) -> dict | None:
        for out_gate, c_act in self.pairs(h_next, "Mul"):
            o = self.gate(out_gate)
            activation, cell = self.activated(c_act)
            if o is None or not self.same(cell, c_next):
                continue
            for keep, write in self.pairs(c_next, "AddV2"):
                f = next((self.gate(g) for g, c in self.pairs(keep, "Mul") if self.body.arg(c) == c_arg), None)
                for i_ref, g_ref in self.pairs(write, "Mul"):
                    i, g = self.gate(i_ref), self.gate(g_ref)
                    if f is None or i is None or g is None or g.activation != activation or \
                            not i.activation == f.activation == o.activation:
                        continue
                    return {"op": "lstm", "gates": [i, f, g, o], "activation": activation,
                            "recurrent_activation": o.activation}
        return None

    def gru(self, h_next: str, h_arg: int) -> dict | None:
        for keep, write in self.pairs(h_next, "AddV2"):
            for z_ref, state in self.pairs(keep, "Mul"):
                if self.body.arg(state) != h_arg:
                    continue
                for rest, cand_ref in self.pairs(write, "Mul"):
                    sub = self.operands(rest, "Sub")
                    one = None if sub is None else self.body.value(sub[0])
                    if one is None or not np.all(one == 1) or one.size != 1 or not self.same(sub[1], z_ref):
                        continue
                    z = self.gate(z_ref)
                    activation, pre = self.activated(cand_ref)
                    found = self._candidate(pre, h_arg, keep) if z is not None else None
                    if found is None:
                        continue
                    r, candidate, reset_after = found
                    if r.activation != z.activation:
                        continue
                    return {"op": "gru", "gates": [z, r, _Gate(activation, candidate, "")], "activation": activation,
                            "recurrent_activation": z.activation, "reset_after": reset_after}
        return None

    def _candidate(self, pre: str, h_arg: int, z_mul: str) -> tuple[_Gate, _Form, bool] | None:
        # reset_after: x-part + r * (h-part)
        for x_part, reset in self.pairs(pre, "AddV2"):
            for r_ref, h_part in self.pairs(reset, "Mul"):
                r, fx, fh = self.gate(r_ref), self.forms.form(x_part), self.forms.form(h_part)
                if r is not None and fx is not None and fh is not None and set(fx.weights) == {"x"} and \
                        set(fh.weights) == {"h"}:
                    return r, _Form(fx.weights | fh.weights, fx.biases | fh.biases), True
        # reset before: (r * h) goes through the candidate's own kernel
        for name, node in self.body.nodes.items():
            if node.op != "Mul" or self.same(name, z_mul):
                continue
            for r_ref, state in self.pairs(name, "Mul"):
                r = self.gate(r_ref) if self.body.arg(state) == h_arg else None
                if r is None:
                    continue
                forms = _Forms(self.body, "", {name: "rh"}, self.forms.widths["x"], self.forms.widths["h"])
                forms.x = self.forms.x
                form = forms.form(pre)
                if form is not None and set(form.weights) == {"x", "rh"}:
                    biases = {"x" if side == "x" else "h": b for side, b in form.biases.items()}
                    return r, _Form({"x": form.weights["x"], "h": form.weights["rh"]}, biases), False
        return None

    def simple(self, h_next: str) -> dict | None:
        gate = self.gate(h_next)
        return None if gate is None else {"op": "rnn", "gates": [gate], "activation": gate.activation}


# ---- the loop ---------------------------------------------------------------------------------


def _follow(nodes: dict[str, Any], ref: str) -> Any:
    """The outer node making tensor `ref`, through Identity nodes."""
    node = nodes.get(split_ref(ref)[0])
    while node is not None and node.op in _PASS and node.input:
        node = nodes.get(split_ref(node.input[0])[0])
    return node


def _canonical_weights(gates: list[_Gate], features: int, units: int) -> dict[str, np.ndarray] | None:
    blocks: dict[str, list[np.ndarray]] = {"weight_ih": [], "weight_hh": [], "bias_ih": [], "bias_hh": []}
    for gate in gates:
        w = gate.form.weights
        for key, source, rows in (("weight_ih", "x", features), ("weight_hh", "h", units)):
            block = w.get(source)
            block = np.eye(rows, dtype=np.float32) if source in w and block is None else block
            block = np.zeros((rows, units), np.float32) if block is None else block
            if block.shape != (rows, units):
                return None
            blocks[key].append(np.asarray(block, np.float32).T)
        for key, side in (("bias_ih", "x"), ("bias_hh", "h")):
            bias = gate.form.biases.get(side, np.zeros(units, np.float32))
            blocks[key].append(np.broadcast_to(np.asarray(bias, np.float32), (units,)))
    return {k: np.ascontiguousarray(np.concatenate(v, axis=0)) for k, v in blocks.items()}


def raise_loop(loop: Any, library: dict[str, Any], graph: Graph, steps: list[dict], after: dict,
               nodes: dict[str, Any]) -> Raised | None:
    """The recurrent node replacing While `loop` (unroll._Loop, its `steps` and the counters' values
    `after` them: unroll._trajectory), or None where its body is not exactly a known cell."""
    try:
        return _raise(loop, library, graph, steps, after, nodes)
    except (ValueError, KeyError, IndexError, TypeError):  # a body this reading does not fit: unroll it
        return None


def _raise(loop: Any, library: dict[str, Any], graph: Graph, steps: list[dict], after: dict,
           nodes: dict[str, Any]) -> Raised | None:
    if any(n.op not in _BODY_OPS for n in loop.body.node_def):
        return None
    body = _Body(loop, library, graph)
    count = len(loop.args)
    returns = body.returns
    # the time counter: t + 1 from 0, t == k at step k
    writes = [i for i in range(count) if body.op(returns[i]) == "TensorListSetItem"]
    reads = [n for n in body.nodes.values() if n.op == "TensorListGetItem"]
    if len(writes) != 1 or len(reads) != 1:
        return None
    out = writes[0]
    out_list, t_ref, h_ref = body.data_inputs(body.node(returns[out]).name)
    in_list, t_read, _ = body.data_inputs(reads[0].name)
    t, x_arg = body.arg(t_read), body.arg(in_list)
    index = body.value(t_ref)  # Keras without return_sequences writes every step at 0: the last h
    last_only = index is not None and index.size == 1 and int(index.reshape(-1)[0]) == 0
    if t is None or not (last_only or body.arg(t_ref) == t) or body.arg(out_list) != out or \
            x_arg not in loop.invariant:
        return None
    if t not in loop.static or [s.get(t) for s in steps] != list(range(len(steps))):
        return None
    # the outer lists: the input made from a time-major sequence, the output reserved for every step
    source = _follow(nodes, loop.refs[x_arg])
    reserve = _follow(nodes, loop.refs[out])
    if source is None or source.op != "TensorListFromTensor" or reserve is None or reserve.op != "TensorListReserve":
        return None
    sequence, backwards = source.input[0], False
    reverse = _follow(nodes, sequence)  # Keras's go_backwards reverses the time-major sequence first
    axis = None if reverse is None or reverse.op != "ReverseV2" else \
        graph.evaluator.value(graph.get_tensor_by_name(_canonical(reverse.input[1])))
    if axis is not None and np.asarray(axis).reshape(-1).tolist() == [0]:
        sequence, backwards = reverse.input[0], True
    dims = graph.get_tensor_by_name(_canonical(sequence)).shape.as_list()
    if len(dims) != 3 or None in dims or dims[0] != len(steps) or dims[0] == 0:
        return None
    length, batch, features = dims
    size = graph.evaluator.value(graph.get_tensor_by_name(_canonical(reserve.input[1])))
    if size is None or int(np.asarray(size).reshape(-1)[0]) != (1 if last_only else length):
        return None
    # the states: everything else that changes; they start at zero, h is what the output list gets
    states = [i for i in range(count) if i not in loop.invariant and i not in loop.static and i != out]
    others = [i for i in loop.invariant if i != x_arg and i not in loop.first]
    if others or not 1 <= len(states) <= 2:
        return None
    h = next((i for i in states if body.source(returns[i]) == body.source(h_ref)), None)
    if h is None:
        return None
    for i in states:
        first = loop.first.get(i)
        if first is None or np.shape(first)[0] != batch or np.any(np.asarray(first) != 0):
            return None
    units = int(np.shape(loop.first[h])[-1])
    forms = _Forms(body, f"{reads[0].name}:0", {h: "h"}, features, units)
    cells = _Cells(body, forms)
    if len(states) == 2:
        c = next(i for i in states if i != h)
        cell = cells.lstm(returns[h], returns[c], c)
    else:
        cell = cells.gru(returns[h], h) or cells.simple(returns[h])
    if cell is None:
        return None
    params = _canonical_weights(cell["gates"], features, units)
    if params is None:
        return None
    cell["go_backwards"] = backwards
    return _replacement(loop, cell, params, units, sequence, after, out, h, states, last_only)


def _replacement(loop: Any, cell: dict, params: dict, units: int, sequence: str, after: dict, out: int,
                 h: int, states: list[int], last_only: bool) -> Raised:
    """The recurrent node, its weights, and the loop's final values (`last_only`: the output list
    holds the last h alone)."""

    name = loop.node.name
    node = GraphDef().node.add(name=f"{name}/recurrent", op=RECURRENT_OP)
    consts = [const_node(f"{name}/recurrent/{key}", value) for key, value in params.items()]
    node.input.extend([sequence] + [c.name for c in consts])
    node.attr["T"].type = 1  # float32
    node.attr["kind"].s = cell["op"].encode()
    node.attr["units"].i = units
    node.attr["activation"].s = cell["activation"].encode()
    node.attr["recurrent_activation"].s = cell.get("recurrent_activation", "").encode()
    node.attr["reset_after"].b = bool(cell.get("reset_after", False))
    node.attr["go_backwards"].b = cell["go_backwards"]
    rows = f"{node.name}:0"
    if last_only:
        expand = GraphDef().node.add(name=f"{name}/recurrent/last_row", op="ExpandDims")
        consts.append(const_node(f"{name}/recurrent/last_row/axis", np.int32(0)))
        expand.input.extend([f"{node.name}:1", consts[-1].name])
        expand.attr["T"].type = 1
        expand.attr["Tdim"].type = 3
        consts.append(expand)
        rows = expand.name
    sequences = GraphDef().node.add(name=f"{name}/recurrent/sequence_list", op="TensorListFromTensor")
    shape = const_node(f"{name}/recurrent/element_shape", np.asarray([-1, units], np.int32))
    sequences.input.extend([rows, shape.name])
    sequences.attr["element_dtype"].type = 1
    sequences.attr["shape_type"].type = 3
    finals = list(loop.refs)
    for i, value in after.items():
        if i not in loop.invariant:  # a counter's value after the last step
            const = const_node(f"{name}/recurrent/final_{i}", value)
            consts.append(const)
            finals[i] = const.name
    finals[out] = sequences.name
    finals[h] = f"{node.name}:1"
    for i in states:
        if i != h:
            finals[i] = f"{node.name}:2"
    note = (f"While loop '{name}' is a {cell['op'].upper()} cell of {units} units: converted to one {cell['op']} "
            "node, not unrolled")
    return Raised([node, sequences, shape, *consts], finals, sequences.name, note)


def stack_sequences(nodes: list[Any], lists: set[str]) -> list[Any]:
    """`nodes` with each TensorListStack of a raised loop's output list (`lists`: its node names)
    replaced by an Identity of the recurrent node's sequence (the list holds exactly its rows)."""

    by_name = {n.name: n for n in nodes}
    result = []
    for n in nodes:
        made = _follow(by_name, n.input[0]) if n.op == "TensorListStack" and n.input else None
        if made is not None and made.name in lists:
            copy = GraphDef().node.add(name=n.name, op="Identity")
            copy.input.append(made.input[0])
            copy.attr["T"].type = 1
            result.append(copy)
        else:
            result.append(n)
    return result
