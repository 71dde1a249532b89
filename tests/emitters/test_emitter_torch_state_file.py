"""model.pt written by our own zip writer (issue 25): torch.load reads it (also weights_only and mmap),
tensor for tensor identical to the state given, every record's data aligned as torch.save aligns it."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

from tf_convert.emitters.torch.state_file import save_state_dict

torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")

RNG = np.random.default_rng(0)

CASES = [  # (id, value)
    ("float32-3d", RNG.standard_normal((3, 5, 7)).astype(np.float32)),
    ("float32-transposed-view", RNG.standard_normal((4, 6)).astype(np.float32).T),
    ("float16", RNG.standard_normal((4, 4)).astype(np.float16)),
    ("bfloat16", RNG.standard_normal(9).astype(ml_dtypes.bfloat16)),
    ("float64", RNG.standard_normal((2, 3))),
    ("int64", np.arange(5, dtype=np.int64)),
    ("int32-big-endian", np.arange(6, dtype=">i4").reshape(2, 3)),
    ("uint8", np.arange(7, dtype=np.uint8)),
    ("bool", np.array([True, False, True])),
    ("scalar", np.full((), 3.5, np.float32)),
    ("empty", np.zeros((0, 3), np.float32)),
]


def as_torch(value: np.ndarray):
    value = np.asarray(value).copy(order="C")
    if value.dtype.name == "bfloat16":
        return torch.from_numpy(value.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(value.astype(value.dtype.newbyteorder("=")))


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("state") / "model.pt"
    save_state_dict(path, {f"layer_{i}.{name}": value for i, (name, value) in enumerate(CASES)})
    return path


@pytest.mark.parametrize("mmap", [False, True])
def test_loads_identical_tensors(written: Path, mmap: bool) -> None:
    loaded = torch.load(written, weights_only=True, mmap=mmap)
    assert list(loaded) == [f"layer_{i}.{name}" for i, (name, _) in enumerate(CASES)]
    for i, (name, value) in enumerate(CASES):
        got, want = loaded[f"layer_{i}.{name}"], as_torch(value)
        assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape), name
        assert torch.equal(got, want), name


def test_records_are_stored_and_aligned(written: Path) -> None:
    alignment = torch.serialization._get_storage_alignment()
    with zipfile.ZipFile(written) as archive, open(written, "rb") as f:
        assert archive.testzip() is None  # every CRC right
        for info in archive.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            f.seek(info.header_offset + 26)
            name_len, extra_len = np.frombuffer(f.read(4), "<u2")
            data_at = info.header_offset + 30 + int(name_len) + int(extra_len)
            assert data_at % alignment == 0, info.filename
        names = {i.filename.split("/", 1)[1] for i in archive.infolist()}
    assert {"data.pkl", "byteorder", "version", ".format_version", ".storage_alignment"} <= names
