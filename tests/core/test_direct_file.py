"""convert/direct_file.py: the bytes on disk are exactly those a plain file gets from the same writes, written
front to back (a write behind what went to disk is refused, not silently lost)."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

from tf_convert.convert.direct_file import BLOCK, DirectFile
from tf_convert.emitters.torch.zip_file import StoredZip


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
        if kind < 7:
            data = rng.integers(0, 256, int(rng.integers(1, 3 * BLOCK)), dtype=np.uint8)
            steps.append(("write", data if kind < 3 else data.tobytes()))
            pos += len(data)
        else:  # forward past the end (ONNX's aligned external tensors): a hole
            pos = size + int(rng.integers(1, 2 * BLOCK))
            steps.append(("seek", pos))
        size = max(size, pos)
    return steps


@pytest.mark.parametrize("seed", range(6))
def test_random_writes_and_seeks_match_a_plain_file(tmp_path, seed):
    steps = _random_steps(seed)
    path = tmp_path / "out.bin"
    with DirectFile(path, stage=2 * BLOCK) as f:  # a small stage: most writes straddle two
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


def test_a_rewrite_still_in_the_stage_is_kept_and_one_behind_the_disk_refused(tmp_path):
    steps = [("write", b"a" * 100), ("seek", 10), ("write", b"b" * 5), ("seek", 300), ("write", b"c")]
    with DirectFile(tmp_path / "in-stage.bin", stage=BLOCK) as f:
        _replay(f, steps)
    assert (tmp_path / "in-stage.bin").read_bytes() == _plain(steps)
    with pytest.raises(io.UnsupportedOperation, match="front to back"), DirectFile(tmp_path / "x", stage=BLOCK) as f:
        f.write(b"d" * (BLOCK + 10))  # the first stage has gone to disk
        f.seek(5)
        f.write(b"e")


def test_model_pt_zip_on_it_is_byte_identical(tmp_path):
    records = {f"r{k}": os.urandom(k * 3000 + 5) for k in range(8)}

    def build(file) -> None:
        with StoredZip(file) as archive:
            for name, data in records.items():
                archive.add(name, data, b"FB\x03\x00ZZZ")

    plain = io.BytesIO()
    build(plain)
    with DirectFile(tmp_path / "a.zip", stage=BLOCK) as f:
        build(f)
    assert (tmp_path / "a.zip").read_bytes() == plain.getvalue()


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
