"""Hostile models: each is refused (exit 2, one line) and has no side effect (canary files).

A model file may ask to read or write files, run Python, loop forever or inflate to gigabytes; convert
reads only what the user gave and runs nothing of the graph before checking it.
"""

from __future__ import annotations

import json
import os
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tf_convert import cli

SECRET = "canary-secret-4711"


def run_cli(*args) -> tuple[int, str]:
    result = CliRunner().invoke(cli.main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stderr


def assert_refused(src: Path, tmp_path: Path, words: list[str], *extra: str) -> str:
    out = tmp_path / "out"
    code, stderr = run_cli("tf2torch", src, "-o", out, "--verify", *extra)
    lines = stderr.strip().splitlines()
    assert code == 2, stderr
    assert len(lines) == 1 and lines[0].startswith("convert: error:") and len(lines[0]) <= 300, stderr
    for word in words:
        assert word.lower() in lines[0].lower(), lines[0]
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]
    return lines[0]


@pytest.fixture
def canary(tmp_path) -> Path:
    path = tmp_path / "canary.txt"
    path.write_text(SECRET * 4)
    return path


# ---- TensorFlow graphs ----------------------------------------------------------------------------

def _frozen_pb(path: Path, build) -> Path:
    """A frozen GraphDef of `build(x)` with input 'input' (1, 4) and output 'output'."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, (1, 4), name="input")
        tf.identity(build(tf, x), name="output")
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return path


def test_read_file_on_the_constant_path(tmp_path, canary):
    def build(tf, x):
        data = tf.io.decode_raw(tf.io.read_file(str(canary)), tf.uint8)[:4]
        return x + tf.cast(data, tf.float32)

    line = assert_refused(_frozen_pb(tmp_path / "read.pb", build), tmp_path, ["ReadFile"])
    assert SECRET not in line


def test_write_file_on_the_inference_path(tmp_path):
    target = tmp_path / "pwned.txt"

    def build(tf, x):
        with tf.control_dependencies([tf.io.write_file(str(target), "pwned")]):
            return tf.identity(x)

    assert_refused(_frozen_pb(tmp_path / "write.pb", build), tmp_path, ["WriteFile"])
    assert not target.exists()


def test_py_func(tmp_path):
    def build(tf, x):
        y = tf.compat.v1.py_func(lambda a: a * 2, [x], tf.float32)
        return tf.reshape(y, (1, 4))

    assert_refused(_frozen_pb(tmp_path / "pyfunc.pb", build), tmp_path, ["PyFunc"])


def test_print_v2_to_a_file(tmp_path):
    target = tmp_path / "printed.txt"

    def build(tf, x):
        with tf.control_dependencies([tf.print(x, output_stream=f"file://{target}")]):
            return tf.identity(x)

    assert_refused(_frozen_pb(tmp_path / "printfile.pb", build), tmp_path, ["PrintV2"])
    assert not target.exists()


def test_endless_loop_on_the_constant_path(tmp_path):
    def build(tf, x):
        n = tf.while_loop(lambda i: i >= 0, lambda i: i + 1, [tf.constant(0)])
        return x + tf.cast(n, tf.float32)

    started = time.monotonic()
    assert_refused(_frozen_pb(tmp_path / "loop.pb", build), tmp_path, ["loop"])
    assert time.monotonic() - started < 60


def test_debug_ops_are_dropped(tmp_path):
    def build(tf, x):
        x = tf.compat.v1.Print(x, [x], "debug: ")
        with tf.control_dependencies([tf.debugging.Assert(tf.reduce_all(x > -1e9), [x])]):
            return tf.nn.relu(x) * 2.0

    out = tmp_path / "out"
    code, stderr = run_cli("tf2torch", _frozen_pb(tmp_path / "debug.pb", build), "-o", out, "--verify")
    assert code == 0, stderr
    assert json.loads((out / "conversion.json").read_text())["verify"]["passed"]


def test_checkpoint_restore_op_that_writes(tmp_path):
    """A .meta whose restore op depends on WriteFile: the weights are read from the bundle, the
    graph's own restore op never runs, so nothing is written."""
    import tensorflow as tf
    from tensorflow.core.protobuf import meta_graph_pb2

    target = tmp_path / "pwned.txt"
    ckpt = tmp_path / "ckpt"
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, (1, 4), name="input")
        w = tf.compat.v1.get_variable("w", initializer=tf.ones((4,)))
        tf.identity(x * w, name="output")
        write = tf.io.write_file(str(target), "pwned", name="evil")
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            prefix = saver.save(sess, str(ckpt / "model.ckpt"))
        restore_name = saver.saver_def.restore_op_name
    meta = meta_graph_pb2.MetaGraphDef()
    meta.ParseFromString(Path(prefix + ".meta").read_bytes())
    node = next(n for n in meta.graph_def.node if n.name == restore_name)
    node.input.append(f"^{write.name}")
    Path(prefix + ".meta").write_bytes(meta.SerializeToString())
    code, stderr = run_cli("tf2torch", Path(prefix), "-o", tmp_path / "out", "--verify")
    assert code == 0, stderr
    assert not target.exists()


def test_saved_model_init_op_that_writes(tmp_path):
    import tensorflow as tf

    target = tmp_path / "pwned.txt"
    export = tmp_path / "sm"
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, (1, 4), name="input")
        y = tf.identity(x * 2.0, name="output")
        write = tf.io.write_file(str(target), "pwned")
        with tf.compat.v1.Session() as sess:
            builder = tf.compat.v1.saved_model.Builder(str(export))
            sig = tf.compat.v1.saved_model.predict_signature_def({"x": x}, {"y": y})
            builder.add_meta_graph_and_variables(sess, ["serve"], {"serving_default": sig},
                                                 main_op=tf.group(write))
            builder.save()
    assert_refused(export, tmp_path, ["WriteFile"])
    assert not target.exists()


# ---- Keras files ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def keras_h5(tmp_path_factory) -> Path:
    import keras

    path = tmp_path_factory.mktemp("hostile_keras") / "model.h5"
    i = keras.Input((4,))
    keras.Model(i, keras.layers.Dense(8, name="dense")(i)).save(path)
    return path


def _patched_h5(keras_h5: Path, tmp_path: Path, patch) -> Path:
    import shutil

    import h5py

    path = tmp_path / "model.h5"
    shutil.copy(keras_h5, path)
    with h5py.File(path, "r+") as h5:
        group = h5["model_weights/dense/dense"]
        del group["bias"]
        patch(h5py, group, tmp_path)
    return path


def test_h5_external_storage(keras_h5, tmp_path, canary):
    def patch(h5py, group, _):
        group.create_dataset("bias", shape=(8,), dtype="<f4", external=[(str(canary), 0, 32)])

    line = assert_refused(_patched_h5(keras_h5, tmp_path, patch), tmp_path, ["external"])
    assert SECRET not in line


def test_h5_external_link(keras_h5, tmp_path):
    def patch(h5py, group, where):
        with h5py.File(where / "other.h5", "w") as other:
            other["bias"] = np.ones(8, np.float32)
        group["bias"] = h5py.ExternalLink(str(where / "other.h5"), "/bias")

    assert_refused(_patched_h5(keras_h5, tmp_path, patch), tmp_path, ["external link"])


def test_h5_virtual_dataset(keras_h5, tmp_path):
    def patch(h5py, group, where):
        with h5py.File(where / "other.h5", "w") as other:
            other["bias"] = np.ones(8, np.float32)
        layout = h5py.VirtualLayout(shape=(8,), dtype="<f4")
        layout[:] = h5py.VirtualSource(str(where / "other.h5"), "bias", shape=(8,))
        group.create_virtual_dataset("bias", layout)

    assert_refused(_patched_h5(keras_h5, tmp_path, patch), tmp_path, ["virtual"])


def test_keras_zip_bomb(tmp_path):
    import keras

    good = tmp_path / "good.keras"
    i = keras.Input((4,))
    keras.Model(i, keras.layers.Dense(8)(i)).save(good)
    bomb = tmp_path / "bomb.keras"
    with zipfile.ZipFile(good) as z, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as out:
        for name in z.namelist():
            data = z.read(name)
            out.writestr(name, data + bytes(64 << 20) if name == "model.weights.h5" else data)
    assert bomb.stat().st_size < 1 << 20
    assert_refused(bomb, tmp_path, ["inflates"])


def test_huge_declared_input_is_refused_before_allocating(tmp_path):
    import keras

    path = tmp_path / "huge.keras"
    i = keras.Input((100000, 100000, 3), batch_size=1)
    x = keras.layers.Conv2D(4, 3, strides=2, padding="same")(i)
    keras.Model(i, keras.layers.GlobalAveragePooling2D()(x)).save(path)
    assert path.stat().st_size < 100_000
    line = assert_refused(path, tmp_path, ["--max-memory", "(1, 3, 100000, 100000)"], "--max-memory", "2G")
    assert "GB" in line
    import resource

    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 8 << 20  # KB: the test process stayed < 8 GB


def test_symlinked_keras_member_names_stay_inside(tmp_path):
    """(kept from before) a .keras member named ../x is never written anywhere: we only read the zip."""
    bad = tmp_path / "evil.keras"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("config.json", json.dumps([1, 2, 3]))
        z.writestr("model.weights.h5", b"")
        z.writestr("../escaped.txt", b"x")
    assert_refused(bad, tmp_path, ["evil.keras"])
    assert not (tmp_path.parent / "escaped.txt").exists()
    assert not os.path.exists(tmp_path / "escaped.txt")


@pytest.mark.parametrize("target", ["tf2onnx", "tf2torch"])
def test_integer_input_into_a_conv_is_exit_2_naming_it(tmp_path, target):
    """An int32 placeholder feeding a Conv was exit 1 in tf2onnx (the ONNX checker's
    ShapeInferenceError); the IR's inputs are float, so it is refused up front, naming the input."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.int32, (1, 8, 8, 3), name="input")
        y = tf.nn.conv2d(x, tf.constant(np.ones((3, 3, 3, 4), np.int32)), 1, "SAME")
        tf.identity(y, name="output")
    src = tmp_path / "int32.pb"
    src.write_bytes(graph.as_graph_def().SerializeToString())
    out = tmp_path / "out"
    code, stderr = run_cli(target, src, "-o", out, "--outputs", "output")
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1, stderr
    assert "input 'input'" in lines[0] and "int32" in lines[0] and "float" in lines[0]
    assert not out.exists()


def test_verify_that_would_not_fit_is_refused_before_writing(tmp_path):
    """--verify at a size whose check cannot fit (TF and the target at the larger check sizes)
    is exit 2 up front, naming the tensor; the same conversion without --verify still fits and converts."""
    import keras

    path = tmp_path / "wide.keras"
    i = keras.Input((1500, 1500, 3), batch_size=1)
    x = keras.layers.Conv2D(16, 3, strides=1, padding="same")(i)
    keras.Model(i, keras.layers.GlobalAveragePooling2D()(x)).save(path)
    # the conv's output is 144 MB: converting needs ~0.6 GB, verifying ~1.7 GB
    line = assert_refused(path, tmp_path, ["--verify needs", "(1, 16, 1500, 1500)", "without --verify"],
                          "--max-memory", "1G")
    assert "GB" in line
    code, stderr = run_cli("tf2onnx", path, "-o", tmp_path / "plain", "--max-memory", "1G")
    assert code == 0, stderr


def test_default_limit_follows_an_address_space_limit():
    """`ulimit -v` below the machine's RAM lowers the default --max-memory (80% of the lower one)."""
    import subprocess
    import sys

    probe = "from tf_convert.app import memory; print(memory.default_limit(), memory.machine_ram())"
    out = subprocess.run(["bash", "-c", f"ulimit -v 3000000 && {sys.executable} -c '{probe}'"],
                         capture_output=True, text=True, check=True).stdout.split()
    limit, ram = int(out[0]), int(out[1])
    assert limit == int(min(ram, 3000000 * 1024) * 0.8)
