"""Keras masks into recurrent layers: `Masking(mask_value)` and `Embedding(mask_zero=True)`
feeding LSTM / GRU / SimpleRNN / Bidirectional (return_sequences, return_state, go_backwards), the
mask passed on through Dense and stacked recurrent layers, and Masking's own output.

Inputs carry masked steps where padded data has them: at the start, in the middle and at the end.
Each fixture is saved as .keras, parsed without TensorFlow and compared with Keras: in the IR's
reference evaluator, then in every target runtime at two sequence lengths (Caffe refuses by name).
Run with `-s` to print the table of errors per fixture, length and target.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.ir_cases import rel_error
from tf_convert import emitters
from tf_convert.convert import ir
from tf_convert.convert.errors import UnsupportedError
from tf_convert.emitters.base import EmitOptions
from tf_convert.parsers.base import ParseOptions

RTOL = 1e-4
FEATURES = 3
VOCAB = 12
LENGTHS = (7, 11)


def _masked_lstm(keras, L):
    x = keras.Input((None, FEATURES))
    seq = L.LSTM(6, return_sequences=True)(L.Masking(0.0)(x))
    last, h, c = L.LSTM(4, return_state=True)(seq)
    return keras.Model(x, [seq, last, h, c])


def _masked_gru_backwards(keras, L):
    x = keras.Input((None, FEATURES))
    seq = L.GRU(5, return_sequences=True, go_backwards=True)(L.Masking(-1.0)(x))
    dense = L.Dense(4, activation="tanh")(seq)  # passes the mask on
    last = L.SimpleRNN(3, go_backwards=True)(dense)
    seq2, state = L.SimpleRNN(2, return_sequences=True, return_state=True, activation="relu")(dense)
    return keras.Model(x, [seq, last, seq2, state])


def _masked_cells_written_out(keras, L):
    x = keras.Input((None, FEATURES))
    m = L.Masking(0.0)(x)
    seq = L.GRU(4, return_sequences=True, reset_after=False)(m)
    last = L.LSTM(3, recurrent_activation="hard_sigmoid", go_backwards=True)(seq)
    return keras.Model(x, [seq, last, m])


def _masked_bidirectional(keras, L):
    x = keras.Input((None, FEATURES))
    seq = L.Bidirectional(L.LSTM(4, return_sequences=True))(L.Masking(0.0)(x))
    last = L.Bidirectional(L.GRU(3), merge_mode="sum")(seq)
    return keras.Model(x, [seq, last])


def _mask_zero_embedding(keras, L):
    ids = keras.Input((None,), dtype="int32")
    e = L.Embedding(VOCAB, 4, mask_zero=True)(ids)
    seq = L.GRU(5, return_sequences=True)(e)
    last, h, c = L.LSTM(3, return_state=True, go_backwards=True)(seq)
    both = L.Bidirectional(L.SimpleRNN(2, return_sequences=True), merge_mode="ave")(e)
    return keras.Model(ids, [seq, last, h, c, both])


def _mask_zero_tagger(keras, L):
    ids = keras.Input((None,), dtype="int32")
    seq = L.Bidirectional(L.LSTM(4, return_sequences=True))(L.Embedding(VOCAB, 4, mask_zero=True)(ids))
    return keras.Model(ids, L.Dense(3)(seq))


def _masked_average(keras, L):
    x = keras.Input((None, FEATURES))
    seq = L.GRU(4, return_sequences=True)(L.Masking(0.0)(x))
    pooled = L.GlobalAveragePooling1D()(L.Dense(3)(seq))  # the mean of the unmasked steps
    return keras.Model(x, [pooled, L.GlobalAveragePooling1D(keepdims=True)(seq)])


FIXTURES = {
    "masked_lstm": _masked_lstm,
    "masked_gru_backwards": _masked_gru_backwards,
    "masked_cells_written_out": _masked_cells_written_out,
    "masked_bidirectional": _masked_bidirectional,
    "mask_zero_embedding": _mask_zero_embedding,
    "mask_zero_tagger": _mask_zero_tagger,
    "masked_average": _masked_average,
}
MASK_VALUE = {"masked_gru_backwards": -1.0}  # the others mask 0.0 (or ids 0)
TOKENS = {"mask_zero_embedding", "mask_zero_tagger"}


@pytest.fixture(scope="module")
def keras():
    import keras

    keras.utils.set_random_seed(5)
    return keras


@pytest.fixture(scope="module")
def saved(keras, tmp_path_factory) -> dict[str, tuple[object, Path]]:
    """name -> (Keras model, its .keras file)."""
    root = tmp_path_factory.mktemp("masking")
    found = {}
    for name, build in FIXTURES.items():
        model = build(keras, keras.layers)
        rng = np.random.default_rng(len(name))
        model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
        model.save(root / f"{name}.keras")
        found[name] = (model, root / f"{name}.keras")
    return found


def masked_steps(length: int) -> list[list[int]]:
    """Per batch row, the masked steps: start, middle and end; leading padding; trailing padding."""
    return [[0, length // 2, length - 1], [0, 1], [length - 2, length - 1]]


def _feed(name: str, length: int) -> np.ndarray:
    rng = np.random.default_rng(length)
    rows = masked_steps(length)
    if name in TOKENS:
        ids = rng.integers(1, VOCAB, (len(rows), length)).astype(np.int32)
        for b, steps in enumerate(rows):
            ids[b, steps] = 0
        return ids
    x = rng.normal(0, 1, (len(rows), length, FEATURES)).astype(np.float32)
    for b, steps in enumerate(rows):
        x[b, steps] = MASK_VALUE.get(name, 0.0)
    x[2, 1, 0] = MASK_VALUE.get(name, 0.0)  # one feature at the mask value does not mask the step
    return x


def _reference(model, x: np.ndarray) -> list[np.ndarray]:
    out = model(x, training=False)
    return [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]


def _parse(path: Path, x: np.ndarray) -> ir.Graph:
    import tf_convert.parsers.keras as pk

    return pk.parse(path, ParseOptions(input_shapes={"": x.shape}))


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_parsed_graph_matches_keras(saved, name):
    model, path = saved[name]
    x = _feed(name, 7)
    graph = _parse(path, x)
    values = ir.evaluate(graph, [x if name in TOKENS else x.astype(np.float64)])
    refs = _reference(model, x)
    assert len(graph.outputs) == len(refs)
    for tensor, ref in zip(graph.outputs, refs):
        assert values[tensor].shape == ref.shape
        assert rel_error(values[tensor], ref) <= RTOL, (name, tensor)


def test_every_target_at_two_lengths(saved, tmp_path):
    """Each fixture in torch, ONNX and MXNet at two lengths, exact to RTOL; Caffe refuses by name."""
    table: list[str] = []
    for name in sorted(FIXTURES):
        model, path = saved[name]
        for length in LENGTHS:
            x = _feed(name, length)
            graph = _parse(path, x)
            refs = _reference(model, x)
            for target in emitters.TARGETS:
                emitter = emitters.get(target)
                refused = emitter.unsupported(graph)
                if target == "caffe":
                    assert refused and any("Caffe" in u.hint for u in refused), (name, refused)
                    table.append(f"{name:26} T={length:<3} {target:6} refused: {refused[0].hint[:60]}")
                    continue
                assert not refused, (name, target, refused)
                out = tmp_path / f"{name}-{length}-{target}"
                out.mkdir()
                emitter.emit(graph, out, EmitOptions())
                actual = emitter.run(out, [x])
                errors = [rel_error(np.asarray(a, np.float32), r) for a, r in zip(actual, refs)]
                table.append(f"{name:26} T={length:<3} {target:6} max_rel {max(errors):.2e}")
                assert max(errors) <= RTOL, (name, length, target, errors)
    print("\n" + "\n".join(table))


# layers Keras 3 hands the mask to (its `mask` keyword) that are not converted with one
REFUSED_WITH_MASK = {
    "time_distributed": lambda L: L.TimeDistributed(L.Dense(2), name="uses_mask"),
}


@pytest.mark.parametrize("name", sorted(REFUSED_WITH_MASK))
def test_other_layers_with_a_mask_are_refused_by_name(keras, tmp_path, name):
    import tf_convert.parsers.keras as pk

    L = keras.layers
    x = keras.Input((6, FEATURES))
    keras.Model(x, REFUSED_WITH_MASK[name](L)(L.Masking()(x))).save(tmp_path / "refused.keras")
    with pytest.raises(UnsupportedError) as err:
        pk.parse(tmp_path / "refused.keras", ParseOptions(input_shapes={"": (2, 6, FEATURES)}))
    by_layer = {u.node: u.hint for u in err.value.items}
    assert "step mask" in by_layer["uses_mask"]


@pytest.mark.parametrize("name, value", [("masked_lstm", 0.0), ("masked_gru_backwards", -1.0),
                                         ("mask_zero_embedding", 0)])
def test_verify_inputs_hold_masked_steps(saved, name, value):
    """--verify's random inputs get the mask value at whole steps (start, middle, end), so the mask is exercised."""
    from tf_convert.app import verify

    graph = _parse(saved[name][1], _feed(name, 11))
    x = verify.make_inputs(graph)[0]
    for row in range(x.shape[0]):
        steps = x[row] == value if x.ndim == 2 else np.all(x[row] == value, axis=-1)
        masked = set(np.flatnonzero(steps))
        assert 3 <= len(masked) < x.shape[1], (row, masked)


# (fixtures whose outputs come from distinct layers: --verify names an output by its layer)
@pytest.mark.parametrize("name, target", [("masked_bidirectional", "tf2torch"), ("mask_zero_tagger", "tf2onnx"),
                                          ("masked_cells_written_out", "tf2mxnet")])
def test_cli_verify_passes(saved, tmp_path, name, target):
    """End to end: the CLI converts a masked model and --verify (masked steps planted) passes (exit 0)."""
    from click.testing import CliRunner

    from tf_convert import cli

    shape = "1,9" if name in TOKENS else f"1,9,{FEATURES}"
    result = CliRunner().invoke(cli.main, [target, str(saved[name][1]), "-o", str(tmp_path / target),
                                           "--input-shape", shape, "--verify"])
    assert result.exit_code == 0, result.output


def _as_keras2(model, path: Path) -> Path:
    """The model as a Keras 2 .h5 has it: masks implicit (no NotEqual/Any operations, no `mask`
    keywords), keras_version 2.x. Keras 3 writes .h5 files only; this rewrites one."""
    import json

    import h5py

    model.save(path)
    with h5py.File(path, "r+") as f:
        config = json.loads(f.attrs["model_config"])
        layers = config["config"]["layers"]
        config["config"]["layers"] = [layer for layer in layers if not str(layer.get("module", "")).startswith(
            "keras.src.ops")]
        for layer in config["config"]["layers"]:
            for node in layer.get("inbound_nodes", []):
                node.get("kwargs", {}).pop("mask", None)
        f.attrs["model_config"] = json.dumps(config)
        f.attrs["keras_version"] = "2.15.0"
    return path


@pytest.mark.parametrize("name", ["masked_lstm", "masked_gru_backwards", "masked_bidirectional", "mask_zero_tagger",
                                  "masked_average"])
def test_keras2_implicit_masks(saved, tmp_path, name):
    """Keras 2 files leave masks implicit: the parser propagates them (Masking/Embedding -> Dense ->
    recurrent layers returning sequences -> ...) to the same numbers."""
    model = saved[name][0]
    x = _feed(name, 11)
    graph = _parse(_as_keras2(model, tmp_path / f"{name}.h5"), x)
    values = ir.evaluate(graph, [x if name in TOKENS else x.astype(np.float64)])
    for tensor, ref in zip(graph.outputs, _reference(model, x), strict=True):
        assert rel_error(values[tensor], ref) <= RTOL, (name, tensor)


def test_keras2_mask_into_other_layers_is_refused(keras, tmp_path):
    L = keras.layers
    x = keras.Input((6, FEATURES))
    model = keras.Model(x, L.Conv1D(2, 3, name="uses_mask")(L.Masking()(x)))
    import tf_convert.parsers.keras as pk

    with pytest.raises(UnsupportedError) as err:
        pk.parse(_as_keras2(model, tmp_path / "conv.h5"), ParseOptions(input_shapes={"": (2, 6, FEATURES)}))
    assert "step mask" in {u.node: u.hint for u in err.value.items}["uses_mask"]
