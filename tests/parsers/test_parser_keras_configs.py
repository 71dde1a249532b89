"""Keras configs Keras itself cannot load never convert: a class of another module (`torch.nn.ReLU`), a layer
without an argument Keras requires (an `Activation` without `activation`), a custom activation function.
Each is exit 2 naming the layer, and Keras refuses the same file; a class a package registers under a Keras
class's name is that package's, never converted as Keras's."""

from __future__ import annotations

import inspect
import json
import zipfile
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.support.verify_faults import run_cli
from tf_convert.parsers.keras import TABLE, schema


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    import keras

    x = keras.Input((6, 4), name="x")
    y = keras.layers.Bidirectional(keras.layers.LSTM(3, return_sequences=True, name="inner"), name="bi")(x)
    y = keras.layers.Dense(5, name="dense")(y)
    y = keras.layers.ReLU(name="relu")(y)
    y = keras.layers.Activation("tanh", name="act")(y)
    path = tmp_path_factory.mktemp("configs") / "base.keras"
    keras.Model(x, y).save(path)
    return path


def _layer(config: dict, name: str) -> dict:
    return next(layer for layer in config["config"]["layers"] if layer["config"]["name"] == name)


def _torch_relu(config: dict) -> None:
    _layer(config, "relu").update(module="torch.nn", registered_name=None)


def _unregistered_custom_relu(config: dict) -> None:
    _layer(config, "relu").update(module="__main__", registered_name="ReLU")


def _no_activation(config: dict) -> None:
    del _layer(config, "act")["config"]["activation"]


def _no_units(config: dict) -> None:
    del _layer(config, "dense")["config"]["units"]


def _wrapped_lstm_without_units(config: dict) -> None:
    del _layer(config, "bi")["config"]["layer"]["config"]["units"]


def _custom_activation(config: dict) -> None:
    _layer(config, "dense")["config"]["activation"] = {
        "module": "helpers", "class_name": "function", "config": "relu", "registered_name": "relu"}


def _unknown_activation(config: dict) -> None:
    _layer(config, "dense")["config"]["activation"] = "not_an_activation"


def _foreign_initializer(config: dict) -> None:
    _layer(config, "bi")["config"]["layer"]["config"]["kernel_initializer"] = {
        "module": "helpers", "class_name": "Init", "config": {}, "registered_name": None}


def _wrapped_foreign_class(config: dict) -> None:
    _layer(config, "bi")["config"]["layer"].update(module="torch.nn", class_name="LSTM")


BAD = {  # mutation -> (what the error names, the layer it names)
    "torch.nn.ReLU": (_torch_relu, "torch.nn.ReLU is not a Keras class", "relu"),
    "custom ReLU": (_unregistered_custom_relu, "__main__.ReLU is not a Keras class", "relu"),
    "Activation without activation": (_no_activation, "has no 'activation'", "act"),
    "Dense without units": (_no_units, "has no 'units'", "dense"),
    "wrapped LSTM without units": (_wrapped_lstm_without_units, "has no 'units'", "bi"),
    "custom activation": (_custom_activation, "helpers.relu is not a Keras object", "dense"),
    "unknown activation": (_unknown_activation, "activation='not_an_activation', which is no Keras", "dense"),
    "foreign initializer": (_foreign_initializer, "helpers.Init is not a Keras object", "bi' (layer) 'forward_inner"),
    "wrapped torch LSTM": (_wrapped_foreign_class, "torch.nn.LSTM is not a Keras class", "bi' (layer) 'forward_inner"),
}


def _mutant(base: Path, out: Path, mutate: Callable[[dict], Any]) -> Path:
    with zipfile.ZipFile(base) as z:
        members = {n: z.read(n) for n in z.namelist()}
    config = json.loads(members["config.json"])
    mutate(config)
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(out, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
    return out


@pytest.mark.parametrize("case", list(BAD))
def test_config_keras_cannot_load_is_exit_2_naming_the_layer(case, base, tmp_path):
    import keras

    mutate, message, layer = BAD[case]
    path = _mutant(base, tmp_path / "m.keras", mutate)
    with pytest.raises(Exception):  # noqa: B017 - the claim: Keras itself refuses this file
        keras.saving.load_model(path, compile=False)
    code, _, err = run_cli("tf2onnx", path, "-o", tmp_path / "out")
    assert code == 2, err
    assert message in err and f"layer '{layer}'" in err, err
    assert not (tmp_path / "out").exists()


def test_a_registered_class_named_as_keras_class_is_the_packages(base, tmp_path):
    """'mypkg>ReLU' is mypkg's class, whatever its name: traced when mypkg is installed, refused otherwise."""
    path = _mutant(base, tmp_path / "m.keras",
                   lambda c: _layer(c, "relu").update(module="mypkg.layers", registered_name="mypkg>ReLU"))
    code, _, err = run_cli("tf2onnx", path, "-o", tmp_path / "out")
    assert code == 3, err
    assert "mypkg>ReLU" in err and "package 'mypkg' is not installed" in err


def test_the_base_model_converts(base, tmp_path):
    code, _, err = run_cli("tf2onnx", base, "-o", tmp_path / "out")
    assert code == 0, err


@pytest.mark.parametrize("library", ["keras", "tf_keras"])
def test_required_arguments_are_those_keras_requires(library):
    """schema.REQUIRED holds every argument without a default of each class the reader converts, in
    Keras 3 and in tf_keras (an argument only one of them requires has that one's default in the handler)."""
    import importlib

    layers = importlib.import_module(library).layers
    for class_name in (c for c in TABLE.ops() if not c.startswith("ops.")):
        cls = getattr(layers, class_name, None)
        if cls is None:
            continue
        required = {p.name for p in inspect.signature(cls.__init__).parameters.values()
                    if p.default is p.empty and p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        other = getattr(importlib.import_module("tf_keras" if library == "keras" else "keras").layers, class_name, None)
        if other is not None:
            required &= {p.name for p in inspect.signature(other.__init__).parameters.values()
                         if p.default is p.empty}
        assert required <= set(schema.REQUIRED.get(class_name, ())), class_name


def test_activation_names_are_those_keras_resolves():
    """schema.KERAS_ACTIVATIONS: every name Keras 3 or tf_keras resolves, and no other."""
    import tf_keras
    from keras.src.activations import ALL_OBJECTS_DICT

    candidates = set(ALL_OBJECTS_DICT) | set(schema.KERAS_ACTIVATIONS) | {
        n for n in dir(tf_keras.activations) if not n.startswith("_") and n not in ("get", "serialize", "deserialize")}
    resolved = set(ALL_OBJECTS_DICT)
    for name in candidates - resolved:
        try:
            tf_keras.activations.get(name)
            resolved.add(name)
        except (ValueError, TypeError):
            pass
    assert set(schema.KERAS_ACTIVATIONS) == resolved
