"""conversion.json's source hash is of the bytes the conversion read: files lying beside the model (an older
checkpoint in the same directory, a README, a script) do not change it; a byte of what is read does."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.support import tf_models
from tests.support.verify_faults import run_cli


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> dict:
    return tf_models.build_resnet_v1_tiny(tmp_path_factory.mktemp("source_hash") / "resnet", input_hw=(8, 8))


def _hash(source: Path, out: Path) -> str:
    code, _, err = run_cli("tf2ir", source, "-o", out, "--force")
    assert code == 0, err
    return json.loads((out / "conversion.json").read_text())["source"]["sha256"]


@pytest.mark.parametrize("kind", ["ckpt_dir", "saved_model"])
def test_the_source_hash_is_of_the_bytes_read(model, tmp_path, kind):
    source = tmp_path / kind
    shutil.copytree(model[kind], source)
    if kind == "ckpt_dir":  # the copied state file names the original's absolute path
        (source / "checkpoint").write_text('model_checkpoint_path: "model.ckpt"\n')
    first = _hash(source, tmp_path / "a")
    (source / "README.md").write_text("notes")
    (source / "numpy.py").write_text("print('not read')")
    if kind == "ckpt_dir":  # an older checkpoint beside the one the state file names
        for f in list(source.glob("model.ckpt.*")):
            shutil.copy(f, source / f.name.replace("model.ckpt", "model.ckpt-1"))
    assert _hash(source, tmp_path / "b") == first
    read = sorted(p for p in source.rglob("*")
                  if p.is_file() and ("variables" in p.parts or p.name.startswith("model.ckpt.data-")))
    data = bytearray(read[0].read_bytes())
    data[-1] ^= 1  # one bit of a weight: the reader's checksum may refuse it, the hash must differ first
    read[0].write_bytes(bytes(data))
    code, _, _ = run_cli("tf2ir", source, "-o", tmp_path / "c", "--force")
    if code == 0:
        assert json.loads((tmp_path / "c" / "conversion.json").read_text())["source"]["sha256"] != first


def test_the_hash_covers_exactly_the_files_read(model, tmp_path):
    from tf_convert.parsers.source import open_source

    source = open_source(model["ckpt_dir"])
    names = sorted(p.name for p in source.files)
    assert names == sorted(["checkpoint", "model.ckpt.index", "model.ckpt.meta",
                            *(p.name for p in Path(model["ckpt_dir"]).glob("model.ckpt.data-*"))])
    digest = hashlib.sha256()
    for f in source.files:
        digest.update(str(f.relative_to(Path(model["ckpt_dir"]).parent)).encode())
        digest.update(f.read_bytes())
    assert source.sha256 == digest.hexdigest()
