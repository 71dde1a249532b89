"""model.pt's zip writer: byte for byte what Python's zipfile writes for the same stored records,
headers written once; zip64 sizes, offsets and end records included (their limits lowered here so that
small archives cross them)."""

from __future__ import annotations

import io
import zipfile
import zlib

import numpy as np
import pytest

from tf_convert.emitters.torch import zip_file
from tf_convert.emitters.torch.zip_file import StoredZip

RNG = np.random.default_rng(0)
RECORDS = [  # (name, data, extra field)
    ("model/data.pkl", RNG.bytes(300), b"FB\x04\x00ZZZZ"),
    ("model/empty", b"", b""),
    ("model/data/0", RNG.bytes(5000), b"FB\x00\x00"),
    ("modèle/data/1", RNG.bytes(1500), b""),  # a UTF-8 name
    ("model/data/2", memoryview(RNG.standard_normal(700).astype(np.float32)).cast("B"), b"FB\x02\x00ZZ"),
]


def by_zipfile(records) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, data, extra in records:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.extra = extra
            with archive.open(info, "w", force_zip64=True) as record:
                record.write(data)
    return buffer.getvalue()


def by_stored_zip(records) -> bytes:
    buffer = io.BytesIO()
    with StoredZip(buffer) as archive:
        for name, data, extra in records:
            archive.add(name, data, extra)
            assert archive.offset == buffer.tell()
    return buffer.getvalue()


@pytest.mark.parametrize("limit, count_limit", [
    (None, None),  # a small archive: zip64 only in the local headers
    (4000, None),  # a record past the size limit, and offsets past the offset limit
    (12000, None),  # only the last offsets and the central directory past it
    (None, 3),  # more records than the end record counts: zip64 end records
])
def test_bytes_are_zipfiles(monkeypatch, limit, count_limit) -> None:
    if limit is not None:
        monkeypatch.setattr(zipfile, "ZIP64_LIMIT", limit)
        monkeypatch.setattr(zip_file, "ZIP64_LIMIT", limit)
    if count_limit is not None:
        monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", count_limit)
        monkeypatch.setattr(zip_file, "FILE_COUNT_LIMIT", count_limit)
    ours = by_stored_zip(RECORDS)
    assert ours == by_zipfile(RECORDS)
    with zipfile.ZipFile(io.BytesIO(ours)) as archive:
        assert archive.testzip() is None
        assert [archive.read(name) for name, _, _ in RECORDS] == [bytes(data) for _, data, _ in RECORDS]


def test_header_size_is_where_the_data_starts() -> None:
    for name, data, extra in RECORDS:
        buffer = io.BytesIO()
        archive = StoredZip(buffer)
        archive.add(name, data, extra)
        assert buffer.getvalue()[StoredZip.header_size(name, len(extra)):] == bytes(data)


def test_crc32_is_zlibs() -> None:
    data = RNG.bytes(1 << 20)
    assert zip_file.crc32(data) == zlib.crc32(data) and zip_file.crc32(memoryview(data)[7:]) == zlib.crc32(data[7:])
