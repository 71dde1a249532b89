"""A checkpoint directory's `checkpoint` state file: convert reads the prefix TF would load,
and refuses (exit 2, naming both) when the file names one checkpoint and another lies beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tf_convert.convert.errors import InputError
from tf_convert.parsers.tensorflow.source import checkpoint_prefix


def _ckpt(prefix: Path) -> Path:
    prefix.parent.mkdir(parents=True, exist_ok=True)
    for suffix in (".index", ".meta", ".data-00000-of-00001"):
        Path(str(prefix) + suffix).write_bytes(b"")
    return prefix


def _state(directory: Path, named: str) -> Path:
    (directory / "checkpoint").write_text(f'model_checkpoint_path: "{named}"\nall_model_checkpoint_paths: "{named}"\n')
    return directory


@pytest.mark.parametrize("layout,named,expect", [
    # (checkpoints to create, relative to the dir; what the state file names; the prefix taken)
    (["model.ckpt-200"], "model.ckpt-200", "model.ckpt-200"),                 # the usual relative name
    (["model.ckpt-200"], "/gone/train/model.ckpt-200", "model.ckpt-200"),     # copied from another machine
    (["model.ckpt-100", "model.ckpt-200"], "model.ckpt-200", "model.ckpt-200"),  # the latest of several
    (["run2/model.ckpt"], "run2/model.ckpt", "run2/model.ckpt"),              # in a sub-folder, nothing beside
], ids=["relative", "relocated", "latest", "subfolder"])
def test_the_prefix_tf_would_load(tmp_path, layout, named, expect):
    for rel in layout:
        _ckpt(tmp_path / rel)
    assert Path(checkpoint_prefix(_state(tmp_path, named))) == tmp_path / expect


@pytest.mark.parametrize("named_in", ["sub", "abs"])
def test_a_state_file_naming_another_checkpoint_than_the_one_beside_it_is_refused(tmp_path, named_in):
    """The issue's case: convert took the prefix beside the file while TF loaded the named one (1.40 apart)."""
    beside = _ckpt(tmp_path / "model.ckpt")
    elsewhere = tmp_path / "run2" if named_in == "sub" else tmp_path.parent / "elsewhere" / tmp_path.name
    other = _ckpt(elsewhere / "model.ckpt")
    named = "run2/model.ckpt" if named_in == "sub" else str(other)
    with pytest.raises(InputError) as info:
        checkpoint_prefix(_state(tmp_path, named))
    message = str(info.value)
    assert info.value.exit_code == 2 and "\n" not in message
    assert str(beside) in message and str(other) in message and "pass the prefix" in message
    assert Path(checkpoint_prefix(beside)) == beside  # the explicit prefix settles it
