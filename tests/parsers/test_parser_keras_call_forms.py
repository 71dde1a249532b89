"""parsers.keras: every call-argument form Keras writes (keras tensors anywhere in args/kwargs, Keras 3
`__tensor__`/`__numpy__` constants, Python scalars, shared layers, nested models, several outputs) and
tf_keras TF-op layers (TFOpLambda / SlicingOpLambda), in files written by Keras 3 and by tf_keras,
parsed without TensorFlow and checked against the Keras that wrote them.
"""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from tests.support import keras_call_forms as forms
from tests.support.verify_faults import run_cli
from tf_convert.convert import ir
from tf_convert.parsers.base import ParseOptions

RTOL = 1e-5


def _outputs(model) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(3)
    feeds = [rng.normal(0, 1, [d or 1 for d in t.shape]).astype("float32") for t in model.inputs]
    refs = model(feeds if len(feeds) > 1 else feeds[0], training=False)
    return feeds, [np.asarray(r) for r in (refs if isinstance(refs, (list, tuple)) else [refs])]


def _check(model, path) -> None:
    import tf_convert.parsers.keras as pk

    feeds, refs = _outputs(model)
    graph = pk.parse(path, ParseOptions())
    ins = [x.transpose(0, 3, 1, 2) if graph.source_layouts[t] == "NHWC" else x for t, x in zip(graph.inputs, feeds)]
    values = ir.evaluate(graph, [x.astype(np.float64) for x in ins])
    assert len(graph.outputs) == len(refs)
    for t, ref in zip(graph.outputs, refs):
        out = values[t].transpose(0, 2, 3, 1) if graph.source_layouts[t] == "NHWC" else values[t]
        assert out.shape == ref.shape, (path.name, t)
        err = np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-12)
        assert err <= RTOL, (path.name, t, err)


@pytest.mark.parametrize("name", sorted(forms.KERAS3))
def test_keras3_forms(name, tmp_path):
    import keras

    model = forms.KERAS3[name](keras)
    for suffix in (".keras", ".h5"):
        model.save(tmp_path / f"{name}{suffix}")
        _check(model, tmp_path / f"{name}{suffix}")


@pytest.mark.parametrize("name", sorted(forms.TF_KERAS))
def test_tf_keras_forms(name, tmp_path):
    import tf_keras

    model = forms.TF_KERAS[name](tf_keras)
    model.save(tmp_path / f"{name}.h5")
    _check(model, tmp_path / f"{name}.h5")


def test_keras3_constant_is_not_dropped(tmp_path):
    """The operand Keras 3 stores by value is part of the sum (it was left out: exit 0, 0.26 off)."""
    import keras

    model = forms.constants_net(keras)
    model.save(tmp_path / "c.keras")
    import zipfile

    config = zipfile.ZipFile(tmp_path / "c.keras").read("config.json").decode()
    assert '"__tensor__"' in config and '"__numpy__"' in config
    _check(model, tmp_path / "c.keras")


def test_tf_keras_operators_verify_through_cli(tmp_path):
    """End to end: the TF-op layers convert and --verify runs tf_keras itself as the reference."""
    import tf_keras

    forms.operators_net(tf_keras).save(tmp_path / "ops.h5")
    code, out, err = run_cli("tf2onnx", tmp_path / "ops.h5", "-o", tmp_path / "out", "--verify")
    assert code == 0, err
    assert "OK" in out + err


def test_unknown_tf_function_is_refused_naming_it(tmp_path):
    import tensorflow as tf
    import tf_keras as K

    x = K.Input((5,))
    model = K.Model(x, tf.math.cumsum(K.layers.Dense(3)(x), axis=-1))
    model.save(tmp_path / "cumsum.h5")
    code, _, err = run_cli("tf2torch", tmp_path / "cumsum.h5", "-o", tmp_path / "out")
    assert code == 3, err
    assert "tf.math.cumsum" in err and "SavedModel" in err


def test_tf_keras_node_data_forms(tmp_path):
    """The tf_keras config really holds the forms parsed above: an unwrapped first-argument leaf with a
    tensor reference in its kwargs, a _CONSTANT_VALUE-free slice spec with an ellipsis and new axis."""
    import tf_keras

    forms.operators_net(tf_keras).save(tmp_path / "ops.h5")
    config = json.loads(h5py.File(tmp_path / "ops.h5").attrs["model_config"])
    layers = config["config"]["layers"]
    add = next(layer for layer in layers if layer["config"].get("function") == "__operators__.add")
    node = add["inbound_nodes"][0]
    assert isinstance(node[0], str) and node[3]["y"][0].startswith("conv2d")
    assert any(layer["class_name"] == "SlicingOpLambda" for layer in config["config"]["layers"])
