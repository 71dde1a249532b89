"""`--verify` of a `.tflite` runs ai-edge-litert's interpreter (the same TFLite runtime, packaged without
TensorFlow) and never imports TensorFlow, installed or not; where TensorFlow does not import, the same; with
neither interpreter, one line (exit 2). TensorFlow is
hidden in this process (`sys.modules[name] = None` makes its import fail), after it wrote the files:
the CLI's reference child starts isolated (`python -I`), so a PYTHONPATH blocker would not reach it."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.support.tflite_cases import _convert, _keras_convs, _two_signatures, interpreter_outputs
from tf_convert import parsers
from tf_convert.app import api, requirements
from tf_convert.convert.errors import MissingDependency
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tflite import reference
from tf_convert.parsers.tflite.layout import TO_NCHW, TO_NHWC

litert = pytest.importorskip("ai_edge_litert.interpreter")

RTOL = 1e-4


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import tensorflow as tf

    root = tmp_path_factory.mktemp("litert")
    model = _keras_convs(15)  # stride-2 SAME at an odd size: the padding the reference must agree on
    return {"keras_convs_15": _convert(tf.lite.TFLiteConverter.from_keras_model(model), root / "convs.tflite"),
            "signatures": _two_signatures(root)}


@pytest.fixture
def no_tensorflow(monkeypatch):
    for name in [m for m in sys.modules if m == "tensorflow" or m.startswith("tensorflow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorflow", None)


def test_litert_gives_tf_lites_numbers(files, monkeypatch):
    path = files["keras_convs_15"]
    graph = parsers.parse(path, ParseOptions())
    x = np.random.default_rng(0).standard_normal(graph.shape(graph.inputs[0])).astype(np.float32)
    expected = [y.transpose(TO_NCHW) if y.ndim == 4 else y
                for y in interpreter_outputs(path, [np.ascontiguousarray(x.transpose(TO_NHWC))])]
    monkeypatch.setitem(sys.modules, "tensorflow", None)
    assert reference._interpreter_class() is litert.Interpreter
    got = reference.run_reference(path, graph, [x])
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        # LiteRT 2.3's kernels vs TF 2.21's copy of TFLite, each with its own XNNPACK: last-bit apart (1.4e-7)
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("target", ["torch", "onnx"])
def test_verify_without_tensorflow(target, files, no_tensorflow, tmp_path):
    record = api.convert(files["keras_convs_15"], target, tmp_path / "out", verify=True)
    assert record["verify"]["passed"] and record["verify"]["max_rel"] < RTOL, record["verify"]


def test_signature_runner_without_tensorflow(files, no_tensorflow, tmp_path):
    record = api.convert(files["signatures"], "onnx", tmp_path / "out", verify=True,
                         settings=("signature=scale",))  # the signature runner's path
    assert record["verify"]["passed"] and record["verify"]["max_rel"] < RTOL, record["verify"]


def test_neither_interpreter_is_one_line(no_tensorflow, monkeypatch):
    monkeypatch.setitem(sys.modules, "ai_edge_litert", None)
    monkeypatch.delitem(sys.modules, "ai_edge_litert.interpreter")
    with pytest.raises(MissingDependency) as err:
        requirements.check_reference("tflite")
    message = str(err.value)
    assert "neither ai_edge_litert.interpreter nor tensorflow can be imported" in message
    assert "\n" not in message and "[verify]" in message


# The CLI's --verify and `verify --layers` (their reference in the child), then what that child runs, in one
# fresh process: TensorFlow is installed but nothing on this path may import it.
_NOTHING_IMPORTS_TF = """
import json, sys
from click.testing import CliRunner
from tf_convert import cli, parsers
from tf_convert.app import requirements
from tf_convert.app.verify import reference_process
from tf_convert.parsers.base import ParseOptions
path, out = sys.argv[1], sys.argv[2]
found = {"verify": CliRunner().invoke(cli.main, ["tf2onnx", path, "-o", out, "--verify"]).exit_code,
         "layers": CliRunner().invoke(cli.main, ["verify", out, "--layers"]).exit_code}
requirements.check_reference("tflite")  # the child's steps, in process
graph = parsers.parse(path, ParseOptions())
x = [reference_process.skeleton(graph).tensors[graph.inputs[0]].shape]
sets = [[__import__("numpy").zeros(x[0], "float32")]]
found["sets"] = [type(o).__name__ for o in reference_process.all_sets(path, graph, sets)]
found["tensors"] = len(parsers.run_reference_tensors(path, graph, sets[0], list(graph.source_names.values())))
found["tensorflow"] = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "tf_keras"))
print(json.dumps(found))
"""


def test_no_tensorflow_import_on_the_tflite_check(files, tmp_path):
    done = subprocess.run([sys.executable, "-c", _NOTHING_IMPORTS_TF, str(files["keras_convs_15"]),
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["verify"] == 0 and found["layers"] == 0, found
    assert found["sets"] == ["list"] and found["tensors"] > 0, found
    assert found["tensorflow"] == [], found
