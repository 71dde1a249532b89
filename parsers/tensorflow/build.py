"""Frozen GraphDef -> IR graph, without TensorFlow.

1. Model the GraphDef (tfgraph.Graph) with each input replaced by a fixed-shape placeholder
   (input_map), so shape inference gives a static shape to every tensor.
2. Split the inference subgraph: ops that depend on an input and lead to an output. Everything else
   that feeds it is a constant, evaluated with tfgraph's numpy evaluators.
3. Walk the subgraph in topological order; one handler per TF op emits IR nodes. Ops without a
   handler (or that a handler refuses) are all collected and reported together.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.errors import Unsupported, UnsupportedError, UsageError
from tf_convert.convert.ir import runtime_dims
from tf_convert.convert.ir.dtypes import IR_DTYPES
from tf_convert.convert.ir.lazy import is_lazy
from tf_convert.parsers.base import ParseOptions

from . import complex_values, input_layout, lengths, ops, runtime_shapes  # noqa: F401 - registers the handlers
from .context import NHWC_TO_NCHW, Context, NotConvertible, Val, show_shape
from .graphio import node_of
from .loader import Frozen
from .loops import loop_hint
from .refused_ops import refusal_reason
from .safety import LOOP_HINT, LOOP_OPS
from .shape_conds import fold_shape_conds
from .subgraphs import function_graph
from .table import TABLE
from .tfgraph import SHAPE_OPS, DType, Graph, ShapeError, TensorShape
from .unroll import unroll_loops

_HINTS = {
    "FusedBatchNormGrad": "training op; export the inference graph",
    "ArgMax": "integer outputs are not supported; pick the float tensor before it with --outputs",
    **{op: LOOP_HINT for op in LOOP_OPS},
}


def _line(e: BaseException, cap: int = 200) -> str:
    """An embedded TF message as one capped line (they can run to kilobytes)."""
    text = getattr(e, "message", "") or str(e)
    line = (text.strip().splitlines() or [type(e).__name__])[0]
    return line if len(line) <= cap else line[:cap] + "..."


def _ir_name(tensor: str) -> str:
    node, index = tensor.rsplit(":", 1)
    return node if index == "0" else f"{node}_{index}"


def _fixed_shape(tensor: str, static: list[int | None], options: ParseOptions, single: bool) -> list:
    given = (options.input_shapes.get(tensor) or options.input_shapes.get(node_of(tensor))
             or (options.input_shapes.get("") if single else None))
    if given is not None:
        given = [int(d) for d in given]
        if static is not None and len(static) != len(given):
            raise UsageError(f"--input-shape {','.join(map(str, given))} for '{tensor}' has rank "
                             f"{len(given)}; the graph's input has rank {len(static)} {show_shape(static)}")
        if static is not None:
            for g, s in zip(given, static):
                if s is not None and s != g:
                    raise UsageError(f"--input-shape {','.join(map(str, given))} conflicts with the "
                                     f"graph's shape {show_shape(static)} "
                                     f"for '{tensor}'")
        return given
    if static is None:
        return None
    return [1 if (i == 0 and d is None) else d for i, d in enumerate(static)]  # batch defaults to 1


def _placeholder_signature(node: Any) -> tuple[DType, list | None]:
    shape = TensorShape.from_proto(node.attr["shape"].shape) if "shape" in node.attr else TensorShape(None)
    return DType(node.attr["dtype"].type), shape.dims


def _input_signatures(frozen: Frozen, options: ParseOptions) -> list[tuple[str, Any, list]]:
    """(tensor name, dtype, fixed shape) per input; Placeholders are read from their attrs, other
    tensors from one probe of the whole graph."""
    nodes = {n.name: n for n in frozen.graph_def.node}
    probe = None
    result = []
    for t in frozen.inputs:
        node = nodes[node_of(t)]
        if node.op == "Placeholder" and t.endswith(":0"):
            dtype, static = _placeholder_signature(node)
        else:
            if probe is None:
                probe = _import(frozen, {})
            tensor = probe.get_tensor_by_name(t)
            dtype, static = tensor.dtype, tensor.shape.dims
        result.append((t, dtype, _fixed_shape(t, static, options, len(frozen.inputs) == 1)))
    return result


def _import(frozen: Frozen, input_map: dict) -> Graph:
    try:
        return Graph(frozen.graph_def, input_map, getattr(frozen, "weights", {}))
    except ShapeError as e:
        raise UsageError(f"the input shape does not fit the graph: {_line(e)}") from None


def _unrolled(frozen: Frozen, signatures: list, notes: list[str] | None = None) -> Frozen:
    """`frozen` with its conds decided and its While loops unrolled at the fixed input shapes (TF's reference
    run keeps them)."""
    from dataclasses import replace

    input_map = {t: (dtype, shape) for t, dtype, shape in signatures}
    weights, keep = getattr(frozen, "weights", {}), frozen.inputs + frozen.outputs
    try:
        graph_def = fold_shape_conds(frozen.graph_def, input_map, weights, keep)
        graph_def = unroll_loops(graph_def, input_map, weights, keep, notes=notes)
    except ShapeError as e:
        raise UsageError(f"the input shape does not fit the graph: {_line(e)}") from None
    return frozen if graph_def is frozen.graph_def else replace(frozen, graph_def=graph_def)


def import_fixed(frozen: Frozen, signatures: list) -> tuple[Graph, dict[str, Any]]:
    """The frozen GraphDef as a tfgraph.Graph with inputs replaced by fixed-shape placeholders."""
    graph = _import(frozen, {t: (dtype, shape) for t, dtype, shape in signatures})
    placeholders = {t: graph.get_tensor_by_name(f"convert_input_{i}:0") for i, (t, _, _) in enumerate(signatures)}
    return graph, placeholders


def _data_format(ops_: list[Any]) -> str:
    formats = {op.get_attr("data_format").decode() for op in ops_ if "data_format" in op.node_def.attr}
    return "NCHW" if formats and all(f.startswith("NC") for f in formats) else "NHWC"


def _inference_ops(all_ops: list[Any], placeholders: dict, out_tensors: list[Any]) -> tuple[list, set]:
    """(ops that depend on an input and lead to an output, in order; names of input-dependent ops).
    Shape/Size/Rank of fully known shapes do not depend on the data, so they count as constants."""
    dynamic: set[str] = {p.op.name for p in placeholders.values()}
    for op in all_ops:  # import order is topological
        if op.type in SHAPE_OPS and all(t.shape.is_fully_defined() for t in op.inputs):
            continue
        if any(t.op.name in dynamic for t in op.inputs):
            dynamic.add(op.name)
    live: set[str] = set()
    stack = [t.op for t in out_tensors]
    while stack:
        op = stack.pop()
        if op.name in live or op.name not in dynamic:
            continue
        live.add(op.name)
        stack.extend(t.op for t in op.inputs)
    input_ops = {p.op.name for p in placeholders.values()}
    return [op for op in all_ops if op.name in live and op.name not in input_ops], dynamic


def _add_inputs(ctx: Context, signatures: list, placeholders: dict, fmt: str, options: ParseOptions) -> None:
    graph = ctx.graph
    for (t, dtype, shape), ph in zip(signatures, placeholders.values()):
        ir_name = _ir_name(t)
        rank = len(shape) if shape is not None else 0
        nchw = rank == 4 and input_layout.channels_first(t, ph, ctx.consts, options.input_layout, options.notes)
        perm = NHWC_TO_NCHW if rank == 4 and not nchw and (fmt == "NHWC" or options.input_layout == "nhwc") else None
        dims = [d if d is not None else -1 for d in (shape or [])]
        graph.add_tensor(ir_name, [dims[p] for p in perm] if perm else dims, dtype.name)
        graph.inputs.append(ir_name)
        graph.source_names[ir_name] = t
        graph.source_layouts[ir_name] = ("NHWC" if perm else "NCHW") if rank == 4 else ""
        ctx.set(ph, ir_name, perm)


def _foreign_inputs(signatures: list) -> list[Unsupported]:
    """Inputs of a dtype the IR does not hold (float64, float16, int16...): its float constants and arithmetic
    are float32, so a model fed them would not return TF's dtype (nor its values); refused, naming them."""
    return [Unsupported("Placeholder", node_of(t), f"dtype {dtype.name}: the converted graph holds only "
                        f"{', '.join(IR_DTYPES)} tensors; export the model with one of those input types")
            for t, dtype, _ in signatures if dtype.name not in IR_DTYPES]


def _convert_ops(ctx: Context, ops_: list[Any], library: dict[str, Any] | None = None,
                 dynamic: set[str] | None = None, names: dict[str, str] | None = None,
                 blockers: list[Unsupported] | None = None, unknown: set[str] | None = None) -> None:
    """Run each op's handler; collect every op that has none (or that its handler refuses), skip
    what depends on those, and report them all at once, with `blockers` (the ops that keep the constants
    `unknown` from being evaluated). `library` (function name -> FunctionDef), `dynamic`
    (input-dependent op names) and `names` (placeholder tensor -> the input's name) let a loop's refusal
    say what its trip count reads."""
    problems: list[Unsupported] = list(blockers or [])
    poisoned: set[str] = set(unknown or ())
    for op in ops_:
        handler = TABLE.get(op.type)
        if handler is None:
            hint = _HINTS.get(op.type) or refusal_reason(op.type) or "no converter for this TF op"
            if op.type in LOOP_OPS:
                hint = loop_hint(op.node_def, [t.name for t in op.inputs], library or {},
                                 lambda tensor: tensor.split(":")[0] in (dynamic or set()),
                                 lambda tensor: (names or {}).get(tensor, tensor))
            problems.append(Unsupported(op.type, op.name, hint))
            poisoned.update(t.name for t in op.outputs)
            continue
        if any(t.name in poisoned for t in op.inputs):
            poisoned.update(t.name for t in op.outputs)
            continue
        try:
            ctx.current = op
            sized = runtime_shapes.refusal(ctx, op)
            if sized:
                raise NotConvertible(sized)
            lengths.follow(ctx, op)
            if not complex_values.follow(ctx, op):
                handler(ctx, op)
        except NotConvertible as e:
            problems.append(Unsupported(op.type, op.name, str(e)))
            poisoned.update(t.name for t in op.outputs)
    if problems:
        raise UnsupportedError(problems)


def _constant_output(ctx: Context, t: Any) -> Val | None:
    """An output TF computes from no input (ones_like of a static input) in TF's dtype: the IR's float
    constants are float32, so a float64 or float16 one goes out through a cast, when float32 holds its
    values exactly (else it is refused: the cast would not give TF's values back)."""
    if t.name in ctx.vals or t.name not in ctx.consts or is_lazy(ctx.consts[t.name]):
        return None
    value, dtype = np.asarray(ctx.consts[t.name]), t.dtype.name
    if dtype in ("int16", "uint16", "uint32") or dtype == "uint64" and not (value >> 63).any():
        # integer constants of a wide dtype are held as int64, which holds them all
        wide = ctx.emit("const", f"{t.op.name}/int64", [], value.shape, params={"value": value.astype(np.int64)},
                        source_op="Const", out_dtype="int64")
        return Val(ctx.emit("cast", f"{t.op.name}/{dtype}", [wide], value.shape, {"dtype": dtype},
                            source_op="Cast", out_dtype=dtype))
    if value.dtype.kind != "f" or dtype == "float32":
        return None
    if dtype in ("float64", "float16") and value.dtype.name == dtype:
        return Val(ctx.const_node(t, None, value.ndim))  # float64 and float16 constants keep their dtype
    if not np.array_equal(value.astype(np.float32).astype(value.dtype), value, equal_nan=True):
        raise UnsupportedError([Unsupported(t.op.type, t.op.name, f"a constant {dtype} output whose values "
                                            "float32 does not hold (the converted graph's constants are float32)")])
    const = ctx.const_node(t, None, value.ndim)
    return Val(ctx.emit("cast", f"{t.op.name}/{dtype}", [const], value.shape, {"dtype": dtype},
                        source_op="Cast", out_dtype=dtype))


def _add_outputs(ctx: Context, names: list[str], tensors: list[Any]) -> None:
    """Graph outputs are named after their TF tensors (an identity node where needed)."""
    graph = ctx.graph
    for src, t in zip(names, tensors):
        try:
            v = _constant_output(ctx, t) or ctx.val(t)
        except NotConvertible as e:  # e.g. the batch-folded tensor inside a dilated conv
            raise UsageError(f"output '{src}' has no equivalent in the converted graph ({e}); "
                             "pick another tensor with --outputs") from None
        rank = len(graph.shape(v.ir))
        if v.perm is not None and not (rank == 4 and v.perm == NHWC_TO_NCHW):
            v = Val(ctx.tf_order(t))  # outputs are NCHW (for NHWC) or in TF's own order
        v = Val(lengths.cut(ctx, t, v.ir, _ir_name(src)), v.perm)
        name = v.ir
        if v.ir != _ir_name(src) or v.ir in graph.outputs or v.ir in graph.inputs:
            name = graph.add_node("identity", graph.unique_name(_ir_name(src)), [v.ir], graph.shape(v.ir),
                                  source_op="Identity")
        graph.outputs.append(name)
        graph.source_names[name] = src
        graph.source_layouts[name] = ("NHWC" if v.perm == NHWC_TO_NCHW else "NCHW") if rank == 4 else ""


def read_inputs(frozen: Frozen, options: ParseOptions) -> Frozen:
    """`frozen` without the inputs no chosen output reads (the pruning removed them). Named with --inputs,
    they are refused (exit 2, naming them); taken from a serving signature (an argument the model ignores),
    they are left out of the converted model's inputs, with a note."""
    nodes = {n.name for n in frozen.graph_def.node}
    unread = [t for t in frozen.inputs if node_of(t) not in nodes]
    if not unread:
        return frozen
    them = "it" if len(unread) == 1 else "them"
    if options.inputs:
        raise UsageError(f"--inputs {', '.join(unread)}: the outputs ({', '.join(frozen.outputs)}) never read "
                         f"{them}; leave {them} out of --inputs, or name the outputs that do with --outputs")
    options.notes.append(f"inputs never read by the outputs, left out: {', '.join(unread)}")
    return dataclasses.replace(frozen, inputs=[t for t in frozen.inputs if t not in unread])


def build_graph(frozen: Frozen, options: ParseOptions, name: str, kind: str) -> ir.Graph:
    signatures = _input_signatures(frozen, options)
    original = {n.name for n in frozen.graph_def.node}
    frozen = _unrolled(frozen, signatures, options.notes)
    tfg, placeholders = import_fixed(frozen, signatures)
    out_tensors = [placeholders[o] if o in placeholders else tfg.get_tensor_by_name(o) for o in frozen.outputs]
    live_ops, dynamic = _inference_ops(tfg.get_operations(), placeholders, out_tensors)
    frontier = sorted({t.name for op in live_ops for t in op.inputs if t.op.name not in dynamic}
                      | {t.name for t in out_tensors if t.op.name not in dynamic and t.op.type != "Placeholder"})
    input_desc = ", ".join(f"input '{t}' has shape {show_shape(s)}" for t, _, s in signatures)
    graph = ir.Graph(name=name)
    values, blockers = _evaluate(tfg, frontier)
    ctx = Context(graph, values, input_desc)
    ctx.input_names = {p.name: t for t, p in placeholders.items()}
    ctx.sizes_given = all(s is not None and None not in s for _, _, s in signatures)
    fmt = _data_format(live_ops)
    _add_inputs(ctx, signatures, placeholders, fmt, options)
    library = {f.signature.name: f for f in tfg.graph_def.library.function}
    ctx.library = tfg.graph_def.library  # a run-time loop's or branch's functions (ops/control.py)
    ctx.build_function = partial(function_graph, build_graph, tfg.graph_def.library)
    _convert_ops(ctx, live_ops, library, dynamic, {p.name: t for t, p in placeholders.items()},
                 blockers + _foreign_inputs(signatures), set(frontier) - set(values))
    _add_outputs(ctx, frozen.outputs, out_tensors)
    graph.metadata["source_tensors"] = {t: v for t, v in source_tensors(ctx).items() if node_of(t) in original}
    graph.prune()
    # a size that follows a run-time value is RUN_TIME (convert.ir.runtime_dims); only an input's must be given
    tensors = [graph.tensors[t] for t in graph.inputs] if runtime_dims.has_run_time(graph) else graph.tensors.values()
    unknown = [t for t in tensors if any(d < 0 for d in t.shape)]
    if unknown:
        raise UsageError(f"tensor '{unknown[0].name}' has an unknown size ({input_desc}); "
                         "pass --input-shape, e.g. --input-shape 1,224,224,3")
    graph.metadata.update({
        "source_format": kind,
        "input_shapes": {t: list(s) if s is not None else None for t, _, s in signatures},
        "data_format": fmt,
    })
    graph.validate()
    return graph


def source_tensors(ctx: Context) -> dict[str, list]:
    """TF tensor name -> [IR tensor, perm (IR = tf.transpose(perm)) or None, IR shape], in TF's op
    order: what the per-layer diff (convert verify --layers) fetches from TF for each IR tensor."""
    return {
        tf_name: [v.ir, list(v.perm) if v.perm is not None else None, list(ctx.graph.shape(v.ir))]
        for tf_name, v in ctx.vals.items() if v.ir in ctx.graph.tensors
    }


def _evaluate(graph: Graph, names: list[str]) -> tuple[dict[str, Any], list[Unsupported]]:
    """Values of the constant frontier (Const values as they are: a streamed weight stays lazy), and every
    op that computes part of it with no evaluator (each once). A bad value raises at once."""
    values: dict[str, Any] = {}
    blockers: dict[str, Unsupported] = {}
    for n in names:
        tensor = graph.get_tensor_by_name(n)
        value = graph.evaluator.value(tensor)
        if value is not None:
            values[n] = value
            continue
        for op, why in graph.evaluator.failures_of(tensor):
            problem = _no_value(op, why)
            if isinstance(problem, Unsupported):
                blockers.setdefault(op.name, problem)
            else:
                raise problem
    return values, list(blockers.values())


def _no_value(op: Any, why: str) -> Exception | Unsupported:
    """The one-line error for a constant the parser cannot compute (an op with no evaluator: its entry in
    the list of what the graph uses that the converter lacks)."""
    if op.type in ("Placeholder", "PlaceholderWithDefault"):
        return UsageError(f"could not evaluate the graph's constants: placeholder '{op.name}' has no value; a "
                          "placeholder that is not an input needs a value (--set NAME=VALUE) or belongs in --inputs")
    if why == "no evaluator":
        return Unsupported(op.type, op.name, "computes a constant the converter cannot evaluate (no evaluator "
                                             "for this op); freeze that value or pick other --inputs/--outputs")
    return UsageError(f"could not evaluate the graph's constants: node '{op.name}' ({op.type}): "
                      f"{why.removeprefix('error: ')}")
