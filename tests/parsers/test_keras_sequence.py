"""Keras token models: Embedding, MultiHeadAttention, Attention, AdditiveAttention,
LayerNormalization and training-form Dropout, saved as .keras and .h5, and a Keras 2 text CNN (Embedding,
Conv1D of several widths, ZeroPadding1D((0, k-1)), Maximum, Dense), compared with Keras itself in every
target runtime at two sequence lengths. Caffe (BVLC) has no gather: it refuses by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.every_target import errors_per_target
from tf_convert.convert.ir import check
from tf_convert.parsers.base import ParseOptions

RTOL = 1e-4
VOCAB, WIDTH = 23, 8
ERRORS: dict[str, dict[str, float]] = {}  # "<model> <file> seq <n>" -> target -> max_rel, printed at the end


@pytest.fixture(scope="module")
def keras():
    import keras

    keras.utils.set_random_seed(11)
    yield keras
    for name, errors in ERRORS.items():
        print(f"\n{name}: " + ", ".join(f"{t} {e:.2e}" for t, e in errors.items()))


def _randomise(model) -> None:
    """Non-trivial weights everywhere (Keras initialises biases and LayerNorm to 0/1)."""
    rng = np.random.default_rng(5)
    model.set_weights([rng.normal(0, 0.4, w.shape).astype(np.float32) for w in model.get_weights()])


def attention_encoder(keras):
    """ids -> Embedding -> Dropout(training=True) -> self MultiHeadAttention (+ residual, LayerNorm)
    -> cross MultiHeadAttention (key given) -> Attention (dot, scaled) -> Attention (concat) ->
    AdditiveAttention; the output is the whole sequence (any length)."""
    layers = keras.layers
    ids = keras.Input((None,), dtype="int32", name="ids")
    x = layers.Embedding(VOCAB, WIDTH, name="emb")(ids)
    x = layers.Dropout(0.3, name="drop")(x, training=True)
    a = layers.MultiHeadAttention(2, 4, dropout=0.2, name="self_attention")(x, x)
    x = layers.LayerNormalization(epsilon=1e-6, name="ln")(layers.Add(name="residual")([x, a]))
    side = layers.Dense(6, name="side")(x)
    x = layers.MultiHeadAttention(3, 5, value_dim=2, output_shape=7, name="cross")(x, side, key=x)
    b = layers.Attention(use_scale=True, name="luong")([x, x])
    c = layers.Attention(score_mode="concat", use_scale=True, name="luong_concat")([x, b])
    d = layers.AdditiveAttention(name="bahdanau")([c, x, b])
    return keras.Model(ids, layers.Add(name="out")([b, d]))


def causal_decoder(keras):
    """Decoder-style self-attention with use_causal_mask=True in MultiHeadAttention, Attention and
    AdditiveAttention (each query sees the keys up to its own position)."""
    layers = keras.layers
    ids = keras.Input((None,), dtype="int32", name="ids")
    x = layers.Embedding(VOCAB, WIDTH, name="emb")(ids)
    x = layers.Add(name="residual")([x, layers.MultiHeadAttention(2, 4, name="mha")(x, x, use_causal_mask=True)])
    b = layers.Attention(use_scale=True, name="luong")([x, x], use_causal_mask=True)
    return keras.Model(ids, layers.AdditiveAttention(name="bahdanau")([b, x], use_causal_mask=True))


def text_dense(keras, seq: int):
    """Keras-2-style text classifier: float ids (Keras casts them), Embedding, Dense branches of two
    activations, Maximum, Flatten, Dense (the float-id path; text_cnn is the Conv1D form)."""
    layers = keras.layers
    ids = keras.Input((seq,), name="tokens")
    x = layers.Embedding(VOCAB, WIDTH, name="emb")(ids)
    branches = [layers.Dense(5, activation=act, name=f"branch_{act}")(x) for act in ("relu", "tanh")]
    y = layers.Flatten(name="flat")(layers.Maximum(name="max")(branches))
    return keras.Model(ids, layers.Dense(3, name="logits")(y))


def text_cnn(keras):
    """Keras 2 text CNN: int ids -> Embedding -> SpatialDropout1D -> Conv1D of widths 2, 3, 5 (valid) ->
    ZeroPadding1D((0, k-1)) back to the sequence length -> Maximum -> Dense per token; any length."""
    layers = keras.layers
    ids = keras.Input((None,), dtype="int32", name="tokens")
    x = layers.SpatialDropout1D(0.2, name="sdrop")(layers.Embedding(VOCAB, WIDTH, name="emb")(ids))
    branches = [
        layers.ZeroPadding1D((0, k - 1), name=f"pad{k}")(layers.Conv1D(6, k, activation="relu", name=f"conv{k}")(x))
        for k in (2, 3, 5)
    ]
    return keras.Model(ids, layers.Dense(3, name="logits")(layers.Maximum(name="max")(branches)))


def _ids(shape, seed: int, dtype) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, VOCAB, shape).astype(dtype)


def _check(model, path: Path, seqs: list[int], dtype, name: str, work: Path) -> None:
    import tf_convert.parsers.keras as pk

    for seq in seqs:
        ids = _ids((2, seq), seq, dtype)
        expected = [np.asarray(model(ids, training=False))]
        graph = pk.parse(path, ParseOptions(input_shapes={"": (2, seq)}))
        graph.validate()
        assert check.problems(graph) == []
        assert graph.tensors[graph.inputs[0]].dtype == ("int32" if dtype == np.int32 else "float32")
        out = work / f"{path.name}-{seq}"
        out.mkdir()
        errors = errors_per_target(graph, [ids], expected, out, refused=("caffe",))
        ERRORS[f"{name} {path.suffix} seq {seq}"] = errors
        assert max(errors.values()) <= RTOL, (path.name, seq, errors)


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_attention_encoder_every_target(keras, suffix, tmp_path):
    model = attention_encoder(keras)
    _randomise(model)
    path = tmp_path / f"encoder{suffix}"
    model.save(path)
    _check(model, path, [7, 12], np.int32, "attention encoder", tmp_path)


def test_causal_decoder_every_target(keras, tmp_path):
    model = causal_decoder(keras)
    _randomise(model)
    path = tmp_path / "decoder.keras"
    model.save(path)
    _check(model, path, [5, 10], np.int32, "causal decoder", tmp_path)


def test_attention_mask_input_every_target(keras, tmp_path):
    """MultiHeadAttention with an int32 attention_mask model input (batch, queries, keys), 0/1 as --verify
    feeds it, plus use_causal_mask=True on top; two sequence lengths; rows masked whole, with scores far
    above 32 (where adding -1e9 instead of replacing the score would round differently)."""
    import tf_convert.parsers.keras as pk

    layers = keras.layers
    ids, mask = keras.Input((None,), dtype="int32", name="ids"), keras.Input((None, None), dtype="int32", name="mask")
    x = layers.Embedding(VOCAB, WIDTH, name="emb")(ids)
    y = layers.MultiHeadAttention(2, 4, name="padded")(x, x, attention_mask=mask)
    y = layers.MultiHeadAttention(2, 3, name="both")(y, x, attention_mask=mask, use_causal_mask=True)
    # with dropout Keras runs its Softmax layer, which treats a query masked whole otherwise
    y = layers.MultiHeadAttention(2, 3, dropout=0.1, name="dropout")(y, x, attention_mask=mask, use_causal_mask=True)
    y = layers.MultiHeadAttention(2, 4, dropout=0.1, name="dropout_padded")(y, y, attention_mask=mask)
    model = keras.Model([ids, mask], y)
    _randomise(model)
    emb = model.get_layer("emb")
    emb.set_weights([w * 8 for w in emb.get_weights()])  # scores of tens to hundreds
    path = tmp_path / "masked.keras"
    model.save(path)
    for seq in (6, 11):
        rng = np.random.default_rng(seq)
        feeds = [_ids((2, seq), seq, np.int32), rng.integers(0, 2, (2, seq, seq)).astype(np.int32)]
        feeds[1][:, 1, :] = 0  # a query whose keys are all masked (uniform, or zeros with dropout)
        feeds[1][:, 2, :2] = 0  # ... and, under the causal mask, one whose only causal keys are masked
        graph = pk.parse(path, ParseOptions(input_shapes={"ids": (2, seq), "mask": (2, seq, seq)}))
        assert check.problems(graph) == [] and [graph.tensors[n].dtype for n in graph.inputs] == ["int32", "int32"]
        out = tmp_path / f"seq{seq}"
        out.mkdir()
        errors = errors_per_target(graph, feeds, [np.asarray(model(feeds, training=False))], out, refused=("caffe",))
        ERRORS[f"masked attention .keras seq {seq}"] = errors
        assert max(errors.values()) <= RTOL, (seq, errors)


def test_text_classifier_float_ids_every_target(keras, tmp_path):
    for seq in (9, 13):
        model = text_dense(keras, seq)
        _randomise(model)
        path = tmp_path / f"text{seq}.h5"
        model.save(path)
        _check(model, path, [seq], np.float32, "text classifier (float ids)", tmp_path)


def test_text_cnn_every_target(keras, tmp_path):
    model = text_cnn(keras)
    _randomise(model)
    path = tmp_path / "text_cnn.h5"
    model.save(path)
    _check(model, path, [9, 16], np.int32, "text CNN", tmp_path)


@pytest.mark.parametrize("build, hint", [
    # mask_zero=True converts (tests/parsers/test_keras_masking.py); a layer it cannot hand the mask to is refused
    (lambda k, ids: k.layers.TimeDistributed(k.layers.Dense(2))(k.layers.Embedding(VOCAB, WIDTH, mask_zero=True)(ids)),
     "step mask"),
    (lambda k, ids: (lambda x: k.layers.MultiHeadAttention(2, 4)(x, x, return_attention_scores=True)[0])(
        k.layers.Embedding(VOCAB, WIDTH)(ids)), "return_attention_scores=True"),
])
def test_masks_are_refused_by_name(keras, tmp_path, build, hint):
    from tests.app.test_cli import run_cli

    ids = keras.Input((6,), dtype="int32")
    path = tmp_path / "m.keras"
    keras.Model(ids, build(keras, ids)).save(path)
    code, _, stderr = run_cli("tf2torch", path, "-o", tmp_path / "out")
    assert code == 3 and hint in stderr, stderr
