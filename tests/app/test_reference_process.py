"""TF's reference run in a child process (app/verify/reference_process.py), forced on small models by its
threshold variable: the same outputs as in process, the same clean error for a bad source, and an interrupt
ends the child and leaves no temp directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.support import tf_models
from tf_convert import parsers
from tf_convert.app.verify import make_inputs, reference_process
from tf_convert.convert.errors import ConvertError
from tf_convert.convert.progress import Progress

CONVERT = str(Path(sys.executable).with_name("convert"))


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tf_models.build_resnet_v1_tiny(tmp_path_factory.mktemp("reference_process") / "resnet")


@pytest.fixture
def child_always(monkeypatch):
    monkeypatch.setenv(reference_process.THRESHOLD_ENV, "0")


def test_threshold_is_one_named_constant_overridable(monkeypatch, model):
    monkeypatch.delenv(reference_process.THRESHOLD_ENV, raising=False)
    assert 0 < reference_process.child_threshold() <= reference_process.CHILD_ABOVE_BYTES
    assert not reference_process.in_child(model["pb"])  # a small model stays in process
    monkeypatch.setenv(reference_process.THRESHOLD_ENV, "0")
    assert reference_process.in_child(model["pb"])


@pytest.mark.parametrize("kind", ["pb", "ckpt", "saved_model"])
def test_child_gives_the_in_process_outputs(model, child_always, kind):
    graph = parsers.parse(model[kind])
    inputs = make_inputs(graph)
    in_process = parsers.run_reference(model[kind], graph, inputs)
    in_child = reference_process.run_reference(model[kind], graph, inputs)
    assert len(in_child) == len(in_process)
    for a, b in zip(in_child, in_process):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_child_gives_the_in_process_layer_tensors(model, child_always):
    graph = parsers.parse(model["pb"])
    inputs = make_inputs(graph)
    names = [graph.source_names[graph.outputs[0]], "no_such_tensor:0"]
    in_process = parsers.run_reference_tensors(model["pb"], graph, inputs, names)
    in_child = reference_process.run_reference_tensors(model["pb"], graph, inputs, names)
    assert list(in_child) == list(in_process) and in_child
    assert all(np.array_equal(in_child[k], in_process[k]) for k in in_process)


def _replace_with_garbage(path: Path) -> None:
    path.write_bytes(b"\x08\x01garbage, not a GraphDef" * 10)


def _error(run) -> ConvertError:
    with pytest.raises(ConvertError) as caught:
        run()
    return caught.value


def test_bad_source_gives_the_same_clean_error(tmp_path, model, monkeypatch):
    source = tmp_path / "model.pb"  # parsed, then broken: the reference run must refuse it in one line
    source.write_bytes(Path(model["pb"]).read_bytes())
    graph = parsers.parse(source)
    inputs = make_inputs(graph)
    time.sleep(0.01)  # a new mtime: the parse's cached frozen graph no longer applies
    _replace_with_garbage(source)
    expected = _error(lambda: parsers.run_reference(source, graph, inputs))
    monkeypatch.setenv(reference_process.THRESHOLD_ENV, "0")
    got = _error(lambda: reference_process.run_reference(source, graph, inputs))
    assert type(got) is type(expected) and str(got) == str(expected) and got.exit_code == expected.exit_code == 2


def test_child_error_keeps_class_and_message():
    from tf_convert.convert.errors import InputError, UnsupportedError

    for error in (InputError("x.pb: corrupt; convert it again"), UnsupportedError([], "torch")):
        back = reference_process._error_from(reference_process._record(error))
        assert type(back) is type(error) and str(back) == str(error)
    assert isinstance(reference_process._error_from(reference_process._record(MemoryError("big"))), MemoryError)
    other = reference_process._error_from(reference_process._record(ValueError("TF says no")))
    assert isinstance(other, reference_process.ReferenceFailed) and str(other) == "TF says no"


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _started_child(proc: subprocess.Popen, temp: Path) -> int:
    """The pid of the reference child `proc` has started (its temp dir is in `temp`), waited for."""
    end = time.monotonic() + 120
    child = None
    while time.monotonic() < end and proc.poll() is None and child is None:
        if any(p.name.startswith("tf-convert-reference-") for p in temp.iterdir()):
            child = next(iter(_children(proc.pid)), None)
        time.sleep(0.01)
    assert child is not None, proc.communicate()
    return child


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_kills_the_child_and_leaves_no_temp(tmp_path, model, sig):
    temp = tmp_path / "tmp"
    temp.mkdir()
    out = tmp_path / "out"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TMPDIR=str(temp), **{reference_process.THRESHOLD_ENV: "0"})
    proc = subprocess.Popen([CONVERT, "tf2onnx", model["pb"], "-o", str(out), "--verify"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    child = _started_child(proc, temp)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, stderr
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr
    assert not [p for p in temp.iterdir() if p.name.startswith("tf-convert-reference-")] and not out.exists()
    assert not Path(f"/proc/{child}").exists() or "zombie" in Path(f"/proc/{child}/status").read_text()


def test_a_killed_parents_child_ends_and_removes_its_temp(tmp_path, model):
    """The CLI spawns the child before it parses, even for a small source; a SIGKILLed parent
    cannot clean up, so the child, waiting for its request or running TF, ends and removes its temp dir."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TMPDIR=str(temp))
    env.pop(reference_process.THRESHOLD_ENV, None)
    proc = subprocess.Popen([CONVERT, "tf2onnx", model["pb"], "-o", str(tmp_path / "out"), "--verify"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    child = _started_child(proc, temp)
    proc.kill()
    proc.communicate(timeout=60)
    end = time.monotonic() + 60
    while time.monotonic() < end and ([p for p in temp.iterdir() if p.name.startswith("tf-convert-reference-")]
                                      or _running(child)):
        time.sleep(0.1)
    assert not [p for p in temp.iterdir() if p.name.startswith("tf-convert-reference-")]
    assert not _running(child)


def _running(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "zombie" not in status.read_text()
    except OSError:  # gone
        return False


def test_verify_through_the_child_passes(tmp_path, model, child_always):
    from tf_convert.app import pipeline

    doc = pipeline.run(pipeline.Request(source=Path(model["ckpt"]), target="onnx", out=tmp_path / "out",
                                        verify=True)).check()
    assert doc["verify"]["passed"] and doc["verify"]["max_rel"] <= 1e-5


def _size_free_conv(x):
    import tensorflow as tf

    w = tf.constant(np.random.default_rng(0).standard_normal((3, 3, 3, 4)).astype(np.float32))
    tf.nn.conv2d(x, w, 2, "SAME", name="output")  # no Reshape or Dense: any H/W converts


def _blind_border_conv(x):
    import tensorflow as tf

    w = tf.constant(np.random.default_rng(0).standard_normal((3, 3, 3, 4)).astype(np.float32))
    tf.nn.conv2d(x, w, 2, "VALID", name="output")  # 10 -> 4: the last row and column are never read


@pytest.mark.parametrize("build,hw", [(_size_free_conv, 9), (_blind_border_conv, 10)])
def test_one_verification_starts_one_child(tmp_path, child_always, build, hw):
    """Every input set of a size-free model's verification (its size, two other sizes, the sensitivity
    probes, the whole-input one too when the border does not move the output) goes to ONE child, and the
    verdicts are those of asking TF one set at a time in process."""
    from tf_convert import emitters
    from tf_convert.app import pipeline, verify

    source = Path(tf_models.save_frozen(tmp_path / "conv.pb", build, [1, hw, hw, 3]))
    before = reference_process.children_started()
    doc = pipeline.run(pipeline.Request(source=source, target="onnx", out=tmp_path / "out", verify=True)).check()
    assert reference_process.children_started() - before == 1
    batched = doc["verify"]
    assert batched["passed"] and len(batched["sizes"]) == 2 and not any("skipped" in s for s in batched["sizes"])
    graph = parsers.parse(source)
    one_by_one = verify.verify(source, graph, emitters.get("onnx"), tmp_path / "out",
                               run_reference=parsers.run_reference, size_free=True)
    for key in ("max_rel", "verdict", "sensitivity"):
        assert json_safe(one_by_one[key]) == json_safe(batched[key]), key
    assert [s["max_rel"] for s in one_by_one["sizes"]] == [s["max_rel"] for s in batched["sizes"]]
    assert [s["input_shapes"] for s in one_by_one["sizes"]] == [s["input_shapes"] for s in batched["sizes"]]


def json_safe(value):
    import json

    return json.loads(json.dumps(value, default=float))


def test_refused_sets_come_back_per_set(model, child_always):
    """A set TF cannot run (another H/W than its Dense takes) comes back as its error; the
    others still run, in the same child."""
    graph = parsers.parse(model["pb"])
    inputs = make_inputs(graph)
    wrong = [np.zeros((*x.shape[:2], x.shape[2] + 1, x.shape[3] + 1), x.dtype) for x in inputs]  # Flatten -> Dense

    before = reference_process.children_started()
    good, refused, again = reference_process.run_references(model["pb"], graph, [inputs, wrong, inputs])
    assert reference_process.children_started() - before == 1
    assert isinstance(refused, Exception) and not isinstance(refused, ConvertError)
    expected = parsers.run_reference(model["pb"], graph, inputs)
    assert all(np.array_equal(a, b) for a, b in zip(good, expected))
    assert all(np.array_equal(a, b) for a, b in zip(again, expected))


# ---- every input set in one TF run -------------------------------------------------------------

@pytest.mark.parametrize("kind", ["pb", "ckpt", "saved_model"])
def test_one_run_for_all_sets_gives_each_sets_own_outputs(model, kind):
    """parsers.run_reference_sets (one session, the graph imported once per set, the weights read once)
    gives bit for bit what one run per set gives, also for a set of another shape."""
    graph = parsers.parse(model[kind])
    inputs = make_inputs(graph)
    rng = np.random.default_rng(3)
    shifted = [x + 1 for x in inputs]
    grown = [rng.standard_normal((2, *x.shape[1:])).astype(x.dtype) for x in inputs]  # batch 2: a free placeholder
    sets = [inputs, shifted, grown]
    together = parsers.run_reference_sets(model[kind], graph, sets)
    for outputs, inputs_ in zip(together, sets):
        alone = parsers.run_reference(model[kind], graph, inputs_)
        assert [y.shape for y in outputs] == [y.shape for y in alone]
        assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(outputs, alone))


def test_a_set_tf_refuses_is_told_apart(model):
    """When the one run fails, each set runs on its own: the refused set gets its error, the others outputs."""
    graph = parsers.parse(model["pb"])
    inputs = make_inputs(graph)
    bad = [np.zeros((1, 1, 1), np.float32) for _ in inputs]  # wrong rank: TF refuses this set
    outcomes = reference_process.all_sets(model["pb"], graph, [inputs, bad])
    assert isinstance(outcomes[1], Exception) and not isinstance(outcomes[0], Exception)
    assert all(np.array_equal(a, b) for a, b in zip(outcomes[0], parsers.run_reference(model["pb"], graph, inputs)))


# ---- the child starts before the emit, held until the model is written ---------------------------

def _live_children() -> list[int]:
    return [p for p in _children(os.getpid()) if Path(f"/proc/{p}").exists()
            and "zombie" not in Path(f"/proc/{p}/status").read_text()]


class _Stages(Progress):
    """A progress observer: at each stage, how many children were started and which of ours run."""

    def __init__(self):
        self.seen = {}

    def stage(self, name, total_bytes=None, total_tensors=None):
        self.seen[name] = (reference_process.children_started(), _live_children())


def test_the_child_runs_while_the_model_is_written(tmp_path, model, child_always):
    from tf_convert.app import pipeline

    stages = _Stages()
    before = reference_process.children_started()
    doc = pipeline.run(pipeline.Request(source=Path(model["ckpt"]), target="torch", out=tmp_path / "out",
                                        verify=True, progress=stages)).check()
    assert doc["verify"]["passed"]
    started_at_parse, running_at_parse = stages.seen["parse"]
    started_at_emit, _ = stages.seen["emit"]
    # started before the parse and importing TF while it runs; asked before the emit (on an idle machine it may
    # have answered already when the emit starts: the torch import comes between)
    assert started_at_parse - before == 1 and running_at_parse and started_at_emit - before == 1
    assert reference_process.children_started() - before == 1  # and the one verification needed no other
    assert not _live_children()


def test_cancel_ends_a_started_child_and_removes_its_temp(model, child_always):
    """What the pipeline does with a child it started early when the conversion fails or is interrupted."""
    graph = parsers.parse(model["pb"])
    started = reference_process.start_references(model["pb"], graph, [make_inputs(graph)])
    work, proc = started.child.work, started.child.proc
    started.cancel()
    assert proc.poll() is not None and not work.exists()
    started.cancel()  # twice is harmless


def test_started_references_give_the_in_process_outputs(model, child_always):
    graph = parsers.parse(model["pb"])
    inputs = make_inputs(graph)
    started = reference_process.start_references(model["pb"], graph, [inputs])
    (outputs,) = started.outcomes()
    assert all(np.array_equal(a, b) for a, b in zip(outputs, parsers.run_reference(model["pb"], graph, inputs)))
    assert not started.child.work.exists() and started.child.proc.poll() is not None


def test_reverify_leaves_tensorflow_to_the_child(tmp_path, model, child_always):
    """`convert verify OUT` of a large source does not import TensorFlow in its own process."""
    from tf_convert.app import pipeline

    out = tmp_path / "out"
    pipeline.run(pipeline.Request(source=Path(model["ckpt"]), target="onnx", out=out, verify=True)).check()
    script = ("import sys; from tf_convert.app import pipeline; "
              f"assert pipeline.reverify({str(out)!r})['passed']; print('tensorflow' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("sets, environ, expected", [
    (5, {}, {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "2"}),
    (2, {"TF_NUM_INTRAOP_THREADS": "3"}, {"TF_NUM_INTEROP_THREADS": "2"}),  # the user's setting wins
    (1, {}, {}),  # one set keeps TF's default
    (None, {}, {}),  # a --layers request (tensors of one set)
])
def test_a_child_of_several_sets_runs_them_side_by_side(sets, environ, expected):
    """Several sets' graph copies give TF ops to run at once, one thread each (less CPU on a
    machine the converting process shares). The child sets them once the request has come, before TF's
    first session reads them."""
    assert reference_process.side_by_side_threads(sets, environ) == expected


@pytest.mark.parametrize("module", ["this", "tests.support.tf_models_missing", "os"])
def test_an_error_record_never_imports_a_module_outside_the_tool(module):
    """The child's error record names its class; only tf_convert's own modules are looked up."""
    before = set(sys.modules)
    error = reference_process._error_from({"kind": "convert", "module": module, "qualname": "path",
                                          "message": "m"})
    assert isinstance(error, reference_process.ReferenceFailed) and str(error) == "m"
    assert set(sys.modules) - before == set()


def test_an_error_record_of_the_tool_keeps_its_class():
    error = reference_process._error_from({"kind": "convert", "module": "tf_convert.convert.errors",
                                          "qualname": "ConvertError", "message": "m"})
    assert type(error) is ConvertError and str(error) == "m"
