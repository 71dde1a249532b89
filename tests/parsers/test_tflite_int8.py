"""Full-integer `.tflite` models (TFLiteConverter with a representative dataset and TFLITE_BUILTINS_INT8: int8
in/out, uint8 in/out, float in/out with QUANTIZE/DEQUANTIZE at the edges) converted to TFLite's integer
arithmetic: PyTorch and ONNX run them bit for bit as TFLite's reference kernels do, on random and extreme
inputs; the kernels not reproduced yet are refused by name (exit 3), never approximated in float."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tf_convert import emitters, parsers
from tf_convert.convert.errors import UnsupportedError
from tf_convert.convert.passes import run_default_passes
from tf_convert.emitters.base import EmitOptions
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tflite import run_reference_sets
from tf_convert.parsers.tflite.schema import read

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
TARGETS = ("torch", "onnx")


def _small_cnn(keras, shape):
    """conv (relu) -> depthwise (stride 2) -> 1x1 conv, + a max-pool branch, add, average pool, dense."""
    L = keras.layers
    x = keras.Input(shape)
    a = L.Conv2D(8, 3, padding="same", activation="relu")(x)
    b = L.DepthwiseConv2D(3, strides=2, padding="same")(a)
    b = L.Conv2D(8, 1)(b)
    c = L.MaxPooling2D(2, padding="same")(a)
    y = L.AveragePooling2D(2)(L.Add()([b, c]))
    return keras.Model(x, L.Dense(5)(L.Flatten()(y)))


def _keyword_spotter(keras, shape):
    """A DS-CNN keyword spotter on a (frames, 1, features) map at odd sizes: a strided conv, depthwise-separable
    blocks with ReLU6, global average pooling (MEAN) and a classifier."""
    L = keras.layers
    x = keras.Input(shape)
    y = L.Conv2D(12, (5, 1), strides=(2, 1), padding="same", activation="relu")(x)
    for _ in range(2):
        y = L.DepthwiseConv2D((3, 1), padding="same", activation="relu6")(y)
        y = L.Conv2D(12, 1, activation="relu6")(y)
    return keras.Model(x, L.Dense(4)(L.GlobalAveragePooling2D()(y)))


def _conv1d(keras, shape):
    """Conv1D (TFLite's CONV_2D between reshapes), padded and concatenated branches, a product, a difference,
    ReLU6 and a sigmoid (TFLite's int8 LOGISTIC table)."""
    L = keras.layers
    x = keras.Input(shape)
    a = L.Conv1D(6, 3, padding="valid", activation="relu6")(L.ZeroPadding1D(2)(x))
    b = L.Conv1D(6, 5, padding="same")(x)
    y = L.Concatenate()([a[:, 1:-1], b])
    c = L.Conv1D(12, 1)(x)
    y = L.Subtract()([L.Multiply()([y, c]), c])
    return keras.Model(x, L.Dense(3, activation="sigmoid")(L.Flatten()(y)))


def _mixed(keras, shape):
    """Depth multiplier 2 without bias, SAME average pooling at odd sizes, VALID max pooling, asymmetric zero
    padding, a (2, 3) kernel, a kept-dims MEAN broadcast back by a product, a nearest up-sampling, a concatenation,
    a dense without bias."""
    L = keras.layers
    x = keras.Input(shape)
    a = L.Conv2D(6, 3, padding="same", activation="relu6")(x)
    b = L.DepthwiseConv2D(3, depth_multiplier=2, strides=2, padding="same", use_bias=False)(a)
    c = L.AveragePooling2D(3, strides=2, padding="same")(b)
    e = L.Conv2D(12, 1)(L.ZeroPadding2D(((0, 1), (1, 0)))(L.MaxPooling2D(2)(b)))
    e = L.Conv2D(12, (2, 3))(e)
    g = L.Multiply()([c, L.GlobalAveragePooling2D(keepdims=True)(c)])
    u = L.Resizing(7, 9, interpolation="nearest")(c)  # RESIZE_NEAREST_NEIGHBOR
    flat = [L.Flatten()(t) for t in (g, e, u)]
    return keras.Model(x, L.Dense(7, use_bias=False)(L.Concatenate()(flat)))


def _per_tensor(keras, shape):
    """Written with one scale per weight tensor (the converter's per-channel quantization turned off)."""
    L = keras.layers
    return keras.Sequential([keras.Input(shape), L.Conv2D(5, 3), L.Flatten(), L.Dense(9), L.Dense(4)])


def _activations(keras, shape):
    """TFLite's one-element int8 kernels, each on the model input itself (so that one input holding all 256
    integers checks every entry of its table): TANH, LOGISTIC, HARD_SWISH, LEAKY_RELU, RELU, RELU6, RELU_N1_TO_1."""
    L = keras.layers
    x = keras.Input(shape)
    acts = [L.Activation(a)(x) for a in ("tanh", "sigmoid", "hard_swish", "relu", "relu6")]
    return keras.Model(x, [*acts, L.LeakyReLU(0.3)(x), keras.ops.clip(x, -1.0, 1.0)])


def _moves(keras, shape):
    """Integers moved or compared without rescaling: MAXIMUM, MINIMUM (also of a constant), SPLIT, PACK, UNPACK,
    REDUCE_MAX, GATHER, and a standalone RELU after them."""
    L, ops = keras.layers, keras.ops
    x = keras.Input(shape)
    a = L.Conv2D(8, 3, padding="same", activation="relu")(x)
    b = L.LeakyReLU(0.2)(L.Conv2D(8, 1)(a))
    m, n = L.ReLU()(L.Maximum()([a, b])), L.ReLU(max_value=1.5)(L.Minimum()([a, b]))  # a constant bound
    p, q = ops.split(m, 2, axis=-1)
    u0, u1 = ops.unstack(ops.reshape(ops.stack([p, q], axis=1), (-1, 2, shape[0] * shape[1] * 4)), axis=1)
    picked = ops.take(ops.max(n, axis=(1, 2)), [3, 0, 5], axis=1)
    return keras.Model(x, [L.Dense(5)(L.Concatenate()([u0, u1])), picked])


def _softmax(keras, shape):
    """TFLite's int8 SOFTMAX (fixed-point exp and reciprocal) over a classifier's logits, over the channels of a
    feature map (rank 4: IR axis 1) and over a wide, spread row."""
    L = keras.layers
    x = keras.Input(shape)
    a = L.Conv2D(6, 3, padding="same")(x)
    logits = L.Dense(7)(L.Flatten()(a))
    wide = L.Dense(300)(L.Flatten()(a)) * 6.0
    return keras.Model(x, [L.Softmax()(logits), L.Softmax()(a), L.Softmax()(wide)])


def _wide(keras, shape):
    """A wide fully-connected layer on a (1, 64) sequence (keep_num_dims, per-channel scales on the last axis):
    12000 outputs over the input sets, where TFLite's single-rounding multiply differs from double rounding at
    about 1 in 1000; then an EinsumDense on (5, 400) rows (a FULLY_CONNECTED keeping its rank-3 shape, as attention's
    projections are written)."""
    L = keras.layers
    x = keras.Input(shape)
    y = L.Dense(2000)(x)
    return keras.Model(x, [y, L.EinsumDense("abc,cd->abd", output_shape=(5, 7), bias_axes="d")(L.Reshape((5, 400))(y))])


def _dilated_1d(keras, shape):
    """Dilated Conv1Ds (same and causal): TFLite writes SPACE_TO_BATCH_ND -> CONV_2D -> BATCH_TO_SPACE_ND."""
    L = keras.layers
    x = keras.Input(shape)
    a = L.Conv1D(6, 3, dilation_rate=2, padding="same", activation="relu")(x)
    b = L.Conv1D(6, 3, dilation_rate=4, padding="causal")(a)
    return keras.Model(x, L.Dense(3)(L.Flatten()(b)))


def _dilated_2d(keras, shape):
    return keras.Sequential([keras.Input(shape), keras.layers.Conv2D(4, 3, dilation_rate=2, padding="same")])


def _prelu(keras, shape):
    """PRELU with one alpha per channel: tf_keras's PReLU (Keras 3's is written as relu and mul, not PRELU)."""
    import tf_keras

    L = tf_keras.layers
    x = tf_keras.Input(shape)
    alpha = tf_keras.initializers.RandomUniform(-0.5, 0.5, seed=1)
    return tf_keras.Model(x, L.PReLU(alpha_initializer=alpha, shared_axes=[1, 2])(L.Conv2D(6, 3, padding="same")(x)))


# name -> (model builder, input shape, inference input/output type)
CASES = {"cnn_int8": (_small_cnn, (13, 11, 3), "int8"), "cnn_float": (_small_cnn, (9, 7, 2), None),
         "cnn_uint8": (_small_cnn, (7, 9, 3), "uint8"), "kws_int8": (_keyword_spotter, (37, 1, 13), "int8"),
         "conv1d_float": (_conv1d, (23, 5), None), "mixed_int8": (_mixed, (15, 13, 3), "int8"),
         "per_tensor_int8": (_per_tensor, (5, 4, 3), "int8"), "activations_int8": (_activations, (256,), "int8"),
         "moves_int8": (_moves, (6, 5, 3), "int8"), "softmax_int8": (_softmax, (5, 4, 3), "int8"),
         "wide_int8": (_wide, (1, 64), "int8"), "dilated1d_int8": (_dilated_1d, (21, 5), "int8"),
         "dilated2d_int8": (_dilated_2d, (9, 11, 3), "int8"), "prelu_int8": (_prelu, (4, 5, 3), "int8")}


def _write(tf, model, shape, io, path: Path) -> Path:
    rng = np.random.default_rng(0)
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = lambda: ([rng.standard_normal((1, *shape)).astype(np.float32) * 2]
                                                for _ in range(20))
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    if path.stem.startswith("per_tensor"):
        converter._experimental_disable_per_channel = True
        converter._experimental_disable_per_channel_quantization_for_dense_layers = True
    if io is not None:
        converter.inference_input_type = converter.inference_output_type = {"int8": tf.int8, "uint8": tf.uint8}[io]
    path.write_bytes(converter.convert())
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    import keras
    import tensorflow as tf

    work = tmp_path_factory.mktemp("int8")
    keras.utils.set_random_seed(3)
    return {name: _write(tf, build(keras, shape), shape, io, work / f"{name}.tflite")
            for name, (build, shape, io) in CASES.items()}


def _inputs(graph, count: int = 6) -> list[list[np.ndarray]]:
    """Random values over the whole integer range (and its two ends; the last set every integer in turn), or float
    noise reaching past the range."""
    rng = np.random.default_rng(1)
    sets = []
    for k in range(count):
        feeds = []
        for name in graph.inputs:
            t = graph.tensors[name]
            if t.dtype == "float32":
                feeds.append((rng.standard_normal(t.shape) * (2 + 4 * k)).astype(np.float32))
            else:
                info = np.iinfo(t.dtype)
                x = rng.integers(info.min, int(info.max) + 1, t.shape).astype(t.dtype)
                if k == count - 1:
                    x = np.resize(np.arange(info.min, int(info.max) + 1), t.shape).astype(t.dtype)
                feeds.append(np.full(t.shape, info.min if k == 0 else info.max, t.dtype) if k < 2 else x)
        sets.append(feeds)
    return sets


@pytest.fixture(scope="module")
def measured(files, tmp_path_factory) -> dict[str, dict[str, int]]:
    """case -> target -> the largest |converted - TFLite| over the outputs and inputs (integers: 0 is bit for bit)."""
    work = tmp_path_factory.mktemp("int8_out")
    found: dict[str, dict[str, int]] = {}
    for name, path in files.items():
        graph = run_default_passes(parsers.parse(path, ParseOptions()))
        sets = _inputs(graph)
        expected = run_reference_sets(path, graph, sets)  # TFLite's reference kernels (BUILTIN_REF)
        found[name] = {}
        for target in TARGETS:
            out = work / name / target
            out.mkdir(parents=True)
            emitters.get(target).emit(graph, out, EmitOptions())
            actual = emitters.get(target).run_sets(out, sets)
            worst = 0
            for got, want in zip(actual, expected):
                for a, b in zip(got, want):
                    a = np.asarray(a)
                    assert a.dtype == b.dtype and a.shape == b.shape, (name, target, a.dtype, b.dtype)
                    worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))))
            found[name][target] = worst
    return found


@pytest.mark.parametrize("name", list(CASES))
def test_torch_and_onnx_compute_tflite_integer_arithmetic_bit_for_bit(measured, name):
    print(name, measured[name])
    assert measured[name] == dict.fromkeys(TARGETS, 0), measured[name]


def test_the_files_hold_the_integer_kernels(files):
    held = {o.name for path in files.values() for s in read(path).subgraphs for o in s.operators}
    assert {"QUANTIZE", "DEQUANTIZE", "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "ADD", "MUL", "RESHAPE",
            "AVERAGE_POOL_2D", "MAX_POOL_2D", "CONCATENATION", "PAD", "MEAN", "LOGISTIC", "SUB",
            "RESIZE_NEAREST_NEIGHBOR", "TANH", "HARD_SWISH", "LEAKY_RELU", "RELU", "RELU6", "RELU_N1_TO_1", "MAXIMUM",
            "MINIMUM", "SPLIT", "PACK", "UNPACK", "REDUCE_MAX", "GATHER", "SOFTMAX", "SPACE_TO_BATCH_ND",
            "BATCH_TO_SPACE_ND", "PRELU"} <= held, held
    sub = read(files["per_tensor_int8"]).subgraphs[0]  # one weight scale there, one per channel elsewhere
    assert {sub.tensors[o.inputs[1]].quantization.scale.size for o in sub.operators
            if o.name in ("CONV_2D", "FULLY_CONNECTED")} == {1}


def test_mxnet_and_caffe_refuse_by_name(files):
    graph = parsers.parse(files["cnn_int8"], ParseOptions())
    for target in ("mxnet", "caffe"):
        hints = {p.op: p.hint for p in emitters.get(target).unsupported(graph)}
        assert {"integer_conv2d", "integer_linear", "requantize"} <= set(hints), (target, hints)
        # MXNet names TFLite's integer arithmetic; Caffe says first that its blobs hold no integers
        assert all(("integer" if target == "mxnet" else "Caffe blobs are float32") in hints[op]
                   for op in ("integer_conv2d", "requantize")), hints


def test_an_integer_log_softmax_is_refused_by_name(tmp_path):
    import keras
    import tensorflow as tf

    x = keras.Input((6,))
    model = keras.Model(x, keras.ops.log_softmax(keras.layers.Dense(4)(x)))
    path = _write(tf, model, (6,), "int8", tmp_path / "log_softmax.tflite")
    with pytest.raises(UnsupportedError, match=r"LOG_SOFTMAX .*int8/uint8 tensors: TFLite computes it on 8-bit"):
        parsers.parse(path, ParseOptions())
    sub = read(path).subgraphs[0]  # cut before it: the logits convert
    [logits] = [sub.tensors[o.outputs[0]].name for o in sub.operators if o.name == "FULLY_CONNECTED"]
    graph = parsers.parse(path, ParseOptions(outputs=[logits]))
    assert [graph.source_names[t] for t in graph.outputs] == [logits]


def test_verify_through_the_cli_expects_zero_difference(files, tmp_path):
    from click.testing import CliRunner

    from tf_convert import cli

    out = tmp_path / "out"
    result = CliRunner().invoke(cli.main, ["tf2onnx", str(files["kws_int8"]), "-o", str(out), "--verify"])
    assert result.exit_code == 0, result.output
    assert "exact" in result.output
    again = CliRunner().invoke(cli.main, ["verify", str(out)])  # the recorded check, on the same kernels
    assert again.exit_code == 0 and "exact" in again.output, again.output


def test_dequantize_is_a_named_float_choice_judged_with_the_user_tolerance(files, tmp_path):
    import json

    from click.testing import CliRunner

    from tf_convert import cli

    out = tmp_path / "float"
    args = ["tf2onnx", str(files["cnn_float"]), "--dequantize", "--verify"]
    result = CliRunner().invoke(cli.main, [*args, "-o", str(out), "--rtol", "0.3"])
    assert result.exit_code == 0 and "exact" not in result.output, result.output
    doc = json.loads((out / "conversion.json").read_text())
    assert doc["source_settings"] == {"dequantize": "true"}
    assert [p["pass"] for p in doc["inference_passes"]] == ["tflite_dequantize"]
    strict = CliRunner().invoke(cli.main, [*args, "-o", str(tmp_path / "strict")])  # float is not the integers
    assert strict.exit_code == 4, strict.output
    refused = CliRunner().invoke(cli.main, ["tf2onnx", str(files["cnn_int8"]), "-o", str(tmp_path / "int"),
                                            "--dequantize"])
    assert refused.exit_code == 3 and "int8/uint8 model input or output" in refused.output, refused.output
