"""`model.pt` written one tensor at a time in torch.save's format, by our own zip writer (torch's zip format:
`data.pkl` naming each tensor's storage by a persistent id, then one aligned `data/N` record per storage), so
`torch.load(path, weights_only=True)` (also with `mmap=True`) and model.py's `load()` read it, but no
more than a few tensors are in memory at a time (a lazy weight is read from the checkpoint when its
record is written). Writing it needs no torch (importing it would cost ~1.8 s of every tf2torch): data.pkl
is written opcode by opcode, the bytes torch.save's pickler writes for the same tensors."""

from __future__ import annotations

import math
import pickle
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from tf_convert.convert.direct_file import open_direct
from tf_convert.convert.errors import Unsupported, UnsupportedError
from tf_convert.convert.ir.lazy import read_ahead
from tf_convert.convert.progress import SILENT, Progress

from .zip_file import StoredZip

ALIGNMENT = 64  # torch.serialization._get_storage_alignment(): where each record's data starts
STORAGE_TYPES = {  # torch.storage._dtype_to_storage_type_map(): the class data.pkl names per element type
    "float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage", "bfloat16": "BFloat16Storage",
    "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage", "int8": "CharStorage",
    "uint8": "ByteStorage", "bool": "BoolStorage", "complex128": "ComplexDoubleStorage",
    "complex64": "ComplexFloatStorage",
}


def storage_type(name: str, dtype: Any) -> str:
    """The storage class torch.save names for tensor `name` of `dtype`; a type torch stores no storage of
    (uint16, ...) is refused."""
    dtype = np.dtype(dtype)
    kind = dtype.name if dtype.name == "bfloat16" else dtype.newbyteorder("=").name
    if kind not in STORAGE_TYPES:
        hint = f"torch.save has no storage class for {kind}; a model.pt holds {', '.join(STORAGE_TYPES)}"
        raise UnsupportedError([Unsupported(f"a {kind} tensor", name, hint)], "torch")
    return STORAGE_TYPES[kind]


class _Pickle:
    """Protocol-2 opcodes, memoized as CPython's pickler memoizes: every string, tuple, global and reduced
    object goes into the memo when first written; a global or a shared string written again is fetched."""

    _BATCH = 1000  # the pickler's items per SETITEMS

    def __init__(self) -> None:
        self.out = bytearray(pickle.PROTO + b"\x02")
        self.size = 0  # entries in the memo
        self.shared: dict[tuple[str, str], int] = {}  # ("global"|"str", text) -> its memo entry

    def put(self) -> int:
        self.out += pickle.BINPUT + bytes([self.size]) if self.size < 256 else \
            pickle.LONG_BINPUT + struct.pack("<I", self.size)
        self.size += 1
        return self.size - 1

    def get(self, index: int) -> None:
        self.out += pickle.BINGET + bytes([index]) if index < 256 else pickle.LONG_BINGET + struct.pack("<I", index)

    def string(self, text: str, shared: bool = False) -> None:
        if shared and ("str", text) in self.shared:
            return self.get(self.shared["str", text])
        data = text.encode("utf-8", "surrogatepass")
        self.out += pickle.BINUNICODE + struct.pack("<I", len(data)) + data
        index = self.put()
        if shared:
            self.shared["str", text] = index

    def global_(self, module: str, name: str) -> None:
        if ("global", f"{module}.{name}") in self.shared:
            return self.get(self.shared["global", f"{module}.{name}"])
        self.out += pickle.GLOBAL + f"{module}\n{name}\n".encode()
        self.shared["global", f"{module}.{name}"] = self.put()

    def integer(self, value: int) -> None:
        if 0 <= value <= 0xFF:
            self.out += pickle.BININT1 + bytes([value])
        elif 0 <= value <= 0xFFFF:
            self.out += pickle.BININT2 + struct.pack("<H", value)
        elif -(1 << 31) <= value < 1 << 31:
            self.out += pickle.BININT + struct.pack("<i", value)
        else:
            data = pickle.encode_long(value)
            self.out += pickle.LONG1 + bytes([len(data)]) + data

    def ints(self, values: tuple[int, ...]) -> None:
        """A tuple of ints (TUPLE1-3 for short ones, as protocol 2 writes them)."""
        if not values:
            self.out += pickle.EMPTY_TUPLE
            return
        if len(values) > 3:
            self.out += pickle.MARK
        for value in values:
            self.integer(value)
        self.out += {1: pickle.TUPLE1, 2: pickle.TUPLE2, 3: pickle.TUPLE3}.get(len(values), pickle.TUPLE)
        self.put()

    def tensor(self, key: str, storage: str, shape: tuple[int, ...]) -> None:
        """torch._utils._rebuild_tensor_v2(storage, 0, shape, stride, False, OrderedDict()), the storage
        a persistent id ('storage', torch.<storage>, key, 'cpu', numel): a contiguous CPU tensor."""
        self.global_("torch._utils", "_rebuild_tensor_v2")
        self.out += pickle.MARK + pickle.MARK
        self.string("storage", shared=True)
        self.global_("torch", storage)
        self.string(key)
        self.string("cpu", shared=True)
        self.integer(math.prod(shape))
        self.out += pickle.TUPLE
        self.put()
        self.out += pickle.BINPERSID
        self.integer(0)
        self.ints(shape)
        self.ints(tuple(math.prod(shape[i + 1:]) for i in range(len(shape))))
        self.out += pickle.NEWFALSE
        self.global_("collections", "OrderedDict")
        self.out += pickle.EMPTY_TUPLE + pickle.REDUCE
        self.put()
        self.out += pickle.TUPLE
        self.put()
        self.out += pickle.REDUCE
        self.put()


def data_pkl(tensors: list[tuple[str, str, tuple[int, ...]]]) -> bytes:
    """data.pkl of a state dict: {name: tensor} for (name, storage class, shape), storage keys '0', '1', ..."""
    writer = _Pickle()
    writer.out += pickle.EMPTY_DICT
    writer.put()
    entries = list(enumerate(tensors))
    if len(entries) == 1:
        index, (name, storage, shape) = entries[0]
        writer.string(name)
        writer.tensor(str(index), storage, shape)
        writer.out += pickle.SETITEM
    elif entries:
        for start in range(0, len(entries) + 1, _Pickle._BATCH):  # a last empty batch after a full one, as CPython
            writer.out += pickle.MARK
            for index, (name, storage, shape) in entries[start:start + _Pickle._BATCH]:
                writer.string(name)
                writer.tensor(str(index), storage, shape)
            writer.out += pickle.SETITEMS
    writer.out += pickle.STOP
    return bytes(writer.out)


def save_state_dict(path: str | Path, state: dict[str, Any], progress: Progress = SILENT) -> None:
    """Write `state` (name -> numpy or lazy array) as a torch state_dict file, tensor by tensor."""
    data = data_pkl([(name, storage_type(name, value.dtype), tuple(int(d) for d in value.shape))
                     for name, value in state.items()])
    # around the page cache, fsynced; each record's header is written once, CRC known
    with open_direct(path) as file, StoredZip(file) as archive:
        records = _Records(archive, Path(path).stem)
        records.add("data.pkl", data)
        records.add(".format_version", b"1")
        records.add(".storage_alignment", str(ALIGNMENT).encode())
        records.add("byteorder", sys.byteorder.encode())
        for index, (name, value) in enumerate(read_ahead(state.items())):
            raw = _raw_bytes(value)  # read, transposed and checked by the read-ahead thread
            records.add(f"data/{index}", raw)  # CRC and write release the GIL: the next tensor is read meanwhile
            progress.written(name, raw.nbytes)
            del raw, value
        records.add("version", b"3\n")  # what torch.save writes last (its reader's format version)
        records.add(".data/serialization_id", _serialization_id(data))


# ---- torch's records: stored, each record's data aligned as torch.save aligns it (mmap=True
# maps the data where it lies); the CRC and the file writes release the GIL, so the read-ahead thread
# reads and transposes the next tensor while this one is written.

PADDING_ID = 0x4246  # torch's writer pads the local header's extra field under this id ("FB")


class _Records:
    """Records of a torch archive (all under `<stem>/`), written one after another into `archive`."""

    def __init__(self, archive: StoredZip, stem: str):
        self.archive, self.stem = archive, stem

    def add(self, name: str, data: bytes | memoryview) -> None:
        name = f"{self.stem}/{name}"
        fixed = StoredZip.header_size(name, 4)  # + the padding field's own 4 bytes
        pad = -(self.archive.offset + fixed) % ALIGNMENT
        self.archive.add(name, data, struct.pack("<HH", PADDING_ID, pad) + b"Z" * pad)


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
