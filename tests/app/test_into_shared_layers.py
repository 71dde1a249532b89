"""`--into` a module that calls the same layer object more than once (ALBERT runs one layer num_hidden_layers
times): each call pairs with its own place in TF's graph, the parameters get TF's (shared) weights once, and a
module that shares a layer where TF has different weights is refused naming it (exit 3). Against TensorFlow at
two sequence lengths; the whole ALBERT: tests/app/test_into_hf_tf.py (slow)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tf_convert import app as convert

tf = pytest.importorskip("tensorflow")

VOCAB, WIDTH, REPEATS = 30, 12, 3
HERE = "tests.app.test_into_shared_layers"


class Shared(nn.Module):
    """One Linear and one LayerNorm, run REPEATS times (ALBERT's shared layer)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.dense = nn.Linear(WIDTH, WIDTH)
        self.norm = nn.LayerNorm(WIDTH, eps=1e-3)

    def forward(self, input_ids):
        x = self.embed(input_ids)
        for _ in range(REPEATS):
            x = self.norm(x + torch.tanh(self.dense(x)))
        return x


class Separate(Shared):
    """The same computation with a layer per place: each gets TF's one weight."""

    def __init__(self):
        super().__init__()
        self.dense = nn.ModuleList(nn.Linear(WIDTH, WIDTH) for _ in range(REPEATS))
        self.norm = nn.ModuleList(nn.LayerNorm(WIDTH, eps=1e-3) for _ in range(REPEATS))

    def forward(self, input_ids):
        x = self.embed(input_ids)
        for dense, norm in zip(self.dense, self.norm):
            x = norm(x + torch.tanh(dense(x)))
        return x


def _saved(path: Path, shared: bool) -> Path:
    rng = np.random.default_rng(3)

    def variable(*shape, around=0.0):
        return tf.Variable((around + rng.normal(0.0, 0.4, shape)).astype(np.float32))

    class Model(tf.Module):
        def __init__(self):
            super().__init__()
            self.table = variable(VOCAB, WIDTH)
            count = 1 if shared else REPEATS
            self.layers = [(variable(WIDTH, WIDTH), variable(WIDTH), variable(WIDTH, around=1.0), variable(WIDTH))
                           for _ in range(count)]

        @tf.function(input_signature=[tf.TensorSpec((None, None), tf.int32, name="input_ids")])
        def __call__(self, input_ids):
            x = tf.gather(self.table, input_ids)
            for k in range(REPEATS):
                kernel, bias, gamma, beta = self.layers[k % len(self.layers)]
                x = x + tf.tanh(tf.tensordot(x, kernel, 1) + bias)
                mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
                x = tf.nn.batch_normalization(x, mean, variance, beta, gamma, 1e-3)
            return {"last_hidden_state": x}

    model = Model()
    tf.saved_model.save(model, str(path), signatures={"serving_default": model.__call__})
    return path


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[bool, Path]:
    root = tmp_path_factory.mktemp("shared_layers")
    return {shared: _saved(root / f"shared_{shared}", shared) for shared in (True, False)}


def _max_error(source: Path, model: nn.Module) -> float:
    signature = tf.saved_model.load(str(source)).signatures["serving_default"]
    worst = 0.0
    for steps in (7, 11):
        ids = np.random.default_rng(steps).integers(0, VOCAB, (2, steps)).astype(np.int32)
        want = signature(input_ids=tf.constant(ids))["last_hidden_state"].numpy()
        with torch.no_grad():
            got = model(torch.from_numpy(ids).long()).numpy()
        worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
    return worst


@pytest.mark.parametrize("name, tf_shared", [("Shared", True), ("Separate", True), ("Separate", False)])
def test_a_layer_called_several_times_gets_tf_s_weights(sources, tmp_path, name, tf_shared):
    doc = convert.into(sources[tf_shared], f"{HERE}:{name}", tmp_path / "out", input_shape="2,7")
    modules = [p["module"] for p in doc["pairs"]]
    if name == "Shared":  # each call its own pair, one parameter each
        assert {"dense", "dense#1", "dense#2", "norm#2"} <= set(modules), modules
        assert sorted(r["parameter"] for r in doc["parameters"]) == sorted(
            ["embed.weight", "dense.weight", "dense.bias", "norm.weight", "norm.bias"])
    model = globals()[name]().eval()
    model.load_state_dict(torch.load(tmp_path / "out" / "state_dict.pt"), strict=True)
    error = _max_error(sources[tf_shared], model)
    print(f"\n{name} from TF with {'one' if tf_shared else 'a'} layer{'' if tf_shared else ' per place'}: {error:.2g}")
    assert error < 1e-5, error


def test_a_module_sharing_a_layer_tf_does_not_share_is_refused(sources, tmp_path):
    from tf_convert.convert.errors import ConvertError

    with pytest.raises(ConvertError) as failure:
        convert.into(sources[False], f"{HERE}:Shared", tmp_path / "out", input_shape="2,7")
    message = str(failure.value)
    assert failure.value.exit_code == 3 and "module path 'dense' runs in several places and TF's graph has " \
        "different weights there" in message, message
    assert not (tmp_path / "out").exists()
