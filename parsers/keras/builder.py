"""Walk a Keras model config (Functional / Sequential, nested, shared layers) into an IR graph."""

from __future__ import annotations

import difflib
import re
from typing import Any

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.errors import ConvertError, InputError, Unsupported, UnsupportedError, UsageError
from tf_convert.convert.padding.sizes import size_bound
from tf_convert.parsers.base import ParseOptions

from ..common import layout
from . import sequence_masks, weights
from .call import Call, TensorRef
from .source import KerasSource
from .table import TABLE, table_key

MODEL_CLASSES = {"Functional", "Model", "Sequential"}
# tf_keras layers whose first argument keeps its structure (a one-element list stays a list)
PRESERVE_STRUCTURE = {"TFOpLambda", "SlicingOpLambda"}
POISON = "\0unbuilt"  # stands for the outputs of a layer that could not be converted

Ref = tuple[str, int, int]  # (layer name, node index, tensor index)


def layer_name(layer: dict[str, Any]) -> str:
    return layer.get("name") or layer["config"]["name"]


def is_model(layer: dict[str, Any]) -> bool:
    return layer.get("class_name") in MODEL_CLASSES and "layers" in layer.get("config", {})


def _refs(value: Any) -> list[Ref]:
    """input_layers/output_layers: [name, node, tensor] or a list of those."""
    if value and isinstance(value[0], str):
        value = [value]
    return [(str(v[0]), int(v[1]), int(v[2])) for v in value]


def _is_tensor(value: Any) -> bool:
    return isinstance(value, dict) and value.get("class_name") == "__keras_tensor__"


CONSTANT_CLASSES = ("__tensor__", "__numpy__")  # Keras 3: a tensor computed eagerly, stored by value
_K2_CONSTANT = "_CONSTANT_VALUE"  # tf_keras: a non-tensor element of a layer's first argument


def _is_constant(value: Any) -> bool:
    return isinstance(value, dict) and value.get("class_name") in CONSTANT_CLASSES


def _is_k2_ref(value: Any) -> bool:
    """tf_keras node data: [layer, node, tensor] or [layer, node, tensor, kwargs] (its own test:
    tf_keras.utils.tf_utils.convert_inner_node_data)."""
    return isinstance(value, list) and len(value) in (3, 4) and isinstance(value[0], str)


def _k2_tensor(ref: list) -> Any:
    if ref[0] == _K2_CONSTANT:  # ['_CONSTANT_VALUE', -1, value(, kwargs)]
        value = ref[2]
        return {"class_name": "__numpy__", "config": {"value": value}} if isinstance(value, list) else value
    return {"class_name": "__keras_tensor__", "config": {"keras_history": [ref[0], int(ref[1]), int(ref[2])]}}


def _k2_kwargs(value: Any) -> Any:
    """tf_keras kwargs: keras tensors are [layer, node, tensor] lists anywhere in them."""
    if _is_k2_ref(value) and len(value) == 3:
        return _k2_tensor(value)
    if isinstance(value, list):
        return [_k2_kwargs(v) for v in value]
    if isinstance(value, dict):
        return {k: _k2_kwargs(v) for k, v in value.items()}
    return value


def _normalise_node(node: Any, preserve: bool = False) -> dict[str, Any]:
    """Keras 2 wrote a node as the structure of its first argument with [layer, node, tensor, kwargs]
    leaves (a single leaf, unwrapped, for TF-op layers); turn it into Keras 3's {args, kwargs}.
    Every element after the first argument is in the kwargs. A layer other than a TF-op layer
    receives a one-element structure as that element (tf_keras unnests it)."""
    if isinstance(node, dict):
        return node
    leaves: list[list] = []

    def walk(value: Any) -> Any:
        if _is_k2_ref(value):
            leaves.append(value)
            return _k2_tensor(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        raise TypeError(f"a node element is a {type(value).__name__}, not [layer, node, tensor]")

    first = walk(node)
    kwargs = next((leaf[3] for leaf in leaves if len(leaf) == 4 and isinstance(leaf[3], dict)), {})
    if not preserve and isinstance(first, list) and len(first) == 1:
        first = first[0]
    return {"args": [first], "kwargs": _k2_kwargs(kwargs)}


def _tensor_refs(value: Any) -> list[Ref]:
    if _is_tensor(value):
        h = value["config"]["keras_history"]
        return [(str(h[0]), int(h[1]), int(h[2]))]
    if isinstance(value, (list, tuple)):
        return [r for v in value for r in _tensor_refs(v)]
    if isinstance(value, dict):
        return [r for v in value.values() for r in _tensor_refs(v)]
    return []


def _substitute(value: Any, produced: dict[Ref, str], constant: Any = None) -> Any:
    """`value` with keras tensors as TensorRef, and constants (Keras 3 `__tensor__`/`__numpy__`) as
    TensorRef to the IR const `constant(config)` makes for them."""
    if _is_tensor(value):
        return TensorRef(produced[_tensor_refs(value)[0]])
    if _is_constant(value) and constant is not None:
        return TensorRef(constant(value["config"]))
    if isinstance(value, list):
        return [_substitute(v, produced, constant) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, produced, constant) for k, v in value.items()}
    return value


def _flat_tensors(value: Any) -> list[str]:
    if isinstance(value, TensorRef):
        return [value.name]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flat_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flat_tensors(v)]
    return []


def _first_node(layer: dict[str, Any], node: Any) -> int:
    """The node index tf_keras gives a layer's first saved call: 1 for a nested model built from an
    Input (its node 0 links that Input to its outputs and is not saved), else 0. Keras 3 numbers
    saved calls from 0."""
    if isinstance(node, dict) or not is_model(layer):
        return 0
    if layer["class_name"] == "Sequential":
        first = layer["config"]["layers"][:1]
        return int(bool(first) and first[0].get("class_name") == "InputLayer")
    return 1


def check_classes(config: dict[str, Any]) -> list[Unsupported]:
    """Every layer (in nested models too) whose class has no handler."""
    missing = []
    for layer in config["config"]["layers"]:
        if is_model(layer):
            missing.extend(check_classes(layer))
        elif layer["class_name"] != "InputLayer":
            key = table_key(layer)
            if key not in TABLE:
                hint = "no converter for this Keras layer class"
                if layer.get("registered_name") and "Custom>" in str(layer.get("registered_name")):
                    hint = "custom layer class; only built-in Keras layers are understood"
                missing.append(Unsupported(layer["class_name"], layer_name(layer), hint))
    return missing


class Builder:
    def __init__(self, source: KerasSource, options: ParseOptions):
        self.source = source
        self.options = options
        self._state_keys: dict[int, str] = {}  # id(layer config) -> its .keras state key (_state_keys)
        self._key_paths: dict[tuple[str, ...], tuple[str, ...]] = {}  # nested model's path -> its state keys
        cfg = source.config
        self.graph = ir.Graph(name=str(cfg.get("config", {}).get("name", source.path.stem)))
        self.errors: list[Unsupported] = []
        self.top_outputs: dict[str, list[str]] = {}  # top-level layer name -> its first call's outputs
        self.resized: list[tuple[str, tuple]] = []  # inputs --input-shape sets to a size the file does not fix
        self.masks: dict[str, str] = {}  # IR tensor -> its Keras step mask (keras.masks)

    # ---- entry -----------------------------------------------------------------------------
    def build(self) -> ir.Graph:
        cfg = self.source.config
        if not is_model(cfg):
            raise InputError(f"{self.source.path}: the Keras config holds no model with layers")
        # every unknown class anywhere, plus what handlers refuse on the layers still reachable
        missing = check_classes(cfg)
        inputs = [self._graph_input(name, shape, _input_dtype(cfg, name)) for name, shape in self._input_specs(cfg)]
        try:
            outputs = self._run_model(cfg, inputs, (), "", top=True)
        except (ConvertError, ValueError, IndexError) as err:
            if not self.resized:
                raise
            raise self._fixed_size_error(str(err).splitlines()[0] if str(err) else type(err).__name__) from None
        if self.resized:
            bound = size_bound(self.graph) if not (missing or self.errors) else None
            if bound is not None:
                raise self._fixed_size_error(bound)
        if missing or self.errors:
            raise UnsupportedError(missing + self.errors, target="keras parser")
        names = self._output_names(cfg, outputs)
        if self.options.outputs:
            outputs, names = self._select_outputs(self.options.outputs)
        self._set_outputs(outputs, names)
        self.graph.metadata["source_tensors"] = self._source_tensors()
        self.graph.prune()
        self.graph.metadata["source_format"] = self.source.kind
        self.graph.validate()
        return self.graph

    def _fixed_size_error(self, why: str) -> UsageError:
        name, fixed = self.resized[0]
        return UsageError(f"input '{name}' is fixed at {fixed} (NHWC without batch) in {self.source.path.name} and the "
                          f"network cannot run at the --input-shape given ({why}); convert at "
                          f"--input-shape 1,{','.join(str(d) for d in fixed)}")

    def _source_tensors(self) -> dict[str, list]:
        """Top-level layer -> [IR tensor, perm (IR = transpose(keras, perm)), IR shape], for the
        per-layer diff (convert verify --layers); layers with one rank-2, rank-3 (sequences, kept in Keras's
        (N, T, F) layout) or rank-4 output only."""
        found = {}
        for name, outs in self.top_outputs.items():
            if len(outs) == 1 and outs[0] in self.graph.tensors and len(self.graph.shape(outs[0])) in (2, 3, 4):
                shape = list(self.graph.shape(outs[0]))
                found[name] = [outs[0], list(layout.TO_NCHW) if len(shape) == 4 else None, shape]
        return found

    # ---- inputs / outputs ------------------------------------------------------------------
    def _input_specs(self, cfg: dict[str, Any]) -> list[tuple[str, list]]:
        conf = cfg["config"]
        if cfg["class_name"] == "Sequential":
            first = conf["layers"][0]
            shape = (
                first["config"].get("batch_shape")
                or first["config"].get("batch_input_shape")
                or conf.get("build_input_shape")
            )
            if shape is None:
                raise InputError(f"{self.source.path}: the Sequential model has no input shape")
            name = layer_name(first) if first["class_name"] == "InputLayer" else "input"
            return [(name, list(shape))]
        by_name = {layer_name(layer): layer for layer in conf["layers"]}
        specs = []
        for name, _, _ in _refs(conf["input_layers"]):
            lc = by_name[name]["config"]
            specs.append((name, list(lc.get("batch_shape") or lc.get("batch_input_shape"))))
        if self.options.inputs:
            wanted = [n.split(":")[0] for n in self.options.inputs]
            if sorted(wanted) != sorted(n for n, _ in specs):
                have = ", ".join(n for n, _ in specs)
                raise UsageError(
                    f"--inputs {','.join(wanted)}: a Keras model's inputs are its input layers: {have}"
                )
        return specs

    def _graph_input(self, name: str, shape: list, dtype: str = "float32") -> str:
        given = self.options.input_shapes
        override = given.get(name) or given.get(f"{name}:0") or (given.get("") if len(given) == 1 else None)
        if override is not None:
            fixed = [d for d in shape[1:]]
            if len(override) == len(shape) and any(d is not None and d != n for d, n in zip(fixed, override[1:])):
                self.resized.append((name, tuple(shape[1:])))  # the file fixes another size: parse() checks
            shape = list(override)
        shape = [1 if (i == 0 and d is None) else d for i, d in enumerate(shape)]
        if any(d is None or d < 0 for d in shape):
            example = "(NHWC, e.g. 1,224,224,3): SAME padding depends on it" if len(shape) == 4 else \
                f"(e.g. {','.join(str(d or 16) for d in shape)}): the converted model has a fixed size"
            raise UsageError(f"input '{name}' has unknown size {tuple(shape)}; pass --input-shape {example}")
        t = self.graph.add_tensor(self.graph.unique_name(name), layout.ir_shape(shape), dtype)
        self.graph.inputs.append(t)
        self.graph.source_names[t] = name
        self.graph.source_layouts[t] = "NHWC" if len(shape) == 4 else ""
        kind = "NHWC" if len(shape) == 4 else ("" if dtype == "float32" else dtype)  # token ids: int32
        self.options.notes.append(f"input {name}: {tuple(shape)}" + (f" ({kind})" if kind else ""))
        return t

    def _output_names(self, cfg: dict[str, Any], outputs: list[str]) -> list[str]:
        if cfg["class_name"] == "Sequential":
            return [layer_name(cfg["config"]["layers"][-1])]
        return [r[0] for r in _refs(cfg["config"]["output_layers"])]

    def _select_outputs(self, wanted: list[str]) -> tuple[list[str], list[str]]:
        outputs = []
        for raw in wanted:
            name = raw.split(":")[0]
            if name not in self.top_outputs:
                close = difflib.get_close_matches(name, list(self.top_outputs), n=5)
                hint = f"; close matches: {', '.join(close)}" if close else ""
                raise UsageError(f"--outputs: no layer named '{name}' in the Keras model{hint}")
            index = raw.partition(":")[2]
            k = int(index) if index.isdigit() else 0
            if k >= len(self.top_outputs[name]):
                raise UsageError(f"--outputs: layer '{name}' has {len(self.top_outputs[name])} output(s); "
                                 f"'{raw}' asks for output {k}")
            outputs.append(self.top_outputs[name][k])
        # the layer's name, or name:k for another than its first output (what the reference run asks for)
        return outputs, [w if w.partition(":")[2].isdigit() and w.partition(":")[2] != "0" else w.split(":")[0]
                         for w in wanted]

    def _set_outputs(self, outputs: list[str], names: list[str]) -> None:
        taken: set[str] = set(self.graph.inputs)
        for tensor, name in zip(outputs, names):
            if tensor in taken:  # an output that is an input or repeats: give it its own tensor
                shape = self.graph.shape(tensor)
                tensor = self.graph.add_node("identity", self.graph.unique_name(name), [tensor], shape)
            taken.add(tensor)
            self.graph.outputs.append(tensor)
            self.graph.source_names[tensor] = name
            self.graph.source_layouts[tensor] = "NHWC" if len(self.graph.shape(tensor)) == 4 else ""

    # ---- models ----------------------------------------------------------------------------
    def _run_model(self, cfg, inputs: list[str], path: tuple[str, ...], prefix: str, top=False) -> list[str]:
        if cfg["class_name"] == "Sequential":
            return self._run_sequential(cfg["config"], inputs, path, prefix, top)
        return self._run_functional(cfg["config"], inputs, path, prefix, top)

    def _run_sequential(self, conf, inputs, path, prefix, top) -> list[str]:
        self._state_keys.update(_state_keys(conf["layers"]))
        x = inputs
        for layer in conf["layers"]:
            if layer["class_name"] == "InputLayer":
                continue
            args = [TensorRef(x[0])] if len(x) == 1 else [[TensorRef(t) for t in x]]
            x = self._call_layer(layer, 0, args, {}, path, prefix)
            if top:
                self.top_outputs[layer_name(layer)] = x
        return x

    def _run_functional(self, conf, inputs, path, prefix, top) -> list[str]:
        self._state_keys.update(_state_keys(conf["layers"]))
        produced: dict[Ref, str] = dict(zip(_refs(conf["input_layers"]), inputs))
        pending = [
            (layer, k + _first_node(layer, node), _normalise_node(node, layer.get("class_name") in PRESERVE_STRUCTURE))
            for layer in conf["layers"]
            if layer["class_name"] != "InputLayer"
            for k, node in enumerate(layer.get("inbound_nodes", []))
        ]
        first = {}  # layer -> the index of its first call (top_outputs: what --outputs names)
        for layer, k, _ in pending:
            first.setdefault(layer_name(layer), k)
        while pending:
            waiting = []
            for layer, k, node in pending:
                refs = _tensor_refs(node.get("args", [])) + _tensor_refs(node.get("kwargs", {}))
                if not all(r in produced for r in refs):
                    waiting.append((layer, k, node))
                    continue
                name = layer_name(layer)
                if any(produced[r] == POISON for r in refs):
                    outs = [POISON] * 8  # a layer fed by an unconverted one is not built either
                else:
                    args = _substitute(node.get("args", []), produced, self._constant)
                    kwargs = _substitute(node.get("kwargs", {}), produced, self._constant)
                    outs = self._call_layer(layer, k, args, kwargs, path, prefix)
                for i, t in enumerate(outs):
                    produced[(name, k, i)] = t
                if top and k == first[name]:
                    self.top_outputs[name] = outs
            if len(waiting) == len(pending):
                stuck = ", ".join(sorted({layer_name(layer) for layer, _, _ in waiting})[:10])
                raise InputError(f"{self.source.path}: layer inputs cannot be resolved: {stuck}")
            pending = waiting
        return [produced[r] for r in _refs(conf["output_layers"])]

    def _constant(self, config: dict[str, Any]) -> str:
        """An IR const for a constant in a call's arguments (Keras layout; rank 4 becomes NCHW)."""
        value = np.asarray(config["value"], dtype=config.get("dtype") or None)
        if value.dtype.kind == "f" or value.dtype.kind not in "iub":
            value = value.astype(np.float32)
        if value.ndim == 4:
            value = np.ascontiguousarray(value.transpose(layout.TO_NCHW))
        dtype = value.dtype.name if value.dtype.kind in "iub" else "float32"
        name = self.graph.unique_name("constant")
        return self.graph.add_node("const", name, [], value.shape, params={"value": value},
                                   source_op="constant", out_dtype=dtype)

    # ---- layers ----------------------------------------------------------------------------
    def _keys(self, path: tuple[str, ...]) -> tuple[str, ...]:
        """The state keys of the nested models at `path` (names from the top model down)."""
        return self._key_paths.get(path, ()) if path else ()

    def _call_layer(self, layer, k: int, args, kwargs, path, prefix) -> list[str]:
        name = layer_name(layer)
        tag = f"{name}_{k}" if k else name
        inputs = _flat_tensors(args)
        if is_model(layer):
            self._key_paths[path + (name,)] = self._keys(path) + (self._state_keys.get(id(layer), name),)
            return self._run_model(layer, inputs, path + (name,), f"{prefix}{tag}/")
        handler = TABLE.get(table_key(layer))
        if handler is None:  # already listed by check_classes
            return [POISON] * 8
        named = self.source.weights.get(path + (name,), self._keys(path) + (self._state_keys.get(id(layer), name),))
        if not named and table_key(layer) in COMPOSITE_LAYERS:  # .keras: sublayers under a class-named key
            named = self.source.weights.composite(path + (name,)) or \
                self.source.weights.composite(path + (self._state_keys.get(id(layer), name),))
        kin = layout.keras_shape(self.graph.shape(inputs[0])) if inputs else None
        weights.check(self.source.path, prefix + name, table_key(layer), layer.get("config", {}), kin, named)
        call = Call(
            graph=self.graph,
            name=self.graph.unique_name(prefix + tag),
            layer=prefix + name,
            class_name=layer["class_name"],
            config=layer.get("config", {}),
            inputs=inputs,
            args=args,
            kwargs={k2: v for k2, v in kwargs.items() if v is not None},
            weights=[array for _, array in named],
            weight_names=[n or "" for n, _ in named],
            masks=[self.masks.get(t) for t in inputs] if self.source.implicit_masks else [],
            legacy=self.source.keras_version.startswith(("1.", "2.")),
        )
        try:
            refused = sequence_masks.refusal(call)
            if refused:
                raise call.unsupported(refused)
            outs = list(handler(call))
            for tensor, mask in zip(outs, sequence_masks.output_masks(call, outs)):
                if mask is not None:
                    self.masks[tensor] = mask
            return outs
        except UnsupportedError as err:
            self.errors.extend(err.items)
            return [POISON] * 8
        except (ConvertError, MemoryError):
            raise


# ---- integer inputs (token ids) stay integer ------------------------------------

_INTEGER_INPUTS = ("int32", "int64")


def _input_dtype(cfg: dict[str, Any], name: str) -> str:
    """The IR dtype of input layer `name`: int32/int64 as declared, float32 otherwise."""
    layers = cfg["config"]["layers"]
    found = [layer for layer in layers
             if layer["class_name"] == "InputLayer" and layer_name(layer) == name] or layers[:1]
    dtype = found[0].get("config", {}).get("dtype") if found else None
    if isinstance(dtype, dict):  # a DTypePolicy
        dtype = dtype.get("config", {}).get("name")
    return str(dtype) if dtype in _INTEGER_INPUTS else "float32"


# layers whose weights live in sublayers (.keras stores them under a key derived from the class name)
COMPOSITE_LAYERS = {"MultiHeadAttention"}


def _state_keys(layers: list[dict[str, Any]]) -> dict[int, str]:
    """id(layer config) -> the key Keras 3 and tf_keras save the layer's state under: its class name in
    snake case, `_1`, `_2`... for later layers of the same class (keras.src.saving.saving_lib)."""
    keys, used = {}, {}
    for layer in layers:
        base = _snake_case(layer["class_name"])
        used[base] = used.get(base, -1) + 1
        keys[id(layer)] = base if used[base] == 0 else f"{base}_{used[base]}"
    return keys


def _snake_case(name: str) -> str:
    """keras.src.utils.naming.to_snake_case: 'Conv2DTranspose' -> 'conv2d_transpose', 'ReLU' -> 're_lu'."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", re.sub(r"\W+", "", name))
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()
