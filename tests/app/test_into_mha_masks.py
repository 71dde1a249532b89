"""`--into` a module built the default way around torch's own nn.MultiheadAttention, called with masks
(`key_padding_mask` from the attention_mask input, a causal `attn_mask` it builds itself), from TF's
matmul-softmax-matmul attention that adds `(1 - mask) * -1e9` (and its causal mask, a constant at the
conversion's length) to the scores. The masks reach the record as the module call's keywords; the fused
in_proj_weight gets TF's query/key/value kernels. Every number against TensorFlow at two sequence lengths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tf_convert import app as convert
from tf_convert.convert.errors import ConvertError

tf = pytest.importorskip("tensorflow")

TARGET = "tests.app.test_into_mha_masks:MaskedMhaEncoder"
VOCAB, WIDTH, HEADS = 30, 16, 2


class MaskedMhaEncoder(nn.Module):
    """Embedding + nn.MultiheadAttention as people write it: padding keys masked by `attention_mask == 0`, and,
    `causal`, later keys by a boolean upper triangle."""

    def __init__(self, vocab: int = VOCAB, width: int = WIDTH, heads: int = HEADS, causal: bool = False):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.causal = causal

    def forward(self, input_ids, attention_mask):
        x = self.embed(input_ids)
        steps = input_ids.shape[1]
        causal = torch.ones(steps, steps, dtype=torch.bool).triu(1) if self.causal else None
        out, _ = self.attn(x, x, x, key_padding_mask=attention_mask == 0, attn_mask=causal, need_weights=False)
        return out


class BiasedMhaEncoder(MaskedMhaEncoder):
    """A constant float bias passed as attn_mask: something TF's graph does not add."""

    def forward(self, input_ids, attention_mask):
        x = self.embed(input_ids)
        bias = torch.full((input_ids.shape[1],) * 2, 0.5)
        return self.attn(x, x, x, key_padding_mask=attention_mask == 0, attn_mask=bias, need_weights=False)[0]


def _savedmodel(path: Path, causal: bool, seed: int) -> Path:
    """TF's attention written out (BERT's way): q, k, v and output projections as tensordots with biases."""
    rng = np.random.default_rng(seed)
    head = WIDTH // HEADS

    def variable(*shape):
        return tf.Variable(rng.normal(0.0, 0.5, shape).astype(np.float32))

    class Encoder(tf.Module):
        def __init__(self):
            super().__init__()
            self.table = variable(VOCAB, WIDTH)
            self.kernels = [variable(WIDTH, WIDTH) for _ in range(4)]
            self.biases = [variable(WIDTH) for _ in range(4)]

        @tf.function(input_signature=[tf.TensorSpec((None, None), tf.int32, name="input_ids"),
                                      tf.TensorSpec((None, None), tf.int32, name="attention_mask")])
        def __call__(self, input_ids, attention_mask):
            x = tf.gather(self.table, input_ids)
            batch, steps = tf.shape(input_ids)[0], tf.shape(input_ids)[1]

            def project(y, k):
                return tf.tensordot(y, self.kernels[k], 1) + self.biases[k]

            def heads(y):
                return tf.transpose(tf.reshape(y, (batch, steps, HEADS, head)), (0, 2, 1, 3))

            q, k, v = (heads(project(x, i)) for i in range(3))
            scores = tf.matmul(q, k, transpose_b=True) * head ** -0.5
            scores += (1.0 - tf.cast(attention_mask[:, None, None, :], tf.float32)) * -1e9
            if causal:
                positions = tf.range(steps)
                lower = tf.cast(positions[:, None] >= positions[None, :], tf.float32)
                scores += (1.0 - lower) * -1e9
            context = tf.matmul(tf.nn.softmax(scores), v)
            return {"output": project(tf.reshape(tf.transpose(context, (0, 2, 1, 3)), (batch, steps, WIDTH)), 3)}

    module = Encoder()
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.__call__})
    return path


def _feeds(steps: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.ones((2, steps), np.int32)
    mask[1, steps - 3:] = 0  # the second row padded at its end; every row keeps a key
    return {"input_ids": rng.integers(0, VOCAB, (2, steps)).astype(np.int32), "attention_mask": mask}


@pytest.mark.parametrize("causal", [False, True], ids=["padding", "padding+causal"])
def test_masked_tf_attention_into_nn_multihead_attention(tmp_path, causal):
    source = _savedmodel(tmp_path / "encoder", causal, seed=3)
    shapes = {"input_ids": (2, 7), "attention_mask": (2, 7)}
    doc = convert.into(source, TARGET, tmp_path / "out", kwargs={"causal": causal}, input_shape=shapes)
    assert not doc["differences"], doc["differences"]
    records = {r["parameter"]: r for r in doc["parameters"]}
    assert {f"attn.in_proj_weight[{16 * i}:{16 * (i + 1)}]" for i in range(3)} <= set(records)
    model = MaskedMhaEncoder(causal=causal).eval()
    model.load_state_dict(torch.load(tmp_path / "out" / "state_dict.pt"), strict=True)
    signature = tf.saved_model.load(str(source)).signatures["serving_default"]
    errors = {}
    for steps in (7, 11):
        feeds = _feeds(steps, steps)
        want = signature(**{k: tf.constant(v) for k, v in feeds.items()})["output"].numpy()
        with torch.no_grad():
            got = model(**{k: torch.from_numpy(v).long() for k, v in feeds.items()}).numpy()
        errors[steps] = float(np.abs(got - want).max() / np.abs(want).max())
    print(f"\nmasked attention into nn.MultiheadAttention (causal={causal}): {errors}")
    assert max(errors.values()) < 1e-5, errors


def test_a_constant_bias_passed_as_attn_mask_is_refused(tmp_path):
    """A float attn_mask the inputs do not reach that is no mask (a bias): refused naming the module, exit 3."""
    source = _savedmodel(tmp_path / "encoder", False, seed=3)
    with pytest.raises(ConvertError) as failure:
        convert.into(source, "tests.app.test_into_mha_masks:BiasedMhaEncoder", tmp_path / "out",
                     input_shape={"input_ids": (2, 7), "attention_mask": (2, 7)})
    message = str(failure.value)
    assert failure.value.exit_code == 3 and "attn" in message and "a bias, not a mask" in message, message
