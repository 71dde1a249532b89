"""A size-free 3-D model converted at one volume size is exact at every D/H/W.

Each fixture is converted once at 7x9x10 (odd and even axes). The PyTorch and ONNX models then run at
that size and at 8x9x11, 5x6x7 and 9x12x8 (each axis's SAME pads flip parity), at batch 1 and 2, and
are compared with TF run at those sizes: a Keras 3-D U-Net block (the same layers and weights with a
free D/H/W) and a TF1 `tf.compat.v1.nn.conv3d` / `max_pool3d` / `avg_pool3d` graph (frozen .pb, free
placeholder). A model that bakes its size (Flatten -> Dense; a TF1 conv3d_transpose, whose output size
is a constant) stays size-bound and torch, ONNX and MXNet refuse another size loudly; MXNet also keeps
refusing another size of a size-free model (its pads are baked, as for 2-D). `--verify` compares a 3-D
model at two other sizes. Run with `-s` for the table.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.support.ir_cases import rel_error
from tests.support.size_following import assert_bound_as_expected, free_twin, run_cli
from tf_convert import emitters
from tf_convert.emitters.base import EmitOptions

RTOL = 1e-5
CHANNELS = 2
CONVERT_SIZE = (7, 9, 10)
SIZES = (CONVERT_SIZE, (8, 9, 11), (5, 6, 7), (9, 12, 8))  # the conversion's, then odd/even mixes
BATCHES = (1, 2)


def _unet(keras, size):
    """A 3-D U-Net block: SAME convs at stride 1 (+ batch norm on NDHWC's last axis) and 2, SAME max and
    average pooling (stride 2, and an even window at stride 1), a skip concatenation, Conv3DTranspose
    stride 2, UpSampling3D, ZeroPadding3D, Cropping3D and global pooling. Both paths come back to
    2 * ceil(n / 2) per axis, so TF runs it at every size."""
    layers = keras.layers
    inp = keras.Input((*size, CHANNELS))
    skip = layers.ReLU()(layers.BatchNormalization()(layers.Conv3D(3, 3, padding="same")(inp)))
    pooled = layers.MaxPooling3D(3, strides=2, padding="same")(skip)
    down = layers.Conv3D(4, 3, strides=2, padding="same")(skip)
    up = layers.Conv3DTranspose(3, 3, strides=2, padding="same")(layers.Concatenate()([pooled, down]))
    side = layers.UpSampling3D((2, 2, 2))(layers.AveragePooling3D(3, strides=2, padding="same")(skip))
    x = layers.Concatenate()([up, side])
    x = layers.AveragePooling3D(2, strides=1, padding="same")(x)
    x = layers.ZeroPadding3D(((1, 0), (0, 1), (1, 1)))(x)
    x = layers.Cropping3D(((0, 1), (1, 0), (2, 1)))(x)
    x = layers.Conv3D(2, 2, padding="same")(x)
    summary = layers.Concatenate()([layers.GlobalAveragePooling3D()(x), layers.GlobalMaxPooling3D()(x)])
    return keras.Model(inp, [x, summary])


def _flatten_dense(keras, size):
    """Flatten -> Dense bakes the volume size."""
    layers = keras.layers
    inp = keras.Input((*size, CHANNELS))
    x = layers.Conv3D(3, 3, strides=2, padding="same")(inp)
    return keras.Model(inp, layers.Dense(2)(layers.Flatten(name="flatten")(x)))


def _tf1_volume(x):
    """TF1 ops as a TF1 graph writes them: conv3d SAME stride 2 (+ bias, relu), max_pool3d SAME stride 2,
    an even-window conv3d at stride (1, 2, 1), avg_pool3d SAME with an even window at stride 1."""
    import tensorflow as tf

    rng = np.random.default_rng(3)

    def w(*shape):
        return tf.constant(rng.standard_normal(shape).astype(np.float32) * 0.3)

    v1 = tf.compat.v1.nn
    y = tf.nn.relu(v1.conv3d(x, w(3, 3, 3, CHANNELS, 4), [1, 2, 2, 2, 1], "SAME") + w(4))
    y = v1.max_pool3d(y, [1, 3, 3, 3, 1], [1, 2, 2, 2, 1], "SAME")
    y = v1.conv3d(y, w(2, 2, 2, 4, 3), [1, 1, 2, 1, 1], "SAME")
    y = v1.avg_pool3d(y, [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "SAME")
    return tf.identity(y, name="out")


def _tf1_transpose(x):
    """A TF1 conv3d_transpose writes its output size as a constant: TF itself runs it at one size only."""
    import tensorflow as tf

    w = tf.constant(np.random.default_rng(4).standard_normal((3, 3, 3, 2, CHANNELS)).astype(np.float32))
    out = [1, *(2 * n for n in CONVERT_SIZE), 2]
    return tf.identity(tf.compat.v1.nn.conv3d_transpose(x, w, out, [1, 2, 2, 2, 1], "SAME"), name="out")


KERAS_FIXTURES = {"unet": _unet, "flatten_dense": _flatten_dense}
FREE = ("unet", "tf1")
# fixture -> what size_bound must say: None (size-free) or a phrase naming the node that bakes the size
BOUND = {
    "unet": None,
    "tf1": None,
    "flatten_dense": "'flatten' (reshape) bakes",
    "tf1_transpose": "(conv_transpose3d) has a constant output size",
}


@pytest.fixture(scope="module")
def saved(keras, tmp_path_factory):
    """fixture -> (its file at CONVERT_SIZE, a function running TF on a (N, D, H, W, C) feed at any size
    where the model has one)."""
    from tests.support.tf_models import run_frozen, save_frozen

    work = tmp_path_factory.mktemp("volumes")
    found = {}
    for name, build in KERAS_FIXTURES.items():
        model = build(keras, CONVERT_SIZE)
        path = work / f"{name}.keras"
        model.save(path)
        free = model  # a size-bound model runs at its own size only
        if name in FREE:
            free = free_twin(build, keras, model, (None, None, None))
        found[name] = (path, lambda x, free=free: [np.asarray(y) for y in _as_list(free(x, training=False))])
    for name, build, placeholder in (("tf1", _tf1_volume, [None, None, None, None, CHANNELS]),
                                     ("tf1_transpose", _tf1_transpose, [1, *CONVERT_SIZE, CHANNELS])):
        pb = save_frozen(work / f"{name}.pb", build, placeholder, name="x")
        found[name] = (Path(pb), lambda x, pb=pb: [run_frozen(pb, {"x:0": x})])
    return found


def _as_list(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]


def _convert(path: Path):
    from tf_convert.convert import passes
    from tf_convert.parsers.base import ParseOptions

    if path.suffix == ".pb":
        from tf_convert.parsers import tensorflow as parser

        options = ParseOptions(input_shapes={"x": (1, *CONVERT_SIZE, CHANNELS)}, outputs=["out"])
    else:
        from tf_convert.parsers import keras as parser

        options = ParseOptions()
    graph = parser.parse(path, options)
    graph.validate()
    return passes.run_default_passes(graph)


def _feed(size: tuple[int, ...], batch: int = 1) -> np.ndarray:
    return np.random.default_rng(sum(size) * batch).standard_normal((batch, *size, CHANNELS)).astype(np.float32)


@pytest.mark.parametrize("fixture", list(BOUND))
def test_size_bound_follows_the_volume_axes(saved, fixture):
    assert_bound_as_expected(_convert(saved[fixture][0]), BOUND[fixture])


@pytest.mark.parametrize("target", ["torch", "onnx"])
@pytest.mark.parametrize("fixture", FREE)
def test_converted_once_exact_at_every_volume_size(saved, tmp_path, fixture, target):
    path, reference = saved[fixture]
    graph = _convert(path)
    emitter = emitters.get(target)
    assert emitter.emit(graph, tmp_path, EmitOptions()).size_bound is None
    errors = {}
    for size in SIZES:
        for batch in BATCHES:
            feed = _feed(size, batch)
            expected = reference(feed)
            actual = emitter.run(tmp_path, [feed])
            assert [np.shape(a) for a in actual] == [e.shape for e in expected], (size, batch)
            errors[(size, batch)] = max(rel_error(a, e) for a, e in zip(actual, expected))
    print(f"\n{fixture} {target} converted at {'x'.join(map(str, CONVERT_SIZE))}: " + "; ".join(
        f"{'x'.join(map(str, s))} N={n} {e:.2e}" for (s, n), e in errors.items()))
    assert max(errors.values()) <= RTOL, errors


def test_torch_volume_model_is_scripted_and_exported_with_free_sizes(saved, tmp_path):
    """The N-d tf_same_pad and the repeats stay TorchScript- and torch.export-clean (as the 2-D models
    are): exported once with dynamic N, D, H, W, the program runs at other sizes exactly."""
    import torch

    from tf_convert.emitters.torch.runner import import_model

    path, reference = saved["unet"]
    emitters.get("torch").emit(_convert(path), tmp_path, EmitOptions())
    source = (tmp_path / "model.py").read_text()
    assert "Runs at any batch and D x H x W" in source and "tf_same_pad(" in source
    assert ".repeat_interleave(2, dim=1)" in source
    model = import_model(tmp_path).load(str(tmp_path / "model.pt"))
    scripted = torch.jit.script(model)
    free = {0: torch.export.Dim("N", max=64), **{a: torch.export.Dim(n, min=4, max=64) for a, n in enumerate("DHW", 1)}}
    exported = torch.export.export(model, (torch.from_numpy(_feed(CONVERT_SIZE, 2)),), dynamic_shapes=(free,))
    for size in SIZES[1:]:
        feed = _feed(size, 2)
        with torch.no_grad():
            for name, m in (("scripted", scripted), ("exported", exported.module())):
                actual = m(torch.from_numpy(feed))
                assert max(rel_error(a.numpy(), e) for a, e in zip(actual, reference(feed))) <= RTOL, (name, size)


@pytest.mark.parametrize("target", ["torch", "onnx", "mxnet"])
@pytest.mark.parametrize("fixture", ["flatten_dense", "tf1_transpose"])
def test_size_bound_volume_model_refuses_other_sizes(saved, tmp_path, fixture, target):
    path, reference = saved[fixture]
    emitter = emitters.get(target)
    emitter.emit(_convert(path), tmp_path, EmitOptions())
    feed = _feed(CONVERT_SIZE)
    assert rel_error(emitter.run(tmp_path, [feed])[0], reference(feed)[0]) <= RTOL
    match = rf"converted for size \[7, 9, 10, 2\].*{re.escape(BOUND[fixture])}" if target == "torch" else None
    with pytest.raises(Exception, match=match):  # each runtime's own error
        emitter.run(tmp_path, [_feed((8, 9, 11))])


def test_mxnet_keeps_refusing_another_volume_size(saved, tmp_path):
    """MXNet bakes the pads (as for 2-D): exact at the conversion size, loud at another."""
    path, reference = saved["unet"]
    emitter = emitters.get("mxnet")
    emitter.emit(_convert(path), tmp_path, EmitOptions())
    feed = _feed(CONVERT_SIZE)
    assert max(rel_error(a, e) for a, e in zip(emitter.run(tmp_path, [feed]), reference(feed))) <= RTOL
    with pytest.raises(Exception):  # noqa: B017 - MXNet's own shape error, whichever layer meets it first
        emitter.run(tmp_path, [_feed((8, 9, 11))])


def test_verify_compares_a_volume_model_at_two_other_sizes(saved, tmp_path):
    path, _ = saved["unet"]
    out = tmp_path / "out"
    run = run_cli("tf2torch", str(path), "-o", str(out), "--verify")
    assert run.returncode == 0, run.stderr
    assert "at 3 sizes" in run.stdout and "any D x H x W" in run.stdout, run.stdout
    doc = json.loads((out / "conversion.json").read_text())
    assert doc["input_sizes"] == {"spatial": "any", "batch": "any", "free": "D x H x W"}
    shapes = [s["input_shapes"][0] for s in doc["verify"]["sizes"]]
    assert shapes == [[2, 8, 10, 11, CHANNELS], [2, 9, 12, 13, CHANNELS]]
    assert all(s["passed"] for s in doc["verify"]["sizes"])
