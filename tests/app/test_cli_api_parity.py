"""The CLI and the Python API give the same exit code for the same failure (the API's is the ConvertError's
`exit_code`; any other exception counts as 1, a bug). The CLI runs TF's reference in a child process and the
API in process: a failure that only one of them turned into a clean exit code (TF refusing the check's input
was exit 1 from the CLI and a raw TensorFlow exception from the API) shows here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from tests.support.tf_models import save_frozen
from tests.support.verify_faults import run_cli
from tf_convert.app import api
from tf_convert.app.verify import reference_process


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    import tensorflow as tf

    root = tmp_path_factory.mktemp("parity")
    weights = np.random.default_rng(0).standard_normal((3, 3, 3, 4)).astype(np.float32)

    def conv(x):
        tf.identity(tf.nn.conv2d(x, tf.constant(weights), 1, "SAME"), name="out")

    def nan_check(x):  # TF refuses to run it on the check's (normal) input: log of a negative number
        tf.identity(tf.debugging.check_numerics(tf.math.log(x), "log of x"), name="out")

    def unsupported(x):
        tf.identity(tf.math.lgamma(x), name="out")

    graph = tf.Graph()
    with graph.as_default():
        a = tf.compat.v1.placeholder(tf.float32, [1, 4], name="a")
        tf.compat.v1.placeholder(tf.float32, [1, 4], name="b")
        tf.identity(a * 2.0, name="out")
    (root / "two.pb").write_bytes(graph.as_graph_def().SerializeToString())
    (root / "notes.txt").write_text("not a model")
    paths = {"conv": Path(save_frozen(root / "conv.pb", conv, [1, 6, 6, 3])),
             "nan_check": Path(save_frozen(root / "nan.pb", nan_check, [1, 4])),
             "unsupported": Path(save_frozen(root / "lgamma.pb", unsupported, [1, 4])),
             "two_inputs": root / "two.pb", "text": root / "notes.txt", "missing": root / "missing.pb",
             "module": root / "net.py"}
    paths["module"].write_text("import torch\n\n\nclass Net(torch.nn.Conv2d):\n"
                               "    def __init__(self):\n        super().__init__(3, 4, 3, padding=1, bias=False)\n")
    out = root / "conv-onnx"
    assert run_cli("tf2onnx", paths["conv"], "-o", out)[0] == 0
    replaced = root / "replaced"  # its conversion's source, then another file in its place
    shutil.copytree(out, replaced)
    doc = json.loads((replaced / "conversion.json").read_text())
    doc["source"]["relative_path"] = "../nan.pb"  # bytes other than the ones converted
    (replaced / "conversion.json").write_text(json.dumps(doc))
    paths.update(out=out, replaced=replaced)
    return paths


# case: (CLI arguments, the API call, the exit code both give); "{x}" in an argument is files[x]
CASES: dict[str, tuple[list[str], Callable[[dict, Path], Any], int]] = {
    "no such source": (["tf2onnx", "{missing}"], lambda f, o: api.tf2onnx(f["missing"], o), 2),
    "not a model": (["tf2onnx", "{text}"], lambda f, o: api.tf2onnx(f["text"], o), 2),
    "unsupported op": (["tf2onnx", "{unsupported}"], lambda f, o: api.tf2onnx(f["unsupported"], o), 3),
    "wrong input rank": (["tf2onnx", "{conv}", "--input-shape", "1,6,6"],
                         lambda f, o: api.tf2onnx(f["conv"], o, input_shape="1,6,6"), 2),
    "an input never read": (["tf2onnx", "{two_inputs}", "--inputs", "a,b", "--outputs", "out"],
                            lambda f, o: api.tf2onnx(f["two_inputs"], o, inputs="a,b", outputs="out"), 2),
    "TF refuses the check's input": (["tf2onnx", "{nan_check}", "--verify"],
                                     lambda f, o: api.tf2onnx(f["nan_check"], o, verify=True), 2),
    "beyond tolerance": (["tf2onnx", "{conv}", "--verify", "--rtol", "0"],
                         lambda f, o: api.tf2onnx(f["conv"], o, verify=True, rtol=0), 4),
    "verify beyond tolerance": (["verify", "{out}", "--rtol", "0"], lambda f, o: api.verify(f["out"], rtol=0), 4),
    "verify a replaced source": (["verify", "{replaced}"], lambda f, o: api.verify(f["replaced"]), 2),
    "--into-kwargs not an object": (["tf2torch", "{conv}", "--into", "{module}:Net", "--into-kwargs", "[1]"],
                                    lambda f, o: api.into(f["conv"], f"{f['module']}:Net", o, kwargs=[1]), 2),
}

IN_A_CHILD = {"TF refuses the check's input"}  # the case where the two differed: a child's error came back raw


@pytest.mark.parametrize("case", list(CASES))
def test_the_cli_and_the_api_give_the_same_exit_code(files, case, tmp_path, monkeypatch):
    args, call, expected = CASES[case]
    cli_args = [a.format(**{k: str(v) for k, v in files.items()}) for a in args]
    if cli_args[0] != "verify":
        cli_args += ["-o", str(tmp_path / "cli")]
    with monkeypatch.context() as env:
        if case in IN_A_CHILD:  # the CLI's TF in a child, as the `convert` program runs it (seconds more)
            env.setenv(reference_process.THRESHOLD_ENV, "0")
        code, _, err = run_cli(*cli_args)
    try:
        call(files, tmp_path / "api")
        api_code = 0
    except Exception as error:  # noqa: BLE001 - what the API raised decides its exit code
        api_code = getattr(error, "exit_code", 1)
    assert (code, api_code) == (expected, expected), err
    assert len(err.strip().splitlines()) == 1 and "internal error" not in err
