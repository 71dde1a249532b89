"""Keras sources: legacy `.h5` and Keras 3 `.keras`, read with h5py/json/zipfile only.

TensorFlow/Keras are imported only by `run_reference` (verification).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.errors import ConvertError, InputError, Unsupported, UnsupportedError
from tf_convert.parsers.base import SAFE_MODE, ParseOptions
from tf_convert.parsers.source import kinds_of

from ..common.layout import TO_NCHW, TO_NHWC

# importing the handler modules registers them in TABLE (schema: the config shape, checked first)
from . import (  # noqa: F401  (one module per family: fills TABLE)
    elementwise,
    nn,
    resize,
    schema,
    sequence,
    sequence_recurrent,
    shape,
    spatial,
    spatial_1d,
    spatial_3d,
    tf_ops,
    traced,
)
from .builder import Builder
from .source import KerasSource, sniff
from .table import TABLE, restore_ops_modules

KINDS = kinds_of("keras")

__all__ = ["KINDS", "TABLE", "parse", "run_reference", "run_reference_sets", "sniff"]


def parse(path: str | Path, options: ParseOptions | None = None) -> ir.Graph:
    """Read a Keras model file into an IR graph (NCHW), without importing TensorFlow."""
    options = options or ParseOptions()
    with KerasSource(path) as source:
        schema.check_origins(source.config, str(path), source.kind)  # a class Keras cannot locate is no Keras class
        found = traced.foreign_classes(source.config) if isinstance(source.config, dict) else []
        kind = source.kind
    if found:  # classes only their own code can run: Keras loads and traces the model
        refused = traced.refusal(Path(path), kind, found, options)
        if refused is not None:
            raise refused
        return traced.parse_traced(Path(path), found, options)
    with KerasSource(path) as source:
        # a config not of the shape Keras writes is a corrupt file (exit 2, naming what is wrong); past
        # this check an exception in the builder is a bug and surfaces as one (exit 1)
        schema.check(source.config, str(path))
        return Builder(source, options).build()


def run_reference(path: str | Path, graph: ir.Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run the Keras model itself on `inputs` (IR layout); outputs in IR layout, graph order."""
    return run_reference_sets(path, graph, [inputs])[0]


def run_reference_sets(path: str | Path, graph: ir.Graph,
                       input_sets: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """run_reference for each of `input_sets` with the model loaded once (a load of MobileNetV2
    costs more than its run); each set is its own call of the same model as run_reference makes, so the
    outputs are those of one run per set. Raises what Keras raises for any set (the caller then runs the
    sets one by one to tell which)."""
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        model, keras = _loaded(path, graph.metadata.get(SAFE_MODE, True))
    except (ConvertError, MemoryError):
        raise
    except Exception as err:  # noqa: BLE001 - Keras refuses the file: so do we, in one line
        first = str(err).strip().splitlines()[0][:150] if str(err).strip() else ""
        raise InputError(f"{path}: Keras itself cannot load this model ({type(err).__name__}: {first})") from None
    feeds = [[np.ascontiguousarray(x.transpose(TO_NHWC)) if graph.source_layouts.get(name) == "NHWC" else x
              for name, x in zip(graph.inputs, inputs)] for inputs in input_sets]
    if traced.is_traced(path):
        return [[_ir_layout(graph, name, y) for name, y in zip(graph.outputs, traced.call_model(model, graph, feed))]
                for feed in feeds]
    fixed = _input_shapes(model)
    runner = _with_outputs(model, graph, keras)
    if any(_fixed_elsewhere(spec, x.shape) for feed in feeds for spec, x in zip(fixed, feed)):
        _free_sizes(runner, keras)  # converted (or verified) at a size the file does not fix
    return [_call(runner, graph, feed) for feed in feeds]


def _with_outputs(model, graph: ir.Graph, keras):
    """`model`, or a model over the same layers whose outputs are the graph's, in the graph's order."""
    wanted = [graph.source_names.get(t, t) for t in graph.outputs]
    own = _as_list(model.outputs)
    if [t._keras_history[0].name for t in own] == wanted:  # the model's own outputs, in order: a layer
        model_outputs = own  # with several of them (LSTM return_state) names each one the same
    else:
        model_outputs = [layer_of(model, t) for t in wanted]
    if [id(o) for o in model_outputs] != [id(o) for o in _as_list(model.outputs)]:
        model = keras.Model(model.inputs, model_outputs)
    return model


def _ir_layout(graph: ir.Graph, name: str, y) -> np.ndarray:
    y = np.asarray(y)
    return np.ascontiguousarray(y.transpose(TO_NCHW)) if graph.source_layouts.get(name) == "NHWC" else y


def _call(model, graph: ir.Graph, feed: list[np.ndarray]) -> list[np.ndarray]:
    """One call of `model` on `feed` (source layout); its outputs in IR layout."""
    results = _as_list(model(feed if len(feed) > 1 else feed[0], training=False))
    out = []
    for name, y in zip(graph.outputs, results):
        y = np.asarray(y)
        nhwc = graph.source_layouts.get(name) == "NHWC"
        out.append(np.ascontiguousarray(y.transpose(TO_NCHW)) if nhwc else y)
    return out


def run_tensors(path: str | Path, graph: ir.Graph, inputs: list[np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
    """The outputs of the Keras layers `names` (Keras layout, NHWC), in one call of the model."""
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    model, keras = _loaded(path, graph.metadata.get(SAFE_MODE, True))
    known = {layer.name for layer in model.layers}
    wanted = [n for n in dict.fromkeys(names) if n in known]
    if not wanted:
        return {}
    feed = [
        np.ascontiguousarray(x.transpose(TO_NHWC)) if graph.source_layouts.get(name) == "NHWC" else x
        for name, x in zip(graph.inputs, inputs)
    ]
    probe = keras.Model(model.inputs, [layer_of(model, n) for n in wanted])
    values = _as_list(probe(feed if len(feed) > 1 else feed[0], training=False))
    return {n: np.asarray(v) for n, v in zip(wanted, values)}


def _input_shapes(model) -> list[tuple]:
    return [tuple(t.shape) for t in _as_list(model.inputs)]


def _fixed_elsewhere(spec: tuple, given: tuple) -> bool:
    return len(spec) == len(given) and any(d is not None and d != n for d, n in zip(spec[1:], given[1:]))


def _free_sizes(model, keras) -> None:
    """Let `model` run at other sizes: its input check keeps each input's rank and channels (an image's last
    axis) and leaves the other sizes free. Only the check changes (the same layers and weights run the same
    kernels in eager mode; a layer that needs the saved size still refuses another), and it costs nothing
    where a rebuilt copy cost a second load of the model."""
    specs = model.input_spec
    if specs is None or not hasattr(keras, "InputSpec"):  # tf_keras only warns about other sizes
        return
    model.input_spec = [
        spec if spec is None or spec.shape is None else keras.InputSpec(
            shape=_free_shape(tuple(spec.shape)), allow_last_axis_squeeze=spec.allow_last_axis_squeeze,
            name=spec.name, optional=spec.optional)
        for spec in _as_list(specs)]


def _free_shape(dims: tuple) -> tuple:
    """The channels stay; a (batch, steps) token input's last axis is its length."""
    return (None,) * len(dims) if len(dims) == 2 else (None,) * (len(dims) - 1) + dims[-1:]


def _loaded(path: str | Path, safe_mode: bool = True):
    """(model, the Keras module that loaded it): tf_keras for a Keras 2 `.h5` where it loads there (a
    file a Keras 3 wrote with a Keras 2 version stamp does not: Keras 3 then). `safe_mode` is the user's
    (--no-safe-mode on this very command), never inferred from the file: a Lambda's bytecode loads only
    when it is False."""
    lambdas = [f for f in _foreign(path) if f.class_name in traced.UNSAFE_CLASSES]
    if lambdas and safe_mode:
        raise UnsupportedError([Unsupported(f.class_name, f.layer, "a Lambda layer is Python bytecode, which Keras "
                                            "loads only with safe_mode=False; pass --no-safe-mode if you trust "
                                            "this file (its code then runs)") for f in lambdas],
                               target="Keras reference")
    keras = _keras_for(path)
    if keras.__name__ == "tf_keras":
        try:
            with _safe_mode_scope(keras, safe_mode):
                return _load(path, keras, safe_mode), keras
        except Exception:  # noqa: BLE001 - not a file tf_keras reads: Keras 3 rebuilds it
            import keras
    with _safe_mode_scope(keras, safe_mode):
        return _load(path, keras, safe_mode), keras


def _safe_mode_scope(keras, safe_mode: bool):
    """Keras's own safe-mode scope, so that no load path of either Keras (tf_keras's `.h5` reader has none
    of its own) deserializes a Lambda's bytecode unless the user allowed it."""
    if keras.__name__ == "tf_keras":
        from tf_keras.src.saving.serialization_lib import SafeModeScope
    else:
        from keras.src.saving.serialization_lib import SafeModeScope
    return SafeModeScope(safe_mode)


def _keras_for(path: str | Path):
    """The Keras that wrote `path`, where it is installed: tf_keras for a Keras 2 `.h5` (Keras 3 cannot
    rebuild its TF-op layers), Keras 3 otherwise. Refuses a file naming a module Keras would import
    (schema.check_origins), whatever path reaches Keras (a reference run of a source never parsed here)."""
    with KerasSource(path) as source:
        schema.check_origins(source.config, str(path), source.kind)
        written_by_keras_2 = source.kind == "keras_h5" and source.keras_version.startswith(("1.", "2."))
    if written_by_keras_2:
        try:
            import tf_keras

            return tf_keras
        except ImportError:
            pass
    import keras

    return keras


def _load(path: str | Path, keras, safe_mode: bool = True):
    if traced.is_traced(path):  # the conversion traced it: Keras loads it as that trace did
        return keras.saving.load_model(str(path), compile=False, safe_mode=safe_mode)
    if keras.__name__ == "tf_keras":
        return keras.models.load_model(str(path), compile=False)
    if sniff(path) != "keras_h5":
        return keras.models.load_model(str(path), compile=False, custom_objects=_custom_objects())
    # legacy .h5: Keras cannot reload keras.ops nodes (x + 3.0) from it; rebuild from a patched config
    with KerasSource(path) as source:
        config = source.config
    restore_ops_modules(config)
    objects = {**_custom_objects(), "Model": keras.Model}  # Keras 2.0-2.2 named functional models 'Model'
    try:
        model = keras.models.model_from_json(json.dumps(config), custom_objects=objects)
        model.load_weights(str(path))
    except Exception as e:  # noqa: BLE001 - the reference cannot be built: say so on one capped line
        line = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise InputError(f"{path}: Keras {keras.__version__} cannot rebuild this .h5 to run the reference "
                         f"({line[:200]}{'...' if len(line) > 200 else ''}); convert without --verify "
                         "or re-save the model with a current Keras") from None
    return model


def _foreign(path: str | Path) -> list:
    with KerasSource(path) as source:
        return traced.foreign_classes(source.config)


def layer_of(model, name: str):
    """The output tensor of the model's layer `name` (its model output if it is one); `name:k` is the
    layer's k-th output (LSTM return_state: output, h, c)."""
    layer, _, k = name.partition(":")
    if k.isdigit():
        return _as_list(model.get_layer(layer).output)[int(k)]
    for t in _as_list(model.outputs):
        if t._keras_history[0].name == name:
            return t
    return model.get_layer(name).output


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _custom_objects() -> dict:
    """Layer classes keras.applications defines outside keras.layers (for legacy .h5 loading)."""
    from keras.src.applications.convnext import LayerScale
    from keras.src.applications.inception_resnet_v2 import CustomScaleLayer

    return {"LayerScale": LayerScale, "CustomScaleLayer": CustomScaleLayer}
