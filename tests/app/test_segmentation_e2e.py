"""A tiny segmentation-style net through the `convert` command on all four targets: an encoder of
stride-2 SAME convs (asymmetric pads), a decoder that upsamples bilinearly (tf.image.resize, TF2's
half-pixel grid) with a skip connection, and ArgMax over the classes as the last op. Exact on
torch, ONNX and MXNet; Caffe has no exact bilinear resize (nor ArgMax) and refuses with exit 3
naming the nodes. A nearest-upsampling variant (integer factor) converts on Caffe too."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.app.test_cli import _check_error, run_cli

pytest.importorskip("tensorflow")

SIZE = (30, 34)  # not multiples of 4: SAME pads are asymmetric and the upsampling is not integer


def _seg_net(path: Path, method: str, argmax: bool, size=SIZE) -> Path:
    import tensorflow as tf

    tf1 = tf.compat.v1
    rng = np.random.default_rng(0)

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[:-1]))).astype(np.float32)

    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [1, *size, 3], name="image")
        e1 = tf.nn.relu(tf.nn.conv2d(x, w(3, 3, 3, 8), 2, "SAME"), name="enc1")
        e2 = tf.nn.relu(tf.nn.conv2d(e1, w(3, 3, 8, 16), 2, "SAME"), name="enc2")
        up = tf.image.resize(e2, tf.shape(e1)[1:3], method=method, name="up1")
        d1 = tf.nn.relu(tf.nn.conv2d(tf.concat([up, e1], -1), w(3, 3, 24, 8), 1, "SAME"), name="dec1")
        logits = tf.nn.conv2d(tf.image.resize(d1, size, method=method, name="up2"), w(1, 1, 8, 5), 1, "SAME")
        if argmax:  # the last op (an Identity after it would be an int sink, which auto-detection skips)
            tf.math.argmax(logits, axis=-1, name="classes")
        else:
            tf.identity(logits, name="logits")
    path.write_bytes(graph.as_graph_def().SerializeToString())  # the resize size comes from tf.shape()
    return path


@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    root = tmp_path_factory.mktemp("seg")
    return {
        "bilinear": _seg_net(root / "seg_bilinear.pb", "bilinear", argmax=True),
        "nearest": _seg_net(root / "seg_nearest.pb", "nearest", argmax=False, size=(32, 32)),
    }


@pytest.mark.parametrize("target", ["torch", "onnx", "mxnet"])
def test_bilinear_decoder_with_argmax_is_exact(nets, target, tmp_path):
    code, stdout, stderr = run_cli(f"tf2{target}", nets["bilinear"], "-o", tmp_path / "out", "--verify", "--json")
    assert code == 0, stderr
    verify = json.loads(stdout)["verify"]
    assert verify["passed"] and verify["max_abs"] == 0, verify  # class indices: every pixel equal


def test_caffe_refuses_bilinear_resize_and_argmax(nets, tmp_path):
    line = _check_error(["tf2caffe", nets["bilinear"]], 3, ["2 unsupported", "resize", "up1", "argmax", "classes"],
                        tmp_path / "out")  # the integer-factor resize converts (a fixed-weight Deconvolution)
    assert "no bvlc caffe layer" in line.lower()


@pytest.mark.parametrize("target", ["torch", "onnx", "mxnet", "caffe"])
def test_nearest_decoder_every_target(nets, target, tmp_path):
    code, stdout, stderr = run_cli(f"tf2{target}", nets["nearest"], "-o", tmp_path / "out", "--verify", "--json")
    assert code == 0, stderr
    verify = json.loads(stdout)["verify"]
    assert verify["passed"] and verify["max_rel"] <= 1e-5, verify
