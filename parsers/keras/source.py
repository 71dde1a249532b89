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

from convert.errors import InputError

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
ZIP_MAGIC = b"PK\x03\x04"


class WeightStore(Protocol):
    def get(self, path: tuple[str, ...]) -> list[np.ndarray]: ...


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
    except (OSError, zipfile.BadZipFile, ValueError):
        return None
    return None


def _decode(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


class H5LegacyStore:
    """`model_weights/<layer>` groups; a nested model's weights all sit under its top-level name."""

    def __init__(self, group):
        self._group = group

    def get(self, path: tuple[str, ...]) -> list[np.ndarray]:
        if path[0] not in self._group:
            return []
        layer = self._group[path[0]]
        names = [_decode(n) for n in layer.attrs.get("weight_names", [])]
        if len(path) > 1:
            # nested model: keep the weights whose scope names the inner layers in order
            names = [n for n in names if _is_subsequence(path[1:], n.split("/")[:-1])]
        return [np.asarray(layer[n]) for n in names]


def _is_subsequence(needle: tuple[str, ...], hay: list[str]) -> bool:
    it = iter(hay)
    return all(any(part == h for h in it) for part in needle)


class V3Store:
    """Keras 3 `model.weights.h5`: `layers/<key>/vars/<i>`, each `vars` group tagged with the
    layer's name (Keras 3.15 writes it); nested models repeat the pattern below their key."""

    def __init__(self, h5file):
        self._vars: dict[tuple[str, ...], list[np.ndarray]] = {}
        self._walk(h5file, ())

    def _walk(self, group, prefix: tuple[str, ...]) -> None:
        if "layers" not in group:
            return
        for key, child in group["layers"].items():
            name = key
            if "vars" in child:
                name = _decode(child["vars"].attrs.get("name", key))
                arrays = child["vars"]
                self._vars[prefix + (name,)] = [
                    np.asarray(arrays[i]) for i in sorted(arrays, key=lambda s: int(s))
                ]
            self._walk(child, prefix + (name,))

    def get(self, path: tuple[str, ...]) -> list[np.ndarray]:
        return self._vars.get(path, [])


class KerasSource:
    """Model config + weights of one Keras file. Use as a context manager."""

    def __init__(self, path: str | Path):
        import h5py

        self.path = Path(path)
        self.kind = sniff(self.path)
        if self.kind is None:
            raise InputError(f"{self.path}: not a Keras model (.h5 with model_config or .keras zip)")
        try:
            if self.kind == "keras_h5":
                self._h5 = h5py.File(self.path, "r")
                self.config = json.loads(_decode(self._h5.attrs["model_config"]))
                group = self._h5["model_weights"] if "model_weights" in self._h5 else self._h5
                self.weights: WeightStore = H5LegacyStore(group)
            else:
                with zipfile.ZipFile(self.path) as z:
                    self.config = json.loads(z.read("config.json"))
                    blob = z.read("model.weights.h5")
                self._h5 = h5py.File(io.BytesIO(blob), "r")
                self.weights = V3Store(self._h5)
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as err:
            raise InputError(f"{self.path}: cannot read Keras model ({err})") from None

    def close(self) -> None:
        self._h5.close()

    def __enter__(self) -> "KerasSource":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
