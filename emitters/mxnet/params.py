"""MXNet's NDArray-list file (`.params`), written and read with numpy alone.

Layout (little endian), as `mx.nd.save` writes it for dense float32 CPU arrays:
u64 0x112 (list magic), u64 0 (reserved), u64 count; per array: u32 0xF993FAC9 (NDArray v2 magic),
i32 0 (dense storage), i32 ndim, i64 dims..., i32 dev_type 1 (cpu), i32 dev_id 0,
i32 dtype flag, raw data; then u64 count and, per name, u64 length + utf-8 bytes.
Names carry `arg:` (weights) or `aux:` (BatchNorm moving statistics) prefixes.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

LIST_MAGIC = 0x112
NDARRAY_V2_MAGIC = 0xF993FAC9
# mshadow type flags
DTYPE_FLAGS = {np.dtype("float32"): 0, np.dtype("float64"): 1, np.dtype("float16"): 2,
               np.dtype("uint8"): 3, np.dtype("int32"): 4, np.dtype("int8"): 5, np.dtype("int64"): 6}
FLAG_DTYPES = {flag: dtype for dtype, flag in DTYPE_FLAGS.items()}


def encode(arrays: dict[str, np.ndarray]) -> bytes:
    """The bytes `mx.nd.save` writes for `arrays` (name -> array), in the given order."""
    out = [struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))]
    for value in arrays.values():
        value = np.ascontiguousarray(value)
        if value.dtype not in DTYPE_FLAGS:
            raise ValueError(f"dtype {value.dtype} cannot be stored in an MXNet .params file")
        if value.ndim == 0:  # MXNet 1.x reads ndim 0 as "no shape"
            value = value.reshape(1)
        out.append(struct.pack("<Iii", NDARRAY_V2_MAGIC, 0, value.ndim))
        out.append(struct.pack(f"<{value.ndim}q", *value.shape))
        out.append(struct.pack("<iii", 1, 0, DTYPE_FLAGS[value.dtype]))
        out.append(value.astype(value.dtype.newbyteorder("<"), copy=False).tobytes())
    out.append(struct.pack("<Q", len(arrays)))
    for name in arrays:
        raw = name.encode("utf-8")
        out.append(struct.pack("<Q", len(raw)) + raw)
    return b"".join(out)


def save(path: str | Path, arrays: dict[str, np.ndarray]) -> None:
    Path(path).write_bytes(encode(arrays))


def decode(data: bytes) -> dict[str, np.ndarray]:
    """Inverse of `encode` (dense arrays only)."""
    pos = 0

    def take(fmt: str) -> tuple:
        nonlocal pos
        values = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return values

    magic, _, count = take("<QQQ")
    if magic != LIST_MAGIC:
        raise ValueError("not an MXNet NDArray list file")
    arrays = []
    for _ in range(count):
        magic, stype, ndim = take("<Iii")
        if magic != NDARRAY_V2_MAGIC or stype != 0:
            raise ValueError("unsupported NDArray record (only dense v2 arrays)")
        shape = take(f"<{ndim}q")
        _, _, flag = take("<iii")
        dtype = FLAG_DTYPES[flag].newbyteorder("<")
        size = int(np.prod(shape)) * dtype.itemsize
        arrays.append(np.frombuffer(data, dtype, int(np.prod(shape)), pos).reshape(shape).copy())
        pos += size
    (n_names,) = take("<Q")
    names = []
    for _ in range(n_names):
        (length,) = take("<Q")
        names.append(data[pos:pos + length].decode("utf-8"))
        pos += length
    return dict(zip(names, arrays))


def load(path: str | Path) -> dict[str, np.ndarray]:
    return decode(Path(path).read_bytes())
