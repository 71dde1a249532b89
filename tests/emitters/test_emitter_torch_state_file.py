"""model.pt written by our own zip writer, without torch: torch.load reads it (also weights_only
and mmap), tensor for tensor identical to the state given, every record's data aligned as torch.save aligns
it, and data.pkl byte for byte what torch.save writes for the same tensors."""

from __future__ import annotations

import io
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tf_convert.convert.errors import UnsupportedError
from tf_convert.emitters.torch.names import MODULE_ATTRIBUTES
from tf_convert.emitters.torch.state_file import ALIGNMENT, STORAGE_TYPES, data_pkl, save_state_dict, storage_type

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


# ---- data.pkl and the facts about torch kept here, against torch itself -------------------------------


def _torch_data_pkl(state: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    torch.save({name: as_torch(value) for name, value in state.items()}, buffer)
    with zipfile.ZipFile(buffer) as archive:
        return archive.read(next(n for n in archive.namelist() if n.endswith("/data.pkl")))


@pytest.mark.parametrize("count", [0, 1, 2, 300, 1000, 1001])  # SETITEM, SETITEMS batches, LONG_BINPUT
def test_data_pkl_is_the_bytes_torch_save_writes(count: int) -> None:
    rng = np.random.default_rng(count)
    values = [value for _, value in CASES if value.size]  # (torch gives an empty tensor other strides)
    state = {f"block_{i}.weight": values[i % len(values)].reshape(rng.permutation(values[i % len(values)].shape))
             for i in range(count)}
    ours = data_pkl([(name, storage_type(name, v.dtype), v.shape) for name, v in state.items()])
    assert ours == _torch_data_pkl(state)


def test_data_pkl_sizes_beyond_small_ints() -> None:
    """Dimensions in every int opcode (BININT1/2, BININT, LONG1: a storage past 2**31 elements)."""
    shapes = [(255, 256), (65536, 3), (70000, 40000), ()]

    class Read(pickle.Unpickler):
        def find_class(self, module, name):
            return {("torch._utils", "_rebuild_tensor_v2"): lambda *args: args,
                    ("collections", "OrderedDict"): dict}.get((module, name), f"{module}.{name}")

        def persistent_load(self, pid):
            return pid

    loaded = Read(io.BytesIO(data_pkl([(f"t{i}", "FloatStorage", s) for i, s in enumerate(shapes)]))).load()
    for i, shape in enumerate(shapes):
        storage, offset, size, stride, grad, hooks = loaded[f"t{i}"]
        assert storage == ("storage", "torch.FloatStorage", str(i), "cpu", int(np.prod(shape)))
        assert (offset, size, grad, hooks) == (0, shape, False, {})
        assert stride == tuple(int(np.prod(shape[d + 1:])) for d in range(len(shape)))


def test_storage_facts_are_torchs() -> None:
    from torch.storage import _dtype_to_storage_type_map

    torch_types = {str(dtype).removeprefix("torch."): name for dtype, name in _dtype_to_storage_type_map().items()}
    assert STORAGE_TYPES.items() <= torch_types.items()
    assert ALIGNMENT == torch.serialization._get_storage_alignment()


def test_a_type_torch_stores_no_storage_of_is_refused() -> None:
    with pytest.raises(UnsupportedError, match="uint16"):
        storage_type("counts", np.uint16)
    assert storage_type("w", ">f4") == "FloatStorage" and storage_type("b", ml_dtypes.bfloat16) == "BFloat16Storage"


def test_module_attributes_cover_torchs() -> None:
    """A layer may not shadow what nn.Module has; the list is kept here so that writing model.py needs no torch."""
    on_the_class = {name for name in dir(torch.nn.Module) if not name.startswith("__")}
    on_each_instance = {name for name in vars(torch.nn.Module()) if not name.startswith("_")}  # training
    assert on_the_class | on_each_instance <= MODULE_ATTRIBUTES
