"""Assemble model.py and its state_dict from the per-node lowerings."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.ir.lazy import is_lazy
from tf_convert.convert.padding.sizes import size_flow, size_words

from ..options import TorchOptions
from .contract import AUX_SUFFIXES, TABLE, Ctx, Lowered
from .names import MODULE_ATTRIBUTES, Namer, common_scope
from .nn_quant import HELPERS as QUANT_HELPERS
from .shape_runtime import UNIQUE_HELPER

# model.py's helper functions, each added where a line of forward calls it
_HELPERS = {**QUANT_HELPERS, "tf_unique(": UNIQUE_HELPER}

NCHW_TO_NHWC = (0, 2, 3, 1)
NHWC_TO_NCHW = (0, 3, 1, 2)


@dataclass
class Generated:
    source: str
    state: dict[str, np.ndarray]
    pad_layers: list[dict[str, Any]] = field(default_factory=list)
    size_bound: str | None = None  # why the model only runs at its conversion size (None: any H/W)
    size_words: str = "H x W"  # what the free sizes are called: "H x W", "length" (convert.padding.sizes)
    inputs: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    tensor_names: dict[str, str] = field(default_factory=dict)  # IR tensor -> local in forward()


def _io_layout(graph: ir.Graph, tensor: str, nhwc: bool) -> str:
    if len(graph.shape(tensor)) != 4:
        return ""
    # --nhwc keeps the source layout; a tensor the source already had as NCHW stays NCHW
    return "NHWC" if nhwc and graph.source_layouts.get(tensor, "NHWC") != "NCHW" else "NCHW"


def _as_layout(shape: tuple[int, ...], layout: str) -> list[int]:
    return [shape[i] for i in NCHW_TO_NHWC] if layout == "NHWC" else list(shape)


def _as_stored(value: np.ndarray, dtype: str | None = None) -> np.ndarray:
    """IR numbers are float32, except a constant whose IR `dtype` is a wider or narrower float (float64,
    float16: kept, not rounded); integer/bool constants keep their dtype."""
    value = value if is_lazy(value) else np.asarray(value)  # a lazy weight is read when written
    if value.dtype.kind != "f":
        return value
    return value.astype(dtype if dtype in ("float64", "float16") else np.float32)


def _buffer_source(name: str, value: np.ndarray) -> str:
    dims = ", ".join(str(d) for d in value.shape)
    shape = f"({dims},)" if value.ndim == 1 else f"({dims})"
    dtype = "" if value.dtype == np.float32 else f", dtype=torch.{value.dtype.name}"
    return f'self.register_buffer("{name}", torch.zeros({shape}{dtype}))'


def generate(graph: ir.Graph, options: TorchOptions) -> Generated:
    nhwc = options.nhwc
    namer = Namer(MODULE_ATTRIBUTES, AUX_SUFFIXES, common_scope(n.name for n in graph.nodes))
    exprs: dict[str, str] = {}
    args, prologue = [], []
    gen = Generated(source="", state={})
    free, bound = size_flow(graph)
    gen.size_words = size_words(graph)
    gen.size_bound = "--static-shapes" if options.static_shapes and bound is None else bound
    for tensor in graph.inputs:
        arg = namer.name(graph.source_names.get(tensor, tensor) or tensor, "x")
        layout = _io_layout(graph, tensor, nhwc)
        if layout == "NHWC":
            prologue.append(f"{arg} = {arg}.permute{NHWC_TO_NCHW}  # NHWC -> NCHW")
        args.append(arg)
        exprs[tensor] = arg
        if gen.size_bound is not None:
            prologue += _size_check(arg, graph.shape(tensor), gen.size_bound)
        gen.inputs.append({"name": arg, "shape": _as_layout(graph.shape(tensor), layout), "layout": layout})
        if graph.tensors[tensor].dtype != "float32":  # token ids, masks: fed in their own type
            gen.inputs[-1]["dtype"] = graph.tensors[tensor].dtype

    index = ir.GraphIndex(graph)
    lowered: list[Lowered] = []
    const_dtypes: dict[str, str] = {}  # a constant's buffer -> its IR dtype
    for node in graph.nodes:
        if node.output in exprs:  # computed by an earlier node's lowering (one loop's other variable)
            continue
        var = namer.name(node.name, node.op)
        ctx = Ctx(
            node=node,
            graph=graph,
            options=options,
            index=index,
            args=tuple(exprs[i] for i in node.inputs),
            in_shapes=tuple(graph.shape(i) for i in node.inputs),
            out_shape=graph.shape(node.output),
            var=var,
            dynamic=gen.size_bound is None,
            free_axes=free if gen.size_bound is None else {},
            namer=namer,
        )
        result = TABLE.get(node.op)(ctx)
        if node.op == "const":
            const_dtypes[var] = graph.tensors[node.output].dtype
        exprs[node.output] = result.expr or var
        exprs.update(result.computes)
        lowered.append(result)

    results = []
    for tensor in graph.outputs:
        layout = _io_layout(graph, tensor, nhwc)
        expr = exprs[tensor]
        results.append(f"{expr}.permute{NCHW_TO_NHWC}" if layout == "NHWC" else expr)
        name = expr if expr.isidentifier() else namer.name(tensor, "y")
        gen.outputs.append({"name": name, "shape": _as_layout(graph.shape(tensor), layout), "layout": layout})

    init, forward = [], list(prologue)
    for result in lowered:
        init += [f"self.{name} = {ctor}" for name, ctor in result.modules]
        init += [_buffer_source(name, _as_stored(value, const_dtypes.get(name))) for name, value in result.buffers]
        forward += result.lines
        gen.state.update({key: _as_stored(value) for key, value in result.state.items()})
        gen.state.update({name: _as_stored(value, const_dtypes.get(name)) for name, value in result.buffers})
        gen.pad_layers += result.pad_layers
    gen.tensor_names = {t: e for t, e in exprs.items() if t not in graph.inputs and e.isidentifier()}
    gen.source = _render(graph, args, init, forward, results, gen)
    return gen


def _size_check(arg: str, shape: tuple[int, ...], why: str) -> list[str]:
    """forward() lines refusing any input size but the conversion's (the batch stays free)."""
    dims = list(shape[1:])
    said = f"{arg}: this model was converted for size {dims} (batch free) and only runs at it ({why}); got "
    return [
        f"if list({arg}.shape[1:]) != {dims}:",
        f'    raise ValueError({said!r} + str(list({arg}.shape[1:])) + ": convert again with --input-shape")',
    ]


# TF's SAME rule at run time (convert.padding.rules.same_pads_1d): pad to (ceil(n / s) - 1) * s + e
# rows, never fewer than n when the window e is at least the stride (the emitter checks that). One rule
# for any number of spatial axes: the last len(window) axes (H, W of NCHW; D, H, W of NCDHW).
_SAME_PAD_HELPER = '''
def tf_same_pad(x: torch.Tensor, window: List[int], stride: List[int], value: float = 0.0) -> torch.Tensor:
    """Pad the last len(window) axes of `x` as TensorFlow's SAME padding does for a window of `window`
    (dilated size) moved by `stride`: the pads depend on the input size, and the odd row goes last."""
    pads: List[int] = []
    first = x.dim() - len(window)  # the first padded axis
    for i in range(len(window) - 1, -1, -1):  # torch lists the last axis first
        n = x.size(first + i)
        total = (n + stride[i] - 1) // stride[i] * stride[i] - stride[i] + window[i] - n
        pads.append(total // 2)
        pads.append(total - total // 2)
    return nn.functional.pad(x, pads, value=value)
'''


def _sizes_line(gen: Generated) -> str:
    if gen.size_bound is None:
        return f"Runs at any batch and {gen.size_words}: TF's size-dependent SAME pads are computed from the input."
    return f"Runs at any batch but only at the sizes above ({gen.size_bound})."


def _describe(entries: list[dict[str, Any]]) -> str:
    return "\n".join(f"    {e['name']}: {tuple(e['shape'])} {e['layout']} {e.get('dtype', '')}".rstrip()
                     for e in entries)


def _render(graph: ir.Graph, args: list[str], init: list[str], forward: list[str], results: list[str],
            gen: Generated) -> str:
    helper = any("tf_same_pad(" in line for line in forward)
    helpers = [text for call, text in _HELPERS.items() if any(call in line for line in forward)]
    signature = ", ".join(["self"] + [f"{a}: torch.Tensor" for a in args])
    if len(results) == 1:
        returns, ret = "torch.Tensor", results[0]
    else:
        returns = f"tuple[{', '.join(['torch.Tensor'] * len(results))}]"
        ret = ", ".join(results)
    name = re.sub(r"[^\w .:/+-]", "_", graph.name)  # safe inside the docstring
    lines = [
        f'"""PyTorch model converted from TensorFlow by `convert` (graph "{name}").',
        "",
        "Inputs:",
        _describe(gen.inputs),
        "Outputs:",
        _describe(gen.outputs),
        "",
        _sizes_line(gen),
        "Usage: model = load(\"model.pt\"); outputs = model(*inputs)",
        '"""',
        "",
        *(["from typing import List", ""] if helper else []),
        "import torch",
        "from torch import nn",
        "",
        *([_SAME_PAD_HELPER] if helper else []),
        *helpers,
        "",
        "class Model(nn.Module):",
        f"    input_layouts = {tuple(e['layout'] for e in gen.inputs)!r}",
        f"    output_layouts = {tuple(e['layout'] for e in gen.outputs)!r}",
        *([f"    input_dtypes = {tuple(e.get('dtype', 'float32') for e in gen.inputs)!r}"]
          if any(e.get("dtype") in ("float64", "float16") for e in gen.inputs) else []),
        "",
        "    def __init__(self) -> None:",
        "        super().__init__()",
        *(f"        {line}" for line in init),
        "",
        f"    def forward({signature}) -> {returns}:",
        *(f"        {line}" for line in forward),
        f"        return {ret}",
        "",
        "",
        "def load(path: str, mmap: bool = False) -> Model:",
        '    """Build the model and load its weights (the state_dict in `path`, e.g. model.pt); `mmap`: the',
        '    weights stay in the file\'s pages (no copy into memory; the file must not change meanwhile)."""',
        "    with torch.device(\"meta\"):  # no random init: every tensor comes from the file",
        "        model = Model()",
        "    model.load_state_dict(torch.load(path, map_location=\"cpu\", mmap=mmap), assign=True)",
        "    return model.eval()",
        "",
    ]
    return "\n".join(lines)

