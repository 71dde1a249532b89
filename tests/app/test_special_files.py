"""Only regular files are read: a FIFO or a device given as the source, or sitting where a
checkpoint's .index / .data / .meta, a SavedModel's saved_model.pb or variables/ files should be, is
refused at once (exit 2) with what the path is -- it used to block forever or say "no such file"."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.tf_models import build_mobilenet_v1_tiny
from tf_convert import cli


def _run(*args):
    result = CliRunner().invoke(cli.main, [str(a) for a in args])
    return result.exit_code, result.stderr


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return build_mobilenet_v1_tiny(tmp_path_factory.mktemp("special"))


def _fifo_in_place(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize("source", ["fifo", "/dev/zero"])
def test_special_source_is_named(tmp_path, source):
    path = tmp_path / "model.pb" if source == "fifo" else Path(source)
    if source == "fifo":
        os.mkfifo(path)
    code, err = _run("tf2onnx", path, "-o", tmp_path / "out")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1
    assert ("a FIFO (named pipe)" if source == "fifo" else "a character device") in err
    assert "no such file" not in err


@pytest.mark.parametrize("kind,relative,role", [
    ("ckpt", "model.ckpt.index", "the checkpoint's index"),
    ("ckpt", "model.ckpt.data-00000-of-00001", "a checkpoint data shard"),
    ("ckpt", "model.ckpt.meta", "the checkpoint's graph (.meta)"),
    ("ckpt", "checkpoint", "the checkpoint state file"),
    ("saved_model", "saved_model.pb", "the SavedModel's graph"),
    ("saved_model", "variables/variables.index", "the SavedModel's variable index"),
    ("saved_model", "variables/variables.data-00000-of-00001", "a SavedModel variables data shard"),
])
def test_fifo_inside_a_model_is_refused(model, tmp_path, kind, relative, role):
    src_dir = Path(model["ckpt_dir"] if kind == "ckpt" else model["saved_model"])
    copy = tmp_path / "model"
    shutil.copytree(src_dir, copy)
    _fifo_in_place(copy / relative)
    source = copy if relative == "checkpoint" or kind == "saved_model" else copy / "model.ckpt"
    code, err = _run("tf2onnx", source, "-o", tmp_path / "out", "--timeout", "60")
    assert code == 2, err
    assert f"{role} is a FIFO (named pipe)" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("node_op,attr", [("Placeholder", "dtype"), ("Conv2D", "T"), ("Const", "dtype")])
def test_a_type_attribute_of_enum_0_names_the_node(tmp_path, node_op, attr):
    """A bit flip that leaves DT_INVALID (0) in a type attribute: exit 2 naming the node (was exit 1,
    "unknown TensorFlow DataType enum 0", or even exit 0 with the attribute ignored)."""
    import numpy as np

    from tests.support.tf_models import save_frozen
    from tf_convert.parsers.tensorflow.protos import GraphDef

    def build(x):
        import tensorflow as tf

        w = tf.constant(np.ones((3, 3, 3, 4), np.float32))
        tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME"), name="output")

    pb = Path(save_frozen(tmp_path / "model.pb", build, [1, 8, 8, 3]))
    graph = GraphDef()
    graph.ParseFromString(pb.read_bytes())
    node = next(n for n in graph.node if n.op == node_op)
    node.attr[attr].type = 0
    pb.write_bytes(graph.SerializeToString())
    code, err = _run("tf2onnx", pb, "-o", tmp_path / "out")
    assert code == 2, err
    assert f"node '{node.name}' ({node_op}) has attribute '{attr}' of unknown TensorFlow DataType 0" in err


def _save_module(directory: Path, channels: int) -> None:
    import numpy as np
    import tensorflow as tf

    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            rng = np.random.default_rng(channels)
            self.kernel = tf.Variable(rng.standard_normal((3, 3, 3, channels)).astype(np.float32), name="c2/kernel")
            self.bias = tf.Variable(rng.standard_normal(channels).astype(np.float32), name="c2/bias")

        @tf.function(input_signature=[tf.TensorSpec([1, 8, 8, 3], tf.float32)])
        def __call__(self, x):
            return tf.nn.bias_add(tf.nn.conv2d(x, self.kernel, 1, "SAME"), self.bias)

    net = Net()
    tf.saved_model.save(net, str(directory), signatures=net.__call__)


def test_saved_model_with_another_models_variables_is_refused(tmp_path):
    """variables/ copied from a model of the same layers but other shapes: TF refuses to load it
    ("incompatible tensor with shape"); it used to convert with exit 0 and verify OK."""
    _save_module(tmp_path / "a", 8)
    _save_module(tmp_path / "b", 4)
    code, err = _run("tf2onnx", tmp_path / "a", "-o", tmp_path / "out-a")
    assert code == 0, err
    shutil.rmtree(tmp_path / "a" / "variables")
    shutil.copytree(tmp_path / "b" / "variables", tmp_path / "a" / "variables")
    code, err = _run("tf2onnx", tmp_path / "a", "-o", tmp_path / "out")
    assert code == 2, err
    assert "has shape (3, 3, 3, 8) in the SavedModel but (3, 3, 3, 4) in variables/" in err
    assert len(err.strip().splitlines()) == 1
