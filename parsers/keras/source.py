"""Open a Keras file (legacy `.h5` or Keras 3 `.keras` zip) with h5py/json/zipfile only.

Yields the model config (a dict) and a weight store that answers "the arrays of the layer at this
path", where a path is the tuple of layer names from the top model down (nested models add one
name per level).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Protocol

import numpy as np

from tf_convert.convert.errors import InputError

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
ZIP_MAGIC = b"PK\x03\x04"


# a .keras is a zip the user gave us: cap what inflating it may cost (zip bombs)
MAX_MEMBER_BYTES = 4 << 30
MAX_CONFIG_BYTES = 64 << 20
MAX_RATIO = 200  # uncompressed / compressed; weights barely compress, JSON about 10x

Named = list[tuple["str | None", np.ndarray]]  # (name in the file, if it names them; array)


class WeightStore(Protocol):
    def get(self, path: tuple[str, ...]) -> Named: ...

    def composite(self, path: tuple[str, ...]) -> Named:
        """The weights of a layer built from sublayers, named '<sublayer>/<i>' (MultiHeadAttention)."""


def sniff(path: str | Path) -> str | None:
    """'keras_h5' | 'keras_v3' | None, by content (not by file name)."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with path.open("rb") as f:
            head = f.read(8)
        if head == HDF5_MAGIC:
            import h5py

            with h5py.File(path, "r") as h5:
                return "keras_h5" if "model_config" in h5.attrs else None
        if head[:4] == ZIP_MAGIC:
            with zipfile.ZipFile(path) as z:
                names = set(z.namelist())
            return "keras_v3" if "config.json" in names and "model.weights.h5" in names else None
    except Exception:  # noqa: BLE001 - h5py raises RuntimeError too on corrupt headers: not a model
        return None
    return None


def _decode(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


class H5LegacyStore:
    """`model_weights/<layer>` groups; a nested model's weights all sit under its top-level name."""

    def __init__(self, group):
        self._group = group

    def composite(self, path: tuple[str, ...]) -> Named:
        return []  # .h5 lists a composite layer's weights under the layer itself (get)

    def get(self, path: tuple[str, ...]) -> Named:
        try:
            return self._get(path)
        except (KeyError, OSError, RuntimeError, ValueError) as err:  # h5py on a damaged object header
            first = str(err).splitlines()[0][:150] if str(err) else ""
            raise InputError(f"layer '{'/'.join(path)}': its weights cannot be read ({type(err).__name__}: "
                             f"{first}); the file is corrupt") from None

    def _get(self, path: tuple[str, ...]) -> Named:
        if path[0] not in self._group:
            return []
        layer = self._group[path[0]]
        names = [_decode(n) for n in layer.attrs.get("weight_names", [])]
        if len(path) > 1:
            names = _nested(names, path)
        for n in names:
            if n not in layer:
                raise InputError(f"layer '{'/'.join(path)}': weight '{n}' is listed but not in the file; "
                                 "the file is corrupt")
        return [(n, read_dataset(layer[n], f"{'/'.join(path)}/{n}")) for n in names]


def _nested(names: list[str], path: tuple[str, ...]) -> list[str]:
    """The weights of the layer at `path` inside the nested model `path[0]`, whose group lists every weight
    of its layers (nested ones too), in `weight_names` order. A weight's scope names the layers it was made
    in: all of `path[1:]` ('generator/generator_seq/dense/kernel:0'), or only the layer itself where tf_keras
    built a Sequential on its own before nesting it ('dense/kernel:0'), as its GAN files have it; tf_keras
    reloads both by position, and layer names are unique within a model, so the layer's name picks its own."""
    scoped = [n for n in names if _is_subsequence(path[1:], n.split("/")[:-1])]
    return scoped or [n for n in names if path[-1] in n.split("/")[:-1]]


def _is_subsequence(needle: tuple[str, ...], hay: list[str]) -> bool:
    it = iter(hay)
    return all(any(part == h for h in it) for part in needle)


class V3Store:
    """Keras 3 `model.weights.h5`: `layers/<key>/vars/<i>`, each `vars` group tagged with the
    layer's name (Keras 3.15 writes it); nested models repeat the pattern below their key."""

    def __init__(self, h5file):
        self._vars: dict[tuple[str, ...], list[np.ndarray]] = {}
        self._composites: dict[tuple[str, ...], Named] = {}
        self._walk(h5file, ())

    def _walk(self, group, prefix: tuple[str, ...]) -> None:
        if "layers" not in group:
            return
        if len(prefix) > 64:  # hard links can make a cycle
            raise InputError("model.weights.h5 nests layers more than 64 deep; the file is corrupt")
        for key, child in group["layers"].items():
            name = key
            if "vars" in child:
                name = _decode(child["vars"].attrs.get("name", key))
                self._vars[prefix + (name,)] = _own_vars(child, key)
            # a layer made of sublayers (MultiHeadAttention): `<key>/<attribute>/vars`, each tagged with its name
            sublayers = [(f"{_decode(sub['vars'].attrs.get('name', attr))}/{i}",
                          read_dataset(sub["vars"][i], f"{key}/{attr}/vars/{i}"))
                         for attr, sub in child.items()
                         if attr not in ("vars", "layers", *SUB_OBJECTS) and "vars" in sub
                         for i in sorted(sub["vars"], key=_index)]
            if sublayers:
                self._composites[prefix + (name,)] = sublayers
            self._walk(child, prefix + (name,))

    def get(self, path: tuple[str, ...]) -> Named:
        return self._vars.get(path, [])

    def composite(self, path: tuple[str, ...]) -> Named:
        return self._composites.get(path, [])


# sub-objects whose variables belong to the layer holding them (an RNN's cell, a wrapper's layers), in
# the order Keras lists `layer.weights`: forward before backward (h5py lists groups alphabetically)
SUB_OBJECTS = ("forward_layer", "backward_layer", "layer", "cell")


def _own_vars(group, key: str) -> Named:
    """The layer's `vars`, then those of its SUB_OBJECTS (recursively) in Keras's weight order."""
    arrays = group["vars"]
    found: Named = [(None, read_dataset(arrays[i], f"{key}/vars/{i}")) for i in sorted(arrays, key=_index)]
    for sub in SUB_OBJECTS:
        if sub in group and "vars" in group[sub]:
            found += _own_vars(group[sub], f"{key}/{sub}")
    return found


def _index(key: str) -> int:
    if not key.isdigit():
        raise InputError(f"weight '{key}' of model.weights.h5 is not numbered; the file is corrupt")
    return int(key)


def read_dataset(dataset, label: str) -> np.ndarray:
    """The array of one HDF5 dataset, refusing storage outside the file the user gave."""
    import h5py

    if not isinstance(dataset, h5py.Dataset):
        raise InputError(f"weight '{label}' is not a dataset; the file is corrupt")
    if dataset.external:
        raise InputError(f"weight '{label}' is stored in an external file ({dataset.external[0][0]!r}); "
                         "refusing to read outside the model file")
    if dataset.is_virtual:
        raise InputError(f"weight '{label}' is a virtual dataset mapping other files; "
                         "refusing to read outside the model file")
    return np.asarray(dataset)


def refuse_links(group, where) -> None:
    """Refuse external links anywhere in the file: they make h5py open other files."""
    import h5py

    def visit(name: str, link):
        return (name, link.filename) if isinstance(link, h5py.ExternalLink) else None  # non-None stops

    found = group.visititems_links(visit)
    if found:  # raising inside the callback would leave h5py's lock in a bad state
        raise InputError(f"{where}: '{found[0]}' is an external link to {found[1]!r}; "
                         "refusing to read outside the model file")


def read_member(z: zipfile.ZipFile, name: str, limit: int, where) -> bytes:
    """A zip member, refusing one that would inflate beyond `limit` or MAX_RATIO (a zip bomb)."""
    info = z.getinfo(name)
    if info.file_size > limit or info.file_size > MAX_RATIO * max(info.compress_size, 1024):
        raise InputError(f"{where}: zip member {name} inflates to {info.file_size} bytes from "
                         f"{info.compress_size}; refusing (limit {limit} bytes, ratio {MAX_RATIO})")
    with z.open(name) as handle:
        data = handle.read(limit + 1)  # the header may lie: never read past the limit
    if len(data) > limit:
        raise InputError(f"{where}: zip member {name} inflates beyond {limit} bytes; refusing")
    return data


class KerasSource:
    """Model config + weights of one Keras file. Use as a context manager."""

    def __init__(self, path: str | Path):
        import h5py

        self.path = Path(path)
        self.kind = sniff(self.path)
        if self.kind is None:
            raise InputError(f"{self.path}: not a Keras model (.h5 with model_config or .keras zip)")
        self._h5 = None
        try:
            if self.kind == "keras_h5":
                self._h5 = h5py.File(self.path, "r")
                refuse_links(self._h5, self.path)
                self.config = json.loads(_decode(self._h5.attrs["model_config"]))
                group = self._h5["model_weights"] if "model_weights" in self._h5 else self._h5
                self.weights: WeightStore = H5LegacyStore(group)
            else:
                with zipfile.ZipFile(self.path) as z:
                    self.config = json.loads(read_member(z, "config.json", MAX_CONFIG_BYTES, self.path))
                    blob = read_member(z, "model.weights.h5", MAX_MEMBER_BYTES, self.path)
                self._h5 = h5py.File(io.BytesIO(blob), "r")
                refuse_links(self._h5, self.path)
                self.weights = V3Store(self._h5)
        except InputError as err:
            self.close()
            raise InputError(f"{self.path}: {err}" if str(self.path) not in str(err) else str(err)) from None
        except Exception as err:  # noqa: BLE001 - h5py, zlib, json, zipfile: any failure is a corrupt file
            self.close()
            raise InputError(f"{self.path}: cannot read Keras model ({type(err).__name__}: {err})") from None
        if not isinstance(self.config, dict):
            self.close()
            raise InputError(f"{self.path}: the Keras config is a {type(self.config).__name__}, not a model; "
                             "the file is corrupt")
        if self.kind == "keras_h5":
            self._refuse_foreign_weights()
        # Keras 3 writes the masks it propagates into the config (NotEqual/Any ops, `mask` kwargs);
        # Keras 2 leaves them implicit (parsers.keras.masks)
        version = _decode(self._h5.attrs.get("keras_version", "")) if self.kind == "keras_h5" else "3"
        self.keras_version = str(version)
        self.implicit_masks = self.keras_version.startswith(("1.", "2."))

    def _refuse_foreign_weights(self) -> None:
        """Weights for a layer the config does not have: a file from another model (Keras refuses it too)."""
        try:
            known = {str(layer.get("name") or layer["config"]["name"]) for layer in self.config["config"]["layers"]}
        except (AttributeError, KeyError, TypeError):
            return  # a malformed config: the builder refuses it, naming what is wrong
        group = self.weights._group
        for name in (_decode(n) for n in group.attrs.get("layer_names", [])):
            if name not in known and name in group and len(group[name].attrs.get("weight_names", [])):
                self.close()
                raise InputError(f"{self.path}: the file holds weights for layer '{name}', which its config "
                                 "does not have; the weights are from another model")

    def close(self) -> None:
        if self._h5 is not None:
            self._h5.close()
            self._h5 = None

    def __enter__(self) -> KerasSource:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
