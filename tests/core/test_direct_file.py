"""convert/direct_file.py: the bytes on disk are exactly those a plain file gets from the same writes."""

from __future__ import annotations

import io
import os
import zipfile

import numpy as np
import pytest

from tf_convert.convert.direct_file import BLOCK, DirectFile


def _replay(f, steps) -> None:
    for step in steps:
        if step[0] == "seek":
            f.seek(*step[1:])
        else:
            f.write(step[1])


def _plain(steps) -> bytes:
    buffer = io.BytesIO()
    _replay(buffer, steps)
    return buffer.getvalue()


def _random_steps(seed: int) -> list:
    rng = np.random.default_rng(seed)
    steps, pos, size = [], 0, 0
    for _ in range(60):
        kind = rng.integers(0, 10)
        if kind < 6:
            data = rng.integers(0, 256, int(rng.integers(1, 3 * BLOCK)), dtype=np.uint8)
            steps.append(("write", data if kind < 3 else data.tobytes()))
            pos += len(data)
        elif kind < 8:  # back into what may be on disk already (zipfile's header rewrites)
            pos = int(rng.integers(0, size + 1))
            steps.append(("seek", pos))
        else:  # forward past the end (ONNX's aligned external tensors): a hole
            pos = size + int(rng.integers(1, 2 * BLOCK))
            steps.append(("seek", pos))
        size = max(size, pos)
    return steps


@pytest.mark.parametrize("seed", range(6))
def test_random_writes_and_seeks_match_a_plain_file(tmp_path, seed):
    steps = _random_steps(seed)
    path = tmp_path / "out.bin"
    with DirectFile(path, stage=2 * BLOCK) as f:  # a small stage: most rewrites land on disk, some straddle it
        _replay(f, steps)
    assert path.read_bytes() == _plain(steps)


def test_float_arrays_and_memoryviews_are_written_as_their_bytes(tmp_path):
    weights = np.arange(3 * 1000, dtype=np.float32).reshape(3, 1000)
    path = tmp_path / "w.bin"
    with DirectFile(path, stage=BLOCK) as f:
        f.write(b"head")
        f.write(weights)
        f.write(memoryview(weights.tobytes()).cast("B"))
    assert path.read_bytes() == b"head" + weights.tobytes() * 2


def test_zipfile_on_it_is_byte_identical(tmp_path):
    records = {f"r{k}": os.urandom(k * 3000 + 5) for k in range(8)}

    def build(file) -> None:
        with zipfile.ZipFile(file, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            for name, data in records.items():
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                with archive.open(info, "w", force_zip64=True) as record:
                    record.write(data)

    plain = io.BytesIO()
    build(plain)
    with DirectFile(tmp_path / "a.zip", stage=BLOCK) as f:
        build(f)
    assert (tmp_path / "a.zip").read_bytes() == plain.getvalue()
    with zipfile.ZipFile(tmp_path / "a.zip") as archive:
        assert {n: archive.read(n) for n in archive.namelist()} == records


def test_a_failed_write_leaves_the_rest_unwritten(tmp_path):
    path = tmp_path / "x.bin"
    with pytest.raises(RuntimeError), DirectFile(path) as f:
        f.write(b"x" * 100)
        raise RuntimeError("emit failed")
    assert f.closed and path.read_bytes() == b""  # the caller deletes the temp directory


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no tmpfs at /dev/shm")
def test_a_file_system_without_o_direct_gets_the_same_bytes(tmp_path):
    import tempfile

    steps = _random_steps(7)
    with tempfile.TemporaryDirectory(dir="/dev/shm") as shm:
        path = os.path.join(shm, "out.bin")
        with DirectFile(path, stage=2 * BLOCK) as f:
            _replay(f, steps)
        with open(path, "rb") as written:
            assert written.read() == _plain(steps)
