"""The user's side: load TARGET (`FILE.py:NAME` or `package.module:NAME`), build the module, trace it
with torch.fx at the source's input shape and turn the traced graph into layers (layers.py)."""

from __future__ import annotations

import importlib
import importlib.util
import operator
import sys
from pathlib import Path
from typing import Any, NamedTuple

from tf_convert.convert.errors import Unsupported, UnsupportedError, UsageError

from .. import memory
from . import derive, record
from .layers import Layer, LayerGraph
from .mismatch import ArchitectureMismatch


class Built(NamedTuple):
    model: Any  # the user's module; its values are uninitialized memory unless `initialized`
    traced: Any  # record.Recorded at the source's input shape, every tensor's shape in node.meta["shape"]
    initialized: bool
    other: Any = None  # the record one row and column larger, where the module pads in forward
    keywords: list[str] | None = None  # the forward parameter each TF input goes to (record.keyword_names)


def build(target: str, kwargs: dict[str, Any] | None, shape, names: list[str] | None = None) -> Built:
    """The module and its record at `shape`. Mapping needs only shapes and attributes, and a big module's
    random init costs seconds (0.36 s CPU of bench-into's 28M parameters): the module is built on the meta
    device and given uninitialized CPU memory (shapes on meta tensors, or Module.to_empty, would import
    torch's symbolic-shape machinery: seconds more). A module that cannot be built that way is built for real.
    `names`: TF's input names; where forward has a parameter of each name, the inputs are passed by keyword."""
    model = load_module(target, kwargs, meta=True)
    keywords = record.keyword_names(model, names) if names else None
    if is_meta(model):
        empty = _on_empty_cpu_memory(model, target)
        try:
            return _recorded(empty, shape, False, keywords)
        except Exception:  # noqa: BLE001 - any failure on empty memory: build it for real
            pass
        model = load_module(target, kwargs)
    try:
        return _recorded(model, shape, True, keywords)
    except ArchitectureMismatch as exc:
        if names and len(names) > 1 and keywords is None:  # passed by position: perhaps in the wrong order
            raise ArchitectureMismatch(f"{exc}{_order_hint(model, names)}") from None
        raise


def _order_hint(model, names: list[str]) -> str:
    """What a failure of a module fed several inputs by position adds: TF's order against forward's, and the
    --inputs order that puts each TF input at forward's parameter of its name (the others in the free places)."""
    bare = [n.rpartition("/")[2].split(":")[0] for n in names]
    params = record.forward_names(model, len(bare))
    slots = {n: params.index(n) for n in bare if n in params}
    free = iter(k for k in range(len(bare)) if k not in slots.values())
    slots.update({n: next(free) for n in bare if n not in slots})
    ordered = sorted(bare, key=slots.get)
    hint = (f"pass --inputs {','.join(ordered)}" if ordered != bare else
            "name TF's inputs as forward's parameters, or give the module a forward that takes TF's order")
    return (f" (TF's inputs {bare} went to forward's {params} by position, their names not all forward's: "
            f"{hint})")


def _recorded(model, shape, initialized: bool, keywords: list[str] | None = None) -> Built:
    """The record at `shape` and, where the module zero-pads in forward (its pads may follow the size,
    TF's SAME does), at one more row and column (one image input)."""
    traced = trace(model, shape, keywords)
    other = None
    single = isinstance(shape[0], int) or len(shape) == 1
    dims, dtype = (tuple(shape), "float32") if isinstance(shape[0], int) else shape[0]
    if single and len(dims) == 4 and folded_pads(traced):
        n, c, h, w = dims
        try:
            other = trace(model, [((n, c, h + 1, w + 1), dtype)])
        except Exception:  # noqa: BLE001 - a module bound to one size: its pads are judged at that size only
            other = None
    return Built(model, traced, initialized, other, keywords)


def materialize(built: Built, target: str, kwargs: dict[str, Any] | None):
    """The module with real values (a fresh build where `built`'s are uninitialized): to load and run."""
    return built.model if built.initialized else load_module(target, kwargs)


def _on_empty_cpu_memory(model, target: str):
    """`model` with each meta parameter and buffer replaced by uninitialized CPU memory of its shape
    (Module.to_empty would do it, but it imports torch's fake-tensor machinery: seconds). A module larger
    than the memory a conversion may take (memory.default_limit), or that the allocator refuses, is the
    user's arguments' doing: UsageError (exit 2), before its memory is touched."""
    import torch

    tensors = [*model.parameters(), *model.buffers()]
    needed = sum(t.numel() * t.element_size() for t in tensors)
    limit = memory.default_limit()
    if needed > limit:
        raise UsageError(f"--into {target!r}: the module's parameters and buffers need {memory.human(needed)}, "
                         f"more than the {memory.human(limit)} a conversion may use here; check --into-kwargs")
    try:
        _fill_empty(model, torch)
    except (RuntimeError, MemoryError) as exc:  # the allocator refused: not a bug of ours
        line = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:150]
        raise UsageError(f"--into {target!r}: the module's {memory.human(needed)} of parameters cannot be "
                         f"allocated ({line}); check --into-kwargs") from None
    return model


def _fill_empty(model, torch) -> None:
    made: dict[int, tuple] = {}  # id(meta tensor) -> (it, its replacement): a tied parameter stays one tensor
    for m in model.modules():
        for name, p in list(m.named_parameters(recurse=False)):
            if id(p) not in made:
                made[id(p)] = (p, torch.nn.Parameter(_empty(p), requires_grad=p.requires_grad))
            setattr(m, name, made[id(p)][1])
        for name, b in list(m.named_buffers(recurse=False)):
            if id(b) not in made:
                made[id(b)] = (b, _empty(b))
            setattr(m, name, made[id(b)][1])  # an existing buffer keeps its persistence


def _empty(t):
    """Uninitialized CPU memory for meta tensor `t`, read from its metadata only (any op on a meta tensor,
    empty_like included, loads torch's meta registrations: seconds)."""
    import torch

    return torch.empty(tuple(t.shape), dtype=t.dtype)


def is_meta(model) -> bool:
    return any(t.is_meta for t in [*model.parameters(), *model.buffers()])


def load_module(target: str, kwargs: dict[str, Any] | None = None, meta: bool = False):
    """Import TARGET and call NAME (an nn.Module class or a factory) with `kwargs`; the module, in eval mode.
    `meta`: build it on the meta device where it can be (a real one where that fails)."""
    import torch

    where, sep, name = str(target).rpartition(":")
    if not sep or not where or not name:
        raise UsageError(f"--into {target!r}: expected FILE.py:NAME or package.module:NAME")
    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise UsageError(f"--into {target!r}: no file {where}; give an existing FILE.py:NAME")
            spec = importlib.util.spec_from_file_location(f"_into_{path.stem}", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module  # dataclasses and pickling look the module up by name
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the import raises is the user's module's error
        raise UsageError(f"--into {target!r}: importing {where} failed: {type(exc).__name__}: {exc}") from None
    factory = getattr(module, name, None)
    if factory is None:
        raise UsageError(f"--into {target!r}: {where} has no {name}")
    factory = _from_config(factory, target, kwargs or {})
    if meta:
        try:
            with torch.device("meta"):
                model = factory(**(kwargs or {}))
            if isinstance(model, torch.nn.Module):
                return model.eval()
        except Exception:  # noqa: BLE001 - any failure on the meta device: build it for real below
            pass
    try:
        model = factory(**(kwargs or {}))
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the factory raises is the user's module's error
        raise UsageError(f"--into {target!r}: {name}(**{kwargs or {}}) failed: {type(exc).__name__}: {exc}; "
                         f"pass its arguments with --into-kwargs JSON") from None
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"--into {target!r}: {name}(...) returned {type(model).__name__}, not a torch.nn.Module")
    return model.eval()


def is_pretrained_model(factory) -> bool:
    """A transformers PreTrainedModel class (told by its attributes: transformers is not imported for it)."""
    return isinstance(factory, type) and getattr(factory, "config_class", None) is not None and all(
        hasattr(factory, a) for a in ("from_pretrained", "post_init"))


def _from_config(factory, target: str, kwargs: dict[str, Any]):
    """NAME(**kwargs) as is; for a Hugging Face PreTrainedModel, NAME(NAME.config_class(**kwargs)) with
    eager attention unless the kwargs name another (its explicit matmul and softmax are what TF's graph has,
    where SDPA is one fused call)."""
    if not is_pretrained_model(factory):
        return factory
    config_class = factory.config_class

    def build(**_ignored):
        try:
            config = config_class(**kwargs)
        except Exception as exc:  # noqa: BLE001 - whatever the config raises is the user's arguments' error
            raise UsageError(f"--into {target!r}: {config_class.__name__}(**{kwargs}) failed: "
                             f"{type(exc).__name__}: {exc}") from None
        if "attn_implementation" not in kwargs:
            config._attn_implementation = "eager"
        return factory(config)

    build.__name__ = factory.__name__
    return build


def trace(model, shape, keywords: list[str] | None = None):
    """The record of `model` run at an input of `shape` (one float input's shape, or [(shape, dtype)] per
    input): record.py. Batch 0 first (every shape, no arithmetic: a 100 MB stack of convs at 224 is
    seconds of it), the real shape where batch 0 does not run. A module that fails at the real shape does
    not fit the TF graph: ArchitectureMismatch naming the module path that failed."""
    import torch

    specs = [(tuple(shape), "float32")] if isinstance(shape[0], int) else [(tuple(s), d) for s, d in shape]
    shown = specs[0][0] if len(specs) == 1 else [s for s, _ in specs]

    def zeros(batch):
        return [torch.zeros((batch, *s[1:]) if batch is not None else s, dtype=getattr(torch, d)) for s, d in specs]

    def failure(where, _shapes, exc):
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        place = f"module path '{where}'" if where else f"{type(model).__name__}.forward"
        return ArchitectureMismatch(f"{place} fails at the source's input shape {shown}: {type(exc).__name__}: "
                                    f"{first}")

    if all(d.startswith("float") for _, d in specs):  # token inputs: masks branch on their values (all ones)
        try:
            return record.record(model, zeros(0), failure, keywords)
        except Exception:  # noqa: BLE001 - batch 0 may not run: run the real shape
            pass
    return record.record(model, zeros(None), failure, keywords)


def unread_parameters(traced) -> set[str]:
    """State-dict keys of the parameters the recorded forward never reads: no module that ran holds them, no
    recorded call takes them, nothing computed from them (training-only parameters)."""
    import torch

    read: set[int] = set()

    def visit(v) -> None:
        if isinstance(v, torch.Tensor):
            read.add(id(v))
        elif isinstance(v, (list, tuple)):
            for x in v:
                visit(x)
        elif isinstance(v, dict):
            for x in v.values():
                visit(x)

    modules = dict(traced.named_modules())
    for n in traced.graph.nodes:
        if n.op == "call_module":
            read.update(id(p) for p in modules[str(n.target)].parameters())
        visit((n.args, n.kwargs))
    for _, args, kwargs in traced.derived.values():
        visit((args, kwargs))
    read.update(id(t) for t in traced.rows.values())
    return {key for key, p in traced.model.named_parameters() if id(p) not in read}


def input_shapes_of(traced) -> dict[str, tuple[int, ...]]:
    """{module path: input shape} of every call_module node, as recorded."""
    result = {}
    modules, owners = dict(traced.named_modules()), _owners(traced)
    for n in traced.graph.nodes:
        if not (n.args and hasattr(n.args[0], "meta") and "shape" in n.args[0].meta):
            continue
        path = str(n.target) if n.op == "call_module" else _conv_path(n, modules, owners)
        if path is not None:  # a module's call, or a functional conv2d with a module's weight
            result.setdefault(path, n.args[0].meta["shape"])
    return result


# ---- fx nodes -> layers ---------------------------------------------------------------------------
def _activation_module(m) -> tuple | None:
    from torch import nn

    if isinstance(m, nn.ReLU):
        return ("relu",)
    if isinstance(m, nn.ReLU6):
        return ("clip", 0.0, 6.0)
    if isinstance(m, nn.Hardtanh):
        return ("clip", float(m.min_val), float(m.max_val))
    if isinstance(m, nn.LeakyReLU):
        return ("leaky_relu", round(float(m.negative_slope), 6))
    if isinstance(m, nn.ELU):
        return ("elu", round(float(m.alpha), 6))
    if isinstance(m, nn.GELU):
        return ("gelu", m.approximate)
    simple = {nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.SiLU: "swish", nn.Hardswish: "hard_swish",
              nn.Hardsigmoid: "hard_sigmoid"}
    for cls, name in simple.items():
        if isinstance(m, cls):
            return (name, round(1 / 6, 6), 0.5) if name == "hard_sigmoid" else (name,)
    return None


def _pair(v) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _module_layer(path: str, m, inputs: list[str], shape, in_shape: tuple[int, ...] = ()) -> Layer | None:
    from torch import nn

    if isinstance(m, nn.Conv2d):
        attrs = {"weight": tuple(m.weight.shape), "groups": m.groups, "stride": tuple(m.stride),
                 "dilation": tuple(m.dilation), "kernel": tuple(m.kernel_size), "bias": m.bias is not None}
        return Layer(path, "conv", inputs, attrs, shape, m)
    if isinstance(m, nn.Conv1d):  # as TF's Conv1D reaches the IR: a conv2d of height 1
        attrs = {"weight": (m.weight.shape[0], m.weight.shape[1], 1, m.weight.shape[2]), "groups": m.groups,
                 "stride": (1, *m.stride), "dilation": (1, *m.dilation), "kernel": (1, *m.kernel_size),
                 "bias": m.bias is not None, "conv1d": True}
        return Layer(path, "conv", inputs, attrs, shape, m)
    if isinstance(m, (nn.ConvTranspose2d, nn.ConvTranspose3d)):
        attrs = {"weight": tuple(m.weight.shape), "groups": m.groups, "stride": tuple(m.stride),
                 "dilation": tuple(m.dilation), "kernel": tuple(m.kernel_size), "bias": m.bias is not None}
        return Layer(path, "conv_transpose", inputs, attrs, shape, m)
    if isinstance(m, nn.Embedding):  # ids from a buffer (positions): a table added as a constant
        return Layer(path, "embedding" if inputs else "const", inputs, {"weight": tuple(m.weight.shape)}, shape, m)
    if isinstance(m, nn.GroupNorm) and m.num_groups == m.num_channels:  # each channel over the rest (Wav2Vec2)
        return Layer(path, "channel_norm", inputs, {"features": m.num_channels}, shape, m)
    if isinstance(m, nn.LayerNorm):
        return Layer(path, "layer_norm", inputs, {"features": int(m.normalized_shape[-1])}, shape, m)
    if isinstance(m, nn.Linear):
        return Layer(path, "linear", inputs, {"weight": tuple(m.weight.shape), "bias": m.bias is not None}, shape, m)
    if isinstance(m, (nn.BatchNorm2d, nn.BatchNorm1d)):
        return Layer(path, "bn", inputs, {"features": m.num_features}, shape, m)
    if isinstance(m, (nn.MaxPool2d, nn.AvgPool2d)):
        kind = "max_pool" if isinstance(m, nn.MaxPool2d) else "avg_pool"
        stride = m.stride if m.stride is not None else m.kernel_size
        return Layer(path, kind, inputs, {"kernel": _pair(m.kernel_size), "stride": _pair(stride)}, shape, m)
    if isinstance(m, nn.AdaptiveAvgPool2d) and m.output_size in (1, (1, 1)):
        return Layer(path, "global_avg", inputs, {}, shape, m)
    if isinstance(m, nn.AdaptiveAvgPool1d) and m.output_size in (1, (1,)) and in_shape and len(in_shape) == 3:
        return Layer(path, "mean_1d", inputs, {"reduced": in_shape[-1]}, shape, m)
    variant = _activation_module(m)
    if variant is not None:
        return Layer(path, "act", inputs, {"variant": variant}, shape, m)
    if isinstance(m, nn.Softmax):
        return Layer(path, "softmax", inputs, {"axis": m.dim % len(shape)}, shape, m)
    if isinstance(m, (nn.Flatten, nn.Dropout, nn.Identity)):
        return None  # shape-only / no-op at inference
    return Layer(path, f"other:{type(m).__name__}", inputs, {}, shape, m)


# what builds an additive attention mask from the mask input (Hugging Face's `where(mask, 0, min)`)
_MASK_OPS = {"and", "or", "xor", "invert", "logical_not", "logical_and", "logical_or", "where", "masked_fill", "eq",
             "ne", "bool", "long", "int", "clone", "detach", "expand_as", "view_as", "all", "any"}
_ARITHMETIC = {"add", "add_", "__add__", "__iadd__", "mul", "mul_", "sub", "sub_", "rsub", "truediv", "div", "div_"}


def _function_layer(name: str, target, args, kwargs, inputs: list[str], shape) -> Layer | None:
    import torch
    import torch.nn.functional as F

    fname = record.canonical(target)
    if len(set(inputs)) == 1 and fname in _MASK_OPS:
        return None  # an attention mask's comparisons, casts and selects (TF's casts and arithmetic, read through)
    if len(inputs) == 1 and fname in _ARITHMETIC:
        return None  # with a constant operand: an attention scale, a mask's arithmetic
    if fname == "getitem":  # x[:, None, None, :] only adds axes; x[:, 0] selects
        index = args[1] if len(args) > 1 else ()
        index = index if isinstance(index, tuple) else (index,)
        if all(i is None or i is Ellipsis or _whole(i) for i in index):
            return None  # GPT-2's `hidden_states[:, slice(-0, None), :]` before its head keeps every token
        part = _split_part(args[0], index[0]) if len(index) == 1 and isinstance(index[0], int) else None
        return Layer(name, "other:slice", inputs, {"range": part} if part else {}, shape)
    if target in (torch.matmul, operator.matmul) or fname in ("matmul", "bmm"):
        return Layer(name, "other:matmul", inputs, {}, shape)
    if target in (operator.add, torch.add) or fname in ("add", "add_", "__add__", "__iadd__"):
        return Layer(name, "add", inputs, {}, shape)
    if target in (operator.mul, torch.mul) or fname in ("mul", "mul_"):
        return Layer(name, "mul", inputs, {}, shape)
    if target in (operator.sub, torch.sub) or fname in ("sub", "sub_"):
        return Layer(name, "sub", inputs, {}, shape)
    if (target in (torch.cat, torch.concat) or fname in ("cat", "concat")) and _joins_only_empty(args, kwargs):
        return None  # a key/value cache's first step: the new keys joined to an empty cache
    if fname in ("split", "chunk", "unbind"):
        return None  # its parts are read by getitem (other:slice): GPT-2's c_attn output split into q, k, v
    if fname == "pow":
        exponent = args[1] if len(args) > 1 else kwargs.get("exponent")
        return Layer(name, "other:pow", inputs, {"exponent": exponent}, shape)
    if target in (torch.cat, torch.concat) or fname in ("cat", "concat"):
        dim = kwargs.get("dim", args[1] if len(args) > 1 else 0)
        return Layer(name, "concat", inputs, {"axis": int(dim) % len(shape)}, shape)
    if fname in ("relu", "relu_"):
        return Layer(name, "act", inputs, {"variant": ("relu",)}, shape)
    if fname in ("relu6",):
        return Layer(name, "act", inputs, {"variant": ("clip", 0.0, 6.0)}, shape)
    if fname in ("sigmoid", "tanh"):
        return Layer(name, "act", inputs, {"variant": (fname,)}, shape)
    if fname == "silu":
        return Layer(name, "act", inputs, {"variant": ("swish",)}, shape)
    if fname == "gelu":
        return Layer(name, "act", inputs, {"variant": ("gelu", kwargs.get("approximate", "none"))}, shape)
    if fname in ("flatten", "view", "reshape", "contiguous", "dropout", "squeeze", "unsqueeze", "permute", "transpose",
                 "float", "to", "type", "type_as", "expand"):
        return None
    if fname == "softmax":
        dim = kwargs.get("dim", args[1] if len(args) > 1 else -1)
        return Layer(name, "softmax", inputs, {"axis": int(dim) % len(shape)}, shape)
    if fname in ("mean",) and len(shape) in (2, 4):
        dims = kwargs.get("dim", args[1] if len(args) > 1 else None)
        listed = [] if dims is None else dims if isinstance(dims, (tuple, list)) else [dims]
        dims = {int(d) % 4 for d in listed}
        if dims == {2, 3}:
            return Layer(name, "global_avg", inputs, {}, shape)
    if fname == "mean" and args and hasattr(args[0], "meta"):
        dims = kwargs.get("dim", args[1] if len(args) > 1 else None)
        dims = dims if isinstance(dims, (tuple, list)) else [dims]
        src = args[0].meta.get("shape", ())
        if len(dims) == 1 and isinstance(dims[0], int) and src:
            return Layer(name, "mean_1d", inputs, {"reduced": src[dims[0]], "from_end": dims[0] % len(src) - len(src)},
                         shape)
    if fname == "adaptive_avg_pool2d" and (args[1] if len(args) > 1 else kwargs.get("output_size")) in (1, (1, 1)):
        return Layer(name, "global_avg", inputs, {}, shape)
    if fname == "interpolate" and len(shape) == 4:
        mode = args[3] if len(args) > 3 else kwargs.get("mode", "nearest")
        corners = args[4] if len(args) > 4 else kwargs.get("align_corners", None)
        antialias = kwargs.get("antialias", False)
        coordinate = {("bilinear", True): "align_corners", ("bilinear", False): "half_pixel",
                      ("nearest", None): "asymmetric", ("nearest-exact", None): "half_pixel"}.get((mode, corners))
        if mode == "bilinear" and corners is None:
            coordinate = "half_pixel"
        if coordinate is not None and not antialias:
            return Layer(name, "resize", inputs, {"sampling": (mode.removesuffix("-exact"), coordinate)}, shape)
    if fname == "roll" and args and hasattr(args[0], "meta"):  # Swin's shifted windows; axes as sizes, as TF's
        shifts = args[1] if len(args) > 1 else kwargs.get("shifts")
        dims = args[2] if len(args) > 2 else kwargs.get("dims")
        shifts, dims = (shifts if isinstance(shifts, (tuple, list)) else [shifts],
                        dims if isinstance(dims, (tuple, list)) else [dims])
        if None not in dims:
            src = args[0].meta.get("shape", shape)
            rolled = sorted((src[d], int(s) % src[d]) for s, d in zip(shifts, dims) if int(s) % src[d])
            return Layer(name, "roll", inputs, {"shifts": tuple(rolled)}, shape)
    if target is F.pad or fname == "pad":
        mode = args[2] if len(args) > 2 else kwargs.get("mode", "constant")
        value = args[3] if len(args) > 3 else kwargs.get("value", None)
        if mode == "constant":
            return Layer(name, "pad", inputs, {"fill": float(value or 0.0)}, shape)
        return Layer(name, f"other:pad_{mode}", inputs, {}, shape)
    return Layer(name, f"other:{fname}", inputs, {}, shape)


def _split_part(source, index: int) -> tuple[int, int, int] | None:
    """(axis from the end, start, stop) of part `index` of a recorded split or chunk (GPT-2's c_attn into q, k, v),
    or None."""
    import torch.fx

    if not isinstance(source, torch.fx.Node) or record.canonical(source.target) not in ("split", "chunk"):
        return None
    shape = source.args[0].meta.get("shape", ()) if source.args and hasattr(source.args[0], "meta") else ()
    dim = source.args[2] if len(source.args) > 2 else source.kwargs.get("dim", 0)
    sizes = source.args[1] if len(source.args) > 1 else source.kwargs.get("split_size_or_sections")
    if not shape or sizes is None:
        return None
    length = shape[dim]
    if record.canonical(source.target) == "chunk":
        sizes = -(-length // int(sizes))
    if isinstance(sizes, int):
        sizes = [min(sizes, length - k) for k in range(0, length, sizes)]
    starts = [sum(sizes[:k]) for k in range(len(sizes))]
    return (dim % len(shape) - len(shape), starts[index], starts[index] + sizes[index]) if index < len(sizes) else None


def _whole(index) -> bool:
    """An index that keeps a whole axis: `:`, `0:`, `::1`."""
    return isinstance(index, slice) and index.start in (None, 0) and index.stop is None and index.step in (None, 1)


def _joins_only_empty(args, kwargs) -> bool:
    """A cat of one recorded tensor and tensors with no elements (an empty key/value cache)."""
    import torch
    import torch.fx

    items = args[0] if args and isinstance(args[0], (list, tuple)) else kwargs.get("tensors", ())
    recorded = [x for x in items if isinstance(x, torch.fx.Node)]
    rest = [x for x in items if not isinstance(x, torch.fx.Node)]
    return len(recorded) == 1 and bool(rest) and all(isinstance(x, torch.Tensor) and x.numel() == 0 for x in rest)


def _functional_linear(n, owners, ins: list[str], shape) -> Layer | None:
    """A module's weight applied by a functional call in its own forward, as that module's linear: Hugging Face's
    Conv1D (`addmm(bias, x, weight)`, its weight stored (in, out): `stored`) or `F.linear(x, weight, bias)`."""
    import torch

    fname = record.canonical(n.target)
    if fname == "addmm" and len(n.args) == 3 and all(n.kwargs.get(k, 1) == 1 for k in ("beta", "alpha")):
        bias, weight, stored = n.args[0], n.args[2], "in_out"
    elif fname == "linear" and len(n.args) >= 2:
        bias, weight, stored = n.args[2] if len(n.args) > 2 else n.kwargs.get("bias"), n.args[1], "out_in"
    else:
        return None
    owner = owners.get(id(weight)) if isinstance(weight, torch.nn.Parameter) else None
    if owner is None or len(ins) != 1 or weight.dim() != 2:
        return None
    path, m = owner
    if getattr(m, "weight", None) is not weight or (bias is not None and getattr(m, "bias", None) is not bias):
        return None
    out, width = weight.shape if stored == "out_in" else weight.shape[::-1]
    return Layer(path, "linear", ins, {"weight": (int(out), int(width)), "bias": bias is not None, "stored": stored},
                 shape, m)


def _functional_embedding(n, owners, ins: list[str], shape) -> Layer | None:
    """`F.embedding(ids, weight)` with a module's weight, the ids from the inputs: that module's lookup (an
    nn.Embedding subclass whose own forward calls it, then scales: BART's BartScaledWordEmbedding)."""
    import torch

    if record.canonical(n.target) != "embedding" or len(n.args) < 2 or len(ins) != 1:
        return None
    weight = n.args[1]
    owner = owners.get(id(weight)) if isinstance(weight, torch.nn.Parameter) else None
    if owner is None or getattr(owner[1], "weight", None) is not weight or weight.dim() != 2:
        return None
    return Layer(owner[0], "embedding", ins, {"weight": tuple(weight.shape)}, shape, owner[1])


def _scalar_factor(n) -> float | None:
    """The constant a mul/div node multiplies its one tensor by (x * c, c * x, x / c), or None."""
    import torch.fx

    fname = record.canonical(n.target)
    numbers = [a for a in n.args if isinstance(a, (int, float)) and not isinstance(a, bool)]
    if len(n.args) != 2 or len(numbers) != 1:
        return None
    if fname in ("mul", "mul_"):
        return float(numbers[0])
    if fname in ("truediv", "div", "div_") and isinstance(n.args[0], torch.fx.Node) and numbers[0] != 0:
        return 1.0 / float(numbers[0])
    return None


def _scalar_offset(n) -> float | None:
    """The number an add node adds to its one tensor (x + eps), or None."""
    numbers = [a for a in n.args if isinstance(a, (int, float)) and not isinstance(a, bool)]
    if record.canonical(n.target) not in ("add", "add_", "__add__", "__iadd__") or len(n.args) != 2 or \
            len(numbers) != 1:
        return None
    return float(numbers[0])


def _tensor_inputs(args, kwargs) -> list:
    import torch.fx

    found = []

    def visit(v):
        if isinstance(v, torch.fx.Node):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                visit(x)

    visit(list(args))
    visit(list(kwargs.values()))
    return found


def zero_pad(n, modules) -> tuple[int, int, int, int] | None:
    """(top, bottom, left, right) of a constant-zero spatial pad node (F.pad, nn.ZeroPad2d), or None."""
    from torch import nn

    if n.op == "call_module":
        m = modules.get(str(n.target))
        if isinstance(m, nn.ZeroPad2d) or (isinstance(m, nn.ConstantPad2d) and m.value == 0):
            left, right, top, bottom = m.padding
            return (top, bottom, left, right)
        return None
    if n.op != "call_function" or record.canonical(n.target) != "pad" or len(n.meta.get("shape", ())) != 4:
        return None
    pad = n.args[1] if len(n.args) > 1 else n.kwargs.get("pad")
    mode = n.args[2] if len(n.args) > 2 else n.kwargs.get("mode", "constant")
    value = n.args[3] if len(n.args) > 3 else n.kwargs.get("value", None)
    if mode != "constant" or value not in (None, 0, 0.0) or len(pad) != 4 or min(pad) < 0:
        return None
    left, right, top, bottom = (int(p) for p in pad)
    return (top, bottom, left, right)


def folded_pads(traced) -> dict[str, tuple[int, int, int, int]]:
    """{conv module path: the zero pad its input gets in forward} for pads that feed only convs (what TF
    writes as a conv's padding, the way the IR folds TF's own Pad + VALID conv)."""

    modules = dict(traced.named_modules())
    owners = _owners(traced)
    found = {}
    for n in traced.graph.nodes:
        pads = zero_pad(n, modules)
        users = list(n.users)
        paths = [_conv_path(u, modules, owners) for u in users]
        if pads is None or not users or None in paths:
            continue
        for path in paths:
            found[path] = pads
    return found


def _owners(traced) -> dict[int, tuple[str, Any]]:
    """{id(parameter): (module path, module)} for the module that ran."""
    return {id(p): (path, m) for path, m in traced.named_modules() for p in m.parameters(recurse=False)}


def _conv_path(n, modules, owners) -> str | None:
    """The nn.Conv2d module path node `n` runs: a call of the module, or a functional conv2d with its weight
    (a Conv2dSame-style subclass that pads in its own forward and calls F.conv2d); None otherwise."""
    from torch import nn

    if n.op == "call_module":
        return str(n.target) if isinstance(modules.get(str(n.target)), nn.Conv2d) else None
    if n.op == "call_function" and record.canonical(n.target) == "conv2d":
        weight = n.args[1] if len(n.args) > 1 else n.kwargs.get("weight")
        owner = owners.get(id(weight))
        if owner is not None and isinstance(owner[1], nn.Conv2d) and weight is owner[1].weight:
            return owner[0]
    return None


def _norm_path(n, owners) -> str | None:
    """The nn.LayerNorm module path whose weight a functional layer_norm uses (a subclass that permutes in its own
    forward and calls the base class's: Hugging Face's ConvNextLayerNorm), or None."""
    from torch import nn

    if n.op != "call_function" or record.canonical(n.target) != "layer_norm":
        return None
    weight = n.args[2] if len(n.args) > 2 else n.kwargs.get("weight")
    owner = owners.get(id(weight))
    if owner is not None and isinstance(owner[1], nn.LayerNorm) and weight is owner[1].weight:
        return owner[0]
    return None


def _parameter_factor(n, owners) -> tuple[str, tuple[int, ...]] | None:
    """The key of a module parameter a mul multiplies its one recorded tensor by (ConvNeXt's
    `layer_scale_parameter * x`), when it has more than one element; None otherwise."""
    import torch

    if n.op != "call_function" or record.canonical(n.target) not in ("mul", "mul_") or len(n.args) != 2:
        return None
    found = [a for a in n.args if isinstance(a, torch.nn.Parameter) and id(a) in owners and a.numel() > 1]
    if len(found) != 1:
        return None
    path, m = owners[id(found[0])]
    name = next(k for k, p in m.named_parameters(recurse=False) if p is found[0])
    return (f"{path}.{name}" if path else name), tuple(found[0].shape)


def _parameter_key(value, owners, storages) -> tuple[str, Any] | None:
    """(state_dict key, parameter) of a module parameter, or of the parameter a view of it shows
    (`cls_token.expand(batch, -1, -1)`), by identity or by storage; None for any other tensor."""
    import torch

    if not isinstance(value, torch.Tensor):
        return None
    found = owners.get(id(value))
    param = value if found is not None else None
    if found is None and value.device.type == "cpu" and value.numel() > 0:
        param = storages.get(value.untyped_storage().data_ptr())
        found = owners.get(id(param)) if param is not None else None
    if found is None:
        return None
    path, m = found
    name = next(k for k, p in m.named_parameters(recurse=False) if p is param)
    return (f"{path}.{name}" if path else name), param


def _table_term(n, owners, storages) -> tuple[str, tuple[int, ...]] | None:
    """(key, shape) of a parameter table an add puts on its one recorded tensor (ViT's `embeddings +
    self.position_embeddings`: rows of a table, two axes longer than 1), or None."""
    if n.op != "call_function" or record.canonical(n.target) not in ("add", "add_") or len(n.args) != 2:
        return None
    found = [_parameter_key(a, owners, storages) for a in n.args if not hasattr(a, "meta")]
    if len(found) != 1 or found[0] is None or sum(1 for d in found[0][1].shape if d > 1) < 2:
        return None
    return found[0][0], tuple(found[0][1].shape)


def _selected_term(n, traced, owners) -> Layer | None:
    """The `const` layer of a tensor an add puts on its one recorded tensor where that tensor was computed from
    one parameter alone (Swin's relative position bias: its table gathered at a constant index), or None."""
    if n.op != "call_function" or record.canonical(n.target) not in ("add", "add_") or len(n.args) != 2:
        return None
    return _selected_layer(next((a for a in n.args if not hasattr(a, "meta")), None), traced, owners)


def _selected_layer(tensor, traced, owners) -> Layer | None:
    import torch

    if not isinstance(tensor, torch.Tensor):
        return None
    tensor = derive.without_constant_terms(traced, tensor, owners)
    found = derive.source(traced, tensor, owners)
    if found is None or sum(1 for d in tensor.shape if d > 1) < 2:
        return None
    key, param = found
    shape = tuple(tensor.shape)
    return Layer(f"{key}:selected", "const", [], {"param": key, "shape": shape, "selected": (tensor, param)},
                 shape, None, f"module parameter '{key}' (a selection of its entries)")


def _picked_rows(n, rows: dict[int, Any], owners, row_ids: dict[int, tuple[int, ...]]
                 ) -> tuple[str, tuple[int, ...], tuple[int, ...] | None] | None:
    """(module path, shape, the rows picked where known) of the rows of a module's `weight` table (picked by
    constant ids: Whisper's decoder positions, `self.weight[position_ids]`) that an add puts on its one recorded
    tensor, or None."""
    if n.op != "call_function" or record.canonical(n.target) not in ("add", "add_") or len(n.args) != 2:
        return None
    found = [rows[id(a)] for a in n.args if not hasattr(a, "meta") and id(a) in rows]
    owner = owners.get(id(found[0])) if len(found) == 1 else None
    if owner is None or getattr(owner[1], "weight", None) is not found[0]:
        return None
    value = next(a for a in n.args if not hasattr(a, "meta"))
    return owner[0], tuple(value.shape), row_ids.get(id(value))


def _concat_parts(n, owners, storages) -> list[tuple[int, str, tuple[int, ...]]]:
    """[(position, key, shape)] of the parameters a cat joins to recorded tensors (ViT's CLS token), or []."""
    items = n.args[0] if n.args and isinstance(n.args[0], (list, tuple)) else n.kwargs.get("tensors", ())
    parts = []
    for position, item in enumerate(items):
        found = None if hasattr(item, "meta") else _parameter_key(item, owners, storages)
        if found is not None:
            parts.append((position, found[0], tuple(found[1].shape)))
    return parts


def _functional_conv(n, path: str, m, ins: list[str], shape) -> Layer:
    """A functional conv2d with module `m`'s weight, as that module's layer; the padding it passed is the one
    judged (`padding_arg`)."""
    padding = n.args[4] if len(n.args) > 4 else n.kwargs.get("padding", 0)
    stride = n.args[3] if len(n.args) > 3 else n.kwargs.get("stride", 1)
    layer = _module_layer(path, m, ins[:1], shape)
    layer.attrs["padding_arg"] = padding
    layer.attrs["stride"] = _pair(stride)
    return layer


def _whole_window(layer: Layer, n) -> bool:
    """An unpadded average pool whose one window covers its whole input: a global average."""
    src = n.args[0].meta.get("shape", ()) if n.args and hasattr(n.args[0], "meta") else ()
    padding = layer.node.padding
    return len(src) == 4 and tuple(layer.shape[2:]) == (1, 1) and padding in (0, (0, 0)) and all(
        k >= d for k, d in zip(layer.attrs["kernel"], src[2:]))


def _attention_layers(path: str, m, n, alias: dict[str, str]) -> tuple[dict[str, Layer], dict[int, str]]:
    """nn.MultiheadAttention as what it computes, in the layers TF's attention has: three projections (rows of
    the fused in_proj_weight, `fused` says which), the scaled product, the masks the inputs reach added (its
    key_padding_mask, attn_mask: TF adds its mask arithmetic to the scores; a constant mask, a causal one, is read
    through as TF's constant is), softmax, the product with the values and out_proj. ({layer id: layer},
    {result index: layer id}: the output, and the weights when returned)."""
    import torch
    import torch.fx

    def arg(k: int, key: str, default=None):
        return n.args[k] if len(n.args) > k else n.kwargs.get(key, default)

    parts = [arg(0, "query"), arg(1, "key"), arg(2, "value")]
    recorded = all(isinstance(x, torch.fx.Node) and x.name in alias for x in parts)
    if not m._qkv_same_embed_dim or not recorded:
        why = "kdim/vdim differ from embed_dim" if not m._qkv_same_embed_dim else "query, key, value not all given"
        raise UnsupportedError([Unsupported("nn.MultiheadAttention", path, why)], "--into")
    masks = []
    for mask in (arg(3, "key_padding_mask"), arg(5, "attn_mask")):
        if isinstance(mask, torch.fx.Node) and mask.name in alias:
            masks.append(alias[mask.name])
        elif isinstance(mask, torch.Tensor) and not _masks_only(mask):
            raise UnsupportedError([Unsupported("nn.MultiheadAttention", path, "its constant attn_mask adds values "
                                                "other than 0 and -inf (a bias, not a mask)")], "--into")
    q_in, k_in, v_in = (alias[x.name] for x in parts)
    e, heads = m.embed_dim, m.num_heads
    shape, key_shape = parts[0].meta.get("shape", ()), parts[1].meta.get("shape", ())

    def batch_tokens(s):
        return (s[0], s[1]) if m.batch_first else (s[1], s[0]) if len(s) == 3 else (0, 0)

    (batch, tokens), (_, keys) = batch_tokens(shape), batch_tokens(key_shape)
    bias = m.in_proj_bias is not None
    found = {}
    for index, (part, source) in enumerate((("q", q_in), ("k", k_in), ("v", v_in))):
        found[f"{path}.in_proj:{part}"] = Layer(f"{path}.in_proj:{part}", "linear", [source],
                                                {"weight": (e, e), "bias": bias, "fused": (path, index, e)},
                                                tuple(shape), m)
    scores = Layer(f"{path}:scores", "other:matmul", [f"{path}.in_proj:q", f"{path}.in_proj:k"], {},
                   (batch, heads, tokens, keys), None, f"{path}'s scores (q @ kᵀ)")
    scores.scale = (e // heads) ** -0.5
    found[scores.id] = scores
    last = scores.id
    if masks:
        found[f"{path}:masked"] = Layer(f"{path}:masked", "add", [scores.id, *masks], {}, scores.shape, None,
                                        f"{path}'s scores + masks")
        last = f"{path}:masked"
    found[f"{path}:softmax"] = Layer(f"{path}:softmax", "softmax", [last], {"axis": 3}, scores.shape, None,
                                     f"{path}'s softmax")
    found[f"{path}:context"] = Layer(f"{path}:context", "other:matmul", [f"{path}:softmax", f"{path}.in_proj:v"],
                                     {}, (batch, heads, tokens, e // heads), None, f"{path}'s probs @ v")
    out = f"{path}.out_proj"
    found[out] = Layer(out, "linear", [f"{path}:context"], {"weight": tuple(m.out_proj.weight.shape),
                                                            "bias": m.out_proj.bias is not None},
                       tuple(shape), m.out_proj)
    return found, {0: out, 1: f"{path}:softmax"}


def _masks_only(mask) -> bool:
    """A constant attention mask: booleans, or 0 where attended and -inf (or a large negative number) elsewhere."""
    import torch

    if mask.dtype == torch.bool or mask.is_meta:
        return True
    return bool(torch.all((mask == 0) | (mask <= -1e4)))


def _values_from_buffer(n) -> bool:
    """A gather whose values come from a tensor the inputs do not reach, the ids only choosing where: its result
    is a constant to TF (RoBERTa's token types, zeros from a buffer, gathered at the position ids)."""
    if record.canonical(n.target) not in ("gather", "index_select", "take", "take_along_dim"):
        return False
    source = n.args[0] if n.args else n.kwargs.get("input")
    return source is not None and not hasattr(source, "meta")


def _sdpa_layers(n, ins: list[str], alias: dict[str, str], selected=None) -> dict[str, Layer]:
    """F.scaled_dot_product_attention as the layers TF's attention has: the scaled product q @ kᵀ, the mask
    added (when one is passed), softmax, the product with the values (the call's own node). A causal call's mask
    is computed from constants on TF's side, as the module's is here: read through. `selected(mask)`: the const
    layer of a mask computed from one parameter alone (Swin's relative position bias), or None."""
    import torch.fx

    def arg(k: int, key: str, default=None):
        return n.args[k] if len(n.args) > k else n.kwargs.get(key, default)

    q, k, v, mask = arg(0, "query"), arg(1, "key"), arg(2, "value"), arg(3, "attn_mask")
    if float(arg(4, "dropout_p", 0.0) or 0.0) != 0.0:
        raise UnsupportedError([Unsupported("scaled_dot_product_attention", n.name,
                                            "dropout_p > 0: a random output (run the module in eval mode)")], "--into")
    if not all(isinstance(x, torch.fx.Node) and x.name in alias for x in (q, k, v)):
        raise UnsupportedError([Unsupported("scaled_dot_product_attention", n.name,
                                            "query, key and value must all come from the inputs")], "--into")
    q_shape, k_shape = q.meta.get("shape", ()), k.meta.get("shape", ())
    scale = arg(6, "scale")
    found: dict[str, Layer] = {}
    scores = Layer(f"{n.name}:scores", "other:matmul", [alias[q.name], alias[k.name]], {},
                   (*q_shape[:-1], k_shape[-2]), None, f"forward's {n.name} (q @ kᵀ)")
    scores.scale = float(scale) if scale is not None else q_shape[-1] ** -0.5
    found[scores.id] = scores
    last = scores.id
    if isinstance(mask, torch.fx.Node) and mask.name in alias:
        found[f"{n.name}:masked"] = Layer(f"{n.name}:masked", "add", [last, alias[mask.name]], {}, scores.shape,
                                          None, f"forward's {n.name} (+ mask)")
        last = f"{n.name}:masked"
    elif selected is not None and selected(mask) is not None:
        table = selected(mask)
        found[table.id] = table
        found[f"{n.name}:masked"] = Layer(f"{n.name}:masked", "add", [last, table.id], {}, scores.shape,
                                          None, f"forward's {n.name} (+ {table.label})")
        last = f"{n.name}:masked"
    found[f"{n.name}:softmax"] = Layer(f"{n.name}:softmax", "softmax", [last], {"axis": len(scores.shape) - 1},
                                       scores.shape, None, f"forward's {n.name} (softmax)")
    found[n.name] = Layer(n.name, "other:matmul", [f"{n.name}:softmax", alias[v.name]], {}, n.meta.get("shape", ()),
                          None, f"forward's {n.name} (probs @ v)")
    return found


def torch_layers(traced, other=None) -> LayerGraph:
    """The recorded module as layers, named by module path (a functional call by its node name). A zero
    pad in forward that feeds only convs joins them (`pre_pad`, and `pre_pad_other` as recorded in
    `other`, the run at another input size)."""
    modules = dict(traced.named_modules())
    owners = _owners(traced)
    storages = {p.untyped_storage().data_ptr(): p for p in traced.model.parameters() if p.device.type == "cpu"}
    pre_pads = folded_pads(traced)
    other_pads = folded_pads(other) if other is not None else {}
    pad_nodes = {n.name for n in traced.graph.nodes
                 if any(_conv_path(u, modules, owners) in pre_pads for u in n.users)
                 and zero_pad(n, modules) is not None}
    from torch import nn

    alias: dict[str, str] = {}
    items: dict[str, dict[int, str]] = {}  # a module call's node -> {result index: layer}
    layers: dict[str, Layer] = {}
    inputs: list[str] = []
    outputs: list[str] = []
    for n in traced.graph.nodes:
        shape = n.meta.get("shape", ())
        if n.op == "placeholder":
            layers[n.name] = Layer(n.name, "input", [], {}, shape)
            alias[n.name] = n.name
            inputs.append(n.name)
            continue
        if n.op == "output":
            outputs = [alias[x.name] for x in _tensor_inputs(n.args, {}) if x.name in alias]
            continue
        if n.op == "get_attr":
            continue
        ins = [alias[x.name] for x in _tensor_inputs(n.args, n.kwargs) if x.name in alias]
        if n.op in ("call_function", "call_method") and not ins:
            continue  # computed from constants and buffers alone (position ids, sizes)
        if record.canonical(n.target) == "expand_as" and n.args and getattr(n.args[0], "name", None) in alias:
            alias[n.name] = alias[n.args[0].name]  # its shape from the other (XLM's positions over the batch)
            continue
        embedding = _functional_embedding(n, owners, ins, shape) if n.op == "call_function" else None
        if embedding is not None:  # an nn.Embedding subclass with a forward of its own (BART's scaled embedding)
            layer = embedding
            if layer.id in layers and layers[layer.id].node is layer.node:
                layer = _repeated_call(layer, layers)
            layers[layer.id] = layer
            alias[n.name] = layer.id
            continue
        if n.op == "call_function" and len(set(ins)) == 1 and not any(
                x.meta.get("float", True) for x in _tensor_inputs(n.args, n.kwargs)):
            if _values_from_buffer(n):
                continue  # a buffer's values picked by the ids (zero token types gathered at the positions)
            alias[n.name] = ins[0]  # ids and masks (whole numbers, booleans): indexing, casts, comparisons
            continue
        if n.name in pad_nodes and len(ins) == 1:
            alias[n.name] = ins[0]
            continue
        if "item" in n.meta and n.args and n.args[0].name in items:  # a module's tuple result, item by item
            alias[n.name] = items[n.args[0].name].get(n.meta["item"], alias.get(n.args[0].name))
            if alias[n.name] is None:
                del alias[n.name]
            continue
        if n.op == "call_function" and record.canonical(n.target) == "scaled_dot_product_attention":
            layers.update(_sdpa_layers(n, ins, alias, lambda mask: _selected_layer(mask, traced, owners)))
            alias[n.name] = n.name
            continue
        picked = _picked_rows(n, traced.rows, owners, traced.row_ids) if len(ins) == 1 else None
        if picked is not None:  # rows of an embedding table picked by constant ids, added: a constant term
            path, rows_shape, picked_ids = picked
            layers[path] = Layer(path, "const", [], {"weight": tuple(modules[path].weight.shape)}, rows_shape,
                                 modules[path])
            if picked_ids is not None:
                layers[path].attrs["rows"] = picked_ids
            layers[n.name] = Layer(n.name, "add", [ins[0], path], {}, shape)
            alias[n.name] = n.name
            continue
        table = _table_term(n, owners, storages) if len(ins) == 1 else None
        if table is not None:  # a parameter table added in forward: a constant term of the sum
            layers[table[0]] = Layer(table[0], "const", [], {"param": table[0], "shape": table[1]}, table[1])
            layers[n.name] = Layer(n.name, "add", [ins[0], table[0]], {}, shape)
            alias[n.name] = n.name
            continue
        selected = _selected_term(n, traced, owners) if len(ins) == 1 else None
        if selected is not None:  # a selection of a parameter's entries added in forward (a relative position bias)
            layers[selected.id] = selected
            layers[n.name] = Layer(n.name, "add", [ins[0], selected.id], {}, shape)
            alias[n.name] = n.name
            continue
        if n.op == "call_module" and isinstance(modules[str(n.target)], nn.MultiheadAttention):
            found, results = _attention_layers(str(n.target), modules[str(n.target)], n, alias)
            layers.update(found)
            items[n.name], alias[n.name] = results, results[0]
            continue
        conv = _conv_path(n, modules, owners) if n.op == "call_function" else None
        dense = _functional_linear(n, owners, ins, shape) if n.op == "call_function" else None
        if dense is not None:
            layer = dense
        elif conv is not None:
            layer = _functional_conv(n, conv, modules[conv], ins, shape)
            if conv in pre_pads:
                layer.attrs["pre_pad"] = pre_pads[conv]
                if conv in other_pads:
                    layer.attrs["pre_pad_other"] = other_pads[conv]
        elif _norm_path(n, owners) is not None:
            norm = _norm_path(n, owners)
            layer = _module_layer(norm, modules[norm], ins[:1], shape)
        elif n.op == "call_module":
            src = n.args[0].meta.get("shape", ()) if n.args and hasattr(n.args[0], "meta") else ()
            layer = _module_layer(str(n.target), modules[str(n.target)], ins, shape, src)
            if layer is not None and layer.kind == "avg_pool" and _whole_window(layer, n):
                layer = Layer(layer.id, "global_avg", ins, {}, shape, layer.node)  # HF EfficientNet's pooler
            if layer is not None and layer.id in pre_pads:
                layer.attrs["pre_pad"] = pre_pads[layer.id]
                if layer.id in other_pads:
                    layer.attrs["pre_pad_other"] = other_pads[layer.id]
        elif n.op == "call_method" and n.target in ("size", "dim"):
            continue
        else:  # call_function / call_method (x.relu(), x.mean(...), x.view(...))
            layer = _function_layer(n.name, n.target, n.args, n.kwargs, ins, shape)
            if layer is not None and layer.kind == "concat":
                layer.attrs["const_parts"] = _concat_parts(n, owners, storages)
            if layer is not None and ins:
                layer.where = f"forward's {n.name} (on '{layers[ins[0]].label}')"
        if layer is None:
            if len(ins) == 1:
                alias[n.name] = ins[0]
                factor = _scalar_factor(n)
                if factor is not None:  # an attention scale: checked against TF's (semantics.py)
                    layers[ins[0]].scale *= factor
                offset = _scalar_offset(n)
                if offset is not None and layers[ins[0]].kind == "mean_1d":  # an RMS norm's epsilon
                    layers[ins[0]].attrs["offset"] = offset
                parameter = _parameter_factor(n, owners)
                if parameter is not None:  # a layer scale: gets TF's per-channel constant (transforms.py)
                    layers[ins[0]].factors.append(parameter)
            continue
        if layer.id in layers and layer.node is not None and layers[layer.id].node is layer.node:
            layer = _repeated_call(layer, layers)
        layers[layer.id] = layer
        alias[n.name] = layer.id
    return LayerGraph(layers, outputs, inputs)


def _repeated_call(layer: Layer, layers: dict[str, Layer]) -> Layer:
    """A module called again (ALBERT's one layer run num_hidden_layers times): a layer of its own, `path#k` for
    its k-th call after the first (layers.module_path gives the path back), named by path and call in messages."""
    k = 1
    while f"{layer.id}#{k}" in layers:
        k += 1
    layer.where = f"{layer.id} (its call {k + 1})"
    layer.id = f"{layer.id}#{k}"
    return layer
