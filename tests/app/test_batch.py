"""`convert batch`: manifest validation, shards, parallel runs with failures, reports, --changed-only.

The conversions go through the real `convert` command in a subprocess (spawned workers, real
TensorFlow / torch / onnxruntime); manifest checks use click's runner (no framework needed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np
import pytest
from click.testing import CliRunner

from tf_convert import cli
from tf_convert.app.batch import report as batch_report

CONVERT = str(Path(sys.executable).with_name("convert"))
REPO = Path(__file__).resolve().parents[2]
SHAPE = [1, 17, 17, 3]


# ---- tiny models -------------------------------------------------------------------------------


def _conv_net(x, rng: np.random.Generator):
    """Stride-2 SAME conv on an odd size (asymmetric pads), ReLU, SAME max pool: not bit-exact
    between TensorFlow and the targets (accumulation order), so rtol = 0 must fail verification."""
    import tensorflow as tf

    w1 = tf.compat.v1.get_variable("w1", initializer=(rng.standard_normal((3, 3, 3, 8)) * 0.3).astype(np.float32))
    w2 = tf.compat.v1.get_variable("w2", initializer=(rng.standard_normal((3, 3, 8, 8)) * 0.3).astype(np.float32))
    y = tf.nn.relu(tf.nn.conv2d(x, w1, [1, 2, 2, 1], "SAME"))
    y = tf.nn.conv2d(y, w2, [1, 1, 1, 1], "SAME")
    return tf.nn.max_pool2d(y, 2, 2, "SAME", name="output")


def _lgamma_net(x, rng: np.random.Generator):
    import tensorflow as tf

    return tf.math.lgamma(tf.nn.relu(x) + 1.0, name="output")  # Lgamma: no exact form in ONNX or MXNet


def save_model(directory: Path, body, seed: int = 0) -> dict[str, str]:
    """A TF1 graph saved as a frozen .pb and as a SavedModel."""
    import tensorflow as tf

    directory.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(directory / "saved_model", ignore_errors=True)  # simple_save refuses to overwrite
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, SHAPE, name="input")
        y = body(x, np.random.default_rng(seed))
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            frozen = tf.compat.v1.graph_util.convert_variables_to_constants(sess, graph.as_graph_def(), [y.op.name])
            (directory / "frozen.pb").write_bytes(frozen.SerializeToString())
            if tf.compat.v1.global_variables():
                tf.compat.v1.saved_model.simple_save(sess, str(directory / "saved_model"),
                                                     inputs={"input": x}, outputs={"output": y})
    return {"pb": str(directory / "frozen.pb"), "saved_model": str(directory / "saved_model")}


MANIFEST = """\
# a CI manifest: two good models, then one broken entry of each kind
[defaults]
targets = ["torch"]
input_shape = [1, 17, 17, 3]
out = "out/{{name}}-{{target}}"

[[model]]
name = "good_pb"
source = "{conv_pb}"
targets = ["torch", "onnx"]

[[model]]
name = "good_saved_model"
source = "{conv2_sm}"
inputs = ["input"]
outputs = ["output"]

[[model]]
name = "missing_file"
source = "models/does_not_exist.pb"

[[model]]
name = "unsupported_op"
source = "{lgamma_pb}"

[[model]]
name = "wrong_tolerance"     # planted: 0 cannot pass, the conversion is not bit-exact
source = "{conv_pb}"
targets = ["onnx"]
rtol = 0

[[model]]
name = "hangs"               # any conversion overruns 1 ms: the worker is killed and replaced
source = "{conv2_pb}"
timeout = 0.001
"""
EXPECTED = {
    ("good_pb", "torch"): ("ok", 0), ("good_pb", "onnx"): ("ok", 0), ("good_saved_model", "torch"): ("ok", 0),
    ("missing_file", "torch"): ("failed", 2), ("unsupported_op", "torch"): ("unsupported", 3),
    ("wrong_tolerance", "onnx"): ("verify_failed", 4), ("hangs", "torch"): ("timeout", 1),
}


def convert_batch(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run([CONVERT, "batch", *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_batch_end_to_end(tmp_path):
    """One parallel run (failures of every kind among passing entries), then --changed-only reruns.
    A single test so that pytest-xdist does not repeat the expensive run in every worker."""
    models = {"conv": save_model(tmp_path / "conv", _conv_net, 0),
              "conv2": save_model(tmp_path / "conv2", _conv_net, 1),
              "lgamma": save_model(tmp_path / "lgamma", _lgamma_net)}
    manifest = tmp_path / "ci.toml"
    manifest.write_text(MANIFEST.format(conv_pb=models["conv"]["pb"], conv2_sm=models["conv2"]["saved_model"],
                                        conv2_pb=models["conv2"]["pb"], lgamma_pb=models["lgamma"]["pb"]))
    proc = convert_batch(manifest, "--jobs", "2", "--junit", "junit.xml", cwd=tmp_path)
    report = json.loads((tmp_path / "batch-report.json").read_text())
    check_results(proc, report)
    check_outputs(tmp_path, report)
    check_progress(proc)
    check_junit(tmp_path / "junit.xml")
    check_changed_only(tmp_path, manifest, models)


def check_results(proc: subprocess.CompletedProcess, report: dict) -> None:
    got = {(r["name"], r["target"]): (r["status"], r["exit_code"]) for r in report["results"]}
    assert got == EXPECTED, proc.stderr
    assert proc.returncode == 1, "mixed failures exit 1"
    assert report["exit_code"] == 1
    assert report["summary"] == {"total": 7, "ok": 3, "failed": 1, "unsupported": 1, "verify_failed": 1, "timeout": 1}
    by = {(r["name"], r["target"]): r for r in report["results"]}
    assert "does_not_exist.pb" in by[("missing_file", "torch")]["error"]
    assert "Lgamma" in by[("unsupported_op", "torch")]["error"]
    assert "timed out after 0.001 s" in by[("hangs", "torch")]["error"]
    # a failed verification still reports its metrics
    failed_check = by[("wrong_tolerance", "onnx")]["verify"]
    assert failed_check["passed"] is False and failed_check["rtol"] == 0 and 0 < failed_check["max_rel"] < 1e-5


def check_outputs(root: Path, report: dict) -> None:
    for r in report["results"]:
        if r["status"] != "ok":
            assert not Path(r["out"]).exists(), f"{r['name']}: a failed conversion left its output behind"
            continue
        assert r["verify"]["passed"] and r["verify"]["max_rel"] <= 1e-5
        # torch: runtime SAME pads of the stride-2 conv (0/1 at 17) and the stride-2 pool (size-free model)
        assert r["pad_layers"] == (2 if r["target"] == "torch" else 0)
        assert r["seconds"] > 0 and r["peak_rss_mb"] > 50
        assert r["line"] > 0 and r["fingerprint"] and r["source_sha256"]
        out = Path(r["out"])
        assert out == root / "out" / f"{r['name']}-{r['target']}"
        assert json.loads((out / "conversion.json").read_text())["verify"]["passed"]
    assert not list((root / "out").glob(".*.tmp")), "the killed worker's temporary directory was not removed"


def check_progress(proc: subprocess.CompletedProcess) -> None:
    lines = [line for line in proc.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 7, proc.stderr
    assert sorted(int(line[1:].split("/")[0]) for line in lines) == list(range(1, 8))
    assert "\r" not in proc.stderr, "no terminal: plain lines, no progress bar"
    assert "7 conversion(s)" in proc.stdout and "3 ok" in proc.stdout


def check_junit(path: Path) -> None:
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite.get("tests") == "7" and suite.get("failures") == "3" and suite.get("errors") == "1"
    cases = {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}
    assert set(cases) == {(f"convert.{n}", t) for n, t in EXPECTED}
    for (name, target), (status, _) in EXPECTED.items():
        case = cases[(f"convert.{name}", target)]
        kind = {"ok": None, "timeout": "error"}.get(status, "failure")
        if kind is None:
            assert case.find("failure") is None and case.find("error") is None
        else:
            element = case.find(kind)
            assert element is not None and element.get("type") == status and element.get("message")


def check_changed_only(root: Path, manifest: Path, models: dict) -> None:
    # nothing changed: the passing conversions are skipped without starting a worker
    proc = convert_batch(manifest, "--changed-only", "--only", "good_*", "--report", "again.json",
                         "--previous", "batch-report.json", cwd=root)
    first = json.loads((root / "batch-report.json").read_text())
    again = json.loads((root / "again.json").read_text())
    assert proc.returncode == 0, proc.stderr
    # (converter sources edited while the test ran -- only while developing -- must re-run everything)
    same_code = again["code_sha256"] == first["code_sha256"]
    assert [r["status"] for r in again["results"]] == ["skipped" if same_code else "ok"] * 3, proc.stderr
    assert again["results"][0]["verify"]["passed"], "a skipped entry keeps the metrics it was converted with"
    # a changed source is converted again; a failing entry is never skipped (CI must stay red)
    save_model(Path(models["conv"]["pb"]).parent, _conv_net, seed=7)
    proc = convert_batch(manifest, "--changed-only", "--only", "good_*,missing_file", "--targets", "torch",
                         "--previous", "again.json", "--report", "third.json", "--jobs", "1",
                         "--discard-outputs", cwd=root)
    third = json.loads((root / "third.json").read_text())
    same_code = third["code_sha256"] == again["code_sha256"]
    statuses = {r["name"]: r["status"] for r in third["results"]}
    assert statuses == {"good_pb": "ok", "good_saved_model": "skipped" if same_code else "ok",
                        "missing_file": "failed"}, proc.stderr
    assert proc.returncode == 2, "the only failure is a missing file: exit 2"
    # --discard-outputs: verified and reported, then deleted (zoo-sized runs keep only the report)
    assert third["results"][0]["verify"]["passed"] and not (root / "out" / "good_pb-torch").exists()


def test_pipeline_reuses_an_explicit_cache_and_returns_failed_checks(tmp_path):
    """No patching: pipeline.run takes the worker's cache; a failed check is a returned value."""
    from tf_convert.app import pipeline
    from tf_convert.app.batch.cache import MemoryCache

    source = Path(save_model(tmp_path / "conv", _conv_net, 0)["pb"])
    cache = MemoryCache()
    request = dict(source=source, input_shapes={"": tuple(SHAPE)}, verify=True, force=True)
    first = pipeline.run(pipeline.Request(target="torch", out=tmp_path / "torch", **request), cache=cache)
    assert first.passed and first.check()["verify"]["passed"] and cache.hits == {"parse": 0, "reference": 0}
    failed = pipeline.run(pipeline.Request(target="onnx", out=tmp_path / "onnx", rtol=0, **request), cache=cache)
    # TF's outputs at the conversion size, at the border-changed input (verify's sensitivity) and at verify's
    # two extra sizes (a size-free model)
    assert cache.hits == {"parse": 1, "reference": 4}, "the second target reused the parse and TF's outputs"
    assert not failed.passed and failed.doc["verify"]["max_rel"] > 0 and not (tmp_path / "onnx").exists()
    assert failed.error.exit_code == 4 and "rtol 0" in str(failed.error)


def test_batch_without_distributed_says_how_to_install_it(tmp_path):
    manifest = tmp_path / "m.toml"
    manifest.write_text('[[model]]\nname = "a"\nsource = "a.pb"\ntargets = ["torch"]\n')
    code = ("import sys; sys.modules['distributed'] = None; from tf_convert import cli; "
            f"cli.main(['batch', {str(manifest)!r}])")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == ("convert: error: convert batch runs on Dask distributed: "
                                                   "pip install 'tf-convert[batch]' (or pip install distributed)")
    assert not (tmp_path / "batch-report.json").exists()


# ---- manifest validation and shards (no framework needed) --------------------------------------------


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli.main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


BAD_TOML = """\
[defaults]
targets = ["torch"]
rtoll = 1e-4

[[model]]
name = "a"
source = "a.pb"
targets = ["torch", "tflite"]

[[model]]
name = "a"
source = "b.pb"

[[model]]
source = "c.pb"
input_shape = "1,x,3"

[[model]]
name = "d"
source = "d.pb"
rtol = -1
verify = "yes"

[[model]]
name = "e"
source = "e.pb"
targets = ["torch", "onnx"]
out = "build/e"

[[model]]
name = "fine"
source = "${{UNSET_VARIABLE_FOR_TEST}}/f.pb"
"""
BAD_LINES = {3: "unknown key 'rtoll'", 8: "'tflite'", 11: "duplicate name (first used on line 6)",
             14: "missing required key 'name'", 16: "input_shape", 21: "rtol must be a number >= 0",
             22: "verify: expected true or false", 28: "put {target} in it", 32: "UNSET_VARIABLE_FOR_TEST"}


def test_manifest_lists_every_bad_entry_with_its_line(tmp_path):
    manifest = tmp_path / "bad.toml"
    manifest.write_text(BAD_TOML.format())
    code, stdout, stderr = run_cli("batch", manifest)
    assert code == 2
    problems = [line for line in stderr.splitlines() if line.startswith(str(manifest))]
    assert len(problems) == len(BAD_LINES), stderr
    for line_no, text in BAD_LINES.items():
        assert any(p.startswith(f"{manifest}:{line_no}: ") and text in p for p in problems), (line_no, stderr)
    assert f"{len(BAD_LINES)} problem(s)" in stderr and "nothing was converted" in stderr
    assert not (tmp_path / "batch-report.json").exists()


def test_yaml_manifest_is_validated_with_lines(tmp_path):
    manifest = tmp_path / "bad.yaml"
    manifest.write_text("defaults:\n  targets: [torch]\nmodels:\n  - name: a\n    source: a.pb\n    rtol: -3\n"
                        "  - name: b\n    sorce: b.pb\n")
    code, _, stderr = run_cli("batch", manifest)
    assert code == 2
    assert f"{manifest}:6: model 'a': rtol" in stderr
    assert f"{manifest}:7: model 'b': missing required key 'source'" in stderr
    assert f"{manifest}:8: model 'b': unknown key 'sorce'" in stderr
    manifest.write_text("model:\n - name: a\n  source: [\n")
    code, _, stderr = run_cli("batch", manifest)
    assert code == 2 and f"{manifest}:3: not valid YAML" in stderr


def test_toml_syntax_error_names_the_line(tmp_path):
    manifest = tmp_path / "syntax.toml"
    manifest.write_text('[[model]]\nname = "a"\nsource = \n')
    code, _, stderr = run_cli("batch", manifest)
    assert code == 2 and f"{manifest}:3: not valid TOML" in stderr


def test_shards_cover_every_entry_exactly_once(tmp_path):
    names = [f"m{i:02d}" for i in (7, 3, 11, 1, 9, 4, 12, 2, 10, 5)]
    manifest = tmp_path / "many.yaml"
    manifest.write_text("defaults:\n  targets: [torch, onnx]\nmodel:\n"
                        + "".join(f"  - {{name: {n}, source: {n}.pb}}\n" for n in names))
    seen: list[tuple[str, str]] = []
    for i in (1, 2, 3):
        code, stdout, stderr = run_cli("batch", manifest, "--shard", f"{i}/3", "--dry-run")
        assert code == 0, stderr
        shard = [tuple(line.split(":")[0].split(" -> ")) for line in stdout.splitlines() if " -> " in line]
        assert len({n for n, _ in shard}) in (3, 4), "shards are balanced"
        seen += shard
    assert sorted(seen) == sorted((n, t) for n in names for t in ("torch", "onnx"))
    for bad in ("0/3", "4/3", "1/0", "x"):
        code, _, stderr = run_cli("batch", manifest, "--shard", bad, "--dry-run")
        assert code == 2 and "--shard" in stderr


def test_exit_code_rules():
    def results(*codes: int) -> list[dict]:
        return [{"status": "ok" if c == 0 else "x", "exit_code": c} for c in codes]

    assert batch_report.exit_code(results(0, 0)) == 0
    assert batch_report.exit_code(results(0, 4, 4)) == 4
    assert batch_report.exit_code(results(3, 0)) == 3
    assert batch_report.exit_code(results(2, 4)) == 1
    assert batch_report.exit_code([{"status": "skipped", "exit_code": 0}]) == 0


def test_help_stays_light():
    code = ("import sys; from tf_convert import cli; assert 'batch' in cli.main.commands; "
            "heavy = [m for m in ('tensorflow', 'torch', 'onnx', 'numpy', 'yaml') if m in sys.modules]; "
            "assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)


def test_zoo_manifest_matches_zoo_models():
    from tf_convert.app.batch import manifest as batch_manifest
    from zoo import models, run

    assert (REPO / "zoo" / "manifest.toml").read_text() == run.manifest_text(), \
        "regenerate it: python -m zoo.run --write-manifest zoo/manifest.toml"
    entries = batch_manifest.load(REPO / "zoo" / "manifest.toml", out_root=Path("/cache/out"),
                                  env={"ZOO_CACHE": "/cache"})
    assert len(entries) == sum(len(m.sizes) for m in models.MODELS) * len(run.FORMS)
    assert all(str(e.source).startswith("/cache/") for e in entries)


# ---- the Dask runner ---------------------------------------------------------------------------


def sleep_task(seconds: float) -> dict:
    """Cluster test task (runs in a worker): sleeps, then succeeds."""
    time.sleep(seconds)
    return {"status": "ok", "exit_code": 0, "error": None, "pid": os.getpid()}


def crash_task() -> dict:
    print("about to crash", flush=True)
    os.abort()  # the worker dies as if TensorFlow segfaulted


def test_local_cluster_survives_hangs_and_crashes():
    """A hung task is cancelled and its worker restarted; a crashed worker fails only its own task."""
    from tf_convert.app.batch.cluster import Cluster, Task

    tasks = [Task(0, "tests.app.test_batch:sleep_task", {"seconds": 60}, timeout=1.0, label="hang"),
             Task(1, "tests.app.test_batch:crash_task", {}, label="crash"),
             *[Task(i, "tests.app.test_batch:sleep_task", {"seconds": 0.01}, label=f"ok{i}", memory=1 << 20)
               for i in range(2, 6)]]
    results: dict[int, dict] = {}
    t0 = time.monotonic()
    with Cluster(2, warm=[]) as cluster:
        cluster.run(tasks, on_done=lambda task, result: results.__setitem__(task.id, result))
    assert time.monotonic() - t0 < 60, "a hung task must not hold the cluster up"
    assert sorted(results) == list(range(6)), "every task is reported exactly once"
    assert results[0]["status"] == "timeout" and "timed out after 1 s" in results[0]["error"]
    assert results[1]["status"] == "error" and "worker process died" in results[1]["error"]
    assert results[1]["error"].endswith("last output: about to crash"), "the worker's output, not the CI log"
    assert all(results[i]["status"] == "ok" for i in range(2, 6)), results
    assert all(results[i]["peak_rss_mb"] > 0 and results[i]["seconds"] >= 0.01 for i in range(2, 6))
    assert all(results[i]["worker"].startswith("tcp://127.0.0.1:") for i in range(6))


def test_local_cluster_restarts_workers_and_caps_memory_requests():
    """--max-tasks-per-worker: a fresh worker process after N tasks; a task asking for more memory
    than any worker has runs on the largest one instead of waiting forever."""
    from tf_convert.app.batch.cluster import Cluster, Task

    tasks = [Task(i, "tests.app.test_batch:sleep_task", {"seconds": 0.01}, label=f"t{i}",
                  memory=1 << 50 if i == 2 else 1 << 20) for i in range(3)]
    results: dict[int, dict] = {}
    environ = dict(os.environ)
    with Cluster(1, warm=[], max_tasks=2, worker_memory="2GB") as cluster:
        assert cluster.largest_memory() == 2e9
        cluster.run(tasks, on_done=lambda task, result: results.__setitem__(task.id, result))
    assert [results[i]["status"] for i in range(3)] == ["ok"] * 3
    assert results[0]["pid"] == results[1]["pid"] != results[2]["pid"], "restarted after 2 tasks"
    assert dict(os.environ) == environ, "the nannies' variables (PYTHONSAFEPATH...) leave the caller's environment"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(args: list[str], log: Path) -> subprocess.Popen:
    """A process in its own session (so that stopping it stops its children too)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3",
           "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False"}
    return subprocess.Popen(args, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _stop(process: subprocess.Popen) -> None:
    import signal

    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=30)


CLUSTER_MANIFEST = """[defaults]
targets = ["torch", "onnx"]
input_shape = [1, 17, 17, 3]
out = "out/{{name}}-{{target}}"
""" + "".join(f"""
[[model]]
name = "m{i}"
source = "m{i}.pb"
""" for i in range(5))


def test_batch_on_a_real_scheduler_survives_a_killed_worker(tmp_path):
    """`dask scheduler` + two `dask worker` processes on 127.0.0.1, run through --scheduler: both
    workers convert, and killing one mid-run loses no conversion."""
    from distributed import Client

    dask = str(Path(sys.executable).with_name("dask"))
    conv = save_model(tmp_path / "conv", _conv_net, 0)
    for i in range(5):  # a source each: every entry is parsed and run in TensorFlow
        shutil.copy(conv["pb"], tmp_path / f"m{i}.pb")
    manifest = tmp_path / "cluster.toml"
    manifest.write_text(CLUSTER_MANIFEST.format())
    # workers that import the frameworks before they join (as `dask worker --preload` does on a real
    # cluster), so that both are ready when the batch starts and both get work
    preload = tmp_path / "warm.py"
    preload.write_text("import tensorflow, torch, onnxruntime  # noqa\n")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    processes = [_start([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                        tmp_path / "scheduler.log")]
    worker_ports = [_free_port(), _free_port()]
    try:
        for i, worker_port in enumerate(worker_ports):
            processes.append(_start([dask, "worker", address, "--host", "127.0.0.1", "--worker-port", str(worker_port),
                                     "--nthreads", "1", "--memory-limit", "4GB", "--no-dashboard", "--name", f"w{i}",
                                     "--preload", str(preload)],
                                    tmp_path / f"worker{i}.log"))
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
        victim = f"tcp://127.0.0.1:{worker_ports[0]}"
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "DASK_SCHEDULER_ADDRESS": address}
        batch = subprocess.Popen([CONVERT, "batch", str(manifest)], cwd=tmp_path, env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        lines, killed_after = [], None
        for line in batch.stderr:
            lines.append(line)
            if killed_after is None and line.startswith("[") and f"on {victim}]" in line:
                _stop(processes[1])  # the worker and its nanny, mid-run
                killed_after = len([x for x in lines if x.startswith("[")])
        batch.wait(timeout=240)
        assert killed_after is not None and killed_after < 10, "".join(lines)
        report = json.loads((tmp_path / "batch-report.json").read_text())
        got = {(r["name"], r["target"]): r for r in report["results"]}
        assert set(got) == {(f"m{i}", t) for i in range(5) for t in ("torch", "onnx")}, "".join(lines)
        assert all(r["status"] in ("ok", "error") for r in got.values()), "".join(lines)
        assert sum(r["status"] == "ok" for r in got.values()) >= 9, "".join(lines)
        workers = {r["worker"] for r in got.values()}
        assert victim in workers and f"tcp://127.0.0.1:{worker_ports[1]}" in workers, "both workers converted"
        assert report["scheduler"] == address and batch.returncode in (0, 1)
    finally:
        for process in reversed(processes):
            _stop(process)


def test_progress_on_a_terminal_is_one_updating_line():
    import io

    stream = io.StringIO()
    progress = batch_report.Progress(3, stream=stream, tty=True)
    progress.start("a->torch")
    progress.start("b->onnx")
    assert stream.getvalue().endswith("0/3 0:00  a->torch, b->onnx")
    ok = {"name": "a", "target": "torch", "status": "ok", "exit_code": 0, "verify": None, "seconds": 1.0}
    bad = {"name": "b", "target": "onnx", "status": "unsupported", "exit_code": 3, "error": "1 unsupported node(s)"}
    progress.finish("a->torch", ok)
    progress.finish("b->onnx", bad)
    progress.close()
    text = stream.getvalue()
    assert "\n" in text and text.count("\n") == 1, "only the failure gets a line of its own"
    assert "[2/3] unsupported   b -> onnx: exit 3: 1 unsupported node(s)" in text
    assert "2/3 (1 failed)" in text and text.endswith("\r\x1b[K")


# ---- output safety: a manifest `out` may never point at what convert did not write -----------------

UNSAFE_OUTS = {
    "dot": ('"."', "not inside --out-root"),
    "source": ('"m.pb"', "is the source itself"),
    "escapes": ('"{name}/../../elsewhere/{target}"', "not inside --out-root"),
    "absolute": ('"/tmp/convert-batch-abs/{target}"', "not inside --out-root"),
}


@pytest.mark.parametrize("case", sorted(UNSAFE_OUTS))
def test_unsafe_manifest_out_is_refused_before_anything_runs(tmp_path, case):
    out, why = UNSAFE_OUTS[case]
    work = tmp_path / "work"
    work.mkdir()
    (work / "m.pb").write_bytes(b"keep me")
    (work / "precious.txt").write_text("keep")
    manifest = work / "models.toml"
    manifest.write_text(f'[[model]]\nname = "m"\nsource = "m.pb"\ntargets = ["onnx"]\nout = {out}\n')
    code, _, stderr = run_cli("batch", manifest, "--out-root", work)
    assert code == 2 and why in stderr, stderr
    assert (work / "m.pb").read_bytes() == b"keep me" and (work / "precious.txt").exists()
    assert sorted(p.name for p in work.iterdir()) == ["m.pb", "models.toml", "precious.txt"]
