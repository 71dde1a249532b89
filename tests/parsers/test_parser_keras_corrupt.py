"""Exit codes of the Keras parser tell the truth: a config that is not the shape Keras writes is a
corrupt file (exit 2, one line naming what is wrong); an exception inside the parser on a well-formed
file is a bug (exit 1), never reported as a bad file. (Files Keras writes never give exit 2: the layer
suite, test_parser_keras_suite.py, asserts it per layer and form.)"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.verify_faults import run_cli
from tf_convert.parsers.keras import TABLE
from tf_convert.parsers.keras.table import table_key


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    import keras

    path = tmp_path_factory.mktemp("keras_corrupt") / "good.keras"
    i = keras.Input((6,), name="x")
    h = keras.layers.Dense(4, name="dense")(i)
    keras.Model(i, keras.layers.Dense(2, name="head")(h)).save(path)
    return path


def _layer(cfg: dict, name: str) -> dict:
    return next(layer for layer in cfg["config"]["layers"] if layer.get("name", layer["config"].get("name")) == name)


def _args(cfg: dict, name: str) -> list:
    return _layer(cfg, name)["inbound_nodes"][0]["args"]


EDITS: list[tuple[str, Callable[[dict], None], str]] = [
    ("layers not a list", lambda c: c["config"].update(layers={"a": 1}), "has no 'layers' list"),
    ("layer not an object", lambda c: c["config"]["layers"].append(7), "layer #3 is a int"),
    ("layer without class", lambda c: _layer(c, "dense").pop("class_name"), "has no 'class_name'"),
    ("layer config a string", lambda c: _layer(c, "dense").update(config="dense"), "has no 'config' object"),
    ("inbound nodes an object", lambda c: _layer(c, "head").update(inbound_nodes={}), "layer 'head'"),
    ("keras history cut", lambda c: _args(c, "head")[0]["config"].update(keras_history=["dense", 0]),
     "keras_history"),
    ("history index a string", lambda c: _args(c, "head")[0]["config"].update(keras_history=["dense", "0", 0]),
     "keras_history"),
    ("output names a missing layer", lambda c: c["config"].update(output_layers=[["gone", 0, 0]]), "'gone'"),
    ("input layers not refs", lambda c: c["config"].update(input_layers=5), "'input_layers'"),
    ("input without shape", lambda c: _layer(c, "x")["config"].update(batch_shape="(None, 6)"), "batch_shape"),
    ("constant without value", lambda c: _args(c, "head").append({"class_name": "__tensor__", "config": {}}),
     "__tensor__"),
]


def _rewrite(good: Path, dest: Path, edit: Callable[[dict], None] | None, raw: bytes | None = None) -> Path:
    with zipfile.ZipFile(good) as z:
        members = {n: z.read(n) for n in z.namelist()}
    if edit is not None:
        cfg = json.loads(members["config.json"])
        edit(cfg)
        members["config.json"] = json.dumps(cfg).encode()
    if raw is not None:
        members["config.json"] = raw
    with zipfile.ZipFile(dest, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return dest


def _refused(path: Path, tmp_path: Path) -> str:
    code, _, err = run_cli("tf2onnx", path, "-o", tmp_path / "out")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("what,edit,named", EDITS, ids=[e[0] for e in EDITS])
def test_malformed_config_is_exit_2_naming_it(good, tmp_path, what, edit, named):
    line = _refused(_rewrite(good, tmp_path / "bad.keras", edit), tmp_path)
    assert "malformed Keras model config" in line and named in line, line


def test_truncated_config_is_exit_2(good, tmp_path):
    with zipfile.ZipFile(good) as z:
        raw = z.read("config.json")
    line = _refused(_rewrite(good, tmp_path / "cut.keras", None, raw[: len(raw) // 2]), tmp_path)
    assert "cannot read Keras model" in line and "JSONDecodeError" in line, line


def test_parser_exception_on_a_good_file_is_a_bug(good, tmp_path, monkeypatch):
    """A handler that crashes on a file Keras wrote: exit 1, reported as an internal error."""
    key = table_key({"class_name": "Dense", "config": {}})

    def crash(call):
        raise ValueError("handler bug")

    monkeypatch.setitem(TABLE._handlers, key, crash)
    code, _, err = run_cli("tf2onnx", good, "-o", tmp_path / "out")
    assert code == 1, err
    assert "internal error" in err and "handler bug" in err and "malformed" not in err, err


def test_good_file_converts(good, tmp_path):
    code, _, err = run_cli("tf2onnx", good, "-o", tmp_path / "out", "--verify")
    assert code == 0, err
