"""The logistic far into its tail on ONNX: a wake-word or presence score of 1e-8 must stay 1e-8 (onnxruntime's
Sigmoid kernel gives 0 from x = -18 on, and 47 % off at -16), so sigmoid and swish are composed from Exp.
A TFLiteConverter file of LOGISTIC and swish run in onnxruntime against TFLite's interpreter, element by element."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.tflite_cases import interpreter_outputs
from tf_convert import emitters, parsers
from tf_convert.convert.passes import run_default_passes
from tf_convert.emitters.base import EmitOptions
from tf_convert.parsers.base import ParseOptions

X = np.array([[-87.0, -60.0, -31.0, -20.0, -18.0, -17.0, -16.0, -10.0, -1.0, 0.0, 3.0, 40.0]], np.float32)
_W = np.linspace(-3.0, 3.0, 12 * 12, dtype=np.float32).reshape(1, 1, 12, 12)
CASES = {"sigmoid": lambda tf, x: tf.sigmoid(x), "swish": lambda tf, x: tf.nn.silu(x),
         # a conv with its bias then the logistic (MediaPipe's pose flag): the emitter renames the sigmoid's input
         "conv_sigmoid": lambda tf, x: tf.sigmoid(tf.nn.conv2d(tf.reshape(x, (1, 1, 1, 12)) / 8.0, _W, 1, "VALID")
                                                  + 0.5)}


@pytest.mark.parametrize("name", list(CASES))
def test_the_tail_keeps_its_relative_precision(name, tmp_path):
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec(X.shape, tf.float32)])
    def fn(x):
        return CASES[name](tf, x)

    path = tmp_path / f"{name}.tflite"
    path.write_bytes(tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn).convert())
    graph = run_default_passes(parsers.parse(path, ParseOptions()))
    (tmp_path / "onnx").mkdir()
    emitters.get("onnx").emit(graph, tmp_path / "onnx", EmitOptions())
    got = np.asarray(emitters.get("onnx").run(tmp_path / "onnx", [X])[0], np.float64)
    want = np.asarray(interpreter_outputs(path, [X])[0], np.float64)
    relative = np.abs(got - want) / np.maximum(np.abs(want), np.finfo(np.float32).tiny)
    assert np.all(relative <= 1e-6), dict(zip(X[0].tolist(), relative[0].tolist()))
