"""A Keras file never makes the tool import or run what it names: a class's package is looked up in the
installed distributions' metadata only (never through the import system, never in the working directory or
the model's folder), through the CLI and the Python API alike."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import h5py
import pytest

from tests.support.verify_faults import run_cli
from tf_convert.parsers.keras.installed import installed

MARKER_CODE = "from pathlib import Path\nPath(__file__).with_name('MARKER').write_text('ran')\n"


def _keras_file(path: Path, registered: str, module: str) -> Path:
    """A minimal .keras whose Dense layer is claimed by `registered` (a class of package `module`)."""
    layer = {"class_name": registered.partition(">")[2], "module": module, "registered_name": registered,
             "config": {"name": "dense", "units": 3}, "build_config": {"input_shape": [None, 4]}}
    config = {"class_name": "Sequential", "module": "keras", "registered_name": None,
              "config": {"name": "seq", "layers": [
                  {"class_name": "InputLayer", "module": "keras.layers", "registered_name": None,
                   "config": {"name": "x", "batch_shape": [None, 4], "dtype": "float32"}}, layer]}}
    blob = io.BytesIO()
    with h5py.File(blob, "w"):
        pass
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("config.json", json.dumps(config))
        z.writestr("metadata.json", json.dumps({"keras_version": "3.15.1"}))
        z.writestr("model.weights.h5", blob.getvalue())
    return path


def _planted(folder: Path) -> Path:
    """`folder` with a helpers.py that leaves a MARKER when it runs, and metadata claiming it installed."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "helpers.py").write_text(MARKER_CODE)
    info = folder / "helpers-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: helpers\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("helpers\n")
    return folder


@pytest.mark.parametrize("package, expected", [("keras_hub", True), ("numpy", True), ("this", False),
                                               ("helpers", False), ("helpers.layers", False), ("", False)])
def test_installed_reads_distributions_only(package, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(_planted(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))  # as `python -c` run here puts it first
    assert installed(package, beside=tmp_path) is expected
    assert "helpers" not in sys.modules and not (tmp_path / "MARKER").exists()


def test_api_run_in_the_models_folder_runs_nothing_beside_it(tmp_path):
    """A notebook or `python -c` in the model's folder: sys.path[0] is that folder."""
    folder = _planted(tmp_path / "model")
    _keras_file(folder / "m.keras", "helpers.layers>Foo", "helpers.layers")
    code = ("from tf_convert import app\n"
            "try:\n    app.tf2onnx('m.keras', 'out')\nexcept Exception as err:\n"
            "    print('EXIT', err.exit_code, err)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=300)
    assert "EXIT 3" in done.stdout, done.stdout + done.stderr
    assert "helpers.layers>Foo" in done.stdout and "package 'helpers' is not installed" in done.stdout
    assert not (folder / "MARKER").exists() and not (folder / "out").exists()


def test_cli_runs_nothing_in_the_working_directory_or_beside_the_model(tmp_path, monkeypatch):
    folder, cwd = _planted(tmp_path / "model"), _planted(tmp_path / "cwd")
    _keras_file(folder / "m.keras", "helpers.layers>Foo", "helpers.layers")
    monkeypatch.chdir(cwd)
    monkeypatch.syspath_prepend(str(cwd))
    code, _, err = run_cli("tf2torch", folder / "m.keras", "-o", cwd / "out")
    assert code == 3, err
    assert "package 'helpers' is not installed" in err
    assert not (folder / "MARKER").exists() and not (cwd / "MARKER").exists() and not (cwd / "out").exists()


def test_a_standard_library_module_is_not_imported(tmp_path):
    """`this` prints the Zen of Python when imported: it is no installed distribution, so it is refused."""
    path = _keras_file(tmp_path / "this.keras", "this.x>Y", "this.x")
    done = subprocess.run([sys.executable, "-m", "tf_convert.cli", "tf2onnx", str(path), "-o", str(tmp_path / "o")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr
    assert "package 'this' is not installed" in done.stderr
    assert "Beautiful is better" not in done.stdout + done.stderr


def test_h5_naming_a_module_inside_a_layer_is_refused_and_nothing_runs(tmp_path):
    """An initializer of another module (even a registered 'package>name'), which tf_keras cannot load without
    its code: exit 2 naming the layer, and --verify never hands the file to Keras."""
    import tf_keras

    folder = _planted(tmp_path / "model")
    model = tf_keras.Sequential([tf_keras.Input((4,)), tf_keras.layers.Dense(3, name="dense")])
    model.save(folder / "m.h5")
    with h5py.File(folder / "m.h5", "r+") as f:
        config = json.loads(f.attrs["model_config"])
        config["config"]["layers"][-1]["config"]["kernel_initializer"] = {
            "module": "helpers", "class_name": "Init", "config": {}, "registered_name": "helpers>Init"}
        f.attrs["model_config"] = json.dumps(config)
    code = ("from tf_convert import app\n"
            "try:\n    app.tf2onnx('m.h5', 'out', verify=True)\nexcept Exception as err:\n"
            "    print('EXIT', err.exit_code, err)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=300)
    assert "EXIT 2" in done.stdout, done.stdout + done.stderr
    assert "layer 'dense': helpers.Init is not a Keras object" in done.stdout
    assert not (folder / "MARKER").exists() and not (folder / "out").exists()
