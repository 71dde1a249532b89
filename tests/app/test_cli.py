"""End to end through the `convert` command: every source kind, every target, every bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.support import tf_models
from tf_convert import cli, emitters

CONVERT = str(Path(sys.executable).with_name("convert"))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_models")
    return {
        "mobilenet": tf_models.build_mobilenet_v1_tiny(root / "mobilenet", input_hw=(32, 32)),
        "resnet": tf_models.build_resnet_v1_tiny(root / "resnet"),
    }


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli.main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def assert_nothing_written(out: Path) -> None:
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")], "temp dir left behind"


# ---- every source kind, every target --------------------------------------------------------------


@pytest.mark.parametrize("model", ["mobilenet", "resnet"])
@pytest.mark.parametrize("kind", ["ckpt", "ckpt_dir", "pb", "saved_model"])
def test_sources_to_torch(models, model, kind, tmp_path):
    out = tmp_path / "out"
    code, stdout, stderr = run_cli("tf2torch", models[model][kind], "-o", out, "--verify", "--json")
    assert code == 0, stderr
    doc = json.loads(stdout)
    assert doc["verify"]["passed"] and doc["verify"]["max_rel"] <= 1e-5
    assert (out / "model.py").is_file() and (out / "model.pt").is_file()
    recorded = json.loads((out / "conversion.json").read_text())
    assert recorded["source"]["format"] in ("tf_checkpoint", "frozen_pb", "saved_model")
    assert recorded["inputs"][0]["source_name"].startswith("input")
    assert recorded["pads_computed_for"]


@pytest.mark.parametrize("target", [t for t in emitters.TARGETS if t != "torch"])
@pytest.mark.parametrize("model", ["mobilenet", "resnet"])
def test_ckpt_to_every_target(models, model, target, tmp_path):
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(f"tf2{target}", models[model]["ckpt"], "-o", out, "--verify", "--json")
    assert code == 0, stderr
    doc = json.loads(stdout)
    assert doc["verify"]["passed"], doc["verify"]
    assert set(doc["files"]) <= {p.name for p in out.iterdir()}


def test_asymmetric_pads_are_reported(models, tmp_path):
    out = tmp_path / "out"
    code, stdout, _ = run_cli("tf2torch", models["mobilenet"]["ckpt"], "-o", out, "--json")
    assert code == 0
    doc = json.loads(stdout)
    assert doc["pad_layers"], "32x32 input: stride-2 SAME layers pad 0 top, 1 bottom"
    for layer in doc["pad_layers"]:
        t, b, l, r = layer["pads"]  # noqa: E741 - pad sides
        assert (t, l) != (b, r) and layer["node"] and layer["reason"]


@pytest.mark.parametrize("target", ["mxnet", "caffe"])
def test_lowerings_are_recorded_per_layer(models, target, tmp_path):
    """conversion.json's `lowerings` is the padding module's choice per layer, as `inspect` shows it."""
    code, stdout, stderr = run_cli(f"tf2{target}", models["mobilenet"]["ckpt"], "-o", tmp_path / "out", "--json")
    assert code == 0, stderr
    doc = json.loads(stdout)
    code, inspected, stderr = run_cli("inspect", models["mobilenet"]["ckpt"], "--json")
    assert code == 0, stderr
    expected = {r["node"]: r["plan"][target] for r in json.loads(inspected) if r["plan"].get(target, "-") != "-"}
    assert doc["lowerings"] == expected and expected
    assert {e["node"] for e in doc["pad_layers"]} <= set(doc["lowerings"])


@pytest.mark.parametrize("mode", ["shift", "opencv"])
def test_caffe_pad_modes_verify_and_say_what_they_wrote(models, mode, tmp_path):
    """--caffe-pad shift / opencv verify against TF; opencv's prototxt (BVLC rejects it) says so."""
    out = tmp_path / "out"
    code, stdout, stderr = run_cli("tf2caffe", models["mobilenet"]["ckpt"], "-o", out, "--caffe-pad", mode,
                                   "--verify", "--json")
    assert code == 0, stderr
    doc = json.loads(stdout)
    assert doc["verify"]["passed"] and doc["verify"]["max_rel"] <= 1e-5
    warned = [w for w in doc["warnings"] if "BVLC Caffe does not" in w]
    plans = set(doc["lowerings"].values())
    if mode == "opencv":
        assert warned and "four-sided pad (OpenCV only)" in plans and not doc["pad_layers"]
        _, _, stderr = run_cli("tf2caffe", models["mobilenet"]["ckpt"], "-o", tmp_path / "o2", "--caffe-pad", mode)
        assert "warning: deploy.prototxt writes asymmetric conv pads as four `pad` values" in stderr
    else:
        assert not warned and "slice" in plans


def test_verify_command_reruns_the_check(models, tmp_path):
    out = tmp_path / "out"
    assert run_cli("tf2onnx", models["resnet"]["pb"], "-o", out)[0] == 0
    code, stdout, stderr = run_cli("verify", out)
    assert code == 0, stderr
    assert stdout.startswith("OK")



WEIGHT_FILES = {"torch": "model.pt", "onnx": "model.onnx", "caffe": "model.caffemodel", "mxnet": "model-0000.params"}


@pytest.mark.parametrize("layers", [(), ("--layers",)])
@pytest.mark.parametrize("target", list(WEIGHT_FILES))
def test_verify_command_on_damaged_files_is_one_line_exit_2(models, tmp_path, target, layers):
    """`convert verify OUT [--layers]` reads files the user may have changed since: a weight file its runtime
    cannot read is bad input (exit 2, one line naming OUT), never an internal error."""
    if target == "mxnet" and not (Path(emitters.__file__).parents[1] / ".venv-mxnet").exists():
        pytest.skip("no .venv-mxnet (run `make mxnet-env`)")
    out = tmp_path / "out"
    assert run_cli(f"tf2{target}", models["resnet"]["pb"], "-o", out)[0] == 0
    weights = out / WEIGHT_FILES[target]
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    code, _, stderr = run_cli("verify", out, *layers)
    assert code == 2, stderr
    assert len(stderr.strip().splitlines()) == 1 and str(out) in stderr and "runtime could not load or run" in stderr
    assert "internal error" not in stderr

def test_inspect_shows_pads_and_plans(models):
    code, stdout, stderr = run_cli("inspect", models["mobilenet"]["ckpt"])
    assert code == 0, stderr
    assert "pad layer" in stdout and "in layer" in stdout
    assert "0,1,0,1" in stdout  # 32 -> 16 with k=3 s=2: one extra row/col at the bottom/right


def test_ir_round_trip_via_cli(models, tmp_path):
    out = tmp_path / "ir"
    assert run_cli("tf2ir", models["resnet"]["pb"], "-o", out)[0] == 0
    from tf_convert.convert import ir

    graph = ir.load(out)
    graph.validate()
    assert any(n.op == "conv2d" for n in graph.nodes)


def test_existing_output_needs_force(models, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    code, _, stderr = run_cli("tf2torch", models["resnet"]["pb"], "-o", out)
    assert code == 2 and "--force" in stderr
    assert run_cli("tf2torch", models["resnet"]["pb"], "-o", out, "--force")[0] == 0


# ---- bad input: one line, the right exit code, nothing written ---------------------------------------


def _copy_ckpt(models, tmp_path, drop: str) -> Path:
    src = Path(models["resnet"]["ckpt"])
    target = tmp_path / "ckpt"
    target.mkdir()
    for f in src.parent.glob(src.name + ".*"):
        if drop not in f.name:
            shutil.copy(f, target / f.name)
    return target / src.name


def _check_error(args, code: int, words: list[str], out: Path) -> str:
    got, _, stderr = run_cli(*args, "-o", out)
    assert got == code, stderr
    lines = [line for line in stderr.strip().splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("convert: error:"), stderr
    for word in words:
        assert word.lower() in lines[0].lower(), lines[0]
    assert "Traceback" not in stderr
    assert_nothing_written(out)
    return lines[0]


@pytest.mark.parametrize("drop,word", [(".meta", ".meta"), (".index", ".index"), (".data", "data")])
def test_incomplete_checkpoint(models, tmp_path, drop, word):
    prefix = _copy_ckpt(models, tmp_path, drop)
    _check_error(["tf2torch", prefix], 2, [word], tmp_path / "out")


def test_not_a_model(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    _check_error(["tf2torch", text], 2, ["notes.txt"], tmp_path / "out")
    _check_error(["tf2torch", tmp_path / "missing.pb"], 2, ["missing.pb"], tmp_path / "out")


def test_corrupt_pb(tmp_path):
    pb = tmp_path / "broken.pb"
    pb.write_bytes(np.random.default_rng(0).bytes(2000))
    _check_error(["tf2torch", pb], 2, ["broken.pb"], tmp_path / "out")


def _save_pb(path: Path, build) -> Path:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        build(tf)
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return path


def test_unknown_spatial_size_asks_for_input_shape(tmp_path):
    def build(tf):
        x = tf.compat.v1.placeholder(tf.float32, [None, None, None, 3], name="input")
        w = np.ones((3, 3, 3, 2), np.float32)
        tf.identity(tf.nn.conv2d(x, w, 2, "SAME"), name="y")

    pb = _save_pb(tmp_path / "dynamic.pb", build)
    _check_error(["tf2torch", pb], 2, ["--input-shape"], tmp_path / "out")
    code, _, stderr = run_cli("tf2torch", pb, "-o", tmp_path / "ok", "--input-shape", "1,9,9,3", "--verify")
    assert code == 0, stderr


def test_unsupported_ops_are_all_listed(tmp_path):
    def build(tf):
        x = tf.compat.v1.placeholder(tf.float32, [1, 4, 4, 3], name="input")
        a = tf.math.lgamma(x, name="log_gamma")
        b = tf.math.digamma(a, name="psi")
        tf.identity(b, name="y")

    pb = _save_pb(tmp_path / "odd.pb", build)
    line = _check_error(["tf2torch", pb], 3, ["log_gamma", "psi", "Lgamma", "Digamma"], tmp_path / "out")
    assert "2 unsupported" in line


def test_wrong_output_name_lists_close_matches(models, tmp_path):
    line = _check_error(["tf2torch", models["resnet"]["pb"], "--outputs", "predictionz"], 2, ["predictionz"],
                        tmp_path / "out")
    assert "predictions" in line


def test_bad_input_shape_option(models, tmp_path):
    _check_error(["tf2torch", models["resnet"]["pb"], "--input-shape", "1,a,3"], 2, ["--input-shape"],
                 tmp_path / "out")


def test_verification_failure_exits_4(models, tmp_path):
    # --rtol 0 asks for bit-identical outputs, which a float conversion does not give: exit 4, nothing left
    _check_error(["tf2torch", models["mobilenet"]["pb"], "--verify", "--rtol", "0"], 4, ["rtol"],
                 tmp_path / "out")


def test_negative_rtol_is_bad_usage(models, tmp_path):
    # a tolerance below zero means nothing (0 asks for bit-identical outputs); a wrong model failing
    # `--verify` with exit 4 at every output scale: tests/app/test_verify_faults.py
    _check_error(["tf2torch", models["mobilenet"]["pb"], "--verify", "--rtol", "-1"], 2, ["rtol"],
                 tmp_path / "out")


# ---- the real executable ----------------------------------------------------------------------------


def test_help_does_not_import_frameworks():
    code = (
        "import sys; from tf_convert import cli; from click.testing import CliRunner; "
        "r = CliRunner().invoke(cli.main, ['--help']); assert r.exit_code == 0; "
        "heavy = [m for m in ('tensorflow', 'torch', 'onnx', 'cv2', 'keras') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_executable_exit_codes(tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([CONVERT, "tf2torch", str(tmp_path / "nothing.ckpt")], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    proc = subprocess.run([CONVERT, "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and "convert" in proc.stdout


def test_system_errors_are_one_line_not_a_bug(models, tmp_path):
    # the output's parent is a file: the OS refuses, and that is the machine's problem, not a bug
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    code, _, stderr = run_cli("tf2onnx", models["resnet"]["pb"], "-o", blocker / "out")
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "a_file" in lines[0], stderr
    assert "bug" not in lines[0] and "not a directory" in lines[0]


@pytest.mark.parametrize("command", ["inspect", "tf2torch", "tf2onnx", "batch"])
def test_help_has_each_flag_once(command):
    """Options several targets share (--static-shapes: torch and ONNX) are one flag, not a duplicate."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = CliRunner().invoke(cli.main, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert result.output.count("--static-shapes") <= 1


@pytest.mark.parametrize("preset", [None, "ACTIVE"])
def test_openmp_threads_sleep_unless_the_user_says(preset, tmp_path, monkeypatch):
    """Torch's idle OpenMP threads sleep (they spun on a core the TF reference child needed);
    a policy the user set is kept."""
    if preset is None:
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    else:
        monkeypatch.setenv("OMP_WAIT_POLICY", preset)
    code, _, _ = run_cli("tf2torch", tmp_path / "nothing.ckpt")
    assert code == 2
    assert os.environ["OMP_WAIT_POLICY"] == (preset or "PASSIVE")
