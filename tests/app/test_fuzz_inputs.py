"""Corrupt-input fuzz: mutants of every source form, from a fixed seed, through the CLI.

Each mutant must end with exit 2 or 3, exactly one error line of at most 300 characters and nothing
left behind, or with exit 0 and a model --verify found equal to what TensorFlow/Keras computes for that
very file. ~100 mutants run in `make test`; `make fuzz` runs the slow set (CONVERT_FUZZ_FULL=1).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.fuzz_mutants import FORMS, Fixtures, mutant
from tf_convert import cli

FAST = {"ckpt": 20, "pb": 14, "saved_model": 20, "h5": 24, "keras": 24}  # 102 in `make test`
SLOW = 70  # per form, after the fast ones: 350 more in `make fuzz`
FULL = bool(os.environ.get("CONVERT_FUZZ_FULL"))
TARGETS = ("tf2torch", "tf2onnx")  # in-process runtimes; alternated by mutant number


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    return Fixtures(tmp_path_factory.mktemp("fuzz_fixtures"))


def check_mutant(fixtures: Fixtures, form: str, index: int, tmp_path: Path) -> int:
    src, what = mutant(form, index, fixtures, tmp_path / "src")
    out = tmp_path / "out" / "model"
    target = TARGETS[index % len(TARGETS)]
    result = CliRunner().invoke(cli.main, [target, str(src), "-o", str(out), "--verify"])
    label = f"{target} {form}#{index} ({what})"
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), (
        f"{label}: {result.exception!r}")
    stderr = result.stderr
    assert "Traceback" not in stderr, f"{label}: {stderr}"
    left = sorted(p.name for p in out.parent.iterdir()) if out.parent.exists() else []
    if os.environ.get("CONVERT_FUZZ_REPORT"):  # one JSON line per mutant, for the table in the issue note
        with open(os.environ["CONVERT_FUZZ_REPORT"], "a") as log:
            log.write(json.dumps({"form": form, "index": index, "target": target, "what": what,
                                  "exit": result.exit_code,
                                  "error": stderr.strip()[:300]}) + "\n")
    if result.exit_code == 0:
        doc = json.loads((out / "conversion.json").read_text())
        assert doc["verify"]["passed"], f"{label}: {doc['verify']}"
        assert left == ["model"], f"{label}: {left}"
    else:
        lines = [line for line in stderr.splitlines() if line.strip()]
        assert result.exit_code in (2, 3), f"{label}: exit {result.exit_code}: {stderr}"
        assert len(lines) == 1 and lines[0].startswith("convert: error:"), f"{label}: {stderr}"
        assert len(lines[0]) <= 300, f"{label}: {len(lines[0])} chars"
        assert left == [], f"{label}: left {left}"
    return result.exit_code


CASES = [(form, i) for form in FORMS for i in range(FAST[form])]
SLOW_CASES = [(form, FAST[form] + i) for form in FORMS for i in range(SLOW)]


@pytest.mark.parametrize("form,index", CASES, ids=[f"{f}-{i}" for f, i in CASES])
def test_mutant(fixtures, form, index, tmp_path):
    check_mutant(fixtures, form, index, tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(not FULL, reason="the long fuzz: make fuzz (CONVERT_FUZZ_FULL=1)")
@pytest.mark.parametrize("form,index", SLOW_CASES, ids=[f"{f}-{i}" for f, i in SLOW_CASES])
def test_mutant_slow(fixtures, form, index, tmp_path):
    check_mutant(fixtures, form, index, tmp_path)
