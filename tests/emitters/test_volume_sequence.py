"""1-D and 3-D convolution and pooling, end to end in every target runtime vs Keras.

Each fixture is a small Keras model built here at two sequence lengths / volume sizes, saved in the
Keras 3 (.keras) and Keras 2 (.h5) forms, parsed, run through the default passes, emitted for every
target and run in the target's real runtime. A target that cannot express a fixture must refuse it
(exit 3) naming the node; `REFUSED` lists those refusals and their reasons. Run with `-s` to see the
error table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tf_convert import emitters
from tf_convert.emitters.base import EmitOptions

RTOL = 1e-5
TARGETS = ("torch", "onnx", "mxnet", "caffe")
# target -> (fixtures it refuses, a phrase the refusal must contain)
REFUSED = {
    "caffe": ({"wavenet", "strided", "unet3d"}, "no Permute layer"),  # (N, L, C) <-> (N, C, L) transposes
}


def _wavenet(keras, length: int):
    """Causal dilated Conv1D stack with gated residual blocks (WaveNet-style)."""
    layers = keras.layers
    x = inp = keras.Input((length, 3))
    x = layers.Conv1D(8, 1)(x)
    for dilation in (1, 2, 4, 8):
        tanh = layers.Conv1D(8, 2, padding="causal", dilation_rate=dilation, activation="tanh")(x)
        gate = layers.Conv1D(8, 2, padding="causal", dilation_rate=dilation, activation="sigmoid")(x)
        x = layers.Add()([x, layers.Conv1D(8, 1)(layers.Multiply()([tanh, gate]))])
    y = layers.Conv1D(4, 3, padding="causal", dilation_rate=3)(x)
    return keras.Model(inp, y)


def _strided(keras, length: int):
    """Strided SAME Conv1D at odd lengths, and every other 1-D layer."""
    layers = keras.layers
    inp = keras.Input((length, 4))
    x = layers.Conv1D(6, 4, strides=2, padding="same", activation="relu")(inp)
    x = layers.SeparableConv1D(5, 3, strides=2, padding="same", depth_multiplier=2)(x)
    x = layers.DepthwiseConv1D(3, padding="same", depth_multiplier=2)(x)
    x = layers.MaxPooling1D(3, strides=2, padding="same")(x)
    x = layers.AveragePooling1D(2, padding="same")(x)
    x = layers.ZeroPadding1D((0, 2))(x)
    x = layers.UpSampling1D(3)(x)
    x = layers.Cropping1D((1, 2))(x)
    x = layers.Conv1DTranspose(4, 3, strides=2, padding="same")(x)
    x = layers.Conv1D(3, 5, padding="valid", dilation_rate=2)(x)
    pooled = layers.Concatenate()([layers.GlobalAveragePooling1D()(x), layers.GlobalMaxPooling1D()(x)])
    return keras.Model(inp, [x, pooled])


def _unet3d(keras, size: tuple[int, int, int]):
    """A 3-D U-Net block: Conv3D SAME stride 2, pooling, Conv3DTranspose, skip concat, UpSampling3D."""
    layers = keras.layers
    inp = keras.Input((*size, 2))
    skip = layers.Conv3D(4, 3, padding="same", activation="relu")(inp)
    x = layers.Conv3D(6, 3, strides=2, padding="same")(skip)
    x = layers.MaxPooling3D(2, strides=1, padding="same")(x)
    x = layers.AveragePooling3D(3, strides=1, padding="same")(x)
    x = layers.Conv3DTranspose(4, 3, strides=2, padding="same")(x)
    extra = [u - s for u, s in zip(x.shape[1:4], size)]
    x = layers.Cropping3D(tuple((0, e) for e in extra))(x)
    x = layers.Concatenate()([skip, x])
    x = layers.ZeroPadding3D(((1, 0), (0, 1), (1, 1)))(x)
    x = layers.Conv3D(3, 2, padding="valid")(x)
    pooled = layers.GlobalAveragePooling3D()(layers.AveragePooling3D(2, padding="same")(x))
    up = layers.Conv3D(2, 1)(layers.UpSampling3D((2, 1, 3))(x))  # exact nearest repeat per axis
    return keras.Model(inp, [x, pooled, up])


FIXTURES = {"wavenet": _wavenet, "strided": _strided, "unet3d": _unet3d}
# (fixture, size, Keras form): each size in one form; the other form is parsed and checked in the IR
CASES = [
    ("wavenet", 16, ".keras"), ("wavenet", 37, ".h5"),
    ("strided", 23, ".keras"), ("strided", 31, ".h5"),
    ("unet3d", (7, 8, 9), ".keras"), ("unet3d", (6, 6, 5), ".h5"),
]


def _convert(path: Path):
    from tf_convert.convert import passes
    from tf_convert.parsers import keras as keras_parser
    from tf_convert.parsers.base import ParseOptions

    graph = keras_parser.parse(path, ParseOptions())
    graph.validate()
    return passes.run_default_passes(graph)


def _rel(actual: np.ndarray, expected: np.ndarray) -> float:
    from tests.support.ir_cases import rel_error

    return rel_error(actual, expected)


@pytest.mark.parametrize("fixture,size,form", CASES, ids=[f"{f}-{s}{k}" for f, s, k in CASES])
def test_every_target_matches_keras(keras, tmp_path, fixture, size, form):
    from tf_convert.convert import ir

    model = FIXTURES[fixture](keras, size)
    rng = np.random.default_rng(0)
    feed = rng.normal(0, 1, (1, *model.inputs[0].shape[1:])).astype(np.float32)
    expected = [np.asarray(y) for y in model(feed, training=False)] if len(model.outputs) > 1 else [
        np.asarray(model(feed, training=False))]

    other = ".h5" if form == ".keras" else ".keras"
    for suffix in (form, other):  # both Keras forms parse to the same numbers
        model.save(tmp_path / f"{fixture}{suffix}")
    graph = _convert(tmp_path / f"{fixture}{form}")
    reference = ir.evaluate(_convert(tmp_path / f"{fixture}{other}"), [feed.astype(np.float64)])
    for out, want in zip(graph.outputs, expected):
        assert _rel(reference[out], want) < 1e-4, ("IR", other, out)

    errors: dict[str, str] = {}
    for target in TARGETS:
        emitter = emitters.get(target)
        refused = emitter.unsupported(graph)
        fixtures_refused, reason = REFUSED.get(target, (set(), ""))
        if fixture in fixtures_refused:
            assert any(reason in u.hint for u in refused), (target, refused)
            errors[target] = f"refused: {refused[0].op} ({refused[0].node}): {refused[0].hint}"
            continue
        assert not refused, (target, refused)
        out = tmp_path / target
        out.mkdir()
        emitter.emit(graph, out, EmitOptions())
        actual = emitter.run(out, [feed])
        worst = max(_rel(np.asarray(a), b) for a, b in zip(actual, expected))
        errors[target] = f"{worst:.2e}"
        assert worst < RTOL, (target, worst)
    print(f"\n{fixture} {size} {form}: " + "; ".join(f"{t} {e}" for t, e in errors.items()))
