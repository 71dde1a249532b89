"""--feed through the command: conversion.json records each fed value (not a drawn range), `convert verify OUT`
runs again at it, the size verdict names what really fixes a size (a fed shape, never a pad "baking" one), an
output only fed inputs reach passes at the fed value with a warning saying so (not "cannot tell"), and a batch
manifest's `feeds` are --feed's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tf_convert import cli
from tf_convert.app.batch import manifest, runner, worker

tf = pytest.importorskip("tensorflow")


def _frozen(path: Path, build) -> Path:
    graph = tf.Graph()
    with graph.as_default():
        tf.identity(build(), name="y")
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return path


def _placeholder(dtype, shape, name):
    return tf.compat.v1.placeholder(dtype, shape, name=name)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("runtime_feeds")
    return {
        "reshape": _frozen(work / "reshape.pb", lambda: tf.reshape(
            _placeholder(tf.float32, [3, 5, 4], "x"), _placeholder(tf.int32, [2], "shape")) * 2.0),
        "pad": _frozen(work / "pad.pb", lambda: tf.nn.relu(tf.pad(
            _placeholder(tf.float32, [1, 4, 4, 3], "x"), _placeholder(tf.int32, [4, 2], "pads")))),
        "fill": _frozen(work / "fill.pb", lambda: tf.fill(_placeholder(tf.int32, [2], "dims"), 1.5)),
    }


def _convert(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli.main, args)
    return result.exit_code, result.output


def _doc(out: Path) -> dict:
    return json.loads((out / "conversion.json").read_text())


def test_the_fed_value_is_recorded_and_verify_runs_again_at_it(models, tmp_path):
    out = tmp_path / "out"
    code, said = _convert(["tf2onnx", str(models["reshape"]), "-o", str(out), "--outputs", "y:0", "--verify",
                           "--feed", "shape=[-1, 6]"])
    assert code == 0, said
    fed = {row["source_name"]: row for row in _doc(out)["inputs"]}["shape:0"]
    assert fed["fed_value"] == [-1, 6] and "value_range" not in fed, fed
    sizes = _doc(out)["input_sizes"]
    assert sizes["spatial"] == "conversion size only" and "run-time value 'shape:0'" in sizes["why"], sizes
    assert "bakes" not in sizes["why"]
    code, said = _convert(["verify", str(out)])
    assert code == 0 and "OK" in said, said


def test_a_pad_by_fed_paddings_runs_at_any_size(models, tmp_path):
    """pad_by reads no size while converting: the model is size-free, checked at other sizes with the same feed
    (the fed paddings keep their shape; the batch stays free)."""
    out = tmp_path / "out"
    code, said = _convert(["tf2onnx", str(models["pad"]), "-o", str(out), "--outputs", "y:0", "--verify",
                           "--feed", "pads=[[0, 0], [1, 2], [0, 1], [0, 0]]"])
    assert code == 0, said
    doc = _doc(out)
    assert doc["input_sizes"] == {"spatial": "any", "batch": "any", "free": "H x W"}, doc["input_sizes"]
    assert [s.get("passed") for s in doc["verify"]["sizes"]] == [True, True], doc["verify"]["sizes"]


def test_an_output_only_the_feed_reaches_is_checked_at_the_fed_value(models, tmp_path):
    out = tmp_path / "out"
    code, said = _convert(["tf2torch", str(models["fill"]), "-o", str(out), "--outputs", "y:0", "--verify",
                           "--feed", "dims=[2, 3]"])
    assert code == 0, said
    doc = _doc(out)
    assert doc["verify"]["verdict"] == "ok" and doc["outputs"][0]["fed_only"], doc["verify"]
    assert any("follows only the values --feed gave (dims)" in w for w in doc["warnings"]), doc["warnings"]
    assert doc["input_sizes"]["spatial"] == "conversion size only", doc["input_sizes"]


def _manifest(tmp_path: Path, source: Path, feeds: str) -> Path:
    path = tmp_path / "models.toml"
    path.write_text(f'[[model]]\nname = "reshape"\nsource = "{source}"\ntargets = ["onnx"]\noutputs = ["y:0"]\n'
                    f"{feeds}\n")
    return path


def test_a_batch_manifest_feeds_its_models(models, tmp_path):
    (entry,) = manifest.load(_manifest(tmp_path, models["reshape"], 'feeds = {shape = [4, 15]}'), out_root=tmp_path)
    assert entry.feeds == {"shape": [4, 15]}
    unfed = manifest.load(_manifest(tmp_path, models["reshape"], ""), out_root=tmp_path)[0]
    assert entry.fingerprint("onnx") != unfed.fingerprint("onnx")
    result = worker.convert_task(runner._spec(entry, "onnx", memo=False))
    assert result["status"] == "ok" and result["verify"]["passed"], result
    assert _doc(entry.outs["onnx"])["inputs"][1]["fed_value"] == [4, 15]


@pytest.mark.parametrize("feeds, says", [
    ("feeds = [4, 15]", "feeds must be a table"),
    ('feeds = {shape = "four"}', "feeds.shape: 'four' is not a number"),
    ('feeds = {shape = ["a"]}', "feeds.shape"),
])
def test_bad_manifest_feeds_are_refused_by_line(models, tmp_path, feeds, says):
    with pytest.raises(manifest.ManifestError) as caught:
        manifest.load(_manifest(tmp_path, models["reshape"], feeds), out_root=tmp_path)
    (problem,) = caught.value.problems
    assert says in problem and ":6: model 'reshape'" in problem, problem

