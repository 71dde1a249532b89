"""Keras files as published models have them, built with tf_keras (tests/support/tf_keras_models.py): every
file tf_keras loads back converts, and the written torch and ONNX models give tf_keras's numbers.

The GAN shape (a Model holding a Model holding a Sequential, a shared layer, a frozen part) is in the default
run as `.h5`, where tf_keras writes the Sequential's weights without its name, and a tf_keras `.keras` (whose
weights file names no layer) too; every builder in both forms runs under `make test-keras-files`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tests.support import tf_keras_models
from tests.support.verify_faults import run_cli

RTOL = 1e-4
TARGETS = ("torch", "onnx")
SLOW = [pytest.mark.slow, pytest.mark.skipif(not os.environ.get("CONVERT_KERAS_FILES"),
                                             reason="every published-style model: make test-keras-files")]
DEFAULT = {("gan_nested", ".h5"), ("gan_generator", ".h5"), ("dcgan", ".keras")}
UNLOADABLE = {("siamese", ".keras")}  # tf_keras cannot load this .keras it wrote (a layer called in two models)
CASES = [pytest.param(name, form, marks=() if (name, form) in DEFAULT else SLOW)
         for name in tf_keras_models.BUILDERS for form in (".h5", ".keras") if (name, form) not in UNLOADABLE]


def _feeds(shapes: dict, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(0, 1, shape).astype(np.float32) for shape in shapes.values()]


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def convert_and_compare(model, shapes: dict, path: Path, work: Path, flags: tuple[str, ...] = (),
                        targets: tuple[str, ...] = TARGETS) -> dict:
    """Save `model` at `path`, check the Keras that built it (tf_keras or Keras 3) reloads it exactly, convert it
    for each target through the CLI and return target -> max relative error of the written model against Keras."""
    import importlib

    from tests.support.ir_cases import rel_error
    from tf_convert import emitters

    keras = importlib.import_module(type(model).__module__.split(".")[0])
    model.save(path)
    feeds = _feeds(shapes)
    expected = [np.asarray(y) for y in _as_list(model(feeds if len(feeds) > 1 else feeds[0], training=False))]
    reloaded = keras.models.load_model(path, compile=False, safe_mode="--no-safe-mode" not in flags)
    again = [np.asarray(y) for y in _as_list(reloaded(feeds if len(feeds) > 1 else feeds[0], training=False))]
    assert all(np.array_equal(a, b) for a, b in zip(expected, again)), "tf_keras does not reload it exactly"
    shape_flags = [arg for name, shape in shapes.items()
                   for arg in ("--input-shape", f"{name}:{','.join(map(str, shape))}" if len(shapes) > 1
                               else ",".join(map(str, shape)))]
    errors = {}
    for target in targets:
        out = work / f"{path.stem}{path.suffix.replace('.', '-')}-{target}"
        code, _, err = run_cli(f"tf2{target}", path, "-o", out, *shape_flags, *flags)
        assert code == 0, f"{path.name} -> {target}: exit {code}: {err}"
        inputs = [x.transpose(0, 3, 1, 2) if x.ndim == 4 else x for x in feeds]
        actual = emitters.get(target).run(out, inputs)
        assert len(actual) == len(expected)
        worst = 0.0
        for a, ref in zip(actual, expected):
            a = np.asarray(a)
            a = a.transpose(0, 2, 3, 1) if a.ndim == 4 else a
            assert a.shape == ref.shape and a.dtype == ref.dtype, (target, a.shape, ref.shape, a.dtype)
            worst = max(worst, rel_error(a, ref))
        errors[target] = worst
    return errors


@pytest.mark.parametrize("name, form", CASES)
def test_published_style_model_converts_exactly(name, form, tmp_path):
    model, shapes = tf_keras_models.BUILDERS[name]()
    errors = convert_and_compare(model, shapes, tmp_path / f"{name}{form}", tmp_path)
    assert all(e <= RTOL for e in errors.values()), errors


def test_lambda_in_h5_converts_with_no_safe_mode_only(tmp_path):
    """A `.h5` Lambda is refused naming --no-safe-mode, and with it Keras loads and traces the file as for
    `.keras`; the Lambda's code never runs without the flag."""
    marker = tmp_path / "MARKER"
    model, shapes = tf_keras_models.with_lambda(str(marker))
    path = tmp_path / "lam.h5"
    model.save(path)
    marker.unlink()
    code, _, err = run_cli("tf2onnx", path, "-o", tmp_path / "refused", "--input-shape", "2,6")
    assert code == 3, err
    assert "times_three" in err and "--no-safe-mode" in err
    assert not marker.exists() and not (tmp_path / "refused").exists()
    model, shapes = tf_keras_models.with_lambda()
    # each conversion traces the model in a child (TF and tf_keras imported there): one target is enough
    errors = convert_and_compare(model, shapes, tmp_path / "lam2.h5", tmp_path, ("--no-safe-mode",), ("onnx",))
    assert all(e <= RTOL for e in errors.values()), errors
