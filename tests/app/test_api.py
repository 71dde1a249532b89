"""The Python API (app/api.py): the same conversions as the CLI, typed errors with exit codes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support import tf_models
from tf_convert import app as convert
from tf_convert.app import api
from tf_convert.convert.errors import ConvertError, InputError, UsageError, VerifyError


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """A tiny MobileNet-v1 TF1 checkpoint at 32x32: every stride-2 SAME layer pads 0/1."""
    return tf_models.build_mobilenet_v1_tiny(tmp_path_factory.mktemp("api") / "m", input_hw=(32, 32))["ckpt"]


def test_every_target_converts_and_returns_the_record(ckpt, tmp_path):
    for target, fn, options in (("torch", convert.tf2torch, {"nhwc": False}), ("onnx", convert.tf2onnx, {"opset": 13}),
                                ("caffe", convert.tf2caffe, {"caffe_pad": "kernel"}), ("mxnet", convert.tf2mxnet, {})):
        out = tmp_path / target
        record = fn(ckpt, out, verify=True, **options)
        assert record["target"] == target and record["verify"]["passed"], record["verify"]
        assert json.loads((out / "conversion.json").read_text())["verify"] == record["verify"]
        assert record["out"] == str(out)


def test_inspect_rows_follow_the_target_options(ckpt):
    layer = {r["node"]: r for r in api.inspect(ckpt)}
    kernel = {r["node"]: r for r in api.inspect(ckpt, caffe_pad="kernel")}
    convs = [n for n, r in layer.items() if r["op"] == "conv2d" and r["targets"]["caffe"]["pad_layer"]]
    assert convs, "the test model has asymmetric convs"
    assert all(not kernel[n]["targets"]["caffe"]["pad_layer"] for n in convs)


def test_reverify_returns_metrics(ckpt, tmp_path):
    out = tmp_path / "onnx"
    convert.tf2onnx(ckpt, out)
    metrics = api.verify(out)
    assert metrics["passed"] and metrics["max_rel"] < 1e-4


@pytest.mark.parametrize("call, error, code", [
    (lambda src, tmp: convert.tf2onnx(src, tmp / "o", opset=99), UsageError, 2),
    (lambda src, tmp: convert.tf2torch(src, tmp / "o", opset=17), UsageError, 2),
    (lambda src, tmp: convert.convert(src, "tflite", tmp / "o"), UsageError, 2),
    (lambda src, tmp: convert.tf2onnx(tmp / "missing.ckpt", tmp / "o"), InputError, 2),
    (lambda src, tmp: convert.tf2onnx(src, tmp / "o", input_shape="1,a,3"), UsageError, 2),
    (lambda src, tmp: convert.tf2onnx(src, tmp / "o", verify=True, rtol=-1.0), VerifyError, 4),
])
def test_errors_are_typed_and_carry_the_exit_code(ckpt, tmp_path, call, error, code):
    with pytest.raises(error) as info:
        call(ckpt, tmp_path)
    assert isinstance(info.value, ConvertError) and info.value.exit_code == code
    assert not (tmp_path / "o").exists()


def test_input_shape_forms():
    assert api.input_shapes("1,8,8,3") == {"": (1, 8, 8, 3)}
    assert api.input_shapes([1, 8, 8, 3]) == {"": (1, 8, 8, 3)}
    assert api.input_shapes({"x": "1x8x8x3"}) == {"x": (1, 8, 8, 3)}
    assert api.names("a, b") == ["a", "b"] and api.names(["a"]) == ["a"] and api.names("") is None
    assert np.prod(api.parse_shape((2, 3))) == 6
