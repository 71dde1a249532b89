"""TensorFlow only for checks, torch only to run a tf2torch model.

The CLI runs in a subprocess whose PYTHONPATH starts with a directory holding `tensorflow` and `torch`
packages that raise ImportError and log who tried to import them: every conversion, tf2torch's included
(model.pt is written without torch), imports neither. The converted models are then checked against TF
here, in the normal process (`convert.api.verify`). Without TF, every check (--verify, `convert verify`,
--layers, --report) is one line, exit 2, and writes nothing; without torch, so is tf2torch --verify.
`make test-base-install` also runs the conversions with
a real install of the package and its [onnx,caffe] extras only, in its own virtualenv
(CONVERT_BASE_PYTHON: its interpreter).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.support import tf_models

REPO = Path(__file__).resolve().parents[2]
CONVERT = str(Path(sys.executable).with_name("convert"))
TARGETS = ("torch", "caffe", "mxnet", "onnx")
BASE_PYTHON = os.environ.get("CONVERT_BASE_PYTHON")

# Each blocked package logs the first frame outside the import machinery that tried to import it.
BLOCKER = '''\
import os, sys
_frame = sys._getframe(1)
while _frame is not None and (_frame.f_code.co_filename.startswith("<frozen")
                              or "importlib" in _frame.f_code.co_filename):
    _frame = _frame.f_back
with open(os.environ["CONVERT_BLOCKED_LOG"], "a") as _log:
    _where = f"{_frame.f_code.co_filename}:{_frame.f_lineno}" if _frame else "?:0"
    _log.write(f"{NAME} imported from {_where}\\n")
raise ModuleNotFoundError(f"No module named {NAME!r} (blocked: a machine without it)", name=NAME)
'''


class Without:
    """Runs commands with `names` made unimportable; `attempts()` lists who tried to import them.

    The blockers sit in a small virtualenv's site-packages, ahead of this environment's packages: the tool's
    Python children start isolated (`python -I`, no PYTHONPATH), and must meet the same blockers."""

    def __init__(self, root: Path, *names: str):
        self.root = root
        self.log = root / "attempts.log"
        for name in names:
            (root / name).mkdir(parents=True, exist_ok=True)
            (root / name / "__init__.py").write_text(f"NAME = {name!r}\n" + BLOCKER)
        venv = root / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        self.executable = str(venv / "bin" / "python")
        site = subprocess.run([self.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        (Path(site) / "00_blocked.pth").write_text(f"{root}\n")
        (Path(site) / "zz_tool.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")

    def env(self) -> dict[str, str]:
        return dict(os.environ, PYTHONPATH=os.pathsep.join([str(self.root), str(REPO)]),
                    CONVERT_BLOCKED_LOG=str(self.log))

    def run(self, *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess:
        return subprocess.run([self.executable, "-m", "tf_convert.cli", *map(str, args)], capture_output=True,
                              text=True, env=env or self.env(), cwd=cwd, timeout=300)

    def python(self, code: str) -> subprocess.CompletedProcess:
        return subprocess.run([self.executable, "-c", code], capture_output=True, text=True, env=self.env(),
                              cwd=REPO, timeout=300)

    def attempts(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


def blocked_for(target: str) -> tuple[str, ...]:
    return ("tensorflow", "torch")  # tf2torch writes model.pt without torch too


# ---- fixtures: built with TF in this process -----------------------------------------------------


def _keras_model():
    import keras

    x = keras.Input((16, 16, 3), name="image")
    y = keras.layers.Conv2D(8, 3, strides=2, padding="same", activation="relu")(x)  # 16 -> 8: pads 0/1
    y = keras.layers.DepthwiseConv2D(3, strides=2, padding="same")(y)
    y = keras.layers.MaxPooling2D(3, 2, padding="same")(y)
    y = keras.layers.AveragePooling2D(3, 1, padding="same")(y)
    y = keras.layers.Conv2D(4, 1)(y)
    return keras.Model(x, y)


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tf_optional")
    built = tf_models.build_mobilenet_v1_tiny(root / "tf1", input_hw=(32, 32))
    model = _keras_model()
    model.save(root / "model.keras")
    model.save(root / "model.h5")
    model.export(str(root / "tf2_saved_model"), verbose=False)  # a TF2 SavedModel (serving_default)
    return {
        "keras": root / "model.keras",
        "h5": root / "model.h5",
        "ckpt": Path(built["ckpt"]),
        "tf1_saved_model": Path(built["saved_model"]),
        "tf2_saved_model": root / "tf2_saved_model",
    }


def _check(out: Path) -> None:
    from tf_convert.app import api

    result = api.verify(out)  # TF and the target runtime, here in the normal process
    assert result["passed"] and result["max_rel"] <= 1e-5, result


def _convert_and_check(sources, source: str, target: str, tmp_path: Path) -> None:
    without = Without(tmp_path / "blocked", *blocked_for(target))
    out = tmp_path / f"out-{target}"
    proc = without.run(f"tf2{target}", sources[source], "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert without.attempts() == [], "a conversion without --verify imported a framework it does not need"
    _check(out)


# ---- conversions without TensorFlow ----------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source", ["keras", "h5"])
def test_keras_sources_convert_without_tf(sources, source, target, tmp_path):
    _convert_and_check(sources, source, target, tmp_path)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source", ["ckpt", "tf1_saved_model", "tf2_saved_model"])
def test_tf_sources_convert_without_tf(sources, source, target, tmp_path):
    _convert_and_check(sources, source, target, tmp_path)


def test_ir_without_tf(sources, tmp_path):
    without = Without(tmp_path / "blocked", "tensorflow", "torch")
    proc = without.run("tf2ir", sources["keras"], "-o", tmp_path / "ir")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ir" / "graph.json").is_file() and without.attempts() == []


# ---- checks without TensorFlow, tf2torch --verify without torch: one line, exit 2, nothing written --

VERIFY_HINT = "pip install 'tf-convert[verify]'"
TORCH_HINT = "pip install 'tf-convert[torch]'"

REFUSALS = [  # (id, blocked, command (OUT: the converted model; NEW: a path that must stay absent), hint)
    ("tf2onnx-verify-keras", ("tensorflow", "torch"), ["tf2onnx", "{keras}", "--verify", "-o", "{NEW}"], VERIFY_HINT),
    ("tf2caffe-verify-ckpt", ("tensorflow", "torch"), ["tf2caffe", "{ckpt}", "--verify", "-o", "{NEW}"], VERIFY_HINT),
    ("tf2mxnet-verify-saved", ("tensorflow", "torch"), ["tf2mxnet", "{tf1_saved_model}", "--verify", "-o", "{NEW}"],
     VERIFY_HINT),
    ("tf2torch-verify", ("tensorflow",), ["tf2torch", "{h5}", "--verify", "-o", "{NEW}"], VERIFY_HINT),
    ("tf2torch-verify-no-torch", ("torch",), ["tf2torch", "{keras}", "--verify", "-o", "{NEW}"], TORCH_HINT),
    ("tf2torch-verify-no-torch-tf-source", ("torch",), ["tf2torch", "{ckpt}", "--verify", "-o", "{NEW}"],
     TORCH_HINT),
    ("verify", ("tensorflow", "torch"), ["verify", "{OUT}"], VERIFY_HINT),
    ("verify-layers", ("tensorflow", "torch"), ["verify", "{OUT}", "--layers"], VERIFY_HINT),
    ("verify-report", ("tensorflow", "torch"), ["verify", "{OUT}", "--layers", "--report", "{NEW}"], VERIFY_HINT),
    ("verify-report-only", ("tensorflow", "torch"), ["verify", "{OUT}", "--report", "{NEW}"], VERIFY_HINT),
]


@pytest.fixture(scope="module")
def converted(sources, tmp_path_factory) -> Path:
    from tf_convert.app import api

    out = tmp_path_factory.mktemp("converted") / "model-onnx"
    api.tf2onnx(sources["keras"], out)
    return out


@pytest.mark.parametrize("blocked, command, hint", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_checks_refused_in_one_line(sources, converted, tmp_path, blocked, command, hint):
    new = tmp_path / "new-output"
    names = {k: str(v) for k, v in sources.items()} | {"OUT": str(converted), "NEW": str(new)}
    proc = Without(tmp_path / "blocked", *blocked).run(*(part.format(**names) for part in command), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("convert: error: "), proc.stderr
    assert hint in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""
    assert not new.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".new-output")]


def test_refusal_comes_from_the_api_too(sources, tmp_path):
    """The same typed error (exit code 2) for callers of the Python API."""
    without = Without(tmp_path / "blocked", "tensorflow", "torch")
    code = (f"import tf_convert.app as convert; from tf_convert.convert.errors import MissingDependency\n"
            f"try:\n    convert.tf2onnx({str(sources['keras'])!r}, {str(tmp_path / 'o')!r}, verify=True)\n"
            f"except MissingDependency as e:\n    print(e.exit_code, e)\n")
    proc = without.python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("2 verification runs TensorFlow") and VERIFY_HINT in proc.stdout
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("target, verify, kind, modules, rerun", [
    ("mxnet", False, "tf_checkpoint", [], []),
    ("ir", False, "saved_model", [], []),
    ("onnx", False, "keras_v3", ["onnx"], []),
    ("torch", False, "frozen_pb", [], []),
    ("caffe", False, "keras_h5", [], []),
    ("caffe", True, "tf_checkpoint", ["tensorflow", "cv2"], ["tensorflow", "cv2"]),
    ("torch", True, "keras_h5", ["tensorflow", "keras", "torch"], ["tensorflow", "keras", "torch"]),
    ("mxnet", True, "saved_model", ["tensorflow"], ["tensorflow"]),
    ("onnx", True, None, ["onnx", "tensorflow", "onnxruntime"], ["tensorflow", "onnxruntime"]),
])
def test_what_each_conversion_needs(target, verify, kind, modules, rerun):
    """`rerun`: what checking a model written earlier needs (`convert verify OUT`: write=False)."""
    from tf_convert.app import requirements

    assert [n.module for n in requirements.needs(target, verify=verify, kind=kind)] == modules
    assert [n.module for n in requirements.needs(target, verify=verify, kind=kind, write=False)] == rerun


@pytest.mark.parametrize("name, extra", [("tensorflow", "verify"), ("tensorflow.core", "verify"),
                                         ("torch", "torch"), ("onnxruntime", "onnx"), ("yaml", None), (None, None)])
def test_a_missing_framework_found_late_is_still_one_line(name, extra):
    from tf_convert.app.requirements import for_failed_import

    error = for_failed_import(ModuleNotFoundError(f"No module named {name!r}", name=name))
    if extra is None:
        assert error is None
    else:
        assert error.exit_code == 2 and f"pip install 'tf-convert[{extra}]'" in str(error)


# ---- the import audit: no module on a TF-free path imports TF or torch --------------------------------

# what runs a converted model in torch; the MXNet runner runs in .venv-mxnet
NOT_HERE = ("tf_convert.emitters.torch.runner", "tf_convert.emitters.mxnet.runner")


def _modules(skip: tuple[str, ...]) -> list[str]:
    names = []
    for package in ("tf_convert.convert", "tf_convert.emitters", "tf_convert.parsers", "tf_convert.app"):
        module = importlib.import_module(package)
        names.append(package)
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{package}."):
            if not any(info.name == s or info.name.startswith(s + ".") for s in skip):
                names.append(info.name)
    return names


def _audit(modules: list[str], tmp_path: Path) -> None:
    without = Without(tmp_path / "blocked", "tensorflow", "torch")
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    proc = subprocess.run([sys.executable, "-c", code, "tf_convert.cli", *modules], capture_output=True, text=True,
                          env=without.env(), cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert without.attempts() == []


def test_every_module_off_the_torch_paths_imports_without_tf_or_torch(tmp_path):
    """The TF parser included: TensorFlow is imported only by the reference run, inside functions."""
    _audit(_modules(NOT_HERE), tmp_path)


# ---- a real base install: `make test-base-install` -------------------------------------------------------

BASE_SOURCES = ["keras", "h5", "ckpt", "tf1_saved_model", "tf2_saved_model"]


def _base_install(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed package, not this tree
    return subprocess.run([str(Path(BASE_PYTHON).with_name("convert")), *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)


@pytest.mark.skipif(not BASE_PYTHON, reason="needs `make test-base-install` (CONVERT_BASE_PYTHON)")
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source", BASE_SOURCES)
def test_base_install_converts(sources, source, target, tmp_path):
    proc = _base_install(f"tf2{target}", sources[source], "-o", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    _check(tmp_path / "out")


@pytest.mark.skipif(not BASE_PYTHON, reason="needs `make test-base-install` (CONVERT_BASE_PYTHON)")
@pytest.mark.parametrize("args, hint", [(["tf2onnx", "{keras}", "--verify"], VERIFY_HINT),
                                        (["tf2torch", "{keras}", "--verify"], TORCH_HINT)])
def test_base_install_refuses_in_one_line(sources, tmp_path, args, hint):
    names = {k: str(v) for k, v in sources.items()}
    proc = _base_install(*(a.format(**names) for a in args), "-o", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and hint in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_refused_in_one_line_when_the_reference_runs_in_a_child(sources, tmp_path):
    """A large source's reference runs in a child: the parent no longer imports TensorFlow, the
    child checks it, and the refusal is the same one line, exit 2, nothing written."""
    from tf_convert.app.verify import reference_process

    new = tmp_path / "new-output"
    without = Without(tmp_path / "blocked", "tensorflow")
    env = dict(without.env(), **{reference_process.THRESHOLD_ENV: "0"})
    proc = without.run("tf2onnx", sources["ckpt"], "--verify", "-o", new, cwd=tmp_path, env=env)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and VERIFY_HINT in proc.stderr and "Traceback" not in proc.stderr
    assert not new.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".new-output")]
