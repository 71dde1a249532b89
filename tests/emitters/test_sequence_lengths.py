"""A length-free 1-D model converted at one length is exact at every length.

Each fixture is a small Keras model saved at length 13. Converted once, the PyTorch and ONNX models run
at lengths 13, 14, 21 and 40 and are compared with Keras run at those lengths (the same layers and
weights with a free length). MXNet bakes its pads as for 2-D models: it converts at each length
(`--input-shape`) and the model converted at 13 refuses another length. A model that bakes its length
(Flatten -> Dense) stays length-bound and every target refuses another length loudly. Run with `-s` to
see the error table.
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
CONVERT_LENGTH = 13
LENGTHS = (13, 14, 21, 40)  # the conversion's, +1 (flips SAME's odd pad), larger
VOCABULARY = 50


def _causal(keras, length):
    """The issue's model: strided SAME Conv1D, SAME pooling, a causal dilated Conv1D, global pooling."""
    layers = keras.layers
    inp = keras.Input((length, 4))
    x = layers.Conv1D(6, 3, strides=2, padding="same")(inp)
    x = layers.ReLU()(x)
    x = layers.MaxPooling1D(2, padding="same")(x)
    x = layers.Conv1D(5, 3, padding="causal", dilation_rate=2)(x)
    y = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, y)


def _text_cnn(keras, length):
    """Token ids -> Embedding -> Conv1D SAME stride 2 -> GlobalMaxPooling1D -> Dense."""
    layers = keras.layers
    inp = keras.Input((length,), dtype="int32")
    x = layers.Embedding(VOCABULARY, 8)(inp)
    x = layers.Conv1D(6, 3, strides=2, padding="same", activation="relu")(x)
    y = layers.Dense(3)(layers.GlobalMaxPooling1D()(x))
    return keras.Model(inp, y)


def _sequence_out(keras, length):
    """A sequence output (its length follows the input's): padding, power-of-two up-sampling, strides."""
    layers = keras.layers
    inp = keras.Input((length, 3))
    x = layers.Conv1D(4, 4, strides=2, padding="same", activation="tanh")(inp)
    x = layers.UpSampling1D(2)(x)
    x = layers.ZeroPadding1D((1, 2))(x)
    x = layers.AveragePooling1D(3, strides=2, padding="same")(x)
    y = layers.Conv1D(2, 3, strides=3, padding="same")(x)
    return keras.Model(inp, y)


def _flatten_dense(keras, length):
    """Flatten -> Dense bakes the length."""
    layers = keras.layers
    inp = keras.Input((length, 4))
    x = layers.Conv1D(6, 3, strides=2, padding="same")(inp)
    y = layers.Dense(3)(layers.Flatten(name="flatten")(x))
    return keras.Model(inp, y)


def _upsampling3(keras, length):
    layers = keras.layers
    inp = keras.Input((length, 4))
    return keras.Model(inp, layers.UpSampling1D(3)(layers.Conv1D(2, 3, padding="same")(inp)))


def _cropping(keras, length):
    layers = keras.layers
    inp = keras.Input((length, 4))
    return keras.Model(inp, layers.Cropping1D((1, 2), name="cropping1d")(layers.Conv1D(2, 3, padding="same")(inp)))


def _lstm(keras, length):
    layers = keras.layers
    inp = keras.Input((length, 4))
    return keras.Model(inp, layers.LSTM(3)(layers.Conv1D(2, 3, strides=2, padding="same")(inp)))


FIXTURES = {"causal": _causal, "text_cnn": _text_cnn, "sequence_out": _sequence_out,
            "flatten_dense": _flatten_dense, "upsampling3": _upsampling3, "cropping": _cropping, "lstm": _lstm}
FREE = ("causal", "text_cnn", "sequence_out", "lstm")
# fixture -> what size_bound must say: None (length-free) or a phrase naming the node that bakes the length
BOUND = {
    "causal": None,
    "text_cnn": None,
    "sequence_out": None,
    "flatten_dense": "'flatten' (reshape) bakes",
    "upsampling3": "(resize) resizes to a fixed size",  # x3: no exact constant-factor resize in torch/ONNX
    "cropping": "'cropping1d' (slice) bakes",  # as Cropping2D: a static slice
    "lstm": None,  # torch's and ONNX's recurrent layers loop over the runtime length (test_sequence_free.py)
}


@pytest.fixture(scope="module")
def saved(keras, tmp_path_factory):
    """fixture -> (the .keras file at CONVERT_LENGTH, the same model with a free length where it has one)."""
    work = tmp_path_factory.mktemp("lengths")
    found = {}
    for name, build in FIXTURES.items():
        model = build(keras, CONVERT_LENGTH)
        path = work / f"{name}.keras"
        model.save(path)
        free = model  # a length-bound model runs at its own length only
        if name in FREE:
            free = free_twin(build, keras, model, None)
        found[name] = (path, free)
    return found


def _convert(path: Path, length: int | None = None):
    from tf_convert.convert import passes
    from tf_convert.parsers import keras as keras_parser
    from tf_convert.parsers.base import ParseOptions

    shapes = {} if length is None else {"": (1, length, *_feature_shape(path))}
    graph = keras_parser.parse(path, ParseOptions(input_shapes=shapes))
    graph.validate()
    return passes.run_default_passes(graph)


def _feature_shape(path: Path) -> tuple[int, ...]:
    return () if path.stem == "text_cnn" else ((3,) if path.stem == "sequence_out" else (4,))


def _feed(path: Path, length: int) -> np.ndarray:
    rng = np.random.default_rng(length)
    if path.stem == "text_cnn":
        return rng.integers(0, VOCABULARY, (1, length)).astype(np.int32)
    return rng.standard_normal((1, length, *_feature_shape(path))).astype(np.float32)


@pytest.mark.parametrize("fixture", list(BOUND))
def test_size_bound_follows_the_sequence_axis(saved, fixture):
    assert_bound_as_expected(_convert(saved[fixture][0]), BOUND[fixture])


@pytest.mark.parametrize("target", ["torch", "onnx"])
@pytest.mark.parametrize("fixture", FREE)
def test_converted_once_exact_at_every_length(saved, tmp_path, fixture, target):
    path, free = saved[fixture]
    graph = _convert(path)
    emitter = emitters.get(target)
    assert emitter.emit(graph, tmp_path, EmitOptions()).size_bound is None
    errors = {}
    for length in LENGTHS:
        feed = _feed(path, length)
        actual = emitter.run(tmp_path, [feed])[0]
        expected = np.asarray(free(feed, training=False))
        assert np.shape(actual) == expected.shape, (length, np.shape(actual), expected.shape)
        errors[length] = rel_error(actual, expected)
    print(f"\n{fixture} {target} converted at {CONVERT_LENGTH}: "
          + "; ".join(f"L={n} {e:.2e}" for n, e in errors.items()))
    assert max(errors.values()) <= RTOL, errors


@pytest.mark.parametrize("fixture", FREE)
def test_mxnet_converts_at_each_length_and_refuses_another(saved, tmp_path, fixture):
    """MXNet bakes the pads (as for 2-D): exact at each --input-shape, loud at any other length."""
    path, free = saved[fixture]
    emitter = emitters.get("mxnet")
    errors = {}
    for length in LENGTHS:
        out = tmp_path / str(length)
        out.mkdir()
        emitter.emit(_convert(path, length), out, EmitOptions())
        feed = _feed(path, length)
        errors[length] = rel_error(emitter.run(out, [feed])[0], free(feed, training=False))
    print(f"\n{fixture} mxnet converted at each length: " + "; ".join(f"L={n} {e:.2e}" for n, e in errors.items()))
    assert max(errors.values()) <= RTOL, errors
    with pytest.raises(Exception):  # noqa: B017 - MXNet's own shape error, whichever layer meets it first
        emitter.run(tmp_path / str(CONVERT_LENGTH), [_feed(path, 14)])


@pytest.mark.parametrize("target", ["torch", "onnx", "mxnet"])
def test_length_bound_model_refuses_other_lengths(saved, tmp_path, target):
    path, free = saved["flatten_dense"]
    emitter = emitters.get(target)
    emitter.emit(_convert(path), tmp_path, EmitOptions())
    feed = _feed(path, CONVERT_LENGTH)
    assert rel_error(emitter.run(tmp_path, [feed])[0], free(feed, training=False)) <= RTOL
    match = r"converted for size \[13, 4\].*'flatten'" if target == "torch" else None
    with pytest.raises(Exception, match=match):  # each runtime's own error
        emitter.run(tmp_path, [_feed(path, 14)])


@pytest.mark.parametrize("fixture,target", [("causal", "torch"), ("text_cnn", "onnx")])
def test_verify_compares_at_two_other_lengths(saved, tmp_path, fixture, target):
    path, _ = saved[fixture]
    out = tmp_path / "out"
    run = run_cli(f"tf2{target}", str(path), "-o", str(out), "--verify")
    assert run.returncode == 0, run.stderr
    assert "at 3 sizes" in run.stdout and "any length" in run.stdout, run.stdout
    doc = json.loads((out / "conversion.json").read_text())
    assert doc["input_sizes"] == {"spatial": "any", "batch": "any", "free": "length"}
    shapes = [s["input_shapes"][0][:2] for s in doc["verify"]["sizes"]]
    assert shapes == [[2, 14], [2, 17]] and all(s["passed"] for s in doc["verify"]["sizes"])
    if target == "torch":
        source = (out / "model.py").read_text()
        assert "Runs at any batch and length" in source and ".unsqueeze(2)" in source
