"""Each module parameter's value from its IR partner, with the transform that takes TF's tensor there.

The parsers already bring every weight to the IR's layout (OIHW, NCHW flatten order), so the values
are read as they are; the record says what was done to TF's tensor on the way (conversion.json)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.errors import Unsupported, UnsupportedError
from tf_convert.convert.ir import lazy

from .layers import Layer, bias_value, has_bias, module_path
from .mismatch import ArchitectureMismatch

# (IR op, source op) -> what the parser did to the TF kernel
_KERNEL_TRANSFORMS = {
    "depthwise": "TF (kh, kw, in, mult) -> (in*mult, 1, kh, kw): depthwise, groups=in",
    "conv": "TF HWIO (kh, kw, in, out) -> OIHW (out, in, kh, kw)",
    "linear": "TF (in, out) -> (out, in)",
    "conv_transpose2d": "TF (kh, kw, out, in) -> (in, out, kh, kw)",
    "conv_transpose3d": "TF (kd, kh, kw, out, in) -> (in, out, kd, kh, kw)",
}


# the op a parser names a node by, under the layer's (variable scope's) name
_OP_SUFFIXES = ("/MatMul", "/linear", "/batchnorm/add_1", "/Conv1D")
# Keras MultiHeadAttention's projections: their kernels keep the heads as an axis of their own
_MHA_KERNELS = {
    "query": "Keras MultiHeadAttention (d_model, heads, head_dim) -> (heads*head_dim, d_model)",
    "key": "Keras MultiHeadAttention (d_model, heads, head_dim) -> (heads*head_dim, d_model)",
    "value": "Keras MultiHeadAttention (d_model, heads, head_dim) -> (heads*head_dim, d_model)",
    "attention_output": "Keras MultiHeadAttention (heads, head_dim, d_model) -> (d_model, heads*head_dim)",
}


def _tf_name(node, param: str) -> str:
    """The TF variable a parameter comes from, as Keras/TF name it."""
    keras = {"weight": "kernel", "bias": "bias", "gamma": "gamma", "beta": "beta",
             "mean": "moving_mean", "variance": "moving_variance"}[param]
    if param == "weight" and node.attrs.get("groups", 1) > 1 and node.params["weight"].shape[1] == 1:
        keras = "depthwise_kernel"
    scope = next((node.name[:-len(s)] for s in _OP_SUFFIXES if node.name.endswith(s)), node.name)
    return f"{scope}/{keras}"


def _kernel_transform(layer: Layer, flattened: bool) -> str:
    if layer.kind == "conv_transpose":
        return _KERNEL_TRANSFORMS[layer.node.op]
    if layer.kind == "linear":
        mha = _MHA_KERNELS.get(layer.id.rpartition("/")[2]) if layer.node.source_op == "MultiHeadAttention" else None
        text = mha or _KERNEL_TRANSFORMS["linear"]
        return text + ("; input rows permuted from TF's NHWC flatten order to NCHW" if flattened else "")
    depthwise = layer.attrs["groups"] > 1 and layer.attrs["weight"][1] == 1
    return _KERNEL_TRANSFORMS["depthwise" if depthwise else "conv"]


def bias_folds(pairs: list[tuple[Layer, Layer]], module_layers: dict[str, Layer], ir_layers: dict[str, Layer]
               ) -> dict[str, tuple[str, Any]]:
    """{module batch norm: (TF conv, its bias)} where TF's conv has a bias, the module's conv none, and a batch
    norm with statistics is the only reader of the conv on both sides (Keras ResNet's convs before their batch
    norms): the bias goes into that batch norm's running mean, exactly."""
    paired = {t.id: i for t, i in pairs}
    found = {}
    for t, i in pairs:
        if t.kind != "conv" or t.attrs["bias"] or "bias" not in i.node.params:
            continue
        readers = [layer for layer in module_layers.values() if t.id in layer.inputs]
        ir_readers = [layer for layer in ir_layers.values() if i.id in layer.inputs]
        if len(readers) == 1 and len(ir_readers) == 1 and readers[0].kind == "bn" and \
                paired.get(readers[0].id) is ir_readers[0] and "mean" in ir_readers[0].node.params:
            found[readers[0].id] = (i.id, i.node.params["bias"])
    return found


def parameters(pairs: list[tuple[Layer, Layer]], flattened: set[str], tables=None,
               biases: dict[str, tuple[str, Any]] | None = None, selections=None
               ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(state_dict values as numpy, records) for every paired parametric layer. `flattened`: the IR
    linear layers whose weight rows the passes permuted for a flatten (NHWC -> NCHW order). `tables(t, i)`:
    (the whole table, its TF name) for a module embedding of constant ids whose rows TF added as a constant.
    `selections(t, i)`: the parameter behind module layer `t`, a selection of its entries TF adds as constant `i`."""
    values: dict[str, np.ndarray] = {}
    records: list[dict[str, Any]] = []

    def put(path: str, name: str, value, tf: str, transform: str) -> None:
        key = f"{module_path(path)}.{name}" if path else name
        array = np.ascontiguousarray(np.asarray(lazy.materialize(value), dtype=np.float32))
        if key in values:  # a module called again (shared layers): TF must share the weight too
            if values[key].shape != array.shape or not np.array_equal(values[key], array):
                first = next(r["tf"] for r in records if r["parameter"] == key)
                raise ArchitectureMismatch(
                    f"module path '{module_path(path)}' runs in several places and TF's graph has different "
                    f"weights there ('{first}' and '{tf}' for its {name}): the module shares a layer TF does not")
            return
        values[key] = array
        records.append({"parameter": key, "shape": list(array.shape), "tf": tf, "transform": transform})

    for t, i in pairs:
        node = i.node
        for (key, shape), (name, value) in zip(t.factors, i.factors):  # a layer scale: TF's per-channel constant
            put("", key, np.asarray(lazy.materialize(value)).reshape(shape), name,
                f"reshaped to {shape}: TF multiplies the output of '{i.id}' by it")
        if t.kind == "linear" and "fused" in t.attrs:  # nn.MultiheadAttention: rows of in_proj_weight/in_proj_bias
            _fused(values, records, t, i, _kernel_transform(i, i.id in flattened))
            continue
        if t.kind == "linear" and i.kind == "conv":  # a Dense on (N, H, W, C): the IR's 1x1 conv
            weight = np.asarray(lazy.materialize(node.params["weight"]))
            put(t.id, "weight", weight.reshape(weight.shape[:2]), _tf_name(node, "weight"),
                "(1, 1, in, out) -> (out, in): a 1x1 conv's kernel as Linear's weight")
        elif t.kind == "linear" and ("matrix" in i.attrs or t.attrs.get("stored") == "in_out"):
            put(t.id, "weight", *_stored_weight(t, i))
        elif t.kind == "conv" and t.attrs.get("conv1d"):  # TF's Conv1D is the IR's conv2d of height 1
            weight = np.asarray(lazy.materialize(node.params["weight"]))
            put(t.id, "weight", weight.reshape(weight.shape[0], weight.shape[1], weight.shape[3]),
                _tf_name(node, "weight"), "TF (k, in, out) -> (out, in, k): Conv1D's kernel")
        elif t.kind in ("conv", "conv_transpose", "linear"):
            put(t.id, "weight", node.params["weight"], _tf_name(node, "weight"),
                _kernel_transform(i, i.id in flattened))
        if t.kind in ("conv", "conv_transpose", "linear"):
            if t.attrs["bias"]:
                if has_bias(i):
                    name, value = bias_value(i)
                    put(t.id, "bias", np.asarray(lazy.materialize(value)).reshape(-1), name or _tf_name(node, "bias"),
                        "as is")
                else:
                    put(t.id, "bias", np.zeros(t.attrs["weight"][0], np.float32), "-", "zeros: TF has no bias here")
        elif t.kind == "embedding":
            if node.op == "gather":
                table = i.attrs["table"]
                put(t.id, "weight", table.params["value"], table.name, "as is: the table TF's gather reads")
            else:  # one_hot(ids) @ table: the linear holds the table transposed
                put(t.id, "weight", np.asarray(lazy.materialize(node.params["weight"])).T, f"{node.name} (table)",
                    "one_hot @ table in TF: the table as is")
        elif t.kind in ("layer_norm", "channel_norm"):
            width = t.attrs["features"]
            for name, param, default in (("weight", "gamma", 1.0), ("bias", "beta", 0.0)):
                if getattr(t.node, name, None) is None:
                    continue  # elementwise_affine=False
                value = node.params.get(param)
                if value is None:
                    put(t.id, name, np.full(width, default, np.float32), "-", f"{default:g}s: TF has no {param}")
                else:
                    put(t.id, name, np.asarray(lazy.materialize(value)).reshape(width), _tf_name(node, param),
                        "reshaped to (features,)")
        elif t.kind == "concat":  # a parameter joined in forward (a CLS token): TF's constant part
            for (_, key, shape), (_, const) in zip(t.attrs.get("const_parts", []), i.attrs.get("const_parts", [])):
                put("", key, _one_copy(const, shape), const.name, f"TF's constant joined by '{i.id}', as {shape}")
        elif t.kind == "const" and "selected" in t.attrs:
            put("", t.attrs["param"], selections(t, i), node.name,
                "TF's constant added by its reader, read back through the module's own selection of the entries")
        elif t.kind == "const" and "param" in t.attrs:
            value = np.asarray(lazy.materialize(node.params["value"]))
            put("", t.attrs["param"], value.reshape(t.attrs["shape"]), node.name,
                f"TF's constant added by its reader, reshaped to {t.attrs['shape']}")
        elif t.kind == "const":
            value, where = tables(t, i)
            put(t.id, "weight", value, where, "the table TF slices and adds as a constant")
        elif t.kind == "bn":
            values_bn, recs = _batch_norm(t, node)
            if t.id in (biases or {}):  # the conv before it has TF's bias and the module's none: BN(x + b)
                conv, bias = biases[t.id]
                bias = np.asarray(lazy.materialize(bias), np.float32).reshape(-1)
                key = f"{t.id}.running_mean"
                values_bn[key] = (values_bn[key] - bias).astype(np.float32)
                for rec in recs:
                    if rec["parameter"] == key:
                        rec["transform"] = f"minus the bias of TF's '{conv}' (BN(x + b) is BN(x) with mean - b)"
                        rec["tf"] += f" - {conv}/bias"
            values.update(values_bn)
            records.extend(recs)
    parametrized(values, records, pairs)
    return values, records


def _stored_weight(t: Layer, i: Layer) -> tuple[np.ndarray, str, str]:
    """(value, TF name, transform) of a linear's weight where one side keeps it (in, out): TF's matmul with a
    constant matrix (a head tied to the embeddings), the module's Hugging Face Conv1D (GPT-2's projections)."""
    if "matrix" in i.attrs:
        name, matrix = i.attrs["matrix"]  # (in, out)
        how = "TF's x @ matrix (in, out)"
    else:
        name = _tf_name(i.node, "weight")
        matrix = np.asarray(lazy.materialize(i.node.params["weight"])).T
        how = "TF's kernel (in, out)"
    if t.attrs.get("stored") == "in_out":
        return matrix, name, f"{how} as is: the module stores (in, out) (Hugging Face's Conv1D)"
    return matrix.T, name, f"{how} -> (out, in)"


def parametrized(values: dict[str, Any], records: list[dict[str, Any]], pairs: list[tuple[Layer, Layer]]) -> None:
    """A module weight behind a `torch.nn.utils.parametrize` parametrization (Wav2Vec2's weight-normed positional
    conv: `parametrizations.weight.original0/1`) gets what gives TF's kernel back: for weight norm, the direction
    v = the kernel and the magnitude g = its norm (g * v / |v| is the kernel). Any other parametrization cannot
    be inverted: refused naming the module path."""
    from torch.nn.utils import parametrize

    for t, _ in pairs:
        m = t.node
        key = f"{t.id}.weight"
        if m is None or key not in values or not parametrize.is_parametrized(m, "weight"):
            continue
        chain = list(m.parametrizations["weight"])
        if len(chain) != 1 or type(chain[0]).__name__ != "_WeightNorm":
            names = ", ".join(type(p).__name__ for p in chain)
            raise UnsupportedError([Unsupported("parametrization", t.id, f"its weight is computed by {names}: TF's "
                                                "kernel cannot be put back through it (weight norm can)")], "--into")
        kernel = values.pop(key)
        dim = int(chain[0].dim)
        axes = tuple(a for a in range(kernel.ndim) if a != dim % kernel.ndim) if dim != -1 else tuple(
            range(kernel.ndim))
        norm = np.sqrt(np.sum(np.square(kernel, dtype=np.float64), axis=axes, keepdims=True)).astype(np.float32)
        record = next(r for r in records if r["parameter"] == key)
        records.remove(record)
        base = f"{t.id}.parametrizations.weight"
        values[f"{base}.original0"], values[f"{base}.original1"] = norm, kernel
        records.append({**record, "parameter": f"{base}.original0", "shape": list(norm.shape),
                        "transform": f"weight norm's g: the norm of TF's kernel ({record['transform']}) over every "
                                     f"axis but {dim}"})
        records.append({**record, "parameter": f"{base}.original1",
                        "transform": f"weight norm's v: TF's kernel ({record['transform']})"})


def _one_copy(const, shape: tuple[int, ...]) -> np.ndarray:
    """TF's constant part of a concat as the module's parameter of `shape`: TF tiles it over the batch (the CLS
    token repeated per image), the module keeps one copy; every copy must be the same."""
    value = np.asarray(lazy.materialize(const.params["value"]))
    size = int(np.prod(shape))
    copies = value.reshape(-1, size) if value.size % size == 0 else None
    if copies is None or not np.array_equal(copies, np.broadcast_to(copies[:1], copies.shape)):
        raise UnsupportedError([Unsupported("concat", const.name, f"TF's constant {value.shape} is not copies of "
                                            f"one {shape} parameter")], "--into")
    return copies[0].reshape(shape)


def _batch_norm(t: Layer, node) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    """A batch norm's four tensors. From TF's own statistics where the IR kept them; otherwise
    (TF spelled it as arithmetic) from the folded scale/shift: mean 0, variance 1 - eps."""
    module = t.node
    c = t.attrs["features"]
    p = node.params
    if "mean" in p:
        source = {"weight": ("gamma", np.ones(c)), "bias": ("beta", np.zeros(c)),
                  "running_mean": ("mean", None), "running_var": ("variance", None)}
        values, records = {}, []
        for name, (param, default) in source.items():
            if name in ("weight", "bias") and not module.affine:
                if param in p and not np.allclose(p[param], default):
                    raise UnsupportedError([Unsupported("BatchNorm2d(affine=False)", t.id,
                                                        f"TF's batch norm '{node.name}' has a learned {param}")],
                                   "--into")
                continue
            value = p.get(param, default)
            tf = _tf_name(node, param) if param in p else "-"
            values[f"{t.id}.{name}"] = np.asarray(value, np.float32)
            records.append({"parameter": f"{t.id}.{name}", "shape": [c], "tf": tf,
                            "transform": "as is" if param in p else f"{default[0]:g}s: TF's batch norm has no {param}"})
        return values, records
    # scale*x + shift == BN(x; mean 0, var 1 - eps, weight scale, bias shift)
    if not module.affine:
        raise UnsupportedError([Unsupported("BatchNorm2d(affine=False)", t.id,
                                            f"TF's '{node.name}' is a per-channel affine with no statistics")],
                               "--into")
    eps = float(module.eps)
    values = {f"{t.id}.weight": np.asarray(p["scale"], np.float32), f"{t.id}.bias": np.asarray(p["shift"], np.float32),
              f"{t.id}.running_mean": np.zeros(c, np.float32), f"{t.id}.running_var": np.full(c, 1 - eps, np.float32)}
    note = "folded: TF's graph keeps only scale/shift (mean 0, variance 1 - eps)"
    return values, [{"parameter": k, "shape": [c], "tf": f"{node.name} (scale, shift)", "transform": note}
                    for k in values]


def _fused(values: dict[str, Any], records: list[dict[str, Any]], t: Layer, i: Layer, transform: str) -> None:
    """TF's query, key or value projection into its third of nn.MultiheadAttention's in_proj_weight (and bias)."""
    node = i.node
    path, index, e = t.attrs["fused"]
    rows = slice(index * e, (index + 1) * e)
    part = ("query", "key", "value")[index]
    weight = values.setdefault(f"{path}.in_proj_weight", np.zeros((3 * e, e), np.float32))
    weight[rows] = np.asarray(lazy.materialize(node.params["weight"]), np.float32)
    records.append({"parameter": f"{path}.in_proj_weight[{index * e}:{(index + 1) * e}]", "shape": [e, e],
                    "tf": _tf_name(node, "weight"), "transform": f"{transform}; the {part} rows of the fused weight"})
    if t.attrs["bias"]:
        bias = values.setdefault(f"{path}.in_proj_bias", np.zeros(3 * e, np.float32))
        name = "-"
        if has_bias(i):
            name, value = bias_value(i)
            name = name or _tf_name(node, "bias")
            bias[rows] = np.asarray(lazy.materialize(value), np.float32).reshape(-1)
        records.append({"parameter": f"{path}.in_proj_bias[{index * e}:{(index + 1) * e}]", "shape": [e],
                        "tf": name, "transform": f"the {part} part of the fused bias" if has_bias(i) else "zeros"})
