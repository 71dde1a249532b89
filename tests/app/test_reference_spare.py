"""Issue 25: a warm spare for TensorFlow's reference run (app/reference_spare.py). A `--verify` run leaves a
process that has imported TF and Keras; the next run, of another source, has it run its reference instead of
starting a child, with the same verdict; the CLI returns while the spare lives; an unclaimed spare ends after
its idle time; a stale socket is no spare; another environment is another spare; a cancelled run ends the
spare it claimed."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from tests.support.size_following import run_cli
from tf_convert.app import reference_process, reference_spare, reference_store

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX") or not Path("/proc/self").exists(),
                                reason="Unix sockets and /proc")


def _save_model(path: Path, seed: int) -> Path:
    import keras

    keras.utils.set_random_seed(seed)
    x = keras.Input((None, None, 3))
    y = keras.layers.Conv2D(4, 3, strides=2, padding="same")(x)
    model = keras.Model(x, keras.layers.DepthwiseConv2D(3, padding="same")(y))
    model.save(path)
    return path


@pytest.fixture
def store(tmp_path, monkeypatch) -> Path:
    """A store directory for the CLI processes, spares on (tests/conftest.py turns both off), and every spare
    left there ended afterwards."""
    root = tmp_path / "store"
    monkeypatch.setenv(reference_store.ENV, str(root))
    monkeypatch.setenv(reference_spare.ENV, "on")
    monkeypatch.setenv(reference_spare.IDLE_ENV, "60")
    yield root
    for pid in reference_spare.pids(root):
        os.kill(pid, signal.SIGKILL)


def _wait(condition, seconds: float = 30.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return False


ARGS = ["--input-shape", "1,17,18,3", "--verify", "-q"]


def test_the_next_run_has_the_spare_the_last_one_left_run_its_reference(tmp_path, store, monkeypatch):
    first, second = _save_model(tmp_path / "a.keras", 1), _save_model(tmp_path / "b.keras", 2)
    started = time.monotonic()
    ran = run_cli("tf2onnx", str(first), "-o", str(tmp_path / "a"), *ARGS)
    assert ran.returncode == 0, ran.stderr
    assert time.monotonic() - started < 45, "the CLI waited for the spare it left (it must not hold its pipes)"
    path = reference_spare.socket_path(store)
    assert _wait(lambda: reference_spare._alive(path)), "no spare was left"
    ran = run_cli("tf2onnx", str(second), "-o", str(tmp_path / "b"), *ARGS)
    assert ran.returncode == 0, ran.stderr
    record = json.loads((tmp_path / "b" / "conversion.json").read_text())["verify"]
    assert record["passed"] and record["reference"]["spare"] and record["reference"]["sets_run"] > 0
    assert _wait(lambda: reference_spare._alive(path)), "the run that claimed a spare left no next one"

    monkeypatch.setenv(reference_spare.ENV, "off")  # the same check with a child of its own
    monkeypatch.setenv(reference_store.ENV, "off")
    ran = run_cli("tf2onnx", str(second), "-o", str(tmp_path / "b-child"), *ARGS)
    assert ran.returncode == 0, ran.stderr
    child = json.loads((tmp_path / "b-child" / "conversion.json").read_text())["verify"]
    assert "reference" not in child
    for key in ("max_rel", "verdict", "sensitivity"):
        assert record[key] == child[key], key


def test_an_unclaimed_spare_ends_after_its_idle_time(store, monkeypatch):
    monkeypatch.setenv(reference_spare.IDLE_ENV, "1")
    path = reference_spare.socket_path(store)
    reference_spare.leave(path)
    assert _wait(lambda: reference_spare.pids(store))
    assert _wait(lambda: not reference_spare.pids(store) and not path.exists(), 60)


def test_a_stale_or_foreign_socket_is_no_spare(store):
    path = reference_spare.socket_path(store)
    path.write_text("not a socket")
    assert reference_spare.claim(path, wait_s=1) is None
    path.unlink()
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # bound and listening, but no spare
    silent.bind(str(path))
    silent.listen(1)
    try:
        assert reference_spare.claim(path, wait_s=1) is None
    finally:
        silent.close()
        path.unlink()
    server = reference_spare._listen(path)  # a socket file nobody listens on is replaced
    assert server is not None
    server.close()


def test_no_spare_where_the_store_or_the_spare_is_off_and_another_per_environment(tmp_path):
    root = tmp_path / "store"
    assert reference_spare.socket_path(None) is None
    assert reference_spare.socket_path(root, {reference_spare.ENV: "off"}) is None
    one = reference_spare.socket_path(root, {"TF_ENABLE_ONEDNN_OPTS": "0"})
    other = reference_spare.socket_path(root, {"TF_ENABLE_ONEDNN_OPTS": "1"})
    assert one is not None and other is not None and one != other
    assert reference_spare.socket_path(tmp_path / ("x" * 120)) is None  # past a socket path's length


def test_a_cancelled_run_ends_the_spare_it_claimed(tmp_path, store):
    source = _save_model(tmp_path / "c.keras", 3)
    path = reference_spare.socket_path(store)
    reference_spare.leave(path)
    assert _wait(lambda: reference_spare._alive(path))
    child = reference_process.spawn(source, path)  # claims it meanwhile
    child.cancel()
    assert child.spare is not None and child.proc is None
    assert _wait(lambda: not reference_spare.pids(store), 10)
    assert not child.work.exists()
