"""Corrupt copies of small models of every source form, generated from a fixed seed.

`Fixtures(root)` builds two small models per form (A and B, different architectures); `mutant(form, i,
fixtures, dest)` writes mutant number i of that form under `dest` and returns (source path, what was
done). The same (form, i) always gives the same bytes.
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np

from tests.support import tf_models

FORMS = ("ckpt", "pb", "saved_model", "h5", "keras")
SEED = 16


# ---- the models ----------------------------------------------------------------------------------

def _keras_model(kind: str):
    import keras
    from keras import layers as L

    rng = np.random.default_rng(3 if kind == "A" else 4)
    i = keras.Input((12, 12, 4), name="image")
    if kind == "A":
        x = L.Conv2D(8, 3, padding="same", name="conv")(i)
        x = L.BatchNormalization(name="bn")(x)
        x = L.ReLU(name="relu")(x)
        x = L.DepthwiseConv2D(3, strides=2, padding="same", name="dw")(x)
        x = L.Conv2D(6, 1, groups=2, use_bias=False, name="grouped")(x)
        x = L.GlobalAveragePooling2D(name="gap")(x)
        x = L.Dense(5, name="logits")(x)
    else:
        x = L.Conv2D(4, 3, strides=2, padding="same", name="conv")(i)
        x = L.SeparableConv2D(6, 3, padding="same", name="sep")(x)
        x = L.Flatten(name="flat")(x)
        x = L.Dense(3, name="logits")(x)
    model = keras.Model(i, x, name=f"fuzz_{kind}")
    model.set_weights([rng.uniform(0.2, 1.5, w.shape).astype(np.float32) for w in model.get_weights()])
    return model


class Fixtures:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.tf = {
            "A": tf_models.build_resnet_v1_tiny(self.root / "tfA", input_hw=(16, 16)),
            "B": tf_models.build_mobilenet_v1_tiny(self.root / "tfB", input_hw=(16, 16)),
        }
        self.keras = {}
        for kind in ("A", "B"):
            model = _keras_model(kind)
            h5, v3 = self.root / f"k{kind}.h5", self.root / f"k{kind}.keras"
            model.save(h5)
            model.save(v3)
            self.keras[kind] = {"h5": h5, "keras": v3}

    def original(self, form: str, kind: str = "A") -> Path:
        if form == "ckpt":
            return Path(self.tf[kind]["ckpt"])
        if form == "pb":
            return Path(self.tf[kind]["pb"])
        if form == "saved_model":
            return Path(self.tf[kind]["saved_model"])
        return self.keras[kind][form]


def copy_source(form: str, original: Path, dest: Path) -> Path:
    """A private copy of a source (a checkpoint prefix copies its whole directory)."""
    dest.mkdir(parents=True, exist_ok=True)
    if form == "ckpt":
        shutil.copytree(original.parent, dest / "ckpt")
        return dest / "ckpt" / original.name
    if original.is_dir():
        shutil.copytree(original, dest / original.name)
        return dest / original.name
    shutil.copy(original, dest / original.name)
    return dest / original.name


# ---- byte-level mutations --------------------------------------------------------------------------

def bit_flips(data: bytes, rng) -> bytes:
    b = bytearray(data)
    for _ in range(int(rng.integers(1, 9))):
        pos = int(rng.integers(0, len(b)))
        b[pos] ^= 1 << int(rng.integers(0, 8))
    return bytes(b)


def truncate(data: bytes, rng) -> bytes:
    return data[: int(rng.integers(0, len(data)))]


def zero_block(data: bytes, rng) -> bytes:
    size = int(rng.integers(1, min(4096, len(data)) + 1))
    start = int(rng.integers(0, len(data) - size + 1))
    return data[:start] + bytes(size) + data[start + size:]


BYTE_MUTATIONS = {"bitflip": bit_flips, "truncate": truncate, "zero": zero_block}


def _files(src: Path, form: str) -> list[Path]:
    if form == "ckpt":
        return sorted(p for p in src.parent.iterdir() if p.is_file())
    if src.is_dir():
        return sorted(p for p in src.rglob("*") if p.is_file())
    return [src]


def _mutate_bytes(form: str, src: Path, rng) -> str:
    files = _files(src, form)
    target = files[int(rng.integers(0, len(files)))]
    name = sorted(BYTE_MUTATIONS)[int(rng.integers(0, len(BYTE_MUTATIONS)))]
    data = target.read_bytes()
    if data:
        target.write_bytes(BYTE_MUTATIONS[name](data, rng))
    return f"{name} {target.relative_to(src.parent)}"


def _swap_file(form: str, src: Path, other: Path, rng) -> str:
    """Replace one file of the source by the same file of the other model."""
    mine = _files(src, form)
    target = mine[int(rng.integers(0, len(mine)))]
    rel = target.relative_to(src.parent if form == "ckpt" or not src.is_dir() else src)
    base = other.parent if form == "ckpt" or not other.is_dir() else other
    theirs = base / rel if (base / rel).exists() else other
    if theirs.is_file():
        shutil.copy(theirs, target)
    return f"swap {rel} from model B"


# ---- Keras structure-level mutations ---------------------------------------------------------------

def _layers(config: dict) -> list[dict]:
    return config["config"]["layers"]


def _edit_layer(config: dict, rng, edits: list[tuple[str, Callable[[dict], None]]]) -> str:
    """Apply one applicable edit to a random layer config; return what it did."""
    layers = [layer for layer in _layers(config) if layer["class_name"] != "InputLayer"]
    for _ in range(50):
        layer = layers[int(rng.integers(0, len(layers)))]
        what, edit = edits[int(rng.integers(0, len(edits)))]
        before = json.dumps(layer)
        try:
            edit(layer["config"])
        except KeyError:
            continue
        if json.dumps(layer) != before:
            return f"{what} in layer {layer['config']['name']}"
    return "no-op edit"


def _config_edits(rng) -> list[tuple[str, Callable[[dict], None]]]:
    def toggle(key):
        def edit(c):
            if key not in c:
                raise KeyError(key)
            c[key] = not c[key]
        return edit

    def bump(key, delta):
        def edit(c):
            value = c[key]
            c[key] = [v + delta for v in value] if isinstance(value, list) else value + delta
        return edit

    def set_to(key, value):
        def edit(c):
            if key not in c:
                raise KeyError(key)
            c[key] = value
        return edit

    return [
        ("use_bias flipped", toggle("use_bias")),
        ("center flipped", toggle("center")),
        ("scale flipped", toggle("scale")),
        ("filters+1", bump("filters", 1)),
        ("units+1", bump("units", 1)),
        ("kernel_size+1", bump("kernel_size", 1)),
        ("groups=3", set_to("groups", 3)),
        ("groups=1", set_to("groups", 1)),
        ("depth_multiplier=2", set_to("depth_multiplier", 2)),
        ("strides=0", set_to("strides", [0, 0])),
        ("padding='full'", set_to("padding", "full")),
        ("axis=5", set_to("axis", 5)),
        ("dtype=int32", set_to("dtype", "int32")),
    ]


def _config_garbage(rng) -> object:
    choices = [[1, 2, 3], "model", None, {"class_name": "Functional"}, {"class_name": "Functional", "config": {}},
               {"class_name": "Functional", "config": {"layers": [], "input_layers": [], "output_layers": []}}]
    return choices[int(rng.integers(0, len(choices)))]


def _edit_weights(h5, rng) -> str:
    """Change one weight dataset of an open h5py file: wrong shape, wrong dtype, dropped, or extra."""
    datasets = []
    h5.visititems(lambda name, obj: datasets.append(name) if hasattr(obj, "shape") else None)
    name = datasets[int(rng.integers(0, len(datasets)))]
    value = np.asarray(h5[name])
    kind = ["transposed", "int32", "float64", "extra row", "scalar", "string"][int(rng.integers(0, 6))]
    if kind == "transposed":
        if value.ndim < 2 or value.shape == value.T.shape:
            value = value.reshape(-1)[:-1] if value.size > 1 else np.zeros((2, 2), np.float32)
        else:
            value = value.T
    elif kind == "int32":
        value = (value * 10).astype(np.int32)
    elif kind == "float64":
        value = value.astype(np.float64)
    elif kind == "extra row":
        value = np.concatenate([value, value[:1]]) if value.ndim and value.size else np.ones(3, np.float32)
    elif kind == "scalar":
        value = np.float32(1.5)
    else:
        value = np.array([b"hello"] * max(1, value.size))
    attrs = dict(h5[name].attrs)
    del h5[name]
    h5[name] = value
    for k, v in attrs.items():
        h5[name].attrs[k] = v
    return f"weight {name} {kind}"


def _h5_structural(src: Path, other: Path, rng) -> str:
    import h5py

    choice = int(rng.integers(0, 4))
    with h5py.File(src, "r+") as h5:
        if choice == 0:
            config = json.loads(h5.attrs["model_config"])
            what = _edit_layer(config, rng, _config_edits(rng))
            h5.attrs["model_config"] = json.dumps(config)
            return f"h5 config: {what}"
        if choice == 1:
            garbage = _config_garbage(rng)
            h5.attrs["model_config"] = json.dumps(garbage)
            return f"h5 config replaced by {json.dumps(garbage)[:40]}"
        if choice == 2:
            return "h5 " + _edit_weights(h5["model_weights"], rng)
        with h5py.File(other, "r") as theirs:
            h5.attrs["model_config"] = theirs.attrs["model_config"]
        return "h5 config of model B with weights of A"


def _rewrite_zip(src: Path, replace: dict[str, bytes]) -> None:
    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members.update(replace)
    with zipfile.ZipFile(src, "w", zipfile.ZIP_DEFLATED) as z:
        for n, data in members.items():
            z.writestr(n, data)


def _keras_structural(src: Path, other: Path, rng) -> str:
    import h5py

    choice = int(rng.integers(0, 5))
    with zipfile.ZipFile(src) as z:
        config = json.loads(z.read("config.json"))
        weights = z.read("model.weights.h5")
    if choice == 0:
        what = _edit_layer(config, rng, _config_edits(rng))
        _rewrite_zip(src, {"config.json": json.dumps(config).encode()})
        return f"keras config: {what}"
    if choice == 1:
        garbage = _config_garbage(rng)
        _rewrite_zip(src, {"config.json": json.dumps(garbage).encode()})
        return f"keras config replaced by {json.dumps(garbage)[:40]}"
    if choice == 2:
        _rewrite_zip(src, {"config.json": bit_flips(json.dumps(config).encode(), rng)})
        return "keras config.json bit flips"
    if choice == 3:
        buffer = io.BytesIO(weights)
        with h5py.File(buffer, "r+") as h5:
            what = _edit_weights(h5, rng)
        _rewrite_zip(src, {"model.weights.h5": buffer.getvalue()})
        return f"keras {what}"
    with zipfile.ZipFile(other) as z:
        _rewrite_zip(src, {"model.weights.h5": z.read("model.weights.h5")})
    return "keras weights of model B"


# ---- the mutant table ----------------------------------------------------------------------------

def mutant(form: str, index: int, fixtures: Fixtures, dest: Path) -> tuple[Path, str]:
    rng = np.random.default_rng([SEED, FORMS.index(form), index])
    src = copy_source(form, fixtures.original(form, "A"), dest)
    other = fixtures.original(form, "B")
    roll = float(rng.random())
    if form in ("h5", "keras") and roll < 0.55:
        what = (_h5_structural if form == "h5" else _keras_structural)(src, other, rng)
    elif roll < 0.85 or form not in ("ckpt", "saved_model"):  # single files: a swap is just model B
        what = _mutate_bytes(form, src, rng)
    else:
        what = _swap_file(form, src, other, rng)
    return src, what


__all__ = ["FORMS", "Fixtures", "mutant"]
