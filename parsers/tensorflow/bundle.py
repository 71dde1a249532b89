"""Read a TensorFlow checkpoint bundle (`prefix.index` + `prefix.data-NNNNN-of-MMMMM`) without TensorFlow.

The `.index` is TF's table format (LevelDB's SSTable layout): data blocks of prefix-compressed keys with
restart points, a metaindex block, an index block and a 48-byte footer. The empty key holds a
`BundleHeaderProto`, every other key a `BundleEntryProto` saying where the tensor's bytes lie in which data
shard. Tensors are read lazily from memory-mapped shards and their stored (masked) CRC-32C is checked, so a
corrupt file is one clear `InputError` naming it. The two protos are decoded with the compiled messages of
protos.py (the table's block handles and string tensors' lengths are plain varints: `_varint`).
"""

from __future__ import annotations

import math
import mmap
import struct
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from tf_convert.convert.errors import InputError
from tf_convert.convert.ir.lazy import LazyArray, copy_tiled, transposed

from .protos import BundleEntryProto, BundleHeaderProto

TABLE_MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48
BLOCK_TRAILER_SIZE = 5  # compression type byte + masked crc32c
HEADER_KEY = b""

# TF DataType enum -> numpy dtype name (bfloat16 via ml_dtypes); DT_STRING (7) is not a weight.
_DTYPES = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8", 9: "int64",
           10: "bool", 14: "bfloat16", 17: "uint16", 19: "float16", 22: "uint32", 23: "uint64"}
DT_STRING = 7


# ---------------------------------------------------------------- CRC-32C (Castagnoli), reflected

_POLY = 0x82F63B78


def _byte_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLY), table >> 1).astype(np.uint32)
    return table


_TABLE = _byte_table()
_TABLE_LIST = [int(x) for x in _TABLE]


def _raw_crc_loop(data: memoryview, state: int = 0) -> int:
    """The CRC register fed with `data` (no init/xorout): plain table loop, for short inputs."""
    table = _TABLE_LIST
    for b in data:
        state = table[(state ^ b) & 0xFF] ^ (state >> 8)
    return state


def _apply(columns: tuple[int, ...], vector: int) -> int:
    out, i = 0, 0
    while vector:
        if vector & 1:
            out ^= columns[i]
        vector >>= 1
        i += 1
    return out


@cache
def _zeros_operator(nbytes: int) -> tuple[int, ...]:
    """The linear map on the CRC register of feeding `nbytes` zero bytes, as 32 columns (GF(2))."""
    if nbytes == 1:
        return tuple(_raw_crc_loop(memoryview(b"\0"), 1 << i) for i in range(32))
    half = _zeros_operator(nbytes // 2)
    square = tuple(_apply(half, c) for c in half)
    return tuple(_apply(_zeros_operator(1), c) for c in square) if nbytes % 2 else square


@cache
def _shift_tables(nbytes: int) -> np.ndarray:
    """(4, 256) tables applying `_zeros_operator(nbytes)` to a uint32 array one byte lane at a time."""
    columns = np.array(_zeros_operator(nbytes), dtype=np.uint32)
    values = np.arange(256, dtype=np.uint32)
    tables = np.zeros((4, 256), dtype=np.uint32)
    for lane in range(4):
        for bit in range(8):
            tables[lane] ^= np.where((values >> bit) & 1, columns[8 * lane + bit], 0).astype(np.uint32)
    return tables


def _shift(state: np.ndarray, nbytes: int) -> np.ndarray:
    t = _shift_tables(nbytes)
    return t[0][state & 0xFF] ^ t[1][(state >> 8) & 0xFF] ^ t[2][(state >> 16) & 0xFF] ^ t[3][state >> 24]


@cache
def _word_tables() -> tuple[np.ndarray, np.ndarray]:
    """Feeding a little-endian 32-bit word w into register s gives Z4(s ^ w), Z4 the 4-zero-bytes map;
    split into two 65536-entry tables (low and high half of s ^ w)."""
    columns = np.array(_zeros_operator(4), dtype=np.uint32)
    values = np.arange(1 << 16, dtype=np.uint32)
    low, high = np.zeros(1 << 16, np.uint32), np.zeros(1 << 16, np.uint32)
    for bit in range(16):
        on = ((values >> bit) & 1).astype(bool)
        low[on] ^= columns[bit]
        high[on] ^= columns[16 + bit]
    return low, high


LANES = 16384
CHUNK = LANES * 512  # bytes hashed per vectorised step
# bytes of a transposed read copied at once: a 3x3x1024x1024 kernel in one piece (slabs of its first axis
# cut the 3x3 window apart and made numpy's inner copy loops 3 elements long), a 400 MB fc
# weight in a few (the mapped pages of one slab are resident until it is copied)
SLAB = 64 << 20


def _raw_crc(data: memoryview, state: int = 0) -> int:
    """Raw CRC register after feeding `data` into `state`. Each chunk is cut into LANES equal runs hashed
    side by side with numpy, a 32-bit word at a time, then the lane results are folded together (CRC is
    linear: crc(A+B) = shift_len(B)(crc A) ^ crc B)."""
    low, high = _word_tables()
    for start in range(0, len(data), CHUNK):
        chunk = data[start:start + CHUNK]
        words = len(chunk) // (4 * LANES)
        if words < 4:
            state = _raw_crc_loop(chunk, state)
            continue
        run = 4 * words
        body = np.frombuffer(chunk, dtype="<u4", count=words * LANES).reshape(LANES, words).T.copy()
        lanes, halves, looked_up = (np.zeros(LANES, dtype=np.uint32) for _ in range(3))
        for column in body:  # lanes = low[(lanes ^ column) & 0xFFFF] ^ high[(lanes ^ column) >> 16], in place
            np.bitwise_xor(lanes, column, out=lanes)
            np.bitwise_and(lanes, 0xFFFF, out=halves)
            np.right_shift(lanes, 16, out=lanes)
            np.take(high, lanes, out=looked_up)
            np.take(low, halves, out=lanes)
            np.bitwise_xor(lanes, looked_up, out=lanes)
        width = run
        while len(lanes) > 1:
            lanes = _shift(lanes[0::2], width) ^ lanes[1::2]
            width *= 2
        state = int(_shift(np.array([state], dtype=np.uint32), run * LANES)[0] ^ lanes[0])
        state = _raw_crc_loop(chunk[run * LANES:], state)
    return state


def crc32c(data: bytes | memoryview) -> int:
    """Standard CRC-32C (init and xorout 0xFFFFFFFF)."""
    return _raw_crc(memoryview(data).cast("B"), 0xFFFFFFFF) ^ 0xFFFFFFFF


def _fast_extend() -> Any:
    """google-crc32c's C `extend(crc, bytes)` (hardware CRC, ~30x the numpy code) when installed."""
    try:
        import google_crc32c
    except ImportError:
        return None
    return google_crc32c.extend if google_crc32c.implementation == "c" else None


_FAST_EXTEND = _fast_extend()


def crc32c_extend(crc: int, data: memoryview | np.ndarray) -> int:
    """The standard CRC-32C of (what gave `crc`) + `data` (bytes, a memoryview or a uint8 array)."""
    if _FAST_EXTEND is not None:  # it takes bytes or an array, not a memoryview: copy only that
        return _FAST_EXTEND(crc, data if isinstance(data, np.ndarray) else bytes(data))
    return _raw_crc(memoryview(data).cast("B"), crc ^ 0xFFFFFFFF) ^ 0xFFFFFFFF


def unmask(masked: int) -> int:
    """Undo LevelDB/TF's crc masking (rotate right 15 after subtracting the delta)."""
    rot = (masked - 0xA282EAD8) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


# ---------------------------------------------------------------- varints (block handles, string lengths)


def _varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


@dataclass(frozen=True)
class Entry:
    """The fields of a BundleEntryProto this reader uses."""

    dtype: int = 0
    shape: tuple[int, ...] = ()
    shard_id: int = 0
    offset: int = 0
    size: int = 0
    crc32c: int = 0
    slices: tuple[tuple[tuple[int, int], ...], ...] = ()  # per slice, (start, length or -1 for all) per dim


def _entry(buf: bytes) -> Entry:
    proto = BundleEntryProto.FromString(buf)
    return Entry(
        dtype=proto.dtype, shape=tuple(d.size for d in proto.shape.dim), shard_id=proto.shard_id,
        offset=proto.offset, size=proto.size, crc32c=proto.crc32c,
        # per slice and dim: (start, length), length -1 where the extent has none (the whole dim)
        slices=tuple(tuple((e.start, e.length if e.HasField("length") else -1) for e in s.extent)
                     for s in proto.slices),
    )


def _slice_owner(key: bytes) -> str:
    """The variable name inside a slice key (TF's ordered code: 0x00, the name with 0x00 -> 00 FF and
    0xFF -> FF 00 escaped, terminated by 00 01, then the extents)."""
    name, i = bytearray(), 1
    while i + 1 < len(key):
        byte, following = key[i], key[i + 1]
        if byte == 0 and following == 1:
            return name.decode()
        if (byte, following) in ((0, 0xFF), (0xFF, 0)):
            name.append(byte)
            i += 2
        elif byte in (0, 0xFF):
            break
        else:
            name.append(byte)
            i += 1
    raise ValueError("bad slice key")


def _num_shards(buf: bytes) -> int:
    header = BundleHeaderProto.FromString(buf)
    if header.endianness != BundleHeaderProto.LITTLE:
        raise ValueError("the bundle is big-endian")
    return header.num_shards or 1  # an absent header (or field) means one shard


# ---------------------------------------------------------------- table (.index)


def _block(data: bytes, handle: bytes, where: str) -> bytes:
    offset, pos = _varint(handle, 0)
    size, _ = _varint(handle, pos)
    end = offset + size + BLOCK_TRAILER_SIZE
    if end > len(data):
        raise ValueError(f"{where} block at byte {offset} runs past the end of the file")
    contents, kind = data[offset:offset + size], data[offset + size]
    if kind != 0:
        raise ValueError(f"{where} block is compressed (type {kind}); only uncompressed tables are read")
    stored = int.from_bytes(data[offset + size + 1:end], "little")
    if crc32c(data[offset:offset + size + 1]) != unmask(stored):
        raise ValueError(f"crc32c mismatch in the {where} block at byte {offset}")
    return contents


def _block_entries(block: bytes) -> list[tuple[bytes, bytes]]:
    if len(block) < 4:
        raise ValueError("block too short")
    restarts = int.from_bytes(block[-4:], "little")
    limit = len(block) - 4 - 4 * restarts
    if limit < 0:
        raise ValueError("bad restart count")
    out, key, pos = [], b"", 0
    while pos < limit:
        shared, pos = _varint(block, pos)
        unshared, pos = _varint(block, pos)
        size, pos = _varint(block, pos)
        if shared > len(key) or pos + unshared + size > limit:
            raise ValueError("bad block entry")
        key = key[:shared] + block[pos:pos + unshared]
        pos += unshared
        out.append((key, block[pos:pos + size]))
        pos += size
    return out


def _read_table(data: bytes) -> dict[bytes, bytes]:
    if len(data) < FOOTER_SIZE:
        raise ValueError(f"file too short for a table ({len(data)} bytes)")
    footer = data[-FOOTER_SIZE:]
    if struct.unpack("<Q", footer[-8:])[0] != TABLE_MAGIC:
        raise ValueError("bad table magic (not a checkpoint index, or truncated)")
    _, pos = _varint(footer, 0)  # metaindex handle: TF writes no meta blocks
    _, pos = _varint(footer, pos)
    table: dict[bytes, bytes] = {}
    for _, handle in _block_entries(_block(data, footer[pos:], "index")):
        table.update(_block_entries(_block(data, handle, "data")))
    return table


# ---------------------------------------------------------------- the bundle


def _one_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:200]


@dataclass
class Bundle:
    """A checkpoint read lazily: `keys()`, `shape(k)`, `dtype(k)`, `read(k)` (also `get_tensor`,
    `get_variable_to_shape_map`, `has_tensor`, as TF's CheckpointReader)."""

    prefix: str | Path
    _entries: dict[str, Entry] = field(init=False, repr=False)
    _maps: dict[int, Any] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        index = Path(f"{self.prefix}.index")
        try:
            table = _read_table(index.read_bytes())
            self.num_shards = _num_shards(table.get(HEADER_KEY, b""))
            # Keys of partition slices start with a NUL byte (TF's ordered-code name encoding).
            self._entries = {k.decode(): _entry(v) for k, v in table.items() if k and k[0] != 0}
            self._slices: dict[str, list[Entry]] = {}
            for k in sorted(k for k in table if k[:1] == b"\x00"):  # sorted key bytes = sorted extents
                self._slices.setdefault(_slice_owner(k), []).append(_entry(table[k]))
        except OSError as e:
            raise InputError(f"{index}: cannot read the checkpoint index ({e.strerror or e})") from None
        except (ValueError, UnicodeDecodeError, DecodeError) as e:
            raise InputError(f"{index}: corrupt checkpoint index ({_one_line(e)}); "
                             "re-save the checkpoint") from None
        self.partitioned = bool(self._slices)

    def __enter__(self) -> Bundle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for m in self._maps.values():
            if isinstance(m, mmap.mmap):
                m.close()
        self._maps.clear()

    def keys(self) -> list[str]:
        return sorted(self._entries)

    def has_tensor(self, key: str) -> bool:
        return key in self._entries

    def shape(self, key: str) -> tuple[int, ...]:
        return self._entry(key).shape

    def dtype(self, key: str) -> np.dtype:
        return _numpy_dtype(self._entry(key).dtype, key, self.prefix)

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        return {k: list(e.shape) for k, e in self._entries.items()}

    def get_variable_to_dtype_map(self) -> dict[str, int]:
        return {k: e.dtype for k, e in self._entries.items()}

    def get_tensor(self, key: str) -> np.ndarray:
        return self.read(key)

    def read(self, key: str, view: tuple[tuple[int, ...], tuple[int, ...]] | None = None) -> np.ndarray:
        """The tensor as a fresh numpy array (its bytes checked against the stored crc32c); with a view
        (shape, axes): reshaped to `shape`, then transposed to `axes` (contiguous)."""
        entry = self._entry(key)
        dtype = self.dtype(key)
        if any(d < 0 for d in entry.shape):
            raise InputError(f"{self.prefix}.index: tensor '{key}' has shape {list(entry.shape)}; "
                             "the index is corrupt")
        if entry.slices or view is None or not entry.size:
            value = self._assemble(key, entry, dtype) if entry.slices else self._read_entry(key, entry, dtype)
            return value if view is None else transposed(value.reshape(view[0]), view[1])
        return self._read_transposed(key, entry, dtype, *view)

    def _read_transposed(self, key: str, entry: Entry, dtype: np.dtype, shape: tuple[int, ...],
                         axes: tuple[int, ...]) -> np.ndarray:
        """_read_entry and a transpose in one copy: slab by slab of the first axis, straight from the
        mapped shard into the transposed output (no second whole-tensor array)."""
        path = self._shard_path(entry.shard_id)
        data = self._check_entry(key, entry, dtype)
        shape = tuple(shape)
        if math.prod(shape) != math.prod(entry.shape) or sorted(axes) != list(range(len(shape))):
            raise AssertionError(f"view {shape} {axes} does not fit tensor '{key}' {list(entry.shape)}")
        out = np.empty(tuple(shape[a] for a in axes), dtype)
        row = entry.size // shape[0]
        rows = max(1, SLAB // max(1, row))
        where = [slice(None)] * len(shape)
        source = np.frombuffer(data, np.uint8, entry.size, entry.offset)  # a view of the mapped shard
        try:
            crc = 0
            for first in range(0, shape[0], rows):
                last = min(first + rows, shape[0])
                piece = source[first * row:last * row]
                crc = crc32c_extend(crc, piece)
                where[axes.index(0)] = slice(first, last)
                copy_tiled(out[tuple(where)], piece.view(dtype).reshape((last - first,) + shape[1:]).transpose(axes))
                del piece
                _drop_pages(data, entry.offset + first * row, (last - first) * row)
        finally:
            del source  # (the shard's map cannot close while a view of it lives)
        if crc != unmask(entry.crc32c):
            raise InputError(f"{path}: crc32c mismatch in tensor '{key}'; the data shard is corrupt")
        return out

    def lazy(self, key: str) -> LazyArray:
        """The tensor as a lazy array, read (and crc-checked) each time it is materialized. What can be
        checked without reading the bytes (dtype, shape, size, the shard's length) is checked now."""
        entry = self._entry(key)
        dtype = self.dtype(key)
        if any(d < 0 for d in entry.shape):
            raise InputError(f"{self.prefix}.index: tensor '{key}' has shape {list(entry.shape)}; "
                             "the index is corrupt")
        for part in self._slices.get(key, []) if entry.slices else [entry]:
            self._check_entry(key, part, dtype)
        return LazyArray(entry.shape, dtype, read_tensor, (str(self.prefix), key, None))

    def read_strings(self, key: str) -> list[bytes]:
        """The elements of a string tensor, e.g. the `_CHECKPOINTABLE_OBJECT_GRAPH` a TF2 save stores. TF
        writes varint64 lengths, a masked checksum, then the bytes; the entry's crc32c covers each length
        as a little-endian uint32, the checksum as written, then the bytes."""
        entry = self._entry(key)
        if entry.dtype != DT_STRING or entry.slices:
            raise InputError(f"{self.prefix}.index: tensor '{key}' is not a string tensor")
        path = self._shard_path(entry.shard_id)
        data = self._map(entry.shard_id, path)
        if entry.offset + entry.size > len(data):
            raise InputError(f"{path}: tensor '{key}' lies past the end of the file; the shard is truncated")
        raw = bytes(data[entry.offset:entry.offset + entry.size])
        try:
            lengths, pos = [], 0
            for _ in range(math.prod(entry.shape)):
                length, pos = _varint(raw, pos)
                lengths.append(length)
            covered = b"".join(n.to_bytes(4 if n < 1 << 32 else 8, "little") for n in lengths) + raw[pos:]
            pos += 4  # the lengths' checksum
            if sum(lengths) + pos != len(raw):
                raise ValueError(f"{sum(lengths)} bytes of strings in {len(raw) - pos}")
        except ValueError as e:
            raise InputError(f"{self.prefix}.index: string tensor '{key}' is corrupt ({e})") from None
        if crc32c(covered) != unmask(entry.crc32c):
            raise InputError(f"{path}: crc32c mismatch in tensor '{key}'; the data shard is corrupt")
        values = []
        for length in lengths:
            values.append(raw[pos:pos + length])
            pos += length
        return values

    def _assemble(self, key: str, entry: Entry, dtype: np.dtype) -> np.ndarray:
        """A partitioned variable from its slices. Slice keys encode the extents order-preservingly, so
        the slices sorted by extent pair with the slice entries sorted by key."""
        parts = self._slices.get(key, [])
        extents = sorted(entry.slices)
        if len(parts) != len(extents):
            raise InputError(f"{self.prefix}.index: variable '{key}' lists {len(extents)} slices but "
                             f"{len(parts)} are stored; the index is corrupt")
        if sum(math.prod(p.shape) for p in parts) != math.prod(entry.shape):
            raise InputError(f"{self.prefix}.index: the slices of variable '{key}' do not add up to its shape "
                             f"{list(entry.shape)}; the index is corrupt")
        out = np.zeros(entry.shape, dtype)
        for extent, part in zip(extents, parts):
            where = tuple(slice(s, None if n < 0 else s + n) for s, n in extent)
            if len(where) != out.ndim or out[where].shape != part.shape:
                raise InputError(f"{self.prefix}.index: a slice of variable '{key}' has shape "
                                 f"{list(part.shape)} for extent {list(extent)}; the index is corrupt")
            out[where] = self._read_entry(key, part, dtype)
        return out

    def _check_entry(self, key: str, entry: Entry, dtype: np.dtype) -> Any:
        """The mapped shard holding `entry`, once its extent is checked against the file and the shape."""
        path = self._shard_path(entry.shard_id)
        data = self._map(entry.shard_id, path)
        if entry.offset + entry.size > len(data):
            raise InputError(f"{path}: tensor '{key}' lies at bytes {entry.offset}..{entry.offset + entry.size} "
                             f"past the end of the file ({len(data)} bytes); the shard is truncated")
        if any(d < 0 for d in entry.shape) or math.prod(entry.shape) * dtype.itemsize != entry.size:
            raise InputError(f"{self.prefix}.index: tensor '{key}' has {entry.size} bytes for shape "
                             f"{list(entry.shape)} of {dtype}; the index is corrupt")
        return data

    def _read_entry(self, key: str, entry: Entry, dtype: np.dtype) -> np.ndarray:
        path = self._shard_path(entry.shard_id)
        data = self._check_entry(key, entry, dtype)
        out = np.empty(entry.shape, dtype)
        flat = out.reshape(-1).view(np.uint8)
        target = memoryview(flat)
        crc = 0
        for start in range(0, entry.size, CHUNK):  # chunk by chunk: only the output is held in memory
            stop = min(start + CHUNK, entry.size)
            with memoryview(data)[entry.offset + start:entry.offset + stop] as piece:
                target[start:stop] = piece
            crc = crc32c_extend(crc, flat[start:stop])  # the copy, still in cache: no bytes() copy
            _drop_pages(data, entry.offset + start, stop - start)
        if crc != unmask(entry.crc32c):
            raise InputError(f"{path}: crc32c mismatch in tensor '{key}'; the data shard is corrupt")
        return out

    def _entry(self, key: str) -> Entry:
        try:
            return self._entries[key]
        except KeyError:
            raise KeyError(f"{self.prefix}: no tensor '{key}' in the checkpoint") from None

    def _shard_path(self, shard: int) -> Path:
        return Path(f"{self.prefix}.data-{shard:05d}-of-{self.num_shards:05d}")

    def _map(self, shard: int, path: Path) -> Any:
        if shard not in self._maps:
            try:
                with open(path, "rb") as f:
                    self._maps[shard] = (mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                                         if path.stat().st_size else b"")
            except OSError as e:
                raise InputError(f"{path}: cannot read the checkpoint data shard ({e.strerror or e}); "
                                 "the checkpoint is incomplete") from None
        return self._maps[shard]


_OPEN: dict[tuple[str, int], Bundle] = {}  # the bundles lazy tensors read from, by prefix and index mtime
_OPEN_MAX = 4


def read_tensor(prefix: str, key: str, view: tuple[tuple[int, ...], tuple[int, ...]] | None = None) -> np.ndarray:
    """Tensor `key` of the checkpoint at `prefix` (what a lazy array from `Bundle.lazy` computes). The
    bundle is reopened when its index changed; a file gone or corrupt by now is the same InputError."""
    try:
        stamp = Path(f"{prefix}.index").stat().st_mtime_ns
    except OSError as e:
        raise InputError(f"{prefix}.index: cannot read the checkpoint index ({e.strerror or e})") from None
    bundle = _OPEN.get((prefix, stamp))
    if bundle is None:
        bundle = _OPEN[(prefix, stamp)] = Bundle(prefix)
        while len(_OPEN) > _OPEN_MAX:
            _OPEN.pop(next(iter(_OPEN))).close()
    return bundle.read(key, view)


def checkpoint_entry(value: Any) -> tuple[str, str] | None:
    """(prefix, key) when `value` is a checkpoint tensor read as it is stored (no transpose, slice or cast
    on top): the reference run then has TensorFlow read it itself, not from our reading."""
    if not isinstance(value, LazyArray):
        return None
    fn, args = value.recipe
    if fn is not read_tensor or args[2] is not None:
        return None
    return str(args[0]), str(args[1])


read_tensor.reads_transposed = True  # type: ignore[attr-defined] - LazyArray folds transposes into `view`


def _drop_pages(data: Any, offset: int, size: int) -> None:
    """Hand already-read pages of a mapped shard back, so resident memory stays at the tensor being read."""
    if isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        start = offset - offset % mmap.PAGESIZE
        data.madvise(mmap.MADV_DONTNEED, start, offset + size - start)


def _numpy_dtype(tf_dtype: int, key: str, prefix: str | Path) -> np.dtype:
    name = _DTYPES.get(tf_dtype)
    if name is None:
        what = "a string tensor (not a weight)" if tf_dtype == DT_STRING else f"TF dtype enum {tf_dtype}"
        raise InputError(f"{prefix}: tensor '{key}' is {what}; this reader does not read it")
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)
