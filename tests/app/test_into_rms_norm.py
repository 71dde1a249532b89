"""`--into` with RMS norms (T5, MT5, Mistral), without transformers 4 (the whole models: bench/into_hf_sweep.py,
slow): PyTorch writes `x * rsqrt(mean(x.pow(2)) + eps) * w` (T5's, Mistral's in float32), TF `x * rsqrt(mean(square(x))
+ eps) * w` (T5) or `x / sqrt(mean(square(x)) + eps) * w` (Mistral). Both are one rms_norm layer, paired by where it
stands, its weight TF's vector. The padding mask is TF Mistral's `where(mask, 0, min)` (T5's: arithmetic), read
through on both sides. Against TensorFlow at two sequence lengths, the second row padded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tf_convert import app as convert

tf = pytest.importorskip("tensorflow")

VOCAB, WIDTH, EPS = 30, 8, 1e-6
HERE = "tests.app.test_into_rms_norm"
SHAPES = {"input_ids": (2, 7), "attention_mask": (2, 7)}


class T5LayerNorm(nn.Module):
    def __init__(self, eps: float = EPS):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(WIDTH))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


class MistralRMSNorm(T5LayerNorm):
    def forward(self, hidden_states):
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(torch.float32)


class Encoder(nn.Module):
    norm = T5LayerNorm

    def __init__(self, eps: float = EPS):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, WIDTH)
        self.layer_norm = self.norm(eps)
        self.dense = nn.Linear(WIDTH, WIDTH, bias=False)
        self.final_layer_norm = self.norm(eps)

    def forward(self, input_ids, attention_mask):
        x = self.embed_tokens(input_ids)
        x = x + self.dense(self.layer_norm(x))
        scores = x @ x.transpose(1, 2) + self.mask(attention_mask)[:, None, :]
        return self.final_layer_norm(torch.softmax(scores, dim=-1) @ x)

    @staticmethod
    def mask(attention_mask):
        return (1.0 - attention_mask.float()) * -1e9


class MistralEncoder(Encoder):
    norm = MistralRMSNorm

    @staticmethod
    def mask(attention_mask):
        return torch.where(attention_mask.bool(), 0.0, torch.finfo(torch.float32).min)


class HFMistralEncoder(MistralEncoder):
    """transformers' own MistralRMSNorm (T5LayerNorm is the same computation, cast first)."""

    @staticmethod
    def norm(eps: float):
        from transformers.models.mistral.modeling_mistral import MistralRMSNorm

        return MistralRMSNorm(WIDTH, eps)


class OtherEpsilon(Encoder):
    def __init__(self):
        super().__init__(eps=1e-2)


def _source(root: Path, divide: bool) -> Path:
    rng = np.random.default_rng(3)

    def variable(*shape, mean=0.0):
        return tf.Variable((mean + rng.normal(0.0, 0.5, shape)).astype(np.float32))

    def rms_norm(x, weight):
        variance = tf.reduce_mean(tf.square(x), axis=-1, keepdims=True)
        if divide:  # TF Mistral's
            return weight * tf.divide(x, tf.sqrt(variance + EPS))
        return weight * (x * tf.math.rsqrt(variance + EPS))  # TF T5's

    class Model(tf.Module):
        def __init__(self):
            super().__init__()
            self.table, self.kernel = variable(VOCAB, WIDTH), variable(WIDTH, WIDTH)
            self.norm, self.final_norm = variable(WIDTH, mean=1.0), variable(WIDTH, mean=1.0)

        @tf.function(input_signature=[tf.TensorSpec((None, None), tf.int32, name="input_ids"),
                                      tf.TensorSpec((None, None), tf.int32, name="attention_mask")])
        def __call__(self, input_ids, attention_mask):
            x = tf.gather(self.table, input_ids)
            x = x + tf.tensordot(rms_norm(x, self.norm), self.kernel, 1)
            if divide:  # TF Mistral's mask
                mask = tf.where(attention_mask[:, None, :] > 0, 0.0, tf.float32.min)
            else:
                mask = (1.0 - tf.cast(attention_mask[:, None, :], tf.float32)) * -1e9
            probs = tf.nn.softmax(tf.matmul(x, x, transpose_b=True) + mask, axis=-1)
            return {"last_hidden_state": rms_norm(tf.matmul(probs, x), self.final_norm)}

    path = root / ("divide" if divide else "rsqrt")
    model = Model()
    tf.saved_model.save(model, str(path), signatures={"serving_default": model.__call__})
    return path


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("rms_norm")
    return {"rsqrt": _source(root, divide=False), "divide": _source(root, divide=True)}


def _max_error(source: Path, model: nn.Module) -> float:
    signature = tf.saved_model.load(str(source)).signatures["serving_default"]
    worst = 0.0
    for steps in (7, 11):
        ids = np.random.default_rng(steps).integers(0, VOCAB, (2, steps)).astype(np.int32)
        mask = np.ones_like(ids)
        mask[1, -2:] = 0
        want = signature(input_ids=tf.constant(ids), attention_mask=tf.constant(mask))["last_hidden_state"].numpy()
        with torch.no_grad():
            got = model(torch.from_numpy(ids).long(), torch.from_numpy(mask).long()).numpy()
        worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
    return worst


@pytest.mark.parametrize("spelling, module", [("rsqrt", "Encoder"), ("divide", "MistralEncoder"),
                                              ("divide", "HFMistralEncoder")])
def test_rms_norms_pair_and_get_their_weights(sources, tmp_path, spelling, module):
    if module.startswith("HF"):
        pytest.importorskip("transformers")
    doc = convert.into(sources[spelling], f"{HERE}:{module}", tmp_path / "out", input_shape=SHAPES)
    records = {r["parameter"]: r for r in doc["parameters"]}
    assert {"layer_norm.weight", "final_layer_norm.weight"} <= set(records), records
    model = getattr(__import__(HERE, fromlist=[module]), module)().eval()
    model.load_state_dict(torch.load(tmp_path / "out" / "state_dict.pt"), strict=True)
    error = _max_error(sources[spelling], model)
    print(f"\nRMS norm, TF's {spelling} spelling into {module}: {error:.2g}")
    assert error < 1e-5, error


def test_an_rms_norm_with_another_epsilon_is_refused(sources, tmp_path):
    from tf_convert.convert.errors import ConvertError

    with pytest.raises(ConvertError) as failure:
        convert.into(sources["rsqrt"], f"{HERE}:OtherEpsilon", tmp_path / "out", input_shape=SHAPES)
    message = str(failure.value)
    assert failure.value.exit_code == 4 and "module path 'layer_norm': epsilon differs: the RMS norm adds 0.01 to " \
        "the mean square, TF adds 1e-06" in message, message


def _chain(square: str, exponent: int, from_end: int, root: str, outer: str):
    from tf_convert.app.into_module.layers import Layer, LayerGraph

    shape = (2, 7, WIDTH)
    chain = [Layer("x", "input", [], {}, shape),
             Layer("s", square, ["x"], {"exponent": exponent}, shape),
             Layer("m", "mean_1d", ["s"], {"reduced": WIDTH, "from_end": from_end, "offset": EPS}, shape[:2] + (1,)),
             Layer("r", root, ["m"], {}, shape[:2] + (1,)),
             Layer("out", outer, ["x", "r"], {}, shape)]
    return LayerGraph({layer.id: layer for layer in chain}, ["out"], ["x"])


@pytest.mark.parametrize("square, exponent, from_end, root, outer, fused", [
    ("other:pow", 2, -1, "other:rsqrt", "mul", True),
    ("other:square", 0, -1, "other:sqrt", "other:div", True),
    ("other:pow", 3, -1, "other:rsqrt", "mul", False),  # not a mean square
    ("other:square", 0, -2, "other:rsqrt", "mul", False),  # a mean over another axis
    ("other:square", 0, -1, "other:sqrt", "mul", False),  # x * sqrt(...): no norm
])
def test_only_the_rms_norm_spellings_fuse(square, exponent, from_end, root, outer, fused):
    from tf_convert.app.into_module.layers import fused_rms_norm

    layers = fused_rms_norm(_chain(square, exponent, from_end, root, outer)).layers
    assert (layers["out"].kind == "rms_norm") == fused, layers["out"]
    if fused:
        assert layers["out"].inputs == ["x"] and layers["out"].attrs == {"features": WIDTH, "epsilon": EPS}
        assert set(layers) == {"x", "out"}
