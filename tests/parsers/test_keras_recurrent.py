"""Keras recurrent models: LSTM, GRU (both reset_after modes), SimpleRNN,
Bidirectional, TimeDistributed, RepeatVector, return_sequences / return_state / go_backwards.

Each fixture is built here with random weights, saved as .keras and .h5, parsed without TensorFlow
and checked against Keras: through the IR's reference evaluator, then in every target runtime at
two sequence lengths. A target that cannot express a cell must refuse it by name (exit 3).
Run with `-s` to print the table of errors per fixture and target.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tf_convert import emitters
from tf_convert.app import verify
from tf_convert.convert import ir
from tf_convert.convert.errors import UnsupportedError
from tf_convert.emitters.base import EmitOptions
from tf_convert.parsers.base import ParseOptions

RTOL = 1e-4
FEATURES = 3
LENGTHS = (6, 11)


def _lstm_tagger(keras, L):
    x = keras.Input((None, FEATURES))
    y = L.LSTM(8, return_sequences=True)(x)
    y = L.LSTM(5, return_sequences=True, go_backwards=True)(y)
    return keras.Model(x, L.TimeDistributed(L.Dense(4, activation="softmax"))(y))


def _gru_tagger(keras, L):
    x = keras.Input((None, FEATURES))
    y = L.GRU(6, return_sequences=True)(x)  # reset_after=True: torch's and MXNet's GRU
    return keras.Model(x, L.Dense(3)(y))


def _gru_reset_before(keras, L):
    x = keras.Input((None, FEATURES))
    y = L.GRU(6, return_sequences=True, reset_after=False)(x)
    return keras.Model(x, L.GRU(4, go_backwards=True, reset_after=False)(y))


def _bidirectional_tagger(keras, L):
    x = keras.Input((None, FEATURES))
    y = L.Bidirectional(L.LSTM(6, return_sequences=True))(x)
    y = L.Bidirectional(L.GRU(4, return_sequences=True), merge_mode="sum")(y)
    return keras.Model(x, L.TimeDistributed(L.Dense(3))(y))


def _states(keras, L):
    x = keras.Input((None, FEATURES))
    seq, h, c = L.LSTM(5, return_sequences=True, return_state=True)(x)
    last, gh = L.GRU(4, return_state=True, go_backwards=True)(seq)
    rnn = L.SimpleRNN(3, activation="relu")(L.RepeatVector(2)(gh))
    return keras.Model(x, [seq, h, c, last, rnn])


def _hard_sigmoid(keras, L):
    x = keras.Input((None, FEATURES))
    y = L.Bidirectional(L.LSTM(4, recurrent_activation="hard_sigmoid"), merge_mode="ave")(x)
    return keras.Model(x, y)


FIXTURES = {
    "lstm_tagger": _lstm_tagger,
    "gru_tagger": _gru_tagger,
    "gru_reset_before": _gru_reset_before,
    "bidirectional_tagger": _bidirectional_tagger,
    "states": _states,
    "hard_sigmoid": _hard_sigmoid,
}
# target -> fixtures it refuses, and a word its reason must contain
REFUSED = {
    "caffe": {name: "Caffe" for name in FIXTURES},
}


@pytest.fixture(scope="module")
def keras():
    import keras

    keras.utils.set_random_seed(3)
    return keras


@pytest.fixture(scope="module")
def saved(keras, tmp_path_factory) -> dict[str, tuple[object, Path]]:
    """name -> (Keras model, directory holding <name>.keras and <name>.h5)."""
    root = tmp_path_factory.mktemp("sequence")
    found = {}
    for name, build in FIXTURES.items():
        model = build(keras, keras.layers)
        rng = np.random.default_rng(len(name))
        model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
        for suffix in (".keras", ".h5"):
            model.save(root / f"{name}{suffix}")
        found[name] = (model, root)
    return found


def _feed(length: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 1, (2, length, FEATURES)).astype(np.float32)


def _reference(model, x: np.ndarray) -> list[np.ndarray]:
    out = model(x, training=False)
    return [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]


def _parse(path: Path, length: int) -> ir.Graph:
    import tf_convert.parsers.keras as pk

    return pk.parse(path, ParseOptions(input_shapes={"": (2, length, FEATURES)}))


def _rel(a: np.ndarray, ref: np.ndarray) -> float:
    return verify.metrics(np.asarray(a, np.float32), ref)["max_rel"]


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_parsed_graph_matches_keras(saved, name, suffix):
    model, root = saved[name]
    x = _feed(7)
    graph = _parse(root / f"{name}{suffix}", 7)
    values = ir.evaluate(graph, [x.astype(np.float64)])
    refs = _reference(model, x)
    assert len(graph.outputs) == len(refs)
    for tensor, ref in zip(graph.outputs, refs):
        assert values[tensor].shape == ref.shape
        assert _rel(values[tensor], ref) <= RTOL, (name, suffix, tensor)


def test_every_target_at_two_lengths(saved, tmp_path):
    """Each fixture in each target runtime at two sequence lengths: exact to RTOL, or refused by name."""
    table: list[str] = []
    for name in sorted(FIXTURES):
        model, root = saved[name]
        for length in LENGTHS:
            graph = _parse(root / f"{name}.keras", length)
            x = _feed(length, seed=length)
            refs = _reference(model, x)
            for target in emitters.TARGETS:
                emitter = emitters.get(target)
                refused = emitter.unsupported(graph)
                if name in REFUSED.get(target, {}):
                    assert refused and all(REFUSED[target][name] in u.hint for u in refused), (name, target, refused)
                    table.append(f"{name:22} T={length:<3} {target:6} refused: {refused[0].hint}")
                    continue
                assert not refused, (name, target, refused)
                out = tmp_path / f"{name}-{length}-{target}"
                out.mkdir()
                emitter.emit(graph, out, EmitOptions())
                actual = emitter.run(out, [x])
                errors = [_rel(a, r) for a, r in zip(actual, refs)]
                table.append(f"{name:22} T={length:<3} {target:6} max_rel {max(errors):.2e}")
                assert max(errors) <= RTOL, (name, length, target, errors)
    print("\n" + "\n".join(table))


def test_refusals_name_the_layer(keras, tmp_path):
    """A mask into a layer not converted with one, and stateful layers, are refused (exit 3), each by
    name, all at once (Masking into recurrent layers: tests/parsers/test_keras_masking.py)."""
    import tf_convert.parsers.keras as pk

    L = keras.layers
    x = keras.Input((6, FEATURES), batch_size=2)  # stateful layers need a static batch
    masked = L.TimeDistributed(L.Dense(4), name="after_mask")(L.Masking(name="mask")(x))
    stateful = L.GRU(3, stateful=True, name="kept_state")(x)
    keras.Model(x, [masked, stateful]).save(tmp_path / "refused.keras")
    with pytest.raises(UnsupportedError) as err:
        pk.parse(tmp_path / "refused.keras", ParseOptions(input_shapes={"": (2, 6, FEATURES)}))
    by_layer = {u.node: u.hint for u in err.value.items}
    assert "step mask" in by_layer["after_mask"]
    assert "stateful" in by_layer["kept_state"]


def test_cli_converts_and_verifies(saved, tmp_path):
    """End to end: `convert tf2onnx` and `tf2torch` on a Keras tagger with --verify (exit 0)."""
    from click.testing import CliRunner

    from tf_convert import cli

    _, root = saved["bidirectional_tagger"]
    for target in ("tf2torch", "tf2onnx"):
        out = tmp_path / target
        result = CliRunner().invoke(cli.main, [target, str(root / "bidirectional_tagger.h5"), "-o", str(out),
                                               "--input-shape", f"1,9,{FEATURES}", "--verify"])
        assert result.exit_code == 0, result.output


def test_layers_diff_compares_sequence_tensors(saved, tmp_path):
    """`convert verify --layers` fetches each recurrent layer's (N, T, F) output from Keras and diffs it."""
    from click.testing import CliRunner

    from tf_convert import cli

    _, root = saved["lstm_tagger"]
    out = tmp_path / "onnx"
    runner = CliRunner()
    converted = runner.invoke(cli.main, ["tf2onnx", str(root / "lstm_tagger.keras"), "-o", str(out),
                                         "--input-shape", f"1,7,{FEATURES}", "--verify"])
    assert converted.exit_code == 0, converted.output
    result = runner.invoke(cli.main, ["verify", str(out), "--layers"])
    assert result.exit_code == 0, result.output
    # Keras numbers layer names per process (lstm, lstm_3, ...): find the rows by op and shape
    rows = [line.split() for line in result.output.splitlines() if line.strip()]
    lstm_rows = [r for r in rows if len(r) > 3 and r[1] == "lstm"]
    assert len(lstm_rows) == 2 and any(r[3] == "1x7x8" for r in lstm_rows), result.output
    assert "no divergence" in result.output


@pytest.mark.parametrize("outputs", [None, "lstm:2", "lstm:1,lstm"])
def test_verify_tells_apart_the_outputs_of_one_layer(keras, tmp_path, outputs):
    """LSTM(return_state=True) gives three model outputs from one layer (sequence, h, c): --verify compares
    each with its own Keras output, and `--outputs layer:k` picks the layer's k-th output."""
    from click.testing import CliRunner

    from tf_convert import cli

    x = keras.Input((7, 3))
    seq, h, c = keras.layers.LSTM(4, return_sequences=True, return_state=True, name="lstm")(x)
    path = tmp_path / "states.keras"
    keras.Model(x, [seq, h, c]).save(path)
    args = ["tf2onnx", str(path), "-o", str(tmp_path / "out"), "--verify"]
    result = CliRunner().invoke(cli.main, args + (["--outputs", outputs] if outputs else []))
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "out" / "conversion.json").read_text())
    shapes = {None: [[1, 7, 4], [1, 4], [1, 4]], "lstm:2": [[1, 4]], "lstm:1,lstm": [[1, 4], [1, 7, 4]]}[outputs]
    assert [o["shape"] for o in doc["outputs"]] == shapes
