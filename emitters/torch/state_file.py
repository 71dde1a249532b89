"""`model.pt` written one tensor at a time in torch.save's format, by our own zip writer (torch's zip format:
`data.pkl` naming each tensor's storage by a persistent id, then one aligned `data/N` record per storage), so
`torch.load(path, weights_only=True)` (also with `mmap=True`) and model.py's `load()` read it, but no
more than a few tensors are in memory at a time (a lazy weight is read from the checkpoint when its
record is written)."""

from __future__ import annotations

import io
import math
import pickle
import struct
import sys
import zipfile
import zlib
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from tf_convert.convert.direct_file import open_direct
from tf_convert.convert.ir.lazy import read_ahead
from tf_convert.convert.progress import SILENT, Progress

_PROTOCOL = 2  # torch.save's default pickle protocol


class _Storage:
    """Stands for a tensor's storage in data.pkl (pickled as torch's persistent id)."""

    def __init__(self, key: str, storage_type: Any, numel: int):
        self.key, self.storage_type, self.numel = key, storage_type, numel


class _Tensor:
    """Pickles as torch.save pickles a contiguous CPU tensor: _rebuild_tensor_v2(storage, 0, size, stride,
    requires_grad=False, backward_hooks=OrderedDict())."""

    def __init__(self, storage: _Storage, shape: tuple[int, ...]):
        self.storage, self.shape = storage, shape

    def __reduce_ex__(self, protocol: int) -> tuple:
        import torch

        stride = tuple(math.prod(self.shape[i + 1:]) for i in range(len(self.shape)))
        return torch._utils._rebuild_tensor_v2, (self.storage, 0, self.shape, stride, False, OrderedDict())


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _Storage):
            return ("storage", obj.storage_type, obj.key, "cpu", obj.numel)
        return None


def _torch_dtype(dtype: np.dtype) -> Any:
    import torch

    if dtype.name == "bfloat16":
        return torch.bfloat16
    return torch.from_numpy(np.empty(0, dtype.newbyteorder("="))).dtype  # (a big-endian source: same type)


def save_state_dict(path: str | Path, state: dict[str, Any], progress: Progress = SILENT) -> None:
    """Write `state` (name -> numpy or lazy array) as a torch state_dict file, tensor by tensor."""
    import torch
    from torch.serialization import _get_storage_alignment
    from torch.storage import _dtype_to_storage_type_map

    types = _dtype_to_storage_type_map()
    stubs: dict[str, _Tensor] = {}
    for index, (name, value) in enumerate(state.items()):
        shape = tuple(int(d) for d in value.shape)
        storage_type = getattr(torch, types[_torch_dtype(np.dtype(value.dtype))])
        stubs[name] = _Tensor(_Storage(str(index), storage_type, math.prod(shape)), shape)
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=_PROTOCOL).dump(stubs)
    data = buffer.getvalue()
    alignment = _get_storage_alignment()
    # around the page cache, fsynced (issue 25); zipfile's header rewrites patch blocks already written
    with open_direct(path) as file, zipfile.ZipFile(file, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        records = _Records(archive, Path(path).stem, alignment)
        records.add("data.pkl", data)
        records.add(".format_version", b"1")
        records.add(".storage_alignment", str(alignment).encode())
        records.add("byteorder", sys.byteorder.encode())
        for index, (name, value) in enumerate(read_ahead(state.items())):
            raw = _raw_bytes(value)  # read, transposed and checked by the read-ahead thread
            records.add(f"data/{index}", raw)  # CRC and write release the GIL: the next tensor is read meanwhile
            progress.written(name, raw.nbytes)
            del raw, value
        records.add("version", b"3\n")  # what torch.save writes last (its reader's format version)
        records.add(".data/serialization_id", _serialization_id(data))


# ---- torch's zip container written by zipfile (issue 25): stored records, each record's data aligned
# as torch.save aligns it (mmap=True maps the data where it lies); zlib's CRC and the file writes release
# the GIL, so the read-ahead thread reads and transposes the next tensor while this one is written.

_PADDING_ID = 0x4246  # torch's writer pads the local header's extra field under this id ("FB")
_ZIP64_EXTRA = 20  # what zipfile adds to a local header written with force_zip64


class _Records:
    """Records of a torch archive (all under `<stem>/`), written one after another into `archive`."""

    def __init__(self, archive: zipfile.ZipFile, stem: str, alignment: int):
        self.archive, self.stem, self.alignment = archive, stem, alignment

    def add(self, name: str, data: bytes | memoryview) -> None:
        info = zipfile.ZipInfo(f"{self.stem}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        start = self.archive.fp.tell()
        fixed = 30 + len(info.filename.encode()) + _ZIP64_EXTRA + 4  # + the padding field's own header
        pad = -(start + fixed) % self.alignment
        info.extra = struct.pack("<HH", _PADDING_ID, pad) + b"Z" * pad
        with self.archive.open(info, "w", force_zip64=True) as record:
            record.write(data)


def _raw_bytes(value: np.ndarray) -> memoryview:
    """The tensor's bytes as torch stores them (little-endian, C order; bfloat16 as its 16 bits)."""
    value = value if value.flags.c_contiguous else value.copy(order="C")
    if value.dtype.name == "bfloat16":
        value = value.view(np.uint16)
    if value.dtype.byteorder == ">":
        value = value.astype(value.dtype.newbyteorder("<"))
    return memoryview(value.reshape(-1)).cast("B") if value.size else memoryview(b"")


def _serialization_id(data: bytes) -> bytes:
    """torch.save's id of an archive (a number its reader keeps as text): here a hash of data.pkl."""
    return str(zlib.crc32(data)).zfill(20).encode()
