"""`convert verify OUT --layers`: planted faults in converted models of every target are located.

One small TF model with asymmetric SAME pads (stride-2 conv 0/1, even-kernel max pool 0/1) and a
symmetric average pool; each target's output is copied, one fault is planted by editing the written
files, and the per-layer diff must name the planted node as the first divergence. Faults that change
only what the pads contribute (a pad value, the padded elements an average counts, a pad group's
constant) must show as border error over a clean interior; a wrong op, and a pad moved to the other
side (which shifts every window), show in the interior too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.support import verify_faults as vf
from tests.support.tf_models import save_frozen
from tf_convert import cli

RTOL = 1e-4


def _build(x):
    import tensorflow as tf

    rng = np.random.default_rng(3)

    def w(*shape):
        return tf.constant((rng.standard_normal(shape) * 0.4).astype(np.float32))

    y = tf.nn.conv2d(x, w(3, 3, 3, 8), 2, "SAME", name="conv1/Conv2D")  # 16 -> 8, pads 0/1
    y = tf.nn.relu(tf.nn.bias_add(y, w(8), name="conv1/BiasAdd"), name="conv1/Relu")
    y = tf.nn.relu6(tf.nn.conv2d(y, w(3, 3, 8, 8), 1, "SAME", name="conv2/Conv2D"), name="conv2/Relu6")
    y = tf.nn.max_pool2d(y - 3.0, 2, 1, "SAME", name="pool/MaxPool")  # pads 0/1, negative values
    y = tf.nn.avg_pool2d(y, 3, 1, "SAME", name="avg/AvgPool")  # pads 1/1, TF divides by real count
    y = tf.nn.conv2d(y, w(3, 3, 8, 4), 1, "SAME", name="conv3/Conv2D")
    tf.identity(y, name="output")


def run_cli(*args) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli.main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("diagnose")
    pb = save_frozen(root / "model.pb", _build, [1, 16, 16, 3])
    outs = {}
    for target in ("torch", "onnx", "caffe", "mxnet"):
        # baked pads (the planted faults edit them); runtime pads are checked in test_dynamic_sizes
        static = ["--static-shapes"] if target in ("torch", "onnx") else []
        code, _, err = run_cli(f"tf2{target}", pb, "-o", root / target, "--verify", *static)
        assert code == 0, err
        outs[target] = root / target
    return outs


def _planted(converted, target: str, tmp_path: Path, plant) -> Path:
    out = vf.copy_out(converted[target], tmp_path / target)
    plant(out)
    return out


def _layers(out: Path) -> tuple[int, dict]:
    code, stdout, stderr = run_cli("verify", out, "--layers", "--json")
    assert code in (0, 4), stderr
    return code, json.loads(stdout)


# ---- the faults, each an edit of the written files -------------------------------------------------

def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


def torch_pad_value(out: Path) -> None:
    _edit(out / "model.py", "nn.ZeroPad2d((0, 1, 0, 1))", "nn.ConstantPad2d((0, 1, 0, 1), 1.0)")


def torch_sides_swapped(out: Path) -> None:
    _edit(out / "model.py", "nn.ConstantPad2d((0, 1, 0, 1), float('-inf'))",
          "nn.ConstantPad2d((1, 0, 1, 0), float('-inf'))")


def torch_wrong_activation(out: Path) -> None:
    _edit(out / "model.py", "torch.relu(conv1)", "torch.sigmoid(conv1)")


def _onnx_edit(out: Path, edit) -> None:
    import onnx

    model = onnx.load(str(out / "model.onnx"))
    edit(model.graph)
    onnx.save(model, str(out / "model.onnx"))


def _onnx_node(graph, output: str):
    return next(n for n in graph.node if output in n.output)


def _set_attr(node, name: str, value) -> None:
    from onnx import helper

    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept + [helper.make_attribute(name, value)])


def onnx_avg_counts_pads(out: Path) -> None:
    _onnx_edit(out, lambda g: _set_attr(_onnx_node(g, "avg/AvgPool"), "count_include_pad", 1))


def onnx_pad_changed(out: Path) -> None:
    _onnx_edit(out, lambda g: _set_attr(_onnx_node(g, "conv1/Conv2D"), "pads", [1, 1, 0, 0]))


def onnx_wrong_activation(out: Path) -> None:
    def edit(graph):
        _onnx_node(graph, "conv1/Relu").op_type = "Sigmoid"

    _onnx_edit(out, edit)


def _caffe_edit(out: Path, edit) -> None:
    from google.protobuf import text_format

    from tf_convert.emitters.caffe.proto import messages

    path = out / "deploy.prototxt"
    header, _, body = path.read_text().partition("\n")
    net = text_format.Parse(body, messages()["NetParameter"]())
    edit(net)
    layers = list(net.layer)
    del net.layer[:]
    net.layer.extend(layers)
    path.write_text(header + "\n" + text_format.MessageToString(net))


def _drop_layers(net, names: set[str], rewire: dict[str, str]) -> None:
    kept = [layer for layer in net.layer if layer.name not in names]
    for layer in kept:
        bottoms = [rewire.get(b, b) for b in layer.bottom]
        del layer.bottom[:]
        layer.bottom.extend(bottoms)
    del net.layer[:]
    net.layer.extend(kept)


def caffe_pad_column_replaced(out: Path) -> None:
    """conv1's width pad group fills its column with each row's maximum instead of zeros (a Pooling in
    place of the zero-weight 1x1 conv that makes the column): wrong values at the border only."""

    def edit(net):
        layer = next(layer for layer in net.layer if layer.name == "conv1/Conv2D/pad_w_after_const")
        width = layer.convolution_param.stride_w  # the row maker reads one column in `width`
        layer.type = "Pooling"
        layer.ClearField("convolution_param")
        layer.pooling_param.kernel_h, layer.pooling_param.stride_h = 1, 1
        layer.pooling_param.kernel_w, layer.pooling_param.stride_w = width, width

    _caffe_edit(out, edit)


def caffe_pad_group_removed(out: Path) -> None:
    """conv1's height pad group goes and the layer pads itself symmetrically (what a naive converter
    writes): same output size, every window one row off."""
    g = "conv1/Conv2D/pad_h"

    def edit(net):
        _drop_layers(net, {f"{g}_after_const", g}, {g: "input"})
        conv = next(layer for layer in net.layer if layer.name == "conv1/Conv2D").convolution_param
        conv.pad_h, conv.pad_w = 1, 0

    _caffe_edit(out, edit)


def _mxnet_edit(out: Path, node: str, key: str, old: str, new: str) -> None:
    path = out / "model-symbol.json"
    doc = json.loads(path.read_text())
    (entry,) = [n for n in doc["nodes"] if n["name"] == node]
    assert entry["attrs"][key] == old, entry["attrs"]
    entry["attrs"][key] = new
    path.write_text(json.dumps(doc))


def mxnet_pad_width_altered(out: Path) -> None:
    # the pool's pad operator (conv1 is a 3-channel stem, which MXNet lowers with kernel taps instead)
    _mxnet_edit(out, "pool_MaxPool_pad", "pad_width", "(0, 0, 0, 0, 0, 1, 0, 1)", "(0, 0, 0, 0, 1, 0, 1, 0)")


def mxnet_pad_value_altered(out: Path) -> None:
    _mxnet_edit(out, "pool_MaxPool_pad", "constant_value", "-inf", "0.0")


# (target, fault, planted node, where the error is: "border" = border only, "everywhere")
FAULTS = [
    ("torch", torch_pad_value, "conv1/Conv2D", "border"),
    ("torch", torch_sides_swapped, "pool/MaxPool", "everywhere"),
    ("torch", torch_wrong_activation, "conv1/Relu", "everywhere"),
    ("onnx", onnx_avg_counts_pads, "avg/AvgPool", "border"),
    ("onnx", onnx_pad_changed, "conv1/Conv2D", "everywhere"),
    ("onnx", onnx_wrong_activation, "conv1/Relu", "everywhere"),
    ("caffe", caffe_pad_column_replaced, "conv1/Conv2D", "border"),
    ("caffe", caffe_pad_group_removed, "conv1/Conv2D", "everywhere"),
    ("mxnet", mxnet_pad_value_altered, "pool/MaxPool", "border"),
    ("mxnet", mxnet_pad_width_altered, "pool/MaxPool", "everywhere"),
]


@pytest.mark.parametrize("target", ["torch", "onnx", "caffe", "mxnet"])
def test_exact_model_has_no_divergence(converted, target):
    code, doc = _layers(converted[target])
    assert code == 0
    assert doc["first_divergence"] is None
    assert doc["compared"] >= 6
    assert all(r["max_rel"] <= RTOL for r in doc["layers"])
    assert [r["node"] for r in doc["layers"]][-1] == "output"


@pytest.mark.parametrize("target,fault,node,where", FAULTS, ids=[f[1].__name__ for f in FAULTS])
def test_planted_fault_is_located(converted, tmp_path, target, fault, node, where):
    code, doc = _layers(_planted(converted, target, tmp_path, fault))
    assert code == 4
    first = doc["first_divergence"]
    assert first["node"] == node, doc["layers"]
    rows = {r["node"]: r for r in doc["layers"]}
    assert all(rows[n]["max_rel"] <= RTOL for n in list(rows)[: list(rows).index(node)])
    if where == "border":
        assert first["border_max_rel"] > 1e-2
        assert first["interior_max_rel"] <= RTOL
    else:
        assert first["interior_max_rel"] > 1e-2


def test_text_table_ends_with_first_divergence(converted, tmp_path):
    out = _planted(converted, "torch", tmp_path, torch_pad_value)
    code, stdout, stderr = run_cli("verify", out, "--layers")
    assert code == 4
    last = stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"first divergence: conv1/Conv2D \(conv2d\) max_rel \S+; border \S+, interior \S+", last)
    assert "first divergence: conv1/Conv2D" in stderr


def test_plain_verify_names_the_first_divergence(converted, tmp_path):
    out = _planted(converted, "onnx", tmp_path, onnx_avg_counts_pads)
    code, _, stderr = run_cli("verify", out)
    assert code == 4
    assert len(stderr.strip().splitlines()) == 1
    assert "first divergence: avg/AvgPool (avg_pool2d)" in stderr


def test_conversion_json_maps_every_node(converted):
    doc = json.loads((converted["onnx"] / "conversion.json").read_text())
    rows = {r["node"]: r for r in doc["tensors"]}
    assert rows["conv1/Relu"] == {"node": "conv1/Relu", "op": "relu", "ir": "conv1/Relu",
                                  "source": "conv1/Relu:0", "target": "conv1/Relu"}
    assert rows["conv1/Conv2D"]["source"] == "conv1/BiasAdd:0"  # the bias folded into the conv


def test_report_is_self_contained(converted, tmp_path):
    out = _planted(converted, "caffe", tmp_path, caffe_pad_column_replaced)
    report = tmp_path / "report.html"
    code, _, _ = run_cli("verify", out, "--layers", "--report", report)
    assert code == 4
    text = report.read_text()
    assert text.count('src="data:image/png;base64,') == 2  # first divergence and worst node
    assert "http://" not in text and "https://" not in text and "<script" not in text
    assert "pad group" in text  # the plan per node, as `convert inspect` shows it


def test_keras_source_layers_are_compared(tmp_path):
    import keras

    inp = keras.Input((16, 16, 3), name="image")
    y = keras.layers.Conv2D(8, 3, strides=2, padding="same", activation="relu", name="conv1")(inp)  # pads 0/1
    y = keras.layers.MaxPooling2D(2, 1, padding="same", name="pool")(y)  # pads 0/1
    y = keras.layers.Conv2D(4, 3, padding="same", name="conv2")(y)
    path = tmp_path / "model.keras"
    keras.Model(inp, y).save(path)
    code, _, err = run_cli("tf2torch", path, "-o", tmp_path / "torch", "--verify", "--static-shapes")
    assert code == 0, err
    code, doc = _layers(tmp_path / "torch")
    assert code == 0 and doc["first_divergence"] is None
    assert {"conv1", "pool", "conv2"} <= {r["source_tensor"] for r in doc["layers"]}
    torch_pad_value(tmp_path / "torch")
    code, doc = _layers(tmp_path / "torch")
    assert code == 4 and doc["first_divergence"]["source_tensor"] == "conv1"
    assert doc["first_divergence"]["interior_max_rel"] <= RTOL < doc["first_divergence"]["border_max_rel"]


def test_explain_gives_the_line_a_failed_verify_adds(converted, tmp_path):
    """What `--verify` appends to its error when a fresh conversion fails (pipeline.run)."""
    from tf_convert import emitters
    from tf_convert.app import diagnose

    for fault, expected in ((None, None), (mxnet_pad_value_altered, "first divergence: pool/MaxPool (max_pool2d)")):
        out = _planted(converted, "mxnet", tmp_path / str(bool(fault)), fault or (lambda out: None))
        conversion, _, graph = diagnose.load_for(out)
        line = diagnose.explain(Path(conversion["source"]["path"]), graph, emitters.get("mxnet"), out,
                                diagnose.tensor_names_of(conversion), RTOL, 0)
        assert line is None if expected is None else line.startswith(expected)


def test_a_model_the_runtime_cannot_run_is_one_line(converted, tmp_path):
    def break_net(out: Path) -> None:  # conv1's height pad group gone, nothing in its place
        g = "conv1/Conv2D/pad_h"
        _caffe_edit(out, lambda net: _drop_layers(net, {f"{g}_after_const", g}, {g: "input"}))

    code, stdout, stderr = run_cli("verify", _planted(converted, "caffe", tmp_path, break_net), "--layers")
    assert code == 2
    assert len(stderr.strip().splitlines()) == 1 and "caffe runtime could not load or run" in stderr
