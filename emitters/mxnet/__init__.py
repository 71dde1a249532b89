"""MXNet 1.x target: `model-symbol.json` + `model-0000.params`, written without importing MXNet.

The files load with `mx.gluon.SymbolBlock.imports(...)` and `mx.mod.Module` (checkpoint prefix
`model`, epoch 0). `run` executes them in real MXNet 1.9.1 through `.venv-mxnet/bin/python`.
"""

from __future__ import annotations

from pathlib import Path

from tf_convert.convert import ir
from tf_convert.convert.errors import Unsupported, UnsupportedError
from tf_convert.convert.ir.dtypes import CORE_DTYPES, WIDE_DTYPES
from tf_convert.convert.ir.ops import FAMILIES
from tf_convert.convert.progress import SILENT, Progress
from tf_convert.convert.registry import import_family_modules
from tf_convert.emitters.base import EmitResult
from tf_convert.emitters.options import MxnetOptions, options_for

from .contract import TABLE, Ctx
from .runtime import (
    evaluate,
    mxnet_python,
    mxnet_tojson,
    nd_load,
    nd_save_bytes,
    run,
    run_internals,
    run_many,
    start_run,
)
from .symbol import DTYPE_FLAGS, Fragment, Ref, SymbolGraph, safe_name, symbol_dtype

import_family_modules(__name__, FAMILIES)  # the handlers, a module per catalog family: they fill TABLE

TARGET = "mxnet"
SYMBOL_FILE = "model-symbol.json"
PARAMS_FILE = "model-0000.params"
# what graph inputs and outputs may be (token ids, masks, indices and numbers): the IR's core dtypes
BOUNDARY_DTYPES = CORE_DTYPES

__all__ = ["TARGET", "unsupported", "emit", "run", "start_run", "run_internals", "run_many", "evaluate",
           "mxnet_python", "nd_load", "nd_save_bytes", "mxnet_tojson"]


def unsupported(graph: ir.Graph, options=None) -> list[Unsupported]:
    """Every node MXNet cannot express: no handler, or beyond a handler's limits."""
    items = [Unsupported("input", t, f"dtype {graph.tensors[t].dtype}: MXNet models here take "
                         f"{', '.join(BOUNDARY_DTYPES)} tensors")
             for t in graph.inputs + graph.outputs if graph.tensors[t].dtype not in BOUNDARY_DTYPES]
    for node in graph.nodes:  # a node reading or making a wide dtype (float64, int16...)
        wide = [graph.tensors[t].dtype for t in [*node.inputs, node.output] if graph.tensors[t].dtype in WIDE_DTYPES]
        if wide:
            items.append(Unsupported("dtype", node.name, f"dtype {wide[0]}: MXNet models here compute in "
                                     f"{', '.join(BOUNDARY_DTYPES)} tensors"))
    # MXNet 1.x shapes read 0 as "unknown"
    items += [Unsupported("empty", t.name, f"an empty tensor {t.shape}: MXNet 1.x shapes read a 0 as an unknown size")
              for t in graph.tensors.values() if 0 in t.shape]
    if not graph.inputs:  # a graph of constants (TF's ones_like of a static input): Gluon's loader needs an input
        items.append(Unsupported("inputs", graph.name, "a model that takes no input: MXNet's SymbolBlock and "
                                 "Module are bound to at least one"))
    return items + TABLE.unsupported(graph, options)


def _layout(dims: tuple[int, ...]) -> str:
    return "NCHW" if len(dims) == 4 else ""


def _lower(graph: ir.Graph, index: ir.GraphIndex, node: ir.Node, sg: SymbolGraph, inputs: list[Ref],
           options: MxnetOptions):
    """Run the node's handler with a base name whose symbol nodes do not clash with earlier ones."""
    base = safe_name(node.name)
    candidate, i = base, 0
    while True:
        fragment = TABLE.get(node.op)(Ctx(node, graph, options, index, inputs, candidate))
        if not any(sg.taken(n.name) for n in fragment.nodes):
            return fragment
        i += 1
        candidate = f"{base}_{i}"


def _size_check(sg: SymbolGraph, name: str, x: Ref, dims: tuple[int, ...], dtype: str) -> Ref:
    """x + zeros of the conversion's size (batch 1): MXNet's shape inference refuses an input of another
    size here, at any batch. MXNet layers bake TF's SAME pads for that size and its Reshape reads the
    first elements of a larger input, so without this check another size would run, silently wrong."""
    f = Fragment()
    zeros = f.op("_zeros", f"{name}_converted_size", [], shape=(1, *dims[1:]), dtype=dtype)
    checked = f.op("broadcast_add", f"{name}_size_check", [x, zeros])
    sg.add(f)
    return checked


def emit(graph: ir.Graph, out_dir: Path, options=None, progress: Progress = SILENT) -> EmitResult:
    """`options`: MxnetOptions (or anything emitters.options.options_for accepts)."""
    options = options_for(TARGET, options)
    problems = unsupported(graph, options)
    if problems:
        raise UnsupportedError(problems, TARGET)
    out_dir = Path(out_dir)
    sg = SymbolGraph()
    env: dict[str, Ref] = {}
    result = EmitResult()
    for tensor in graph.inputs:
        name = safe_name(tensor)
        while sg.taken(name):
            name += "_"
        # the size TF's SAME pads were baked for (MXNet layers cannot compute them at run time)
        dtype = graph.tensors[tensor].dtype
        env[tensor] = sg.add_input(name, {"__converted_for__": str(tuple(graph.shape(tensor))),
                                          "__dtype__": str(DTYPE_FLAGS[dtype])})
        if symbol_dtype(dtype) != dtype:  # a bool input becomes the 0/1 mask MXNet ops compute with
            mask = Fragment()
            env[tensor] = mask.op("Cast", f"{name}_mask", [env[tensor]], dtype=symbol_dtype(dtype))
            sg.add(mask)
        if len(graph.shape(tensor)) >= 2:  # images, volumes, sequences, token ids: the batch alone is free
            env[tensor] = _size_check(sg, name, env[tensor], graph.shape(tensor), symbol_dtype(dtype))
        result.inputs.append({"name": name, "shape": list(graph.shape(tensor)), "layout": _layout(graph.shape(tensor))})
    index = ir.GraphIndex(graph)
    for node in graph.nodes:
        if node.output in env:  # computed by an earlier node's fragment (one conditional's other output)
            continue
        fragment = _lower(graph, index, node, sg, [env[t] for t in node.inputs], options)
        sg.add(fragment)
        env[node.output] = fragment.output
        env.update(fragment.computes)
        result.pad_layers.extend(fragment.pad_layers)
    if any(t.dtype != "float32" for t in graph.tensors.values()):
        # with integer tensors (token ids) MXNet's type inference may find nothing float to type the
        # parameters by (an embedding table read by `take`): declare them float32, as they are written
        for sym_node in sg.nodes:
            if sym_node.op == "null" and sym_node.name in sg.params:
                sym_node.attrs.setdefault("__dtype__", str(DTYPE_FLAGS["float32"]))

    heads: list[Ref] = []
    variables = {n.name for n in sg.nodes if n.op == "null"}
    for tensor in graph.outputs:
        ref = env[tensor]
        dtype = graph.tensors[tensor].dtype
        if symbol_dtype(dtype) != dtype:  # a mask goes out as bool
            cast = Fragment()
            name = safe_name(tensor) + "_bool"
            while sg.taken(name):
                name += "_"
            ref = cast.op("Cast", name, [ref], dtype=dtype)
            sg.add(cast)
        if ref.node in variables or ref in heads:
            # an output must be an op node with its own name: copy inputs/constants/duplicates
            name = safe_name(tensor) + "_out"
            while sg.taken(name):
                name += "_"
            copy = Fragment()
            ref = copy.op("_copy", name, [ref])
            sg.add(copy)
        heads.append(ref)
        row = {"name": f"{ref.node}_output", "shape": list(graph.shape(tensor)), "layout": _layout(graph.shape(tensor))}
        if not graph.shape(tensor):  # MXNet 1.x has no 0-d arrays: its runtime returns a scalar as shape (1,)
            row["returns_shape"] = [1]
        result.outputs.append(row)
    result.tensor_names = {n.output: f"{env[n.output].node}_output" for n in graph.nodes
                           if env[n.output].node not in variables and env[n.output].index == 0}
    sg.write(heads, out_dir / SYMBOL_FILE, out_dir / PARAMS_FILE, progress)
    result.files = [SYMBOL_FILE, PARAMS_FILE]
    return result
