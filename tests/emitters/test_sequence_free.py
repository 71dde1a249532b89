"""Sequence models converted at one length run at every length and batch in PyTorch and ONNX.

Keras models as users write them (Keras 3 `.keras` and Keras 2 style `.h5`), each saved at the odd length
11: a BiLSTM tagger with TimeDistributed(Dense), a GRU text classifier, a small transformer encoder block,
Dense on token sequences, the recurrent variants (GRU reset_after=False, SimpleRNN go_backwards, LSTM
states) and Keras's Attention / AdditiveAttention. Converted once, the PyTorch and ONNX models run at
lengths 11, 12, 17 and 30 with batch 2 and are compared with Keras run there (the same layers and weights
with a free length). A Dense on (N, L, C) is a linear over the last axis (no reshape that folds L into the
batch); the recurrent layers loop over the runtime length (torch's nn.LSTM/GRU/RNN or the written-out
cell, ONNX's LSTM/GRU/RNN); attention splits its heads off the last axis and multiplies L x L scores at
the runtime L.

What stays length-bound, and refuses other lengths loudly: a masked recurrent layer (ONNX unrolls the step
mask over the conversion's length), TimeDistributed of anything but Dense (time folded into the batch by a
fixed reshape), the TF1 BERT encoder (its position table is sliced to the conversion's length, as TF itself
does: `tf.slice(table, [0, 0], [seq, -1])` with a static seq; the node named is its token-type one_hot,
which comes first). MXNet and Caffe bake every size. Run with
`-s` to see the error table.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.ir_cases import rel_error
from tests.support.size_following import assert_bound_as_expected, free_twin, run_cli
from tf_convert import emitters
from tf_convert.emitters.base import EmitOptions

RTOL = 1e-5
CONVERT_LENGTH = 11
LENGTHS = (11, 12, 17, 30)  # the conversion's, +1, larger
BATCH = 2
VOCABULARY = 20


def _tagger(keras, length):
    """A BiLSTM tagger: Bidirectional(LSTM, return_sequences) -> TimeDistributed(Dense) per step."""
    layers = keras.layers
    inp = keras.Input((length, 4))
    x = layers.Bidirectional(layers.LSTM(5, return_sequences=True))(inp)
    return keras.Model(inp, layers.TimeDistributed(layers.Dense(3, activation="softmax"))(x))


def _gru_classifier(keras, length):
    """Token ids -> Embedding -> GRU -> Dense softmax."""
    layers = keras.layers
    inp = keras.Input((length,), dtype="int32")
    x = layers.GRU(6)(layers.Embedding(VOCABULARY, 8)(inp))
    return keras.Model(inp, layers.Dense(3, activation="softmax")(x))


def _transformer(keras, length):
    """One encoder block: Embedding, self-attention, residual + LayerNormalization, Dense FFN, pooling."""
    layers = keras.layers
    inp = keras.Input((length,), dtype="int32")
    x = layers.Embedding(VOCABULARY, 8)(inp)
    attended = layers.MultiHeadAttention(num_heads=2, key_dim=4)(x, x)
    x = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([x, attended]))
    ffn = layers.Dense(8)(layers.Dense(16, activation="relu")(x))
    x = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([x, ffn]))
    return keras.Model(inp, layers.Dense(2)(layers.GlobalAveragePooling1D()(x)))


def _dense_tokens(keras, length):
    """Dense on (N, L, C) features, a sequence output: no reshape folds L into the batch."""
    layers = keras.layers
    inp = keras.Input((length, 4))
    x = layers.Conv1D(6, 3, strides=2, padding="same")(inp)
    return keras.Model(inp, layers.Dense(3, activation="tanh")(layers.Dense(5, activation="relu")(x)))


def _dense_only(keras, length):
    """Dense layers on (N, L, C) features alone: a model Caffe runs too (InnerProduct with `axis`)."""
    layers = keras.layers
    inp = keras.Input((length, 4))
    return keras.Model(inp, layers.Dense(3)(layers.Dense(5, activation="relu")(inp)))


def _recurrent_variants(keras, length):
    """GRU reset_after=False (the written-out cell) going backwards, SimpleRNN, LSTM with its states."""
    layers = keras.layers
    inp = keras.Input((length, 4))
    x = layers.GRU(5, reset_after=False, return_sequences=True, go_backwards=True)(inp)
    x = layers.SimpleRNN(4, return_sequences=True, go_backwards=True)(x)
    y, h, c = layers.LSTM(3, return_state=True)(x)
    return keras.Model(inp, [y, h, c])


def _attention_layers(keras, length):
    """Keras's Attention (dot, scaled) and AdditiveAttention over Dense-projected tokens."""
    layers = keras.layers
    inp = keras.Input((length, 4))
    x = layers.Dense(6)(inp)
    dot = layers.Attention(use_scale=True)([x, x])
    additive = layers.AdditiveAttention()([x, dot])
    return keras.Model(inp, layers.Add()([dot, additive]))


def _masked(keras, length):
    """Embedding(mask_zero=True) -> LSTM: the step mask is run over the conversion's length."""
    layers = keras.layers
    inp = keras.Input((length,), dtype="int32")
    return keras.Model(inp, layers.LSTM(3)(layers.Embedding(VOCABULARY, 4, mask_zero=True)(inp)))


def _time_distributed_conv(keras, length):
    """TimeDistributed(Conv1D) folds time into the batch with a fixed reshape."""
    layers = keras.layers
    inp = keras.Input((length, 6, 2))
    x = layers.TimeDistributed(layers.Conv1D(3, 3, padding="same"), name="td_conv")(inp)
    return keras.Model(inp, layers.GlobalAveragePooling2D()(x))


FIXTURES = {"tagger": _tagger, "gru_classifier": _gru_classifier, "transformer": _transformer,
            "dense_tokens": _dense_tokens, "dense_only": _dense_only, "recurrent_variants": _recurrent_variants,
            "attention_layers": _attention_layers, "masked": _masked, "time_distributed_conv": _time_distributed_conv}
FREE = ("tagger", "gru_classifier", "transformer", "dense_tokens", "dense_only", "recurrent_variants",
        "attention_layers")
TOKENS = ("gru_classifier", "transformer", "masked")
# fixture -> a phrase of size_bound naming why it stays at its conversion length (FREE: None)
BOUND = {name: None for name in FREE} | {
    "masked": "(lstm) runs a step mask over the conversion's length",
    "time_distributed_conv": "'td_conv",
}
SUFFIXES = (".keras", ".h5")


@pytest.fixture(scope="module")
def saved(keras, tmp_path_factory):
    """(fixture, suffix) -> (the file saved at CONVERT_LENGTH, the same model with a free length where it has one)."""
    work = tmp_path_factory.mktemp("free")
    found = {}
    for name, build in FIXTURES.items():
        model = build(keras, CONVERT_LENGTH)
        free = model  # a length-bound model runs at its own length only
        if name in FREE:
            free = free_twin(build, keras, model, None)
        for suffix in SUFFIXES:
            path = work / f"{name}{suffix}"
            model.save(path)
            found[name, suffix] = (path, free)
    return found


def _convert(path: Path):
    from tf_convert.convert import passes
    from tf_convert.parsers import keras as keras_parser
    from tf_convert.parsers.base import ParseOptions

    graph = keras_parser.parse(path, ParseOptions(input_shapes={}))
    graph.validate()
    return passes.run_default_passes(graph)


def _feed(name: str, length: int, batch: int = BATCH) -> np.ndarray:
    rng = np.random.default_rng(length)
    if name in TOKENS:
        return rng.integers(0, VOCABULARY, (batch, length)).astype(np.int32)
    return rng.standard_normal((batch, length, 4)).astype(np.float32)


@pytest.mark.parametrize("fixture", list(BOUND))
def test_size_bound_follows_the_sequence_axis(saved, fixture):
    assert_bound_as_expected(_convert(saved[fixture, ".keras"][0]), BOUND[fixture])


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("target", ["torch", "onnx"])
@pytest.mark.parametrize("fixture", FREE)
def test_converted_once_exact_at_every_length_and_batch(saved, tmp_path, fixture, target, suffix):
    path, free = saved[fixture, suffix]
    emitter = emitters.get(target)
    assert emitter.emit(_convert(path), tmp_path, EmitOptions()).size_bound is None
    errors = {}
    for length in LENGTHS:
        feed = _feed(fixture, length)
        actual = emitter.run(tmp_path, [feed])
        expected = free(feed, training=False)
        expected = [np.asarray(e) for e in (expected if isinstance(expected, (list, tuple)) else [expected])]
        assert [np.shape(a) for a in actual] == [e.shape for e in expected], length
        errors[length] = max(rel_error(a, e) for a, e in zip(actual, expected))
    print(f"\n{fixture}{suffix} {target} converted at {CONVERT_LENGTH}, batch {BATCH}: "
          + "; ".join(f"L={n} {e:.2e}" for n, e in errors.items()))
    assert max(errors.values()) <= RTOL, errors


@pytest.mark.parametrize("target", ["torch", "onnx", "mxnet"])
@pytest.mark.parametrize("fixture", ["masked", "tagger", "recurrent_variants"])
def test_bound_targets_refuse_other_lengths(saved, tmp_path, fixture, target):
    """A masked layer stays at its length in every target, at any batch; MXNet bakes every model's length
    (its recurrent states take the runtime batch: fused RNN and the unrolled cell)."""
    if fixture != "masked" and target != "mxnet":
        pytest.skip("length-free in torch and ONNX")
    path, model = saved[fixture, ".keras"]
    emitter = emitters.get(target)
    emitter.emit(_convert(path), tmp_path, EmitOptions())
    feed = _feed(fixture, CONVERT_LENGTH)
    if fixture == "masked":
        feed[0, :3] = 0  # masked steps at the start of one row: the other row runs every step
    expected = model(feed, training=False)
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    error = max(rel_error(a, e) for a, e in zip(emitter.run(tmp_path, [feed]), expected))
    print(f"\n{fixture} {target} at L={CONVERT_LENGTH}, batch {BATCH}: {error:.2e}")
    assert error <= RTOL
    match = r"converted for size \[11\].*step mask" if target == "torch" else None
    with pytest.raises(Exception, match=match):  # each runtime's own error
        emitter.run(tmp_path, [_feed(fixture, CONVERT_LENGTH + 1)])


@pytest.mark.parametrize("target", ["caffe", "mxnet"])
def test_dense_on_tokens_in_the_static_targets(saved, tmp_path, target):
    """Caffe and MXNet run the last-axis linear at the conversion length (any batch) and refuse another."""
    path, model = saved["dense_only", ".keras"]
    emitter = emitters.get(target)
    emitter.emit(_convert(path), tmp_path, EmitOptions())
    feed = _feed("dense_only", CONVERT_LENGTH)
    error = rel_error(emitter.run(tmp_path, [feed])[0], model(feed, training=False))
    print(f"\ndense_only {target} at L={CONVERT_LENGTH}, batch {BATCH}: {error:.2e}")
    assert error <= RTOL
    with pytest.raises(Exception):  # noqa: B017 - each runtime's own error
        emitter.run(tmp_path, [_feed("dense_only", CONVERT_LENGTH + 1)])


def test_tf1_bert_stays_bound_to_its_length(tmp_path):
    """BERT slices its position table to the static sequence length: TF too runs it at that length only."""
    from tests.support import bert
    from tf_convert.convert import passes
    from tf_convert.convert.padding.sizes import size_bound
    from tf_convert.parsers import tensorflow as tf_parser
    from tf_convert.parsers.base import ParseOptions

    _, infer = bert.build_bert(tmp_path, bert.BertConfig(layers=1), batch=1, train_seq=6, infer_seq=7)
    graph = tf_parser.parse(infer, ParseOptions(inputs=list(bert.INPUTS), outputs=["bert/pooler/Tanh"]))
    bound = size_bound(passes.run_default_passes(graph))
    assert bound is not None, "BERT's position slice binds the length"
    print(f"\nTF1 BERT: {bound}")


@pytest.mark.parametrize("fixture,target", [("tagger", "torch"), ("transformer", "onnx")])
def test_verify_compares_at_two_other_lengths(saved, tmp_path, fixture, target):
    path, _ = saved[fixture, ".h5"]
    out = tmp_path / "out"
    run = run_cli(f"tf2{target}", str(path), "-o", str(out), "--verify")
    assert run.returncode == 0, run.stderr
    assert "at 3 sizes" in run.stdout and "any length" in run.stdout, run.stdout
    doc = json.loads((out / "conversion.json").read_text())
    assert doc["input_sizes"] == {"spatial": "any", "batch": "any", "free": "length"}
    shapes = [s["input_shapes"][0][:2] for s in doc["verify"]["sizes"]]
    assert shapes == [[2, 12], [2, 14]] and all(s["passed"] for s in doc["verify"]["sizes"])
