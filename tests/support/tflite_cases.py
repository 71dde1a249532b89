"""`.tflite` files written at test time by TFLite's own converter (tf.lite.TFLiteConverter), from Keras
models and tf.functions, and the TFLite interpreter run that is their reference."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _keras_convs(size: int):
    """Stride-2 SAME conv, depthwise and transposed conv with fused activations, pooling, pad, concat,
    add, flatten + dense + softmax: every target expresses it."""
    import keras

    inp = keras.Input((size, size, 3))
    a = keras.layers.Conv2D(8, 3, strides=2, padding="same", activation="relu")(inp)
    b = keras.layers.DepthwiseConv2D(3, strides=2, padding="same", activation="relu6", depth_multiplier=2)(a)
    c = keras.layers.Conv2DTranspose(8, 3, strides=2, padding="same", activation="relu")(b)
    d = keras.layers.Concatenate()([a, c])
    d = keras.layers.MaxPooling2D(3, strides=2, padding="same")(d)
    e = keras.layers.AveragePooling2D(3, strides=1, padding="same")(d)
    f = keras.layers.Add()([d, e])
    f = keras.layers.Activation("tanh")(f)
    f = keras.layers.ZeroPadding2D(((1, 2), (0, 1)))(f)
    f = keras.layers.Conv2D(5, 2, padding="valid", dilation_rate=1)(f)
    g = keras.layers.GlobalAveragePooling2D()(f)
    h = keras.layers.Flatten()(f)
    h = keras.layers.Dense(7)(h)
    out = keras.layers.Softmax()(keras.layers.Concatenate()([g, h]))
    return keras.Model(inp, out)


def _function_ops(size: int):
    """A tf.function: resizes in both coordinate modes, pads, reductions, elementwise, reshape, a matmul
    over the last axis of a rank-3 tensor (FULLY_CONNECTED with keep_num_dims), strided slices."""
    import tensorflow as tf

    rng = np.random.default_rng(3)
    w = tf.constant(rng.standard_normal((3, 3, 3, 4)).astype(np.float32) * 0.3)
    bias = tf.constant(rng.standard_normal(4).astype(np.float32))
    dense = tf.constant(rng.standard_normal((4, 5)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec((1, size, size, 3), tf.float32)])
    def fn(x):
        y = tf.nn.conv2d(x, w, strides=2, padding="SAME") + bias
        y = tf.nn.leaky_relu(y, 0.1)
        up = tf.compat.v1.image.resize_bilinear(y, (size, size), half_pixel_centers=True)
        up2 = tf.compat.v1.image.resize_bilinear(y, (size + 3, size + 3), align_corners=True)
        near = tf.compat.v1.image.resize_nearest_neighbor(y, (size + 3, size + 3), half_pixel_centers=True)
        near2 = tf.compat.v1.image.resize_nearest_neighbor(y, (size * 2, size * 2), align_corners=True)
        p = tf.pad(up, [[0, 0], [1, 2], [2, 1], [0, 0]])
        s = tf.sigmoid(p) * tf.reduce_mean(up2, axis=[1, 2], keepdims=True) - tf.reduce_max(near, axis=3,
                                                                                          keepdims=True)
        t = tf.reduce_sum(near2, axis=[1, 2]) / 4.0
        r = tf.reshape(s, (1, -1, 4))
        return (tf.nn.softmax(r, axis=-1), tf.maximum(t, 0.5) + tf.reduce_mean(s, axis=[1, 2]),
                tf.nn.relu6(tf.matmul(r, dense)), y[:, 1:, :-1, 1:3] * 2.0, y[:, 0] - 1.0)

    return fn


def _convert(converter, path: Path) -> Path:
    path.write_bytes(converter.convert())
    return path


def build(directory: Path) -> dict[str, Path]:
    """Every test file, by name (one TF import for all of them)."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)  # the same weights every run: the measured figures repeat
    files = {}
    for size in (15, 16):  # stride-2 SAME at an odd and an even size
        model = _keras_convs(size)
        files[f"keras_convs_{size}"] = _convert(tf.lite.TFLiteConverter.from_keras_model(model),
                                                directory / f"keras_convs_{size}.tflite")
        if size == 15:
            half = tf.lite.TFLiteConverter.from_keras_model(model)
            half.optimizations = [tf.lite.Optimize.DEFAULT]
            half.target_spec.supported_types = [tf.float16]
            files["float16"] = _convert(half, directory / "float16.tflite")
    files.update(_quantized(directory))
    fn = _function_ops(9)  # odd: SAME's extra pad at stride 2
    converter = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn)
    files["function_ops_9"] = _convert(converter, directory / "function_ops_9.tflite")
    files["sparse"] = _sparse(directory)
    files["free_size"] = _free_size(directory)
    files["signatures"] = _two_signatures(directory)
    files["unique"] = _unknown_builtin(directory)
    return files


def _quantized(directory: Path) -> dict[str, Path]:
    """A small conv net quantized two ways: dynamic range (int8 weights, hybrid kernels) and full int8."""
    import keras
    import tensorflow as tf

    model = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Conv2D(8, 3, strides=2, padding="same"),
                              keras.layers.Flatten(), keras.layers.Dense(16)])
    files = {}
    dynamic = tf.lite.TFLiteConverter.from_keras_model(model)
    dynamic.optimizations = [tf.lite.Optimize.DEFAULT]
    files["dynamic_range"] = _convert(dynamic, directory / "dynamic_range.tflite")
    full = tf.lite.TFLiteConverter.from_keras_model(model)
    full.optimizations = [tf.lite.Optimize.DEFAULT]
    rng = np.random.default_rng(0)
    full.representative_dataset = lambda rng=rng: ([rng.standard_normal((1, 8, 8, 3)).astype(np.float32)]
                                                   for _ in range(2))
    files["int8"] = _convert(full, directory / "int8.tflite")
    return files


def _free_size(directory: Path) -> Path:
    """A tf.function whose input size is free (shape signature -1, -1, -1, 3): converted at --input-shape."""
    import tensorflow as tf

    w = tf.constant(np.random.default_rng(2).standard_normal((3, 3, 3, 4)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec((None, None, None, 3), tf.float32)])
    def fn(x):
        y = tf.nn.relu(tf.nn.conv2d(x, w, strides=2, padding="SAME"))
        return tf.nn.max_pool2d(y, 3, 2, "SAME")

    converter = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn)
    return _convert(converter, directory / "free_size.tflite")


def _sparse(directory: Path) -> Path:
    """Dense layers with 80% zero weights under Optimize.EXPERIMENTAL_SPARSITY: stored compressed, DENSIFY."""
    import keras
    import tensorflow as tf

    model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(8)])
    rng = np.random.default_rng(1)
    for layer in model.layers:
        w, b = layer.get_weights()
        w[rng.random(w.shape) < 0.8] = 0.0
        layer.set_weights([w, b])
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY]
    return _convert(converter, directory / "sparse.tflite")


def _two_signatures(directory: Path) -> Path:
    """A SavedModel with two signatures, 'scale' (a conv) and 'shift' (an add), as one .tflite."""
    import tensorflow as tf

    class Two(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.constant(np.random.default_rng(5).standard_normal((3, 3, 2, 3)).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec((1, 7, 7, 2), tf.float32)])
        def scale(self, image):
            return {"scaled": tf.nn.relu(tf.nn.conv2d(image, self.w, strides=2, padding="SAME"))}

        @tf.function(input_signature=[tf.TensorSpec((1, 5), tf.float32)])
        def shift(self, vector):
            return {"shifted": tf.tanh(vector + 1.5)}

    module = Two()
    saved = directory / "two_signatures"
    tf.saved_model.save(module, str(saved), signatures={"scale": module.scale, "shift": module.shift})
    converter = tf.lite.TFLiteConverter.from_saved_model(str(saved), signature_keys=["scale", "shift"])
    return _convert(converter, directory / "signatures.tflite")


def _unknown_builtin(directory: Path) -> Path:
    """UNIQUE: a builtin with no converter (its output length is the data's; exit 3 naming it)."""
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec((1, 6), tf.float32)])
    def fn(x):
        return tf.unique(tf.reshape(tf.round(x * 2.0), [-1])).y

    return _convert(tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn),
                    directory / "unique.tflite")


_BUILT: dict[str, Path] = {}


def built(tmp_path_factory) -> dict[str, Path]:
    """Every test file, written once per test process (the session fixtures of both test modules)."""
    if not _BUILT:
        _BUILT.update(build(tmp_path_factory.mktemp("tflite")))
    return dict(_BUILT)


def interpreter_outputs(path: Path, inputs_nhwc: list[np.ndarray]) -> list[np.ndarray]:
    """The file's outputs in TFLite's interpreter, in the subgraph's output order (TFLite layout)."""
    import tensorflow as tf

    it = tf.lite.Interpreter(model_path=str(path))
    it.allocate_tensors()
    for detail, x in zip(it.get_input_details(), inputs_nhwc):
        it.set_tensor(detail["index"], x)
    it.invoke()
    return [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]
