"""musicnn 0.1.0's shipped TF 1.12 training checkpoints (MTT_musicnn, MTT_vgg, MSD_musicnn, MSD_vgg): their
`is_training` is a bool Placeholder of unknown rank steering tf.compat.v1 batch norm (fused and through
tf.nn.moments) and dropout conds. Each converts with no flags (the flag folds to inference, noted) and
--verify passes against TF's run of the checkpoint (torch, ONNX, MXNet; Caffe for the VGG variants).
`make test-real-models` installs the wheel (musicnn==0.1.0 --no-deps) and runs this; MUSICNN_DIR may name an
unpacked copy of its package instead."""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path

import pytest

from tests.support.verify_faults import run_cli


def _package() -> Path | None:
    if os.environ.get("MUSICNN_DIR"):
        return Path(os.environ["MUSICNN_DIR"])
    spec = importlib.util.find_spec("musicnn")
    return Path(spec.origin).parent if spec and spec.origin else None


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(_package() is None, reason="musicnn 0.1.0 not installed: make test-real-models")]


@pytest.mark.parametrize("model", ["MTT_musicnn", "MTT_vgg", "MSD_musicnn", "MSD_vgg"])
@pytest.mark.parametrize("target", ["torch", "onnx", "mxnet"])
def test_musicnn_checkpoint_converts_exactly(model, target, tmp_path):
    code, out, err = run_cli(f"tf2{target}", _package() / model, "-o", tmp_path / "out", "--verify")
    assert code == 0, err
    assert re.search(rf"^{target}\s+OK", out + err, re.M), out + err
    notes = json.loads((tmp_path / "out" / "conversion.json").read_text())["notes"]
    assert any("= false (inference default" in n for n in notes), notes


# Caffe: the VGG variants are exact; musicnn's front end pools over the frequency axis of a transposed
# tensor and takes means over non-spatial axes, which BVLC Caffe cannot express (exit 3, the nodes named)
@pytest.mark.parametrize("model, refused", [("MTT_vgg", None), ("MSD_vgg", None),
                                            ("MTT_musicnn", "unsupported node(s) for caffe: transpose"),
                                            ("MSD_musicnn", "unsupported node(s) for caffe: transpose")])
def test_musicnn_checkpoint_on_caffe(model, refused, tmp_path):
    code, out, err = run_cli("tf2caffe", _package() / model, "-o", tmp_path / "out", "--verify")
    if refused:
        assert code == 3 and refused in err, (code, err)
    else:
        assert code == 0, err
        assert re.search(r"^caffe\s+OK", out + err, re.M), out + err
