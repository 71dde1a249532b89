"""The CLI's --verify of a small source runs the target while TensorFlow's reference child runs
(verify's `target_first`): the target's run starts before the child's outcomes are read, the record is the one
of the old order, a large source's target still loads only after the child has ended, and TF's own failure
on the main set is still the error the user sees. The CLI runs in a subprocess (tests.support.verify_order
logs the order): a process that has imported TensorFlow would not start a child for a small source.
A runtime in its own process (MXNet's runner) starts before TF's answer is waited for, and ends with verify."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tf_convert.app.verify import reference_process
from tf_convert.convert.errors import InputError

REPO = Path(__file__).resolve().parents[2]


def _save_small_keras(path: Path) -> Path:
    """A fixed-input Keras model that converts for any H/W: verified at three sizes (two in one child)."""
    import keras

    keras.utils.set_random_seed(3)
    image = keras.Input((16, 16, 3), name="image")
    y = keras.layers.Conv2D(4, 3, strides=2, padding="same", name="c1")(image)
    y = keras.layers.DepthwiseConv2D(3, padding="same", name="dw")(y)
    keras.Model(image, y).save(path)
    return path


def _unloadable_copy(good: Path, path: Path) -> Path:
    """`good` with an argument Conv2D does not take in its config: the converter reads it, Keras refuses it."""
    with zipfile.ZipFile(good) as z:
        members = {name: z.read(name) for name in z.namelist()}
    config = json.loads(members["config.json"])
    for layer in config["config"]["layers"]:
        if layer["class_name"] == "Conv2D":
            layer["config"]["not_a_keras_argument"] = 1
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("verify_order")
    good = _save_small_keras(directory / "small.keras")
    return {"good": good, "unloadable": _unloadable_copy(good, directory / "unloadable.keras")}


def _recorded_cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None
                  ) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """`convert ARGS` in a fresh process (this checkout first), and its verify order log."""
    log = tmp_path / f"order-{len(list(tmp_path.glob('order-*')))}.json"
    path = [os.environ.get("PYTHONPATH"), str(REPO)]
    environ = {k: v for k, v in os.environ.items() if k != reference_process.THRESHOLD_ENV}
    environ.update(env or {}, PYTHONPATH=os.pathsep.join(filter(None, path)))
    done = subprocess.run([sys.executable, "-m", "tests.support.verify_order", str(log), *args],
                          capture_output=True, text=True, env=environ, timeout=600)
    return done, json.loads(log.read_text())


def _first(events: list[dict], kind: str) -> int:
    return next(k for k, event in enumerate(events) if event["event"] == kind)


def _verify_record(out: Path) -> dict:
    return json.loads((out / "conversion.json").read_text())["verify"]


@pytest.mark.parametrize("target", ["onnx", "caffe"])  # run_sets (all sets in one call), and run per set
def test_a_small_sources_target_runs_before_the_outcomes_are_read(tmp_path, models, target):
    new, events = _recorded_cli(tmp_path, f"tf2{target}", str(models["good"]), "-o", str(tmp_path / "new"),
                                "--verify")
    assert new.returncode == 0, new.stderr
    assert events[0] == {"event": "verify", "target_first": True}
    assert _first(events, "target") < _first(events, "references")
    record = _verify_record(tmp_path / "new")
    compared = 1 + len(record.get("sizes", []))
    # every compared set ran in the early run, none again after the outcomes (equal inputs are found)
    assert sum(e["sets"] for e in events if e["event"] == "target") == compared

    old, old_events = _recorded_cli(tmp_path, "--old-order", f"tf2{target}", str(models["good"]),
                                    "-o", str(tmp_path / "old"), "--verify")
    assert old.returncode == 0, old.stderr
    assert _first(old_events, "references") < _first(old_events, "target")
    assert record == _verify_record(tmp_path / "old")


def _batch_baked(x):
    """Squeeze-and-excite as Keras traces it at batch 1: TF refuses batch 2 (its Reshape's shape is [1, 1, 1, C])."""
    import tensorflow as tf

    y = tf.nn.conv2d(x, tf.ones((3, 3, 3, 4)) * 0.1, 2, "SAME")
    return tf.identity(y * tf.sigmoid(tf.reshape(tf.reduce_mean(y, axis=[1, 2]), [1, 1, 1, 4])), name="out")


def test_a_size_tf_refuses_at_batch_2_is_run_again_at_batch_1_with_the_old_record(tmp_path):
    """The early run's batch-2 sets go unused; the fallback sets (batch 1) run through emitter.run after."""
    from tests.support.tf_models import save_frozen

    pb = save_frozen(tmp_path / "se.pb", _batch_baked, [None, None, None, 3])
    args = ("tf2torch", pb, "--input-shape", "1,32,32,3", "--verify")
    new, events = _recorded_cli(tmp_path, *args, "-o", str(tmp_path / "new"))
    assert new.returncode == 0, new.stderr
    assert [e["sets"] for e in events if e["event"] == "target"] == [3, 1, 1]
    assert _first(events, "target") < _first(events, "references")
    old, _ = _recorded_cli(tmp_path, "--old-order", *args, "-o", str(tmp_path / "old"))
    assert old.returncode == 0, old.stderr
    record = _verify_record(tmp_path / "new")
    assert [s["input_shapes"][0][0] for s in record["sizes"]] == [1, 1]
    assert record == _verify_record(tmp_path / "old")


def test_a_large_sources_target_runs_after_the_child(tmp_path, models):
    done, events = _recorded_cli(tmp_path, "tf2onnx", str(models["good"]), "-o", str(tmp_path / "out"),
                                 "--verify", env={reference_process.THRESHOLD_ENV: "0"})
    assert done.returncode == 0, done.stderr
    assert events[0] == {"event": "verify", "target_first": False}
    assert _first(events, "references") < _first(events, "target")


def test_a_source_keras_cannot_load_is_still_exit_2_when_the_target_ran_first(tmp_path, models):
    out = tmp_path / "out"
    done, events = _recorded_cli(tmp_path, "tf2torch", str(models["unloadable"]), "-o", str(out), "--verify")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Keras itself cannot load this model" in lines[0], done.stderr
    assert _first(events, "target") < _first(events, "references") and not out.exists()


def test_tf_failing_on_the_main_set_wins_over_a_target_that_failed_first(tmp_path, models):
    """The target's failure in the early run is held: TF's (Keras cannot load the file: exit 2) is raised;
    with TF fine, the target's own failure comes out (here: no model files for the runtime to load)."""
    from tf_convert import emitters, parsers
    from tf_convert.app import verify

    empty = tmp_path / "empty"
    empty.mkdir()
    onnx = emitters.get("onnx")
    graph = parsers.parse(models["unloadable"])
    with pytest.raises(InputError, match="Keras itself cannot load"):
        verify.verify(models["unloadable"], graph, onnx, empty, size_free=True, target_first=True)
    with pytest.raises(Exception) as caught:
        verify.verify(models["good"], parsers.parse(models["good"]), onnx, empty, size_free=True, target_first=True)
    assert not isinstance(caught.value, InputError) and "model.onnx" in str(caught.value)


# ---- a runtime in its own process (MXNet's runner) starts before TF's answer is waited for ------------


def _runner_children() -> list[int]:
    """This process's children that run MXNet's runner.py."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            command = Path(f"/proc/{entry}/cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and b"mxnet/runner.py" in command:
            found.append(int(entry))
    return found


@pytest.fixture(scope="module")
def mxnet_model(models, tmp_path_factory) -> Path:
    from tf_convert.convert.errors import UsageError
    from tf_convert.emitters import mxnet

    try:
        mxnet.mxnet_python()
    except UsageError:
        pytest.skip("no .venv-mxnet (run `make mxnet-env`)")
    from tf_convert.app import api

    out = tmp_path_factory.mktemp("mxnet") / "small-mxnet"
    api.tf2mxnet(models["good"], out)
    return out


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads children from /proc")
def test_mxnets_runner_is_started_before_tf_answers_and_used(models, mxnet_model):
    """verify() starts the runner (mxnet imported meanwhile) before it waits for the references; the run
    uses that process, and none is left once verify returns."""
    from tf_convert import emitters, parsers
    from tf_convert.app import verify

    seen: list[list[int]] = []

    def references(source, graph, input_sets):
        seen.append(_runner_children())
        return reference_process.run_references(source, graph, input_sets)

    graph = parsers.parse(models["good"])
    result = verify.verify(models["good"], graph, emitters.get("mxnet"), mxnet_model, run_references=references)
    assert result["passed"] and result["max_rel"] <= 1e-5
    assert len(seen[0]) == 1, "the runner was not running while TF was asked"
    assert _runner_children() == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads children from /proc")
def test_a_started_runner_is_ended_when_tf_fails(models, mxnet_model):
    from tf_convert import emitters, parsers
    from tf_convert.app import verify

    def references(source, graph, input_sets):
        assert len(_runner_children()) == 1
        raise InputError("TensorFlow refused it")

    graph = parsers.parse(models["good"])
    with pytest.raises(InputError, match="TensorFlow refused it"):
        verify.verify(models["good"], graph, emitters.get("mxnet"), mxnet_model, run_references=references)
    assert _runner_children() == []
