"""Record the user's module by running it (no symbolic tracing): forward hooks on every module and a
TorchFunctionMode see each call at the source's input shape, and tensor identity links a call's
output to the calls that read it. Python control flow on the config and on shapes runs as Python, so
it does not matter; a functional call between modules (`F.pad` in a forward, an activation, a mask's
arithmetic) is recorded like any other.

The record is a torch.fx Graph (built node by node, never traced): placeholders named after forward's
parameters, a `call_module` node per run of a leaf module (torch.nn's own layers: what trace.py turns
into layers), a `call_function` node per function or tensor method applied to a recorded tensor outside
a leaf module, and an `output` node; `node.meta["shape"]` holds each tensor's shape. Tensors the inputs do
not reach (parameters, buffers, position ids) stay out: they are constants to the record."""

from __future__ import annotations

import inspect
from typing import Any

from tf_convert.convert.errors import UsageError

# dunder tensor methods -> the name a functional call of the same op has
_DUNDER = {"radd": "add", "iadd": "add_", "rmul": "mul", "imul": "mul_", "isub": "sub_", "itruediv": "div_",
           "rtruediv": "rtruediv", "getitem": "getitem", "matmul": "matmul", "rmatmul": "rmatmul"}


# calls that pick rows of a table (the argument at this position) by ids
_ROW_PICKS = {"getitem": 0, "index_select": 0, "embedding": 1}
# ... and the argument that holds the ids
_ROW_IDS = {"getitem": 1, "index_select": 2, "embedding": 0}


class Recorded:
    """What trace.py reads: `graph` (torch.fx.Graph) and `named_modules()` of the module that ran;
    `outputs`: the name of each recorded output (a ModelOutput's field, or its index)."""

    def __init__(self, model, graph, outputs: list[str], rows: dict[int, Any] | None = None,
                 derived: dict[int, tuple] | None = None):
        self.model, self.graph, self.outputs = model, graph, outputs
        self.rows = rows or {}  # id(tensor the inputs do not reach) -> the parameter table it holds rows of
        # id(tensor) -> (func, args, kwargs) of the call that computed it from parameters and buffers alone
        # (Swin's relative position bias: a table gathered at a constant index): derive.py replays it
        self.derived = derived or {}
        self.row_ids: dict[int, tuple[int, ...]] = {}  # id(rows in `rows`) -> the row indices picked, where known

    def named_modules(self):
        return self.model.named_modules(remove_duplicate=False)


# torch's other names of one op (ConvBERT's `torch.multiply`)
_ALIASES = {"multiply": "mul", "multiply_": "mul_", "subtract": "sub", "subtract_": "sub_", "divide": "div",
            "true_divide": "div", "concatenate": "cat", "absolute": "abs"}


def canonical(func) -> str:
    """The op's name as torch.fx would show it: `Tensor.__add__` -> add, `Tensor.__getitem__` -> getitem,
    `torch.multiply` -> mul."""
    name = getattr(func, "__name__", str(func))
    if name.startswith("__") and name.endswith("__"):
        bare = name[2:-2]
        return _DUNDER.get(bare, bare)
    return _ALIASES.get(name, name)


def is_leaf(m) -> bool:
    """torch.nn's own layers are recorded whole (their internals are torch's, not the user's), and so is a
    subclass of one that keeps its forward (Hugging Face's EfficientNetDepthwiseConv2d is an nn.Conv2d); one
    that overrides forward (a Conv2dSame padding in it) is recorded call by call."""
    from torch import nn

    if isinstance(m, (nn.Sequential, nn.ModuleList, nn.ModuleDict)):
        return False
    base = next((c for c in type(m).__mro__ if c.__module__.startswith("torch.nn") and c is not nn.Module), None)
    return base is not None and type(m).forward is base.forward


def forward_names(model, count: int) -> list[str]:
    """The names of forward's first `count` parameters (the placeholders)."""
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:count]]
    return names + [f"input_{i}" for i in range(len(names), count)]


def keyword_names(model, names: list[str]) -> list[str] | None:
    """The forward parameter each input goes to, by name (`input_ids`, `attention_mask`, `pixel_values`,
    `decoder_input_ids`, ...), where every one of `names` (TF's input names) is a parameter of forward; None
    otherwise (the inputs are passed by position, in TF's order)."""
    try:
        params = [p.name for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    except (TypeError, ValueError):
        return None
    bare = [n.rpartition("/")[2].split(":")[0] for n in names]
    return bare if len(names) > 1 and len(set(bare)) == len(bare) and all(n in params for n in bare) else None


def call(model, inputs: list, keywords: list[str] | None = None):
    """`model` run on `inputs`: by keyword where `keywords` names their parameters, by position otherwise."""
    return model(**dict(zip(keywords, inputs))) if keywords else model(*inputs)


def flat_outputs(out) -> list[tuple[str, Any]]:
    """(name, value) of a module's outputs: a ModelOutput's (or dict's) fields in order, a tuple's items."""
    if isinstance(out, dict):  # transformers' ModelOutput is an OrderedDict of its non-None fields
        return [(str(k), v) for k, v in out.items()]
    if isinstance(out, (tuple, list)):
        return [(str(i), v) for i, v in enumerate(out)]
    return [("0", out)]


def record(model, inputs: list, on_failure, keywords: list[str] | None = None) -> Recorded:
    """Run `model` on `inputs` (tensors; by keyword where `keywords` names them), recording every call.
    `on_failure(path, shapes, exc)` makes the exception raised when the run fails inside module path `path`
    (None: outside any module)."""
    import torch
    import torch.fx
    from torch.overrides import TorchFunctionMode

    graph = torch.fx.Graph()
    paths = {id(m): name for name, m in model.named_modules(remove_duplicate=False)}
    nodes: dict[int, Any] = {}
    alive: list = []  # every recorded tensor stays referenced: ids are never reused during the run
    depth = [0]
    stack: list[tuple[str, bool]] = []
    counts: dict[str, int] = {}
    rows: dict[int, Any] = {}
    row_ids: dict[int, tuple[int, ...]] = {}  # id(those rows) -> the rows picked (BART's positions start at 2)

    def remember(value, node) -> None:
        if isinstance(value, torch.Tensor):
            nodes[id(value)] = node
            alive.append(value)
            node.meta["shape"] = tuple(value.shape)
            node.meta["float"] = value.dtype.is_floating_point

    def as_arg(v):
        if isinstance(v, torch.Tensor):
            if id(v) in nodes:
                return nodes[id(v)]
            return float(v.reshape(())) if v.numel() == 1 and not v.is_meta and v.dtype.is_floating_point else v
        if isinstance(v, (list, tuple)):
            mapped = [as_arg(x) for x in v]
            return type(v)(mapped) if isinstance(v, tuple) and not hasattr(v, "_fields") else mapped
        if isinstance(v, dict):
            return {k: as_arg(x) for k, x in v.items()}
        return v

    def tracked(v) -> bool:
        if isinstance(v, torch.Tensor):
            return id(v) in nodes
        if isinstance(v, (list, tuple)):
            return any(tracked(x) for x in v)
        if isinstance(v, dict):
            return any(tracked(x) for x in v.values())
        return False

    def unique(name: str) -> str:
        counts[name] = counts.get(name, -1) + 1
        return name if counts[name] == 0 else f"{name}_{counts[name]}"

    def add_results(result, node) -> None:
        if isinstance(result, torch.Tensor):
            remember(result, node)
        elif isinstance(result, (tuple, list)):
            for i, v in enumerate(result):
                if isinstance(v, torch.Tensor):
                    import operator

                    item = graph.create_node("call_function", operator.getitem, (node, i), {},
                                             name=unique("getitem"))
                    item.meta["item"] = i  # one of a call's several results (a module returning a tuple)
                    remember(v, item)

    derived: dict[int, tuple] = {}
    held = {id(t) for t in [*model.parameters(), *model.buffers()]}

    def held_or_derived(v) -> bool:
        if isinstance(v, torch.Tensor):
            return id(v) in held or id(v) in derived
        if isinstance(v, (list, tuple)):
            return any(held_or_derived(x) for x in v)
        if isinstance(v, dict):
            return any(held_or_derived(x) for x in v.values())
        return False

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            result = func(*args, **kwargs)
            if depth[0] == 0 and isinstance(result, torch.Tensor) and not (tracked(args) or tracked(kwargs)) and \
                    canonical(func) not in ("__get__", "__set__") and held_or_derived((args, kwargs)) and \
                    not any(result is a for a in args):  # `contiguous()` of a contiguous tensor is that tensor
                derived[id(result)] = (func, args, kwargs)
                alive.append(result)
            if depth[0] == 0 and canonical(func) == "expand_as" and args and id(args[0]) in rows and \
                    not tracked(args[0]):  # picked rows broadcast to a recorded tensor's shape: still those rows
                rows[id(result)] = rows[id(args[0])]
                if id(args[0]) in row_ids:
                    row_ids[id(result)] = row_ids[id(args[0])]
                alive.append(result)
            elif depth[0] == 0 and (tracked(args) or tracked(kwargs)) and canonical(func) not in ("__get__",
                                                                                                 "__set__"):
                if isinstance(result, torch.Tensor) or (isinstance(result, (tuple, list)) and any(
                        isinstance(v, torch.Tensor) for v in result)):
                    node = graph.create_node("call_function", func, as_arg(tuple(args)), as_arg(dict(kwargs)),
                                             name=unique(canonical(func).strip("_") or "call"))
                    add_results(result, node)
            elif depth[0] == 0 and isinstance(result, torch.Tensor) and canonical(func) in _ROW_PICKS:
                table = args[_ROW_PICKS[canonical(func)]] if len(args) > _ROW_PICKS[canonical(func)] else None
                if isinstance(table, torch.nn.Parameter):  # Whisper's `self.weight[position_ids]`: a constant term
                    rows[id(result)] = table
                    alive.append(result)
                    ids = args[_ROW_IDS[canonical(func)]] if len(args) > _ROW_IDS[canonical(func)] else None
                    if isinstance(ids, torch.Tensor) and not ids.is_floating_point() and ids.dim() >= 1:
                        row_ids[id(result)] = tuple(int(k) for k in ids.reshape(-1, ids.shape[-1])[0])
            return result

    def pre_hook(m, args, kwargs):
        path = paths.get(id(m))
        enters = depth[0] > 0 or (path is not None and is_leaf(m))
        stack.append((path, enters))
        if enters:
            depth[0] += 1

    def hook(m, args, kwargs, out):
        path, enters = stack.pop()
        if enters:
            depth[0] -= 1
            if depth[0] == 0 and path is not None:  # keywords kept: nn.MultiheadAttention's masks
                node = graph.create_node("call_module", path, as_arg(tuple(args)), as_arg(dict(kwargs)), name=unique(
                    path.replace(".", "_") or "module"))
                add_results(out, node)

    handles = []
    for m in model.modules():
        handles.append(m.register_forward_pre_hook(pre_hook, with_kwargs=True))
        handles.append(m.register_forward_hook(hook, with_kwargs=True))
    names = keywords or forward_names(model, len(inputs))
    for name, x in zip(names, inputs):
        remember(x, graph.create_node("placeholder", name, name=name))
    try:
        with torch.no_grad(), Mode():
            out = call(model, inputs, keywords)
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the module's run is a mismatch where it failed
        where = next((p for p, _ in reversed(stack) if p), None)
        raise on_failure(where, [tuple(x.shape) for x in inputs], exc) from None
    finally:
        for h in handles:
            h.remove()
    fields = [(name, value) for name, value in flat_outputs(out) if isinstance(value, torch.Tensor)]
    graph.output(tuple(nodes.get(id(v)) for _, v in fields if id(v) in nodes))
    recorded = Recorded(model, graph, [name for name, v in fields if id(v) in nodes], rows, derived)
    recorded.row_ids = row_ids
    return recorded
