"""The shape of the model config Keras writes, checked before the builder reads it.

A file whose config breaks it is corrupt (exit 2, naming the key and the layer); past this check the
builder may index the config freely, and an exception there is a bug (exit 1), not a bad file.
"""

from __future__ import annotations

from typing import Any

from tf_convert.convert.errors import InputError

MAX_DEPTH = 64  # nested models; a deeper config is not one Keras wrote
# layer arguments Keras requires to be positive integers (or a tuple of them; None: the default)
POSITIVE_INTS = ("strides", "kernel_size", "pool_size", "dilation_rate", "filters", "units", "groups",
                 "depth_multiplier", "size")
# the arguments a layer class takes without a default in Keras 3 and tf_keras alike: a config without one
# is a file Keras cannot load (tests/parsers/test_parser_keras_configs.py checks this against both Kerases)
_CONV = ("filters", "kernel_size")
REQUIRED = {
    "Activation": ("activation",), "AlphaDropout": ("rate",), "Bidirectional": ("layer",),
    "Conv1D": _CONV, "Conv1DTranspose": _CONV, "Conv2D": _CONV, "Conv2DTranspose": _CONV, "Conv3D": _CONV,
    "Conv3DTranspose": _CONV, "Convolution1D": _CONV, "Convolution1DTranspose": _CONV, "Convolution3D": _CONV,
    "Convolution3DTranspose": _CONV, "Dense": ("units",), "DepthwiseConv1D": ("kernel_size",),
    "DepthwiseConv2D": ("kernel_size",), "Dot": ("axes",), "Dropout": ("rate",),
    "Embedding": ("input_dim", "output_dim"), "GRU": ("units",), "GaussianDropout": ("rate",),
    "GaussianNoise": ("stddev",), "LSTM": ("units",), "MultiHeadAttention": ("num_heads", "key_dim"),
    "Permute": ("dims",), "RepeatVector": ("n",), "Rescaling": ("scale",), "Reshape": ("target_shape",),
    "Resizing": ("height", "width"), "SeparableConv1D": _CONV, "SeparableConv2D": _CONV,
    "SeparableConvolution1D": _CONV, "SimpleRNN": ("units",), "SpatialDropout1D": ("rate",),
    "SpatialDropout2D": ("rate",), "TimeDistributed": ("layer",),
}
WRAPPED = ("layer", "backward_layer")  # keys of a wrapper's config that hold a whole layer (Bidirectional)
ACTIVATIONS = ("activation", "recurrent_activation")


def check(config: Any, where: str) -> None:
    """Raise InputError naming the first part of `config` that is not the shape Keras writes."""
    _model(config, where, "the model", 0)


def _fail(where: str, at: str, what: str) -> InputError:
    return InputError(f"{where}: malformed Keras model config: {at} {what}; the file is corrupt")


def keras_module(module: Any) -> bool:
    """Whether a config's `module` is Keras's own (legacy .h5 configs name none: Keras's too)."""
    return not module or module == "keras" or str(module).startswith("keras.")


def check_origins(config: Any, where: str) -> None:
    """Raise InputError naming the first layer (nested models and wrapped layers too) whose class or
    activation Keras cannot locate: an object of another module (`torch.nn.ReLU`) that no package
    registers with Keras (`registered_name` 'package>name'). Keras refuses such a file unless the code
    defining the class is passed to it; converting it as Keras's class of that name would be wrong.
    Tolerant of any shape: `check` says what else is wrong."""
    _origins(config, where, 0)


def _origins(obj: Any, where: str, depth: int, outer: str = "") -> None:
    if not isinstance(obj, dict) or depth > MAX_DEPTH:
        return
    conf = obj.get("config")
    conf = conf if isinstance(conf, dict) else {}
    name = f"{outer}{obj.get('name') or conf.get('name') or obj.get('class_name')}"
    if "class_name" in obj and not keras_module(obj.get("module")) and ">" not in str(obj.get("registered_name")):
        raise InputError(f"{where}: layer '{name}': {obj.get('module')}.{obj.get('class_name')} is not a Keras "
                         "class (no package registers it), so Keras cannot load it; convert a SavedModel "
                         "exported where its code is")
    for key in ACTIVATIONS:
        spec = conf.get(key)
        if isinstance(spec, dict) and not (keras_module(spec.get("module")) or spec.get("module") == "builtins"):
            raise InputError(f"{where}: layer '{name}': {key} {spec.get('module')}.{spec.get('config')} is not "
                             "a Keras activation, so Keras cannot load it without the code that defines it")
    for child in conf.get("layers") if isinstance(conf.get("layers"), list) else []:
        _origins(child, where, depth + 1)
    for key in WRAPPED:
        _origins(conf.get(key), where, depth + 1, f"{name}' ({key}) '")


def _model(cfg: Any, where: str, at: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise _fail(where, at, f"nests models more than {MAX_DEPTH} deep")
    if not isinstance(cfg, dict):
        raise _fail(where, at, f"is a {type(cfg).__name__}, not an object")
    if not isinstance(cfg.get("class_name"), str):
        raise _fail(where, at, "has no 'class_name' string")
    conf = cfg.get("config")
    if not isinstance(conf, dict):
        raise _fail(where, at, "has no 'config' object")
    layers = conf.get("layers")
    if not isinstance(layers, list):
        raise _fail(where, at, "has no 'layers' list")
    names = []
    for i, layer in enumerate(layers):
        names.append(_layer(layer, where, f"{at}, layer #{i}", depth))
    if cfg["class_name"] == "Sequential":
        if not layers:
            raise _fail(where, at, "is a Sequential model without layers")
        return
    known = set(names)
    for key in ("input_layers", "output_layers"):
        refs = conf.get(key)
        if refs is None:
            raise _fail(where, at, f"has no '{key}'")
        for ref in _ref_list(refs, where, f"{at} '{key}'"):
            if ref[0] not in known:
                raise _fail(where, f"{at} '{key}'", f"names layer '{ref[0]}', which the model does not have")
    for ref in _ref_list(conf["input_layers"], where, f"{at} 'input_layers'"):
        layer = layers[names.index(ref[0])]
        shape = layer["config"].get("batch_shape") or layer["config"].get("batch_input_shape")
        if layer["class_name"] == "InputLayer" and not _shape(shape):
            raise _fail(where, f"input layer '{ref[0]}'", "has no 'batch_shape' list of sizes")


def _layer(layer: Any, where: str, at: str, depth: int) -> str:
    if not isinstance(layer, dict):
        raise _fail(where, at, f"is a {type(layer).__name__}, not an object")
    if not isinstance(layer.get("class_name"), str):
        raise _fail(where, at, "has no 'class_name' string")
    conf = layer.get("config")
    if not isinstance(conf, dict):
        raise _fail(where, at, "has no 'config' object")
    name = layer.get("name") or conf.get("name")
    if not isinstance(name, str):
        raise _fail(where, at, "has no 'name' string")
    at = f"layer '{name}'"
    _arguments(layer, where, at, depth)
    for key in POSITIVE_INTS:
        value = conf.get(key)
        values = value if isinstance(value, list) else [value]
        if value is not None and not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
            raise _fail(where, at, f"has {key}={str(value)[:40]}, not positive integers")
    nodes = layer.get("inbound_nodes", [])
    if not isinstance(nodes, list):
        raise _fail(where, at, "has an 'inbound_nodes' that is not a list")
    for node in nodes:
        _node(node, where, at)
    if layer["class_name"] in ("Functional", "Model", "Sequential") and "layers" in conf:
        _model(layer, where, f"nested model '{name}'", depth + 1)
    return name


def _arguments(layer: dict, where: str, at: str, depth: int) -> None:
    """The arguments Keras requires of the layer's class, and those of the layers it wraps."""
    conf = layer["config"]
    missing = [key for key in REQUIRED.get(layer["class_name"], ()) if key not in conf]
    if missing:
        raise InputError(f"{where}: {at} ({layer['class_name']}) has no {', '.join(repr(k) for k in missing)}, "
                         f"which Keras requires of a {layer['class_name']}; the file is corrupt")
    for key in WRAPPED:
        inner = conf.get(key)
        if inner is None:
            continue
        if depth > MAX_DEPTH or not isinstance(inner, dict) or not isinstance(inner.get("class_name"), str) \
                or not isinstance(inner.get("config"), dict):
            raise _fail(where, at, f"wraps a '{key}' that is not a layer object")
        _arguments(inner, where, f"{at} ({key})", depth + 1)


def _node(node: Any, where: str, at: str) -> None:
    if isinstance(node, dict):  # Keras 3: {args, kwargs}
        if not isinstance(node.get("args", []), list) or not isinstance(node.get("kwargs", {}), dict):
            raise _fail(where, at, "has a call node whose 'args' is not a list or 'kwargs' not an object")
        _history(node, where, at)
    elif isinstance(node, list):  # Keras 2: the first argument's structure, [layer, node, tensor(, kwargs)] leaves
        _k2_leaves(node, where, at)
    else:
        raise _fail(where, at, f"has a call node that is a {type(node).__name__}")


def _history(value: Any, where: str, at: str) -> None:
    """Every keras tensor names [layer, node index, tensor index]."""
    if isinstance(value, dict):
        if value.get("class_name") == "__keras_tensor__":
            history = value.get("config", {}).get("keras_history") if isinstance(value.get("config"), dict) else None
            if not _is_ref(history):
                raise _fail(where, at, "has a keras tensor without a [layer, node, tensor] 'keras_history'")
            return
        if value.get("class_name") in ("__tensor__", "__numpy__"):
            if not isinstance(value.get("config"), dict) or "value" not in value["config"]:
                raise _fail(where, at, f"has a {value['class_name']} constant without a 'value'")
            return
        for v in value.values():
            _history(v, where, at)
    elif isinstance(value, list):
        for v in value:
            _history(v, where, at)


def _k2_leaves(value: Any, where: str, at: str) -> None:
    if isinstance(value, list) and len(value) in (3, 4) and isinstance(value[0], str):
        if value[0] != "_CONSTANT_VALUE" and not _is_ref(value[:3]):
            raise _fail(where, at, f"has an inbound node {str(value)[:60]} that is not [layer, node, tensor]")
        return
    if isinstance(value, list):
        for v in value:
            _k2_leaves(v, where, at)
    elif isinstance(value, dict):
        for v in value.values():
            _k2_leaves(v, where, at)
    else:
        raise _fail(where, at, f"has an inbound node element {str(value)[:40]!r}, not [layer, node, tensor]")


def _is_ref(value: Any) -> bool:
    return (isinstance(value, (list, tuple)) and len(value) == 3 and isinstance(value[0], str)
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value[1:]))


def _ref_list(value: Any, where: str, at: str) -> list:
    refs = [value] if isinstance(value, list) and value and isinstance(value[0], str) else value
    if not isinstance(refs, list) or not all(_is_ref(r) for r in refs):
        raise _fail(where, at, "is not a list of [layer, node, tensor]")
    return refs


def _shape(value: Any) -> bool:
    return isinstance(value, list) and all(d is None or (isinstance(d, int) and not isinstance(d, bool))
                                           for d in value)
