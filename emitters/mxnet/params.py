"""MXNet's NDArray-list file (`.params`), written and read with numpy alone.

Layout (little endian), as `mx.nd.save` writes it for dense float32 CPU arrays:
u64 0x112 (list magic), u64 0 (reserved), u64 count; per array: u32 0xF993FAC9 (NDArray v2 magic),
i32 0 (dense storage), i32 ndim, i64 dims..., i32 dev_type 1 (cpu), i32 dev_id 0,
i32 dtype flag, raw data; then u64 count and, per name, u64 length + utf-8 bytes.
Names carry `arg:` (weights) or `aux:` (BatchNorm moving statistics) prefixes.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from tf_convert.convert.direct_file import open_direct
from tf_convert.convert.ir.lazy import read_ahead
from tf_convert.convert.progress import SILENT, Progress

LIST_MAGIC = 0x112
NDARRAY_V2_MAGIC = 0xF993FAC9
# mshadow type flags
DTYPE_FLAGS = {np.dtype("float32"): 0, np.dtype("float64"): 1, np.dtype("float16"): 2,
               np.dtype("uint8"): 3, np.dtype("int32"): 4, np.dtype("int8"): 5, np.dtype("int64"): 6}
FLAG_DTYPES = {flag: dtype for dtype, flag in DTYPE_FLAGS.items()}


def write(f: BinaryIO, arrays: dict[str, Any], progress: Progress = SILENT) -> None:
    """Write what `mx.nd.save` writes for `arrays` (name -> numpy or lazy array), in the given order,
    a few arrays at a time (lazy ones are computed by a read-ahead thread while the previous is written)."""
    for value in arrays.values():  # every dtype is known before anything is written
        if np.dtype(value.dtype) not in DTYPE_FLAGS:
            raise ValueError(f"dtype {value.dtype} cannot be stored in an MXNet .params file")
    f.write(struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays)))
    for name, value in read_ahead(arrays.items()):  # the next arrays are read while this one is written
        if value.ndim == 0:  # MXNet 1.x reads ndim 0 as "no shape"
            value = value.reshape(1)
        f.write(struct.pack("<Iii", NDARRAY_V2_MAGIC, 0, value.ndim))
        f.write(struct.pack(f"<{value.ndim}q", *value.shape))
        f.write(struct.pack("<iii", 1, 0, DTYPE_FLAGS[value.dtype]))
        f.write(value.astype(value.dtype.newbyteorder("<"), copy=False).reshape(-1).view(np.uint8))
        progress.written(name, value.nbytes)
        del value
    f.write(struct.pack("<Q", len(arrays)))
    for name in arrays:
        raw = name.encode("utf-8")
        f.write(struct.pack("<Q", len(raw)) + raw)


def encode(arrays: dict[str, Any]) -> bytes:
    """The bytes `mx.nd.save` writes for `arrays` (name -> array), in the given order."""
    buffer = io.BytesIO()
    write(buffer, arrays)
    return buffer.getvalue()


def save(path: str | Path, arrays: dict[str, Any], progress: Progress = SILENT) -> None:
    with open_direct(path) as f:  # around the page cache, fsynced
        write(f, arrays, progress)


@dataclass(frozen=True)
class Record:
    """Where one array of a .params file lies: its name (with `arg:`/`aux:`), shape, dtype and byte offset."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # little-endian numpy dtype string, e.g. "<f4"
    offset: int

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


def read_index(f: BinaryIO) -> list[Record]:
    """Every array's record, in file order, reading only the headers and names (the data is skipped by
    seeking), so a reader can then take one array at a time."""
    def take(fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        raw = f.read(size)
        if len(raw) != size:
            raise ValueError("truncated MXNet NDArray list file")
        return struct.unpack(fmt, raw)

    magic, _, count = take("<QQQ")
    if magic != LIST_MAGIC:
        raise ValueError("not an MXNet NDArray list file")
    placed = []
    for _ in range(count):
        magic, stype, ndim = take("<Iii")
        if magic != NDARRAY_V2_MAGIC or stype != 0:
            raise ValueError("unsupported NDArray record (only dense v2 arrays)")
        shape = take(f"<{ndim}q")
        _, _, flag = take("<iii")
        dtype = FLAG_DTYPES[flag].newbyteorder("<")
        placed.append((shape, dtype.str, f.tell()))
        f.seek(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, io.SEEK_CUR)
    (n_names,) = take("<Q")
    if n_names != count:
        raise ValueError(f"{count} arrays but {n_names} names")
    names = []
    for _ in range(n_names):
        (length,) = take("<Q")
        names.append(f.read(length).decode("utf-8"))
    return [Record(name, shape, dtype, offset) for name, (shape, dtype, offset) in zip(names, placed)]


def index(path: str | Path) -> list[Record]:
    with open(path, "rb") as f:
        return read_index(f)


def decode(data: bytes) -> dict[str, np.ndarray]:
    """Inverse of `encode` (dense arrays only)."""
    return {r.name: np.frombuffer(data, r.dtype, r.size, r.offset).reshape(r.shape).copy()
            for r in read_index(io.BytesIO(data))}


def load(path: str | Path) -> dict[str, np.ndarray]:
    return decode(Path(path).read_bytes())
