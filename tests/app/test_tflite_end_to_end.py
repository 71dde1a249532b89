"""`.tflite` sources end to end: files written by TFLite's converter (Keras models and tf.functions) go
to every target and are measured against TFLite's own interpreter; the CLI converts and --verify checks
them; hybrid quantized files are refused by name, full-integer ones converted bit for bit, weights dequantized
where that is exact."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from tests.support.every_target import errors_per_target
from tests.support.tflite_cases import built, interpreter_outputs
from tf_convert import cli, parsers
from tf_convert.convert.passes import run_default_passes
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tflite.layout import TO_NCHW, TO_NHWC

RTOL = 1e-4


@pytest.fixture(scope="session")
def tflite_files(tmp_path_factory):
    return built(tmp_path_factory)


def _inputs(graph, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(graph.shape(n)).astype(np.float32) for n in graph.inputs]


def _expected(path, graph, inputs):
    """TFLite's interpreter on the same input (NHWC), its outputs in IR layout."""
    feeds = [x.transpose(TO_NHWC) if x.ndim == 4 else x for x in inputs]
    outs = interpreter_outputs(path, [np.ascontiguousarray(f) for f in feeds])
    return [y.transpose(TO_NCHW) if y.ndim == 4 else y for y in outs]


# name -> targets that must refuse it (with the reason in the catalog)
CASES = {
    "keras_convs_15": (),
    "keras_convs_16": (),
    "float16": (),
    "function_ops_9": ("caffe",),  # bilinear resize on TF's grid: no BVLC Caffe layer
    "sparse": (),  # compressed weights, DENSIFY
}


@pytest.mark.parametrize("name", list(CASES))
def test_every_target_matches_the_tflite_interpreter(name, tflite_files, tmp_path):
    path = tflite_files[name]
    graph = run_default_passes(parsers.parse(path, ParseOptions()))
    inputs = _inputs(graph)
    expected = _expected(path, graph, inputs)
    errors = errors_per_target(graph, inputs, expected, tmp_path, refused=CASES[name])
    print(name, {t: f"{e:.2e}" for t, e in errors.items()})
    assert errors and all(e < RTOL for e in errors.values()), errors


def _cli(*args: str):
    return CliRunner().invoke(cli.main, [*map(str, args)])


@pytest.mark.parametrize("target,name", [("tf2onnx", "keras_convs_15"), ("tf2torch", "float16")])
def test_cli_verify_uses_the_tflite_interpreter(target, name, tflite_files, tmp_path):
    out = tmp_path / "out"
    result = _cli(target, tflite_files[name], "-o", out, "--verify", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "conversion.json").read_text())
    assert doc["source"]["format"] == "tflite"
    assert doc["verify"]["passed"] and doc["verify"]["max_rel"] < RTOL
    if name == "float16":
        assert any(r.get("pass") == "tflite_weights" and r["stored"] == "float16"
                   for r in doc["inference_passes"])


def test_signature_picks_its_subgraph(tflite_files, tmp_path):
    out = tmp_path / "shift"
    result = _cli("tf2torch", tflite_files["signatures"], "--signature", "shift", "-o", out, "--verify", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "conversion.json").read_text())
    assert [o["source_name"] for o in doc["outputs"]] == ["shifted"]
    assert doc["source_settings"] == {"signature": "shift"} and doc["verify"]["passed"]
    again = _cli("verify", out)
    assert again.exit_code == 0, again.output


@pytest.mark.parametrize("size", [11, 12])
def test_a_free_input_size_converts_at_the_size_given(size, tflite_files, tmp_path):
    result = _cli("tf2onnx", tflite_files["free_size"], "-o", tmp_path / "out", "--verify", "--json",
                  "--input-shape", f"1,{size},{size},3")
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "out" / "conversion.json").read_text())
    assert doc["verify"]["passed"] and doc["verify"]["max_rel"] < RTOL
    assert [d["shape"] for d in doc["inputs"]] == [[1, 3, size, size]]
    refused = _cli("tf2onnx", tflite_files["free_size"], "-o", tmp_path / "none")
    assert refused.exit_code == 2 and "--input-shape" in refused.output


@pytest.mark.parametrize("name,exit_code,named", [
    ("unique", 3, "UNIQUE"),  # a builtin without a converter
    ("dynamic_range", 3, "hybrid (dynamic-range) quantized weights"),
])
def test_refusals_name_the_operator(name, exit_code, named, tflite_files, tmp_path):
    result = _cli("tf2onnx", tflite_files[name], "-o", tmp_path / "out")
    assert result.exit_code == exit_code, result.output
    assert named in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_a_full_integer_file_converts_bit_for_bit(tflite_files, tmp_path):
    """TFLite's integer arithmetic (tests/parsers/test_tflite_int8.py measures it op by op)."""
    result = _cli("tf2onnx", tflite_files["int8"], "-o", tmp_path / "out", "--verify")
    assert result.exit_code == 0 and "exact" in result.output, result.output


@pytest.mark.parametrize("name,verify,claimed", [
    ("free_size", False, "conversion size only"),  # free, but not checked at another size
    ("free_size", True, "any"),  # checked at two more sizes in TFLite's interpreter
])
def test_any_size_is_claimed_only_where_it_was_run(name, verify, claimed, tflite_files, tmp_path):
    out = tmp_path / "out"
    result = _cli("tf2onnx", tflite_files[name], "-o", out, "--input-shape", "1,11,11,3",
                  *(["--verify"] if verify else []))
    assert result.exit_code == 0, result.output
    sizes = json.loads((out / "conversion.json").read_text())["input_sizes"]
    assert sizes["spatial"] == claimed, sizes
    if claimed != "any":
        assert ".tflite file was not run at another size" in sizes["why"], sizes
