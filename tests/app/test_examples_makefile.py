"""examples/Makefile: a rule per model and target whose target file is the output's conversion.json, run with
`make -j2` on two small frozen graphs; after one model changes, only that model is converted again."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.tf_models import save_frozen

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = ROOT / "examples" / "Makefile"
CONVERT = str(Path(sys.executable).with_name("convert"))

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _conv(x, channels: int):
    import tensorflow as tf

    kernel = np.random.default_rng(channels).standard_normal((3, 3, 3, channels)).astype(np.float32)
    return tf.nn.relu(tf.nn.conv2d(x, tf.constant(kernel), 2, "SAME"), name="out")


def _make(tmp_path: Path, models: list[Path]) -> subprocess.CompletedProcess:
    args = ["make", "-j2", "-f", str(MAKEFILE), f"CONVERT={CONVERT}", f"MODELS={' '.join(map(str, models))}",
            "TARGETS=torch", f"OUT={tmp_path / 'out'}", "FLAGS=-q"]
    return subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)


def test_only_the_changed_model_is_converted_again(tmp_path):
    models = [Path(save_frozen(tmp_path / f"{name}.pb", lambda x, c=c: _conv(x, c), [1, 9, 9, 3]))
              for name, c in (("first", 4), ("second", 2))]
    outputs = [tmp_path / "out" / f"{name}-torch" / "conversion.json" for name in ("first", "second")]

    built = _make(tmp_path, models)
    assert built.returncode == 0, built.stderr
    assert all(o.is_file() for o in outputs) and built.stdout.count(" tf2torch ") == 2
    before = [o.stat().st_mtime_ns for o in outputs]

    unchanged = _make(tmp_path, models)
    assert unchanged.returncode == 0 and " tf2torch " not in unchanged.stdout

    later = max(before) / 1e9 + 10  # the source is newer than its output, whatever the file system's clock
    os.utime(models[1], (later, later))
    again = _make(tmp_path, models)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count(" tf2torch ") == 1 and str(models[1]) in again.stdout
    assert outputs[0].stat().st_mtime_ns == before[0] and outputs[1].stat().st_mtime_ns != before[1]
