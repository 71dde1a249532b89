"""TFLite's recurrent kernels and loops, resizes with every flag, TRANSPOSE_CONV with its bias and SQUEEZE, each
in a file TFLite's converter writes the way users make them (tf.keras LSTMs become UNIDIRECTIONAL_SEQUENCE_LSTM,
Keras 3's LSTM/GRU/SimpleRNN and tf.while_loop become WHILE), run in every target against TFLite's interpreter;
Caffe converts or refuses by name. A loop whose trip count depends on the data stays a run-time loop."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tests.support.tflite_flatbuffers import rnn_file
from tf_convert import emitters, parsers
from tf_convert.convert.errors import UnsupportedError
from tf_convert.convert.passes import run_default_passes
from tf_convert.emitters.base import EmitOptions
from tf_convert.emitters.mxnet.runtime import run_many
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tflite import run_reference_sets

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# (align_corners, half_pixel_centers): every combination TF allows (both set is refused by TF itself)
FLAGS = ((False, False), (True, False), (False, True))
SIZES = ((9, 11), (10, 12), (3, 4), (2, 3), (5, 6), (1, 7))  # up odd / even, down, down odd, same, one row


def _tf_keras_lstms(work: Path) -> Path:
    """tf.keras LSTMs (UNIDIRECTIONAL_SEQUENCE_LSTM, cell_clip 10; each costs the converter seconds, so two): a
    time-major one over 12 steps (past the clip's reach: unrolled), one over 6 (the IR's lstm) returning its
    last state."""
    import tensorflow as tf
    import tf_keras as keras

    keras.utils.set_random_seed(0)
    layers = keras.layers
    steps, batch = keras.Input((1, 3), batch_size=12), keras.Input((6, 3), batch_size=1)
    outputs = [layers.LSTM(4, time_major=True, return_sequences=True)(steps),
               layers.LSTM(3)(batch)]
    model = keras.Model([steps, batch], outputs)
    path = work / "tf_keras_lstms.tflite"
    path.write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
    return path


def _keras3_loops(work: Path) -> Path:
    """Keras 3's recurrent layers: TFLite's converter writes each as a WHILE over a static length."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    layers = keras.layers
    x = keras.Input((6, 3), batch_size=1)
    outputs = [layers.LSTM(4, return_sequences=True)(x), layers.GRU(3)(x),
               layers.GRU(3, reset_after=False, go_backwards=True, return_sequences=True)(x),
               layers.Bidirectional(layers.SimpleRNN(2, return_sequences=True))(x)]
    path = work / "keras3_loops.tflite"
    path.write_bytes(tf.lite.TFLiteConverter.from_keras_model(keras.Model(x, outputs)).convert())
    return path


def _functions() -> dict:
    import tensorflow as tf

    f32 = tf.float32
    rng = np.random.default_rng(5)
    filt = tf.constant(rng.standard_normal((3, 3, 4, 3)).astype(np.float32) * 0.4)  # (H, W, out, in)
    bias = tf.constant(rng.standard_normal(4).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec((1, 5, 3), f32)])
    def counted_loop(x):
        _, y = tf.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, y * 0.5 + tf.tanh(y)), [0, x])
        return y

    @tf.function(input_signature=[tf.TensorSpec((1, 5, 6, 2), f32)])
    def resizes(x):
        outs = []
        for align, half in FLAGS:
            for size in SIZES:
                outs.append(tf.compat.v1.image.resize_bilinear(x, size, align, half_pixel_centers=half))
                outs.append(tf.compat.v1.image.resize_nearest_neighbor(x, size, align, half_pixel_centers=half))
        return outs

    @tf.function(input_signature=[tf.TensorSpec((1, 4, 5, 3), f32)])
    def transpose_conv(x):
        y = tf.nn.conv2d_transpose(x, filt, (1, 8, 10, 4), 2, padding="SAME") + bias
        z = tf.nn.conv2d_transpose(x, filt, (1, 9, 11, 4), 2, padding="VALID") + bias
        return tf.nn.relu(y), z

    @tf.function(input_signature=[tf.TensorSpec((None, 1, None, 1), f32)])  # free sizes: SQUEEZE, not RESHAPE
    def squeeze(x):
        return tf.squeeze(x, axis=1) * 2.0, tf.squeeze(x, axis=[1, 3]) + 1.0

    return {"counted_loop": counted_loop, "resizes": resizes, "transpose_conv": transpose_conv, "squeeze": squeeze}


# the kernels TFLite's converter no longer writes, in files of one operator each (tests.support)
WRITTEN = {
    "rnn_step": {"kind": "rnn"},
    "sequence_rnn": {"kind": "seq_rnn"},
    "sequence_rnn_time_major_relu": {"kind": "seq_rnn", "major": True, "activation": 1},
    "bidirectional_rnn": {"kind": "bi_rnn"},
    "bidirectional_rnn_merged_time_major": {"kind": "bi_rnn", "merge": True, "major": True},
    "bidirectional_lstm": {"kind": "bi_lstm"},
    "bidirectional_lstm_merged_time_major": {"kind": "bi_lstm", "major": True, "merge": True},
    "bidirectional_lstm_clipped": {"kind": "bi_lstm", "clip": 0.5, "t": 7},
    "lstm_relu_clipped": {"kind": "uni_lstm", "activation": 1, "clip": 0.5},
}
WRITTEN_BUILTINS = {"rnn": "RNN", "seq_rnn": "UNIDIRECTIONAL_SEQUENCE_RNN", "bi_rnn": "BIDIRECTIONAL_SEQUENCE_RNN",
                    "bi_lstm": "BIDIRECTIONAL_SEQUENCE_LSTM", "uni_lstm": "UNIDIRECTIONAL_SEQUENCE_LSTM"}

BUILTINS = {
    "tf_keras_lstms": {"UNIDIRECTIONAL_SEQUENCE_LSTM"},
    "keras3_loops": {"WHILE", "REVERSE_V2"},
    "counted_loop": {"WHILE"},
    "resizes": {"RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"},
    "transpose_conv": {"TRANSPOSE_CONV"},
    "squeeze": {"SQUEEZE"},
    **{name: {WRITTEN_BUILTINS[kw["kind"]]} for name, kw in WRITTEN.items()},
}
INPUT_SHAPES = {"squeeze": {"": (1, 1, 5, 1)}}  # a file with free sizes converts at a size given
# Caffe (OpenCV's dialect) converts these; the rest it converts exactly or refuses by name (recurrent cells,
# int64 positions, the resizes OpenCV's grid cannot reproduce)
CAFFE_CONVERTS = {"transpose_conv", "counted_loop", "squeeze"}


def _input_sets(graph) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(0)
    noise = [[rng.standard_normal(graph.shape(n)).astype(np.float32) * scale for n in graph.inputs]
             for scale in (1.0, 3.0)]  # x3: a long sequence's cell state grows past the clip
    return noise


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    import tensorflow as tf

    work = tmp_path_factory.mktemp("kernels")
    found = {"tf_keras_lstms": _tf_keras_lstms(work), "keras3_loops": _keras3_loops(work)}
    for name, fn in _functions().items():
        found[name] = work / f"{name}.tflite"
        found[name].write_bytes(tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()],
                                                                                  fn).convert())

    @tf.function(input_signature=[tf.TensorSpec((1, 4), tf.float32)])
    def data_loop(x):
        return tf.while_loop(lambda y: tf.reduce_sum(y) < 100.0, lambda y: y * 2.0 + 1.0, [x])[0]

    for name, kw in WRITTEN.items():
        found[name] = work / f"{name}.tflite"
        found[name].write_bytes(rnn_file(**kw))
    found["data_loop"] = work / "data_loop.tflite"
    found["data_loop"].write_bytes(tf.lite.TFLiteConverter.from_concrete_functions(
        [data_loop.get_concrete_function()], data_loop).convert())
    return found


@pytest.fixture(scope="module")
def measured(files, tmp_path_factory) -> dict[str, dict[str, float | str]]:
    """case -> target -> the largest |a - b| / max|b| over its outputs and input sets (Caffe: or its refusal)."""
    from tf_convert.parsers.tflite.schema import read

    work = tmp_path_factory.mktemp("kernel_targets")
    found: dict[str, dict[str, float | str]] = {}
    mxnet_jobs = []
    for name, held_wanted in BUILTINS.items():
        path = files[name]
        held = {o.name for s in read(path).subgraphs for o in s.operators}
        assert held_wanted <= held, (name, held)
        graph = run_default_passes(parsers.parse(path, ParseOptions(input_shapes=INPUT_SHAPES.get(name, {}))))
        sets = _input_sets(graph)
        expected = run_reference_sets(path, graph, sets)  # one interpreter: its variables reset every run
        found[name] = {}
        for target in emitters.TARGETS:
            out = work / name / target
            out.mkdir(parents=True)
            options = EmitOptions(caffe_dialect="opencv") if target == "caffe" else EmitOptions()
            refused = emitters.get(target).unsupported(graph, options)
            if refused:  # what the CLI checks before it writes anything
                found[name][target] = "; ".join(f"{r.op}: {r.hint}" for r in refused)
                continue
            emitters.get(target).emit(graph, out, options)
            if target == "mxnet":
                mxnet_jobs += [(name, out, inputs, want) for inputs, want in zip(sets, expected)]
                continue
            found[name][target] = _worst(_run_sets(target, out, sets), expected)
    outputs = run_many([(out, inputs) for _, out, inputs, _ in mxnet_jobs])
    for (name, _, _, want), got in zip(mxnet_jobs, outputs):
        found[name]["mxnet"] = max(found[name].get("mxnet", 0.0), _worst([got], [want]))
    return found


def _run_sets(target: str, out: Path, sets: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    emitter = emitters.get(target)
    if hasattr(emitter, "run_sets"):
        return emitter.run_sets(out, sets)
    return [emitter.run(out, inputs) for inputs in sets]


def _worst(actual: list[list[np.ndarray]], expected: list[list[np.ndarray]]) -> float:
    worst = 0.0
    for got, want in zip(actual, expected):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            a = np.asarray(a).reshape(b.shape)
            scale = float(np.max(np.abs(b), initial=0.0)) or 1.0
            worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - b), initial=0.0)) / scale)
    return worst


@pytest.mark.parametrize("name", list(BUILTINS))
def test_every_target_matches_the_interpreter(measured, name):
    found = measured[name]
    print(name, {t: f"{e:.2e}" if isinstance(e, float) else e for t, e in found.items()})
    exact = [t for t in emitters.TARGETS if t != "caffe" or name in CAFFE_CONVERTS]
    # copies and resamples are exact; a matmul, a recurrence or an interpolation within float32 rounding
    assert all(isinstance(found[t], float) and found[t] <= 2e-6 for t in exact), found
    caffe = found["caffe"]  # elsewhere: exact where it converts (an unrolled cell), else refused by name
    assert (isinstance(caffe, str) and caffe) or caffe <= 2e-6, caffe


def test_the_unrolled_loops_leave_no_loop(files):
    """Keras 3's WHILE loops are unrolled at the file's own length; tf.keras's long LSTM (12 steps, past the
    clip's reach) is unrolled with its clip, the short ones stay the IR's lstm."""
    loops = parsers.parse(files["keras3_loops"], ParseOptions())
    assert not any(n.op in ("lstm", "gru", "rnn") for n in loops.nodes)
    lstms = parsers.parse(files["tf_keras_lstms"], ParseOptions())
    cells = [n for n in lstms.nodes if n.op == "lstm"]
    assert len(cells) == 1 and sum(n.op == "clip" for n in lstms.nodes) == 12


def test_a_loop_counted_by_the_data_stays_a_loop(files):
    """Not unrolled: one run-time while_loop (tests/parsers/test_tflite_control_flow.py runs such loops)."""
    graph = parsers.parse(files["data_loop"], ParseOptions())
    assert [n.op for n in graph.nodes] == ["while_loop"], [n.op for n in graph.nodes]


@pytest.mark.parametrize("variant,named", [("peephole", "peephole connections"), ("projection", "a projection layer"),
                                           ("layer_norm", "layer normalisation"), ("cifg", "CIFG")])
def test_lstm_variants_the_cells_do_not_compute_are_refused_by_name(tmp_path, variant, named):
    path = tmp_path / f"{variant}.tflite"
    path.write_bytes(rnn_file("uni_lstm", variant=variant))
    with pytest.raises(UnsupportedError, match=named):
        parsers.parse(path, ParseOptions())
