"""-o never deletes a file convert did not write: convert/outdir.py and the CLI around it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support import tf_models
from tf_convert import cli
from tf_convert.app import outdir
from tf_convert.convert.errors import UsageError

CONVERT = str(Path(sys.executable).with_name("convert"))


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tf_models.build_resnet_v1_tiny(tmp_path_factory.mktemp("outdir_model") / "resnet")


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A folder holding a copy-free layout: the source next to where outputs go; cwd = that folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "canary.txt").write_text("keep me")
    return tmp_path


def run_cli(*args) -> tuple[int, str]:
    result = CliRunner().invoke(cli.main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stderr


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _previous_output(path: Path, files=("model.onnx",)) -> Path:
    path.mkdir()
    for name in files:
        (path / name).write_text("old")
    (path / "conversion.json").write_text(json.dumps({"files": list(files) + ["conversion.json"]}))
    return path


# ---- check_out, table-driven -------------------------------------------------------------------------

def _layout(root: Path) -> dict[str, Path]:
    (root / "sm").mkdir()
    (root / "sm" / "saved_model.pb").write_text("x")
    (root / "ck").mkdir()
    (root / "ck" / "model.ckpt.meta").write_text("x")
    (root / "ck" / "model.ckpt.index").write_text("x")
    (root / "file").write_text("x")
    (root / "mine").mkdir()
    (root / "mine" / "notes.txt").write_text("x")
    _previous_output(root / "prev")
    (root / "empty").mkdir()
    return {"sm": root / "sm", "ck": root / "ck" / "model.ckpt"}


CASES = [  # (out, source, force, refused?, word in the message)
    ("new", "sm", False, False, ""),
    ("new", "sm", True, False, ""),
    (".", "sm", True, True, "current directory"),
    ("..", "sm", True, True, "current directory"),
    ("/", "sm", True, True, "current directory"),
    ("sm", "sm", True, True, "source itself"),
    ("sm/sub", "sm", False, True, "inside the source"),
    ("ck", "ck", True, True, "contains the source"),
    ("ck/model.ckpt.meta", "ck", True, True, "source"),
    ("ck/out", "ck", False, False, ""),
    ("file", "sm", True, True, "not a directory"),
    ("file/sub", "sm", False, True, "is a file"),
    ("mine", "sm", False, True, "--force"),
    ("mine", "sm", True, True, "not a previous output"),
    ("prev", "sm", False, True, "--force"),
    ("prev", "sm", True, False, ""),
    ("empty", "sm", True, False, ""),
]


@pytest.mark.parametrize("out,source,force,refused,word", CASES)
def test_check_out(workdir, out, source, force, refused, word):
    sources = _layout(workdir)
    before = snapshot(workdir)
    if refused:
        with pytest.raises(UsageError) as info:
            outdir.check_out(Path(out), sources[source], force=force)
        message = str(info.value)
        assert word in message and "\n" not in message and len(message) < 300
    else:
        outdir.check_out(Path(out), sources[source], force=force)
    assert snapshot(workdir) == before


def test_symlink_out_is_refused(workdir):
    _previous_output(workdir / "prev")
    (workdir / "link").symlink_to(workdir / "prev")
    with pytest.raises(UsageError, match="not a directory"):
        outdir.check_out(Path("link"), workdir / "src", force=True)


# ---- the write step: atomic, no replace unless --force, old output removed last -------------------------

def test_commit_fails_when_out_appeared_meanwhile(workdir):
    tmp = outdir.temp_dir(workdir / "out")
    (tmp / "model.onnx").write_text("new")
    (workdir / "out").mkdir()  # another process created it after our check (even empty)
    (workdir / "out" / "theirs").write_text("theirs")
    with pytest.raises(UsageError, match="appeared while converting"):
        outdir.commit(tmp, workdir / "out", force=False)
    assert (workdir / "out" / "theirs").read_text() == "theirs"


def test_force_keeps_a_dir_that_replaced_the_previous_output(workdir):
    tmp = outdir.temp_dir(workdir / "out")
    (workdir / "out").mkdir()
    (workdir / "out" / "theirs").write_text("theirs")
    with pytest.raises(UsageError, match="not a previous output"):
        outdir.commit(tmp, workdir / "out", force=True)
    assert (workdir / "out" / "theirs").read_text() == "theirs"


def test_force_replaces_a_previous_output(workdir):
    _previous_output(workdir / "out")
    tmp = outdir.temp_dir(workdir / "out")
    (tmp / "model.onnx").write_text("new")
    outdir.commit(tmp, workdir / "out", force=True)
    assert (workdir / "out" / "model.onnx").read_text() == "new"
    assert sorted(p.name for p in workdir.iterdir()) == ["canary.txt", "out"]


def test_stale_temp_dirs_of_dead_processes_are_removed(workdir):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    stale = workdir / f".out.convert-{dead}-abc.tmp"
    stale.mkdir()
    (stale / "model.pt").write_text("x")
    live = workdir / f".out.convert-{os.getppid()}-abc.tmp"
    live.mkdir()
    lookalike = workdir / f".out.convert-{dead}-abc.old"  # an aside dir without conversion.json: not ours
    lookalike.mkdir()
    outdir.temp_dir(workdir / "out").rmdir()
    assert not stale.exists() and live.exists() and lookalike.exists()


# ---- through the CLI: the cases of the issue ---------------------------------------------------------

def test_out_dot_next_to_the_source_deletes_nothing(model, workdir):
    os.chdir(Path(model["saved_model"]).parent)
    before = snapshot(Path.cwd())
    code, stderr = run_cli("tf2onnx", "saved_model", "-o", ".", "--force")
    assert code == 2 and "current directory" in stderr and len(stderr.strip().splitlines()) == 1
    assert snapshot(Path.cwd()) == before


@pytest.mark.parametrize("extra", [[], ["--verify"]])
def test_out_equal_to_the_source_is_refused(model, extra):
    src = Path(model["saved_model"])
    before = snapshot(src)
    code, stderr = run_cli("tf2onnx", src, "-o", src, "--force", *extra)
    assert code == 2 and "source" in stderr
    assert snapshot(src) == before


def test_out_under_a_regular_file_is_one_line(model, workdir):
    code, stderr = run_cli("tf2onnx", model["pb"], "-o", workdir / "canary.txt" / "out")
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "canary.txt" in lines[0] and "is a file" in lines[0]


def test_force_refuses_a_directory_convert_did_not_write(model, workdir):
    (workdir / "photos").mkdir()
    (workdir / "photos" / "cat.jpg").write_text("meow")
    code, stderr = run_cli("tf2onnx", model["pb"], "-o", "photos", "--force")
    assert code == 2 and "not a previous output" in stderr
    assert (workdir / "photos" / "cat.jpg").read_text() == "meow"


def test_force_replaces_its_own_output(model, workdir):
    assert run_cli("tf2onnx", model["pb"], "-o", "out", "--keep-ir")[0] == 0
    assert run_cli("tf2onnx", model["pb"], "-o", "out")[0] == 2
    code, stderr = run_cli("tf2onnx", model["pb"], "-o", "out", "--force")
    assert code == 0, stderr
    assert sorted(p.name for p in workdir.iterdir()) == ["canary.txt", "out"]  # no temp or aside dir left


def test_racing_runs_second_gets_exit_2(model, workdir):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    args = [CONVERT, "tf2onnx", str(model["pb"]), "-o", str(workdir / "out")]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    loser = next(err for code, err in results if code == 2)
    assert len(loser.strip().splitlines()) == 1 and ("appeared while converting" in loser or "exists" in loser)
    assert sorted(p.name for p in workdir.iterdir()) == ["canary.txt", "out"]


@pytest.mark.parametrize("command", ["tf2torch", "tf2onnx"])
def test_a_failed_write_is_one_line_naming_out_not_a_bug(model, workdir, command):
    # a file size limit stands in for a full disk: the writes fail with EFBIG (torch: a RuntimeError)
    code = ("import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
            "resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000)); "
            f"sys.argv = ['convert', '{command}', {str(model['pb'])!r}, '-o', 'out']; "
            "from tf_convert import cli; cli.main()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("convert: error: out:") and "bug" not in lines[0] and "disk" in lines[0]
    assert sorted(p.name for p in workdir.iterdir()) == ["canary.txt"]
