"""Audio front ends end to end: TF graphs built with tf.signal as audio code writes them (stft with its default
Hann window, magnitude, a mel matrix, log, a conv net; mfccs; inverse_stft), a Keras model with the front end
inside (exported as a SavedModel, as YAMNet-style taggers ship), through the parser and every target's real
runtime against TF.

A DFT is two products with constant cos/sin tables in every target (parsers/tensorflow/ops/spectral.py): the
sums of TF's FFT in another order, so the targets agree with TF to a few float32 roundings (max relative error
<= 2e-5 here, measured ~3e-6 on the log-mel). Caffe refuses (the framing's gather reads int32 indices)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tf_convert import emitters, parsers
from tf_convert.app import verify
from tf_convert.convert import passes
from tf_convert.emitters.base import EmitOptions
from tf_convert.parsers.base import ParseOptions

tf = pytest.importorskip("tensorflow")
TOLERANCE = 2e-5
MUST_TAKE = ("torch", "onnx", "mxnet")


def _errors(source, names: list[str] | None, tmp_path) -> dict:
    """target -> {output: max relative error against TF} or the target's refusal."""
    graph = passes.run_default_passes(parsers.parse(source, ParseOptions(outputs=names)))
    inputs = verify.make_inputs(graph)
    expected = parsers.run_reference(source, graph, inputs)
    found = {}
    for target in emitters.TARGETS:
        emitter = emitters.get(target)
        refused = emitter.unsupported(graph)
        if refused:
            found[target] = f"{refused[0].op}: {refused[0].hint}"
            continue
        out = tmp_path / target
        out.mkdir()
        emitter.emit(graph, out, EmitOptions())
        found[target] = {graph.source_names.get(n, n): verify.metrics(np.asarray(a), b)["max_rel"]
                         for n, a, b in zip(graph.outputs, emitter.run(out, inputs), expected)}
    print(json.dumps(found, indent=1))
    for target in MUST_TAKE:
        assert isinstance(found[target], dict) and max(found[target].values()) <= TOLERANCE, (target, found[target])
    assert isinstance(found["caffe"], str) and found["caffe"]
    return found


def _frozen(path, build, inputs: dict) -> list[str]:
    graph = tf.Graph()
    with graph.as_default():
        ph = {n: tf.compat.v1.placeholder(tf.float32, s, name=n) for n, s in inputs.items()}
        names = [tf.identity(t, name=name).name for name, t in build(ph).items()]
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return names


def _log_mel(signal):
    """stft (default Hann window) -> magnitude -> 40 mel bands -> log, (batch, frames, 40)."""
    magnitude = tf.abs(tf.signal.stft(signal, 256, 128, 256))
    mel = tf.signal.linear_to_mel_weight_matrix(40, 129, 16000, 20.0, 4000.0)
    return tf.math.log(tf.tensordot(magnitude, mel, 1) + 1e-6)


def _net(log_mel):
    """A conv net on the log-mel image, as a spectrogram classifier."""
    rng = np.random.default_rng(0)
    w1 = rng.uniform(-0.3, 0.3, (3, 3, 1, 6)).astype(np.float32)
    w2 = rng.uniform(-0.3, 0.3, (3, 3, 6, 8)).astype(np.float32)
    y = tf.nn.relu(tf.nn.conv2d(log_mel[..., None], w1, 1, "SAME"))
    y = tf.nn.max_pool2d(y, 2, 2, "SAME")
    y = tf.nn.relu(tf.nn.conv2d(y, w2, 2, "SAME"))
    return tf.reduce_mean(y, [1, 2])


def test_log_mel_conv_net_at_two_signal_lengths(tmp_path):
    def build(ph):
        out = {}
        for name, x in ph.items():
            features = _log_mel(x)
            out[f"{name}_logmel"], out[f"{name}_mfcc"] = features, tf.signal.mfccs_from_log_mel_spectrograms(features)
            out[f"{name}_scores"] = _net(features)
        return out

    pb = tmp_path / "audio.pb"
    names = _frozen(pb, build, {"short": [2, 4000], "long": [1, 6001]})
    _errors(str(pb), names, tmp_path)


def test_inverse_stft_round_trip_and_complex_parts(tmp_path):
    def build(ph):
        x = ph["signal"]
        spectrum = tf.signal.stft(x, 256, 64, 256)
        back = tf.signal.inverse_stft(spectrum, 256, 64, 256, window_fn=tf.signal.inverse_stft_window_fn(64))
        short = x[:, :60]
        return {"round_trip": back, "real": tf.math.real(spectrum), "imag": tf.math.imag(spectrum),
                "angle": tf.math.angle(spectrum),
                "fft": tf.abs(tf.signal.ifft(tf.signal.fft(tf.cast(short, tf.complex64)) * tf.complex(short, -short))),
                "rfft2d": tf.abs(tf.signal.rfft2d(tf.reshape(short, [2, 6, 10]))),
                "irfft2d": tf.signal.irfft2d(tf.signal.rfft2d(tf.reshape(short, [2, 6, 10]))),
                "irfft_odd": tf.signal.irfft(tf.signal.rfft(x[:, :63]), [63]),
                "fft2d": tf.math.real(tf.signal.ifft2d(tf.signal.fft2d(tf.complex(tf.reshape(short, [2, 6, 10]),
                                                                                  tf.reshape(-short, [2, 6, 10])))
                                                       * tf.cast(tf.reshape(short, [2, 6, 10]), tf.complex64))),
                "fft3d": tf.abs(tf.signal.fft3d(tf.cast(tf.reshape(short, [2, 3, 4, 5]), tf.complex64))),
                "ifft3d": tf.math.imag(tf.signal.ifft3d(tf.complex(tf.reshape(short, [2, 5, 3, 4]),
                                                                   tf.reshape(short[::-1], [2, 5, 3, 4])))),
                "rfft3d": tf.math.angle(tf.signal.rfft3d(tf.reshape(short, [2, 3, 4, 5]), [3, 5, 6])),
                "irfft3d": tf.signal.irfft3d(tf.signal.rfft3d(tf.reshape(short, [2, 3, 4, 5])), [2, 4, 4])}

    pb = tmp_path / "spectral.pb"
    names = _frozen(pb, build, {"signal": [2, 2048]})
    _errors(str(pb), names, tmp_path)
    # the round trip gives the signal back away from its ends (TF's own property, kept by the conversion)
    graph = parsers.parse(str(pb), ParseOptions(outputs=names[:1]))
    x = verify.make_inputs(graph)[0]
    out = tmp_path / "torch_round_trip"
    out.mkdir()
    emitters.get("torch").emit(graph, out, EmitOptions())
    (back,) = emitters.get("torch").run(out, [x])
    assert np.max(np.abs(back[:, 256:-256] - x[:, 256:back.shape[1] - 256])) < 1e-4


@pytest.mark.slow  # a Keras model exported as a SavedModel (make test-detect-audio)
@pytest.mark.skipif(not os.environ.get("CONVERT_HEADS_FULL"), reason="CONVERT_HEADS_FULL=1 (make test-detect-audio)")
def test_keras_model_with_the_front_end_inside(tmp_path):
    import keras

    class LogMel(keras.layers.Layer):
        def call(self, x):
            return _log_mel(x)[..., None]

    signal = keras.Input((3000,), batch_size=1)
    y = keras.layers.Conv2D(4, 3, padding="same", activation="relu")(LogMel()(signal))
    y = keras.layers.GlobalAveragePooling2D()(y)
    model = keras.Model(signal, keras.layers.Dense(5, activation="softmax")(y))
    model.export(str(tmp_path / "tagger"), verbose=False)
    _errors(tmp_path / "tagger", None, tmp_path)


def test_a_complex_tensor_into_another_op_is_refused_by_name(tmp_path):
    from tf_convert.convert.errors import UnsupportedError

    pb = tmp_path / "m.pb"
    names = _frozen(pb, lambda ph: {"out": tf.abs(tf.exp(tf.signal.rfft(ph["x"])))}, {"x": [2, 16]})
    with pytest.raises(UnsupportedError) as err:
        parsers.parse(str(pb), ParseOptions(outputs=names))
    assert err.value.exit_code == 3 and "Exp of a complex tensor" in str(err.value), str(err.value)


def test_caffe_names_the_spectral_op_it_refuses_and_takes_a_real_spectrum(tmp_path):
    """Caffe lacks a part of the lowering (the zero constant of the real bins' imaginary parts, a transpose):
    the refusal names the TF op and the lowering. A real part alone is one InnerProduct, which it runs."""
    pb = tmp_path / "m.pb"
    names = _frozen(pb, lambda ph: {"abs2d": tf.abs(tf.signal.rfft2d(tf.reshape(ph["x"], [2, 4, 4]))),
                                    "real": tf.math.real(tf.signal.rfft(ph["x"]))}, {"x": [2, 16]})
    caffe = emitters.get("caffe")
    graph = passes.run_default_passes(parsers.parse(str(pb), ParseOptions(outputs=names[:1])))
    problems = caffe.unsupported(graph)
    assert problems and all(p.op == "RFFT2D" and "cos/sin tables" in p.hint and "Caffe cannot express its" in p.hint
                            for p in problems), problems
    graph = passes.run_default_passes(parsers.parse(str(pb), ParseOptions(outputs=names[1:])))
    assert not caffe.unsupported(graph)
    inputs = verify.make_inputs(graph)
    caffe.emit(graph, tmp_path, EmitOptions())
    (got,), (want,) = caffe.run(tmp_path, inputs), parsers.run_reference(str(pb), graph, inputs)
    assert verify.metrics(np.asarray(got), want)["max_rel"] <= TOLERANCE
