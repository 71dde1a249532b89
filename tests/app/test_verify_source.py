"""`convert verify OUT` treats OUT as data (app/recorded.py): it reads only the source recorded relative to
OUT (or one passed with --source), refuses one whose bytes are not those converted (exit 2, both hashes), and
Keras loads it in safe mode unless --no-safe-mode is given on that very command. A Lambda whose code writes a
marker file stands for any code a model file may carry: the marker must never appear unless asked for."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.verify_faults import run_cli
from tf_convert.app import api
from tf_convert.convert.errors import UsageError
from tf_convert.parsers.source import open_source

# Keras writes the files in a child: its import stays out of the test process
_BUILD = """
import sys
import keras
lambda_path, clean_path, marker = sys.argv[1:4]
x = keras.Input((6,))
touch = eval(f"lambda t: (open({marker!r}, 'w').close(), t * 3.0)[1]")  # bytecode the file carries
keras.Model(x, keras.layers.Lambda(touch, name="writes_marker")(keras.layers.Dense(4)(x))).save(lambda_path)
x = keras.Input((6,))
keras.Model(x, keras.layers.Dense(4, name="dense")(x)).save(clean_path)
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """A clean `.keras`, its ONNX conversion, and a `.keras` whose Lambda writes `marker` when it runs."""
    root = tmp_path_factory.mktemp("verify_source")
    paths = {"lambda": root / "evil.keras", "clean": root / "model.keras", "marker": root / "marker"}
    subprocess.run([sys.executable, "-c", _BUILD, str(paths["lambda"]), str(paths["clean"]), str(paths["marker"])],
                   check=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, capture_output=True)
    paths["marker"].unlink()  # the build called the Lambda once
    paths["out"] = root / "out"
    code, _, err = run_cli("tf2onnx", paths["clean"], "-o", paths["out"])
    assert code == 0, err
    return paths


@pytest.fixture
def out(files, tmp_path) -> Path:
    """A copy of the conversion beside its source (so its recorded relative path still names it)."""
    copy = files["out"].parent / f"out-{tmp_path.name}"
    shutil.copytree(files["out"], copy)
    yield copy
    shutil.rmtree(copy, ignore_errors=True)
    assert not files["marker"].exists(), "a model file's code ran"


def _edit_record(out: Path, **source: object) -> None:
    doc = json.loads((out / "conversion.json").read_text())
    doc["source"].update(source)
    for key in [k for k, v in source.items() if v is None]:
        del doc["source"][key]
    (out / "conversion.json").write_text(json.dumps(doc))


def test_verify_reads_the_source_recorded_relative_to_out(files, out):
    doc = json.loads((out / "conversion.json").read_text())
    assert doc["source"]["relative_path"] == "../model.keras"
    code, stdout, err = run_cli("verify", out)
    assert code == 0 and stdout.startswith("OK"), err


def test_a_source_replaced_since_is_refused_naming_both_hashes(files, tmp_path):
    source = tmp_path / "model.keras"
    shutil.copy(files["clean"], source)
    out = tmp_path / "out"
    assert run_cli("tf2onnx", source, "-o", out)[0] == 0
    recorded = open_source(source).sha256
    shutil.copy(files["lambda"], source)  # same name, a Lambda's bytecode inside
    replaced = open_source(source).sha256
    code, _, err = run_cli("verify", out)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert str(source) in err and recorded[:16] in err and replaced[:16] in err
    for layers in (("--layers",), ("--no-safe-mode",)):  # the hash is checked before anything loads it
        assert run_cli("verify", out, *layers)[0] == 2
    with pytest.raises(UsageError, match=replaced[:16]):
        api.verify(out)
    assert not files["marker"].exists()


@pytest.mark.parametrize("store", ["off", "on"])
def test_a_received_out_naming_a_lambda_file_runs_no_code(files, out, store, tmp_path, monkeypatch):
    """conversion.json rewritten to name the Lambda file, hash and all: safe mode keeps its code from loading."""
    monkeypatch.setenv("TF_CONVERT_CACHE_DIR", "off" if store == "off" else str(tmp_path / "store"))
    _edit_record(out, relative_path="../evil.keras", sha256=open_source(files["lambda"]).sha256)
    for layers in ((), ("--layers",)):
        code, _, err = run_cli("verify", out, *layers)
        assert code == 3 and "writes_marker" in err and "--no-safe-mode" in err, err
        assert not files["marker"].exists()
    with pytest.raises(Exception) as refused:
        api.verify(out)
    assert getattr(refused.value, "exit_code", None) == 3


def test_an_absolute_path_in_conversion_json_is_never_read(files, out):
    _edit_record(out, path=str(files["lambda"]), relative_path=None, sha256=open_source(files["lambda"]).sha256)
    code, _, err = run_cli("verify", out)
    assert code == 2 and "--source" in err, err
    _edit_record(out, relative_path=str(files["lambda"]))  # absolute where a relative path belongs
    assert run_cli("verify", out)[0] == 2
    # the user names the file: it is read, still in safe mode
    code, _, err = run_cli("verify", out, "--source", files["lambda"])
    assert code == 3 and "--no-safe-mode" in err, err


def test_no_safe_mode_on_the_verify_command_is_what_lets_the_code_run(files, out):
    _edit_record(out, relative_path="../evil.keras", sha256=open_source(files["lambda"]).sha256)
    code, _, err = run_cli("verify", out, "--no-safe-mode")
    assert code == 4, err  # another model than the one converted: compared, and it differs
    assert files["marker"].exists()
    files["marker"].unlink()


def test_a_moved_out_takes_its_source_with_source(files, tmp_path):
    moved = tmp_path / "elsewhere" / "out"
    shutil.copytree(files["out"], moved)
    code, _, err = run_cli("verify", moved)
    assert code == 2 and "--source" in err, err
    code, stdout, err = run_cli("verify", moved, "--source", files["clean"])
    assert code == 0 and stdout.startswith("OK"), err
    assert api.verify(moved, source=files["clean"])["passed"]
