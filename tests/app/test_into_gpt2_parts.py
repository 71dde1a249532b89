"""`--into` with GPT-2's pieces, without transformers 4 (the whole model: tests/app/test_into_hf_tf.py, slow):
a TF graph that looks up ids in a table, applies a dense layer, the tanh GELU spelled out
(0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))) and a head tied to the table (a product with its transpose), into
modules written as Hugging Face writes GPT-2 (a Conv1D: `addmm` with an (in, out) weight, the GELU spelled out
with `pow`, `lm_head` tied to the embedding) and as people write it (nn.Linear, nn.GELU(approximate='tanh')).
Every number against TensorFlow at two sequence lengths."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tf_convert import app as convert

tf = pytest.importorskip("tensorflow")

VOCAB, WIDTH, HIDDEN = 30, 16, 24
HERE = "tests.app.test_into_gpt2_parts"


class Conv1D(nn.Module):
    """Hugging Face's Conv1D: a linear layer whose weight is stored (in, out)."""

    def __init__(self, nf: int, nx: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size = x.size()[:-1] + (self.weight.shape[1],)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(size)


class HfStyle(nn.Module):
    def __init__(self, tied: bool = True):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.c_fc = Conv1D(HIDDEN, WIDTH)
        self.c_proj = Conv1D(WIDTH, HIDDEN)
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
        if tied:
            self.lm_head.weight = self.wte.weight

    def forward(self, input_ids):
        x = self.c_fc(self.wte(input_ids))
        x = 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
        return self.lm_head(self.c_proj(x))


class TorchStyle(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.fc = nn.Linear(WIDTH, HIDDEN)
        self.act = nn.GELU(approximate="tanh")
        self.proj = nn.Linear(HIDDEN, WIDTH)
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, input_ids):
        return self.lm_head(self.proj(self.act(self.fc(self.wte(input_ids)))))


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    rng = np.random.default_rng(7)

    def variable(*shape):
        return tf.Variable(rng.normal(0.0, 0.5, shape).astype(np.float32))

    class Model(tf.Module):
        def __init__(self):
            super().__init__()
            self.table, self.fc, self.fc_b = variable(VOCAB, WIDTH), variable(WIDTH, HIDDEN), variable(HIDDEN)
            self.proj, self.proj_b = variable(HIDDEN, WIDTH), variable(WIDTH)

        @tf.function(input_signature=[tf.TensorSpec((None, None), tf.int32, name="input_ids")])
        def __call__(self, input_ids):
            x = tf.tensordot(tf.gather(self.table, input_ids), self.fc, 1) + self.fc_b
            x = 0.5 * x * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))
            x = tf.tensordot(x, self.proj, 1) + self.proj_b
            return {"logits": tf.matmul(x, self.table, transpose_b=True)}

    path = tmp_path_factory.mktemp("gpt2_parts") / "model"
    model = Model()
    tf.saved_model.save(model, str(path), signatures={"serving_default": model.__call__})
    return path


def _errors(source: Path, model: nn.Module) -> dict[int, float]:
    signature = tf.saved_model.load(str(source)).signatures["serving_default"]
    errors = {}
    for steps in (7, 11):
        ids = np.random.default_rng(steps).integers(0, VOCAB, (2, steps)).astype(np.int32)
        want = signature(input_ids=tf.constant(ids))["logits"].numpy()
        with torch.no_grad():
            got = model(torch.from_numpy(ids).long()).numpy()
        errors[steps] = float(np.abs(got - want).max() / np.abs(want).max())
    return errors


@pytest.mark.parametrize("name", ["HfStyle", "TorchStyle"])
def test_gpt2_pieces_into_hf_and_torch_style_modules(source, tmp_path, name):
    doc = convert.into(source, f"{HERE}:{name}", tmp_path / "out", input_shape="2,7")
    assert not doc["differences"], doc["differences"]
    kinds = {p["module"]: p["kind"] for p in doc["pairs"]}
    assert kinds["lm_head"] == "linear" and "act" in kinds.values(), kinds
    records = {r["parameter"]: r for r in doc["parameters"]}
    if name == "HfStyle":
        assert "(Hugging Face's Conv1D)" in records["c_fc.weight"]["transform"], records["c_fc.weight"]
    model = globals()[name]().eval()
    model.load_state_dict(torch.load(tmp_path / "out" / "state_dict.pt"), strict=True)
    errors = _errors(source, model)
    print(f"\nGPT-2 pieces into {name}: {errors}")
    assert max(errors.values()) < 1e-5, errors


def test_a_tied_head_that_tf_does_not_tie_is_refused(tmp_path):
    """The module ties lm_head to the embedding; TF multiplies by another matrix: exit 3 naming both."""
    from tf_convert.convert.errors import ConvertError

    rng = np.random.default_rng(8)

    class Untied(tf.Module):
        def __init__(self):
            super().__init__()
            self.table, self.head = (tf.Variable(rng.normal(0, 0.5, (VOCAB, WIDTH)).astype(np.float32))
                                     for _ in range(2))
            self.fc, self.fc_b = (tf.Variable(rng.normal(0, 0.5, s).astype(np.float32)) for s in ((WIDTH, HIDDEN),
                                                                                                 (HIDDEN,)))
            self.proj, self.proj_b = (tf.Variable(rng.normal(0, 0.5, s).astype(np.float32)) for s in ((HIDDEN, WIDTH),
                                                                                                     (WIDTH,)))

        @tf.function(input_signature=[tf.TensorSpec((None, None), tf.int32, name="input_ids")])
        def __call__(self, input_ids):
            x = tf.tensordot(tf.gather(self.table, input_ids), self.fc, 1) + self.fc_b
            x = tf.tensordot(tf.nn.gelu(x, approximate=True), self.proj, 1) + self.proj_b
            return {"logits": tf.matmul(x, self.head, transpose_b=True)}

    path = tmp_path / "untied"
    model = Untied()
    tf.saved_model.save(model, str(path), signatures={"serving_default": model.__call__})
    with pytest.raises(ConvertError) as failure:
        convert.into(path, f"{HERE}:TorchStyle", tmp_path / "out", input_shape="2,7")
    message = str(failure.value)
    assert failure.value.exit_code == 3 and "'wte.weight' and 'lm_head.weight' are one tensor (tied)" in message, \
        message
