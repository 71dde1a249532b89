"""No file around a model, nor in the directory `convert` runs in, runs as code: the processes the tool starts
(TF's reference child, the MXNet runner, Dask workers) import nothing from the working directory or from
beside the model. A `numpy.py` and a `tensorflow.py` planted in both places write a canary if imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import tf_models

CONVERT = str(Path(sys.executable).with_name("convert"))
PLANTED = ("numpy.py", "tensorflow.py", "mxnet.py", "distributed.py")


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> dict:
    return tf_models.build_resnet_v1_tiny(tmp_path_factory.mktemp("isolation") / "resnet", input_hw=(16, 16))


def _plant(directory: Path, canary: Path) -> None:
    for name in PLANTED:
        (directory / name).write_text(f"import pathlib\npathlib.Path({str(canary)!r}).write_text({name!r})\n")


@pytest.fixture
def workdir(tmp_path, model) -> tuple[Path, Path]:
    """A working directory and the model's own directories, all planted; the canary's path."""
    canary = tmp_path / "canary.txt"
    work = tmp_path / "work"
    work.mkdir()
    for where in (work, Path(model["saved_model"]).parent, Path(model["saved_model"])):
        _plant(where, canary)
    yield work, canary
    for where in (Path(model["saved_model"]).parent, Path(model["saved_model"])):
        for name in PLANTED:
            (where / name).unlink(missing_ok=True)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


@pytest.mark.parametrize("target", ["torch", "mxnet"])
def test_planted_modules_never_run_during_verify(model, workdir, target):
    work, canary = workdir
    run = subprocess.run([CONVERT, f"tf2{target}", model["saved_model"], "--verify", "-o", str(work / "out")],
                         cwd=work, env=_env(), capture_output=True, text=True, timeout=300)
    assert not canary.exists(), f"{canary.read_text()} ran"
    assert run.returncode == 0, run.stderr
    assert json.loads((work / "out" / "conversion.json").read_text())["verify"]["passed"]


@pytest.mark.slow  # a Dask cluster's start: ~70 s on 2 cores
def test_planted_modules_never_run_in_batch_workers(model, workdir):
    pytest.importorskip("distributed")
    work, canary = workdir
    (work / "batch.toml").write_text(
        f'[[model]]\nname = "resnet"\nsource = "{model["saved_model"]}"\ntargets = ["onnx"]\n')
    run = subprocess.run([CONVERT, "batch", "batch.toml", "--jobs", "1"],
                         cwd=work, env=_env(), capture_output=True, text=True, timeout=300)
    assert not canary.exists(), f"{canary.read_text()} ran"
    assert run.returncode == 0, run.stdout + run.stderr
