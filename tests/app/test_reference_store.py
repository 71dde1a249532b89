"""TF's reference outputs kept on disk between runs (app/verify/reference_store.py). A second target of the
same source is checked against the same TF outputs without running TF; anything that could change TF's
outputs -- the source's bytes (even rewritten in place with its old mtime), TF's version or kernel settings --
misses; a damaged entry is a miss; a store another user may write is not used."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from tests.support.size_following import run_cli
from tf_convert.app import api
from tf_convert.app.cache import reference_key, source_stamp
from tf_convert.app.verify import reference_store
from tf_convert.app.verify.reference_store import StoredReferences
from tf_convert.convert.ir import Graph


def _save_model(path: Path, seed: int) -> Path:
    """A small size-free Keras CNN (SAME stride-2 conv with an odd pad at even sizes, BN, pooling, dense)."""
    import keras

    keras.utils.set_random_seed(seed)
    x = keras.Input((None, None, 3))
    y = keras.layers.Conv2D(6, 3, strides=2, padding="same")(x)
    y = keras.layers.BatchNormalization()(y)
    y = keras.layers.ReLU()(y)
    y = keras.layers.GlobalAveragePooling2D()(y)
    model = keras.Model(x, keras.layers.Dense(4)(y))
    for layer in model.layers:  # moving statistics away from 0/1, so BN is not an identity
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.set_weights([w + np.random.default_rng(seed).uniform(0.5, 1.5, w.shape).astype(w.dtype)
                               for w in layer.get_weights()])
    model.save(path)
    return path


@pytest.fixture
def model(tmp_path) -> Path:
    return _save_model(tmp_path / "model.h5", seed=3)


def _convert(source: Path, target: str, out: Path, store: Path | None) -> dict:
    return api.convert(source, target, out, input_shape=(1, 17, 18, 3), verify=True, force=True,
                       reference_store=store)


def _checked(doc: dict) -> dict:
    """The verify record without where TF's outputs came from (the part that must not change)."""
    return {k: v for k, v in doc["verify"].items() if k != "reference"}


def test_a_second_target_is_checked_against_the_stored_outputs(tmp_path, model):
    store = tmp_path / "store"
    first = _convert(model, "onnx", tmp_path / "onnx", store)
    assert first["verify"]["reference"]["sets_from_store"] == 0 and first["verify"]["reference"]["sets_run"] >= 2
    for target in ("caffe", "torch"):
        warm = _convert(model, target, tmp_path / target, store)
        cold = _convert(model, target, tmp_path / f"{target}-cold", None)
        assert warm["verify"]["reference"]["sets_run"] == 0, target  # TensorFlow did not run
        assert warm["verify"]["reference"]["sets_from_store"] >= 2, target
        assert warm["verify"]["passed"] and _checked(warm) == _checked(cold), target
        assert "reference" not in cold["verify"]


def test_a_source_rewritten_in_place_with_its_old_mtime_misses(tmp_path, model):
    """Same path, size and mtime, other weights: a stamp-keyed store would check the new model against the
    old model's outputs (and fail a right conversion, or pass a wrong one); the content key misses."""
    store = tmp_path / "store"
    _convert(model, "onnx", tmp_path / "a", store)
    stat = model.stat()
    _save_model(model, seed=4)
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert source_stamp(model)[1][0][1:] == (stat.st_size, stat.st_mtime_ns)
    again = _convert(model, "onnx", tmp_path / "b", store)
    assert again["verify"]["reference"]["sets_from_store"] == 0
    assert again["verify"]["passed"]


def test_a_damaged_entry_is_a_miss_and_is_written_again(tmp_path, model):
    store = tmp_path / "store"
    _convert(model, "caffe", tmp_path / "a", store)
    entries = sorted(store.rglob("*.npz"))
    assert entries
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:40])
    again = _convert(model, "caffe", tmp_path / "b", store)
    assert again["verify"]["passed"] and again["verify"]["reference"]["sets_from_store"] == 0
    third = _convert(model, "caffe", tmp_path / "c", store)
    assert third["verify"]["reference"]["sets_run"] == 0 and _checked(third) == _checked(again)


def _stored(root: Path, source: Path, environ: dict, max_bytes: int = reference_store.MAX_BYTES) -> StoredReferences:
    return StoredReferences(root, source_stamp(source), lambda: "c0ffee", environ=environ, max_bytes=max_bytes)


def _key(source: Path, seed: int) -> tuple:
    graph = Graph(name="g", inputs=["x"], outputs=["y"])
    graph.add_tensor("x", (1, 3), "float32")
    graph.add_tensor("y", (1, 3), "float32")
    return reference_key(source, graph, [np.random.default_rng(seed).standard_normal((1, 3)).astype(np.float32)])


@pytest.mark.parametrize("changed", [{"TF_ENABLE_ONEDNN_OPTS": "1"}, {"TF_USE_LEGACY_KERAS": "1"}])
def test_other_kernel_settings_are_another_entry(tmp_path, model, changed):
    value = [np.arange(3, dtype=np.float32)]
    _stored(tmp_path, model, {"TF_ENABLE_ONEDNN_OPTS": "0"}).put(_key(model, 0), value)
    assert np.array_equal(_stored(tmp_path, model, {"TF_ENABLE_ONEDNN_OPTS": "0"}).get(_key(model, 0))[0], value[0])
    assert _stored(tmp_path, model, {"TF_ENABLE_ONEDNN_OPTS": "0"}).get(_key(model, 1)) is None  # other inputs
    assert _stored(tmp_path, model, {"TF_ENABLE_ONEDNN_OPTS": "0", **changed}).get(_key(model, 0)) is None


def test_the_environment_names_tensorflows_version():
    versions, settings, code = reference_store.environment({})
    assert dict(versions).get("tensorflow") or dict(versions).get("tensorflow-cpu")
    assert len(code) == 64 and all(value is None for _, value in settings)


def test_a_store_others_may_write_is_not_used(tmp_path, model):
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o777)
    _stored(root, model, {}).put(_key(model, 0), [np.ones(3, np.float32)])
    assert not list(root.rglob("*.npz"))
    root.chmod(0o700)
    _stored(root, model, {}).put(_key(model, 0), [np.ones(3, np.float32)])
    assert _stored(root, model, {}).get(_key(model, 0)) is not None


def test_the_least_recently_used_sources_go_first(tmp_path):
    sources = []
    for k in range(3):
        path = tmp_path / f"m{k}.h5"
        path.write_bytes(bytes([k]) * 10)
        sources.append(path)
    root, value = tmp_path / "store", [np.zeros(25_000, np.float32)]  # ~100 kB an entry
    stores = [StoredReferences(root, source_stamp(p), lambda p=p: p.name, environ={}, max_bytes=250_000)
              for p in sources]
    stores[0].put(_key(sources[0], 0), value)
    stores[1].put(_key(sources[1], 0), value)
    os.utime(stores[0].folder, (1, 1))  # the first source: used longest ago
    stores[2].put(_key(sources[2], 0), value)
    assert [s.knows() for s in stores] == [False, True, True]


@pytest.mark.parametrize("environ, expected", [
    ({"TF_CONVERT_CACHE_DIR": "off"}, None),
    ({"TF_CONVERT_CACHE_DIR": "/data/refs"}, Path("/data/refs")),
    ({"XDG_CACHE_HOME": "/xdg"}, Path("/xdg/tf-convert/reference")),
])
def test_where_the_store_is(environ, expected):
    assert reference_store.location(environ) == expected


def test_cli_reuses_tf_outputs_across_targets_and_in_convert_verify(tmp_path, model, monkeypatch):
    """The whole CLI run: the second target's check reads the first one's TF outputs (no TF run) and says so
    in conversion.json and its summary line; so does `convert verify OUT`, with the recorded max_rel."""
    monkeypatch.setenv(reference_store.ENV, str(tmp_path / "store"))  # run_cli's processes inherit it
    args = ["--input-shape", "1,17,18,3", "--verify", "-q"]
    first = run_cli("tf2onnx", str(model), "-o", str(tmp_path / "onnx"), *args)
    second = run_cli("tf2torch", str(model), "-o", str(tmp_path / "torch"), *args[:-1])
    again = run_cli("verify", str(tmp_path / "torch"))
    assert first.returncode == 0 and second.returncode == 0 and again.returncode == 0, first.stderr + second.stderr
    record = json.loads((tmp_path / "torch" / "conversion.json").read_text())["verify"]
    assert record["passed"] and record["reference"]["sets_run"] == 0
    assert "vs stored TF outputs" in second.stdout
    assert again.stdout.startswith(f"OK max_rel {record['max_rel']:.2e}") and "vs stored TF outputs" in again.stdout


# ---- the store never turns against its user ---------------------------------------------------------------

def _fill(root: Path, tmp_path: Path, sources: int = 4) -> None:
    """Entries of `sources` sources, ~100 kB each, in a store of 250 kB: the oldest are pruned."""
    value = [np.zeros(25_000, np.float32)]
    for k in range(sources):
        path = tmp_path / f"src{k}.h5"
        path.write_bytes(bytes([k]) * 10)
        store = StoredReferences(root, source_stamp(path), lambda p=path: p.name, environ={}, max_bytes=250_000)
        store.put(_key(path, 0), value)
        if store.folder.is_dir() and not reference_store.refusal(root):
            os.utime(store.folder, (k + 1, k + 1))


def test_pruning_deletes_only_the_stores_own_entries(tmp_path):
    """TF_CONVERT_CACHE_DIR=~/models: the user's files there (a weight file, a project folder, even a folder
    named like one of the store's) outlive any trimming of the store."""
    root = tmp_path / "models"
    (root / "project").mkdir(parents=True)
    (root / "project" / "weights.bin").write_bytes(b"w" * 300_000)
    (root / "big.h5").write_bytes(b"x" * 300_000)
    lookalike = root / reference_store.STORE_DIR / ("ab" * 16)
    lookalike.mkdir(parents=True)
    (lookalike / "notes.txt").write_text("mine")
    for path in (root / "project", root / "project" / "weights.bin", root / "big.h5", lookalike):
        os.utime(path, (0, 0))  # older than any entry: pruned first, were they the store's
    _fill(root, tmp_path)
    assert (root / "project" / "weights.bin").stat().st_size == 300_000 and (root / "big.h5").exists()
    assert (lookalike / "notes.txt").read_text() == "mine"
    entries = list((root / reference_store.STORE_DIR).rglob("*.npz"))
    assert 1 <= len(entries) <= 2  # the store itself was trimmed


@pytest.mark.parametrize("case", ["symlink", "symlinked store folder", "another user's", "writable by others"])
def test_a_location_that_is_not_the_users_own_is_refused(tmp_path, case):
    """A symlink planted at the location (or at its store folder), a directory of another user (root running
    with a user's HOME), one others may write: refused with a reason, and nothing in it is touched."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    victim = elsewhere / "victim.bin"
    victim.write_bytes(b"v" * 10)
    root = tmp_path / "store"
    if case == "symlink":
        root.symlink_to(elsewhere)
    elif case == "symlinked store folder":
        root.mkdir(mode=0o700)
        (root / reference_store.STORE_DIR).symlink_to(elsewhere)
    elif case == "another user's":
        if os.geteuid() != 0:
            pytest.skip("needs root to give a directory to another user")
        root.mkdir(mode=0o700)
        os.chown(root, 12345, 12345)
    else:
        root.mkdir()
        root.chmod(0o777)
    assert reference_store.refusal(root)
    _fill(root, tmp_path)
    assert victim.read_bytes() == b"v" * 10 and sorted(p.name for p in elsewhere.iterdir()) == ["victim.bin"]
    assert not [p for p in tmp_path.rglob("*.npz")]


def test_a_refused_store_is_one_line_and_the_run_goes_on(tmp_path, model):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "store").symlink_to(elsewhere)
    doc = _convert(model, "onnx", tmp_path / "out", tmp_path / "store")
    assert doc["verify"]["passed"] and "reference" not in doc["verify"]
    lines = [w for w in doc["warnings"] if "reference store not used" in w]
    assert len(lines) == 1 and "symbolic link" in lines[0] and "\n" not in lines[0]
    assert not list(elsewhere.iterdir())


def test_an_entry_copied_from_another_source_is_a_miss(tmp_path, model):
    """Same inputs, same names: only the checksum of what the entry was computed from tells them apart."""
    root, other = tmp_path / "store", tmp_path / "other.h5"
    other.write_bytes(b"another model")
    _stored(root, other, {}).put(_key(other, 0), [np.full(3, 7, np.float32)])
    (copied,) = list(root.rglob("*.npz"))
    mine = StoredReferences(root, source_stamp(model), lambda: "mine", environ={})
    mine.put(_key(model, 0), [np.ones(3, np.float32)])
    (entry,) = [p for p in root.rglob("*.npz") if p != copied]
    entry.write_bytes(copied.read_bytes())
    assert StoredReferences(root, source_stamp(model), lambda: "mine", environ={}).get(_key(model, 0)) is None


def _poison(store: Path, forge: bool) -> int:
    """Every entry's outputs scaled (the stored verdict then fails a right conversion); `forge`: its outputs'
    checksum recomputed too, as someone who knows the format would."""
    count = 0
    for entry in store.rglob("*.npz"):
        with np.load(entry) as saved:
            arrays = {k: saved[k] for k in saved.files}
        outputs = sorted(k for k in arrays if k.startswith("y"))
        for k in outputs:
            arrays[k] = arrays[k] * 1.5 + 0.25
        if forge and "check" in arrays:
            check = json.loads(str(arrays["check"]))
            check["outputs"] = reference_store._digest([arrays[k] for k in sorted(outputs, key=lambda n: int(n[1:]))])
            arrays["check"] = np.asarray(json.dumps(check))
        np.savez(entry, **arrays)
        count += 1
    return count


@pytest.mark.parametrize("forge", [False, True], ids=["edited", "edited-checksums-forged"])
def test_poisoned_entries_never_fail_a_right_conversion(tmp_path, model, forge):
    """Edited entries: a miss where the checksum catches it; where it does not (forged), the failure against
    the store is checked against TF before any exit 4, and the record says the verdict is TF's, now."""
    store = tmp_path / "store"
    _convert(model, "onnx", tmp_path / "a", store)
    assert _poison(store, forge)
    doc = _convert(model, "onnx", tmp_path / "b", store)
    assert doc["verify"]["passed"]
    assert doc["verify"]["reference"]["verdict_from"] == "tensorflow"
    assert doc["verify"]["reference"]["rechecked"] is forge
    third = _convert(model, "onnx", tmp_path / "c", store)  # TF's outputs replaced the poisoned entries
    assert third["verify"]["passed"] and third["verify"]["reference"]["verdict_from"] == "store"
