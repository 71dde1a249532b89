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
# every activation name Keras 3 or tf_keras resolves (keras.activations.get): another is a file neither loads
# (tests/parsers/test_parser_keras_configs.py checks the set against both)
KERAS_ACTIVATIONS = frozenset({
    "celu", "elu", "exponential", "gelu", "glu", "hard_shrink", "hard_sigmoid", "hard_silu", "hard_swish",
    "hard_tanh", "leaky_relu", "linear", "log_sigmoid", "log_softmax", "mish", "relu", "relu6", "selu", "sigmoid",
    "silu", "soft_shrink", "softmax", "softplus", "softsign", "sparse_plus", "sparse_sigmoid", "sparsemax",
    "squareplus", "swish", "tanh", "tanh_shrink", "threshold"})
WRAPPED = ("layer", "backward_layer")  # keys of a wrapper's config that hold a whole layer (Bidirectional)
ACTIVATIONS = ("activation", "recurrent_activation")


def check(config: Any, where: str) -> None:
    """Raise InputError naming the first part of `config` that is not the shape Keras writes."""
    _model(config, where, "the model", 0)


def _fail(where: str, at: str, what: str) -> InputError:
    return InputError(f"{where}: malformed Keras model config: {at} {what}; the file is corrupt")


def keras_module(module: Any) -> bool:
    """Whether a config's `module` is Keras's own, Keras 3's or tf_keras's (legacy .h5 configs name none)."""
    return not module or str(module).split(".")[0] in ("keras", "tf_keras")


def check_origins(config: Any, where: str, kind: str = "keras_v3") -> None:
    """Raise InputError naming the first layer whose config holds an object (its class, an activation, an
    initializer...) of a module outside Keras that no package registers with Keras (`registered_name`
    'package>name'): Keras cannot locate it without the code that defines it (`torch.nn.ReLU` converted as
    Keras's ReLU would be wrong). In a `.h5` an object inside a layer is looked up by class name only (tf_keras's
    legacy reader), so a registered name does not help: there only Keras's own objects pass. Keras's `.keras`
    reader imports the module of a nested object (tf_keras: any module), so no such file reaches Keras. Tolerant
    of any shape: `check` says what else is wrong."""
    _origins(config, where, kind == "keras_h5", "", True, 0)


def _origins(value: Any, where: str, h5: bool, at: str, layer_level: bool, depth: int) -> None:
    if depth > 8 * MAX_DEPTH:  # JSON nested deeper than any model Keras writes: `check` refuses it
        return
    if isinstance(value, list):
        for item in value:
            _origins(item, where, h5, at, False, depth + 1)
        return
    if not isinstance(value, dict):
        return
    conf = value.get("config") if isinstance(value.get("config"), dict) else {}
    if layer_level:
        name = value.get("name") or conf.get("name") or value.get("class_name")
        at = f"{at}' ({layer_level}) '{name}" if at and isinstance(layer_level, str) else str(name)
    module = value.get("module")
    if isinstance(module, str) and "class_name" in value and not (keras_module(module) or module == "builtins"):
        registered = ">" in str(value.get("registered_name"))
        if not registered or (h5 and not layer_level):
            named = value.get("config") if value.get("class_name") == "function" else value.get("class_name")
            why = "a .h5 resolves objects in a layer by class name only" if registered else "no package registers it"
            raise InputError(f"{where}: layer '{at}': {module}.{named} is not a Keras "
                             f"{'class' if layer_level else 'object'} ({why}), so Keras cannot load it safely; "
                             "convert a SavedModel exported where its code is")
    for key, item in value.items():
        if key == "config" and isinstance(item, dict):
            for inner_key, inner in item.items():
                if inner_key == "layers" and isinstance(inner, list):
                    for layer in inner:
                        _origins(layer, where, h5, "", True, depth + 1)
                elif inner_key in WRAPPED:
                    _origins(inner, where, h5, at, inner_key, depth + 1)
                else:
                    _origins(inner, where, h5, at, False, depth + 1)
        elif key != "config":
            _origins(item, where, h5, at, False, depth + 1)


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
    for key in ACTIVATIONS:
        value = conf.get(key)
        if isinstance(value, str) and value.lower() not in KERAS_ACTIVATIONS:
            raise InputError(f"{where}: {at} ({layer['class_name']}) has {key}={value[:40]!r}, which is no Keras "
                             "activation; the file is corrupt")
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
