"""parsers.keras.traced: .keras files whose classes the config reader does not know. keras-hub backbones
(built tiny from constructor arguments) are loaded by Keras in safe mode in a child process, traced into
a TF graph as model.export() does, and converted; a class whose package is not installed, and a Lambda
without --no-safe-mode, are refused with exit 3 naming them."""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest

from tests.support.verify_faults import run_cli
from tf_convert.convert import ir
from tf_convert.convert.errors import UnsupportedError
from tf_convert.parsers.base import ParseOptions

SEQ = 12


def _backbone(name: str):
    import keras_hub

    text = dict(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
                max_sequence_length=SEQ)
    if name == "bert":
        return keras_hub.models.BertBackbone(**text), {"token_ids": (1, SEQ), "segment_ids": (1, SEQ),
                                                      "padding_mask": (1, SEQ)}
    if name == "gpt2":
        return keras_hub.models.GPT2Backbone(**text), {"token_ids": (1, SEQ), "padding_mask": (1, SEQ)}
    if name == "vit":
        return keras_hub.models.ViTBackbone(image_shape=(16, 16, 3), patch_size=8, num_layers=1, num_heads=2,
                                            hidden_dim=8, mlp_dim=16), {}
    return keras_hub.models.ResNetBackbone(
        input_conv_filters=[64], input_conv_kernel_sizes=[7], stackwise_num_filters=[64],
        stackwise_num_blocks=[1], stackwise_num_strides=[1], block_type="basic_block",
        image_shape=(33, 33, 3)), {}


def _feed(graph: ir.Graph, rng) -> list[np.ndarray]:
    from tf_convert.app.verify import token_inputs

    feeds = []
    for t in graph.inputs:
        ids = token_inputs.value_range(graph, t)
        shape = graph.shape(t)
        feeds.append(rng.integers(*ids, shape).astype(graph.tensors[t].dtype) if ids is not None
                     else rng.normal(0, 1, shape).astype(np.float32))
    return feeds


# each trace runs Keras and keras-hub in a child (~30-50 s on 2 busy cores): BERT in the default run,
# the others in `make test-keras-files`
SLOW = [pytest.mark.slow, pytest.mark.skipif(not os.environ.get("CONVERT_KERAS_FILES"),
                                             reason="every backbone: make test-keras-files")]


@pytest.mark.parametrize("name", ["bert", *(pytest.param(n, marks=SLOW) for n in ("gpt2", "vit", "resnet"))])
def test_keras_hub_backbone_is_traced_and_exact(name, tmp_path):
    import keras

    import tf_convert.parsers.keras as pk
    from tf_convert.parsers.keras import traced

    model, shapes = _backbone(name)
    path = tmp_path / f"{name}.keras"
    model.save(path)
    options = ParseOptions(input_shapes=shapes)
    graph = pk.parse(path, options)
    assert any(note.startswith("path: traced") for note in options.notes)
    assert options.records[-1]["pass"] == "keras_trace" and options.records[-1]["path"] == "traced"
    feeds = _feed(graph, np.random.default_rng(0))
    values = ir.evaluate(graph, [x if x.dtype != np.float32 else x.astype(np.float64) for x in feeds])
    loaded = keras.saving.load_model(path, compile=False)
    source = [x.transpose(0, 2, 3, 1) if graph.source_layouts[t] == "NHWC" else x for t, x in zip(graph.inputs, feeds)]
    refs = [np.asarray(r) for r in traced.call_model(loaded, graph, source)]
    assert len(refs) == len(graph.outputs)
    for t, ref in zip(graph.outputs, refs):
        out = values[t].transpose(0, 2, 3, 1) if graph.source_layouts[t] == "NHWC" else values[t]
        assert out.shape == ref.shape, t
        assert np.abs(out - ref).max() <= 1e-4 * max(np.abs(ref).max(), 1e-6), t


def _with_registered(path, out, registered: str, module: str):
    """`path` with its top object claimed by another (uninstalled) package."""
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    config = json.loads(members["config.json"])
    config["registered_name"], config["module"] = registered, module
    config["class_name"] = registered.partition(">")[2]
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(out, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)


def test_class_of_a_package_not_installed_is_refused(tmp_path):
    import keras

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    model.save(tmp_path / "bert.keras")
    _with_registered(tmp_path / "bert.keras", tmp_path / "other.keras", "not_installed_hub>BertBackbone",
                     "not_installed_hub.src.models.bert.bert_backbone")
    code, _, err = run_cli("tf2onnx", tmp_path / "other.keras", "-o", tmp_path / "out")
    assert code == 3, err
    assert "not_installed_hub>BertBackbone" in err and "package 'not_installed_hub'" in err
    assert "install it" in err and "SavedModel" in err


def test_lambda_refused_unless_no_safe_mode(tmp_path):
    import keras

    import tf_convert.parsers.keras as pk

    x = keras.Input((6,))
    y = keras.layers.Lambda(lambda t: t * 3.0 + 1.0, name="times_three")(keras.layers.Dense(4)(x))
    model = keras.Model(x, y)
    model.save(tmp_path / "lam.keras")
    with pytest.raises(UnsupportedError) as refused:
        pk.parse(tmp_path / "lam.keras", ParseOptions())
    assert refused.value.exit_code == 3
    assert "times_three" in str(refused.value) and "--no-safe-mode" in str(refused.value)
    graph = pk.parse(tmp_path / "lam.keras", ParseOptions(safe_mode=False))
    feed = np.random.default_rng(0).normal(0, 1, (1, 6)).astype(np.float32)
    out = ir.evaluate(graph, [feed.astype(np.float64)])[graph.outputs[0]]
    ref = np.asarray(model(feed))
    assert np.abs(out - ref).max() <= 1e-5 * np.abs(ref).max()


def test_no_safe_mode_is_in_help():
    code, out, _ = run_cli("tf2torch", "--help")
    assert code == 0 and "--no-safe-mode" in out and "safe_mode=False" in out
