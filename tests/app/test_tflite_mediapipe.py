"""Real MediaPipe models, the face detectors (short range; full range with sparse weights) from the pinned
`mediapipe` wheel (its .tflite files are data in the wheel; `make test-mediapipe` installs it with --no-deps,
nothing of it is imported): every target that can express them converts them and --verify checks them
against TFLite's interpreter."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tf_convert import cli

MODELS = {"short_range": "modules/face_detection/face_detection_short_range.tflite",
          "full_range_sparse": "modules/face_detection/face_detection_full_range_sparse.tflite"}  # sparse weights


def _wheel_file(relative: str) -> Path | None:
    spec = importlib.util.find_spec("mediapipe")  # finds the package without importing it (no deps installed)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    return path if path.is_file() else None


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.environ.get("CONVERT_MEDIAPIPE_TEST"), reason="make test-mediapipe"),
]


# target -> None (converts, --verify passes) or the text of its refusal (exit 3)
TARGETS = {
    "tf2torch": None,
    "tf2onnx": None,
    "tf2mxnet": None,
    "tf2caffe": "no Permute layer",  # the regressors' reshape reads the image in TFLite's NHWC order
}


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("name", list(MODELS))
def test_face_detection(name, target, tmp_path):
    model = _wheel_file(MODELS[name])
    assert model is not None, "mediapipe's wheel is not installed: run `make test-mediapipe`"
    out = tmp_path / "out"
    result = CliRunner().invoke(cli.main, [target, str(model), "-o", str(out), "--verify", "--json"])
    refusal = TARGETS[target]
    if refusal is not None:
        assert result.exit_code == 3 and refusal in result.output, result.output
        return
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "conversion.json").read_text())
    print(name, target, "max_rel", doc["verify"]["max_rel"], "seconds", doc["seconds"])
    assert doc["verify"]["passed"] and doc["verify"]["max_rel"] < 1e-4
    assert any(r.get("stored") == "float16" for r in doc["inference_passes"])  # its weights are float16


def test_a_custom_operator_is_refused_by_name(tmp_path):
    model = _wheel_file("modules/selfie_segmentation/selfie_segmentation.tflite")
    assert model is not None, "mediapipe's wheel is not installed: run `make test-mediapipe`"
    result = CliRunner().invoke(cli.main, ["tf2onnx", str(model), "-o", str(tmp_path / "out")])
    assert result.exit_code == 3, result.output
    assert "Convolution2DTransposeBias" in result.output and "custom operator" in result.output
