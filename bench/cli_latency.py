"""`make bench-latency`: the command-latency goals, on whole `convert` processes.

    python -m bench.cli_latency [--cache .cache/bench-latency] [--zoo-cache .cache/zoo] [--rounds 5]
                                [--targets torch,onnx,caffe,mxnet] [--report FILE.md]

Rows: `convert --help` (goal 0.2 s); a small Keras model (conv, depthwise conv, BN, pooling, dense; 33x33,
built into the cache) -> onnx and -> torch (0.5 s); the zoo's MobileNetV2 224 `.keras` (zoo/fixtures.py: random weights,
built when missing) -> onnx; and MobileNetV2 `--verify` -> each target (2.5 s), cold and warm:
- cold: TF_CONVERT_CACHE_DIR=off, TF computes the reference outputs;
- warm: TF_CONVERT_CACHE_DIR=a fresh directory per target, primed by one untimed run of the same command.

Every command is `python -m tf_convert.cli ...` run by this interpreter in this environment (so it imports
the tf_convert this bench sees), each to a fresh `-o` under the cache. Every row runs once untimed (the warm
rows' priming run), then `--rounds` timed rounds, rows interleaved (order reversed every other round). Per
row: median and fastest wall, median CPU (user + sys of the process and the children it waited for, from
os.wait4), median peak RSS of the process tree (sampled every 10 ms); a goal is judged on the median wall.
A failed run stops the bench with its stderr's last line (exit 1); goals not met are the report's content
(exit 0). Writes the report (markdown) and prints it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

CONVERT = [sys.executable, "-m", "tf_convert.cli"]
TARGETS = ("torch", "onnx", "caffe", "mxnet")
CACHE_ENV = "TF_CONVERT_CACHE_DIR"  # the on-disk cache of TF's reference outputs; "off" disables it
GOAL_HELP_S, GOAL_SMALL_S, GOAL_VERIFY_S = 0.2, 0.5, 2.5
ZOO_MODEL, ZOO_SIZE = "mobilenet_v2", 224
SMALL_HW = 33
SAMPLE_S = 0.01


@dataclass
class Run:
    wall: float
    cpu: float
    peak_mib: float
    verify: dict | None  # conversion.json's `verify` record, for --verify rows


@dataclass
class Row:
    label: str
    args: list[str]  # after `python -m tf_convert.cli`, without `-o`
    goal_s: float | None
    env: dict[str, str] = field(default_factory=dict)
    writes: bool = True  # takes `-o`
    runs: list[Run] = field(default_factory=list)


def tree_rss_kib(pid: int) -> int:
    """Resident KiB of a process and all its descendants (children of every thread)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for task in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
        except OSError:  # ended between the reads
            pass
    return total


def measure(cmd: list[str], env: dict[str, str]) -> tuple[int, str, float, float, float]:
    """(exit code, stderr, wall s, CPU s, peak RSS MiB of the tree) of one process."""
    peak = [0]
    done = threading.Event()

    def sample(pid: int) -> None:
        while True:
            peak[0] = max(peak[0], tree_rss_kib(pid))
            if done.wait(SAMPLE_S):
                return

    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        sampler = threading.Thread(target=sample, args=(proc.pid,), daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)  # blocking: the wall is not rounded to the sampling period
        wall = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    return code, stderr, wall, usage.ru_utime + usage.ru_stime, peak[0] / 1024


def command_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", CACHE_ENV)}
    # an installed package runs from its .pyc files: written once, not compiled again on every run
    return {**env, **extra}


def run_once(row: Row, out: Path) -> Run:
    """One run of `row` into a fresh `out`; a failed run ends the bench."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [*CONVERT, *row.args, *(["-o", str(out)] if row.writes else [])]
    code, stderr, wall, cpu, peak = measure(cmd, command_env(row.env))
    if code != 0:
        last = (stderr.strip().splitlines() or ["(no stderr)"])[-1]
        raise SystemExit(f"bench.cli_latency: {row.label}: exit {code}: {last}")
    verify = json.loads((out / "conversion.json").read_text()).get("verify") if "--verify" in row.args else None
    shutil.rmtree(out, ignore_errors=True)
    return Run(wall, cpu, peak, verify)


def build_small_keras(path: str) -> None:
    """The small model of the 0.5 s goal: conv, depthwise conv, BN, pooling, dense on 33x33x3."""
    import keras
    from keras import layers as L

    keras.utils.set_random_seed(25)
    inp = keras.Input((SMALL_HW, SMALL_HW, 3))
    x = L.Conv2D(16, 3, 2, "same", activation="relu")(inp)
    x = L.BatchNormalization()(L.DepthwiseConv2D(3, 2, "same")(x))
    x = L.GlobalAveragePooling2D()(L.MaxPooling2D(2, 2, "same")(x))
    keras.Model(inp, L.Dense(10)(x)).save(path)


def small_keras(cache: Path) -> Path:
    """The small model in the cache, built by a child process (TF stays out of the bench) when missing."""
    path = cache / f"small-{SMALL_HW}x{SMALL_HW}.keras"
    if not path.exists():
        partial = path.with_name("partial-" + path.name)  # never a half-written model under the real name
        code = f"from bench.cli_latency import build_small_keras; build_small_keras({str(partial)!r})"
        subprocess.run([sys.executable, "-c", code], check=True)
        partial.rename(path)
    return path


def mobilenet_keras(zoo_cache: Path) -> Path:
    """The zoo's MobileNetV2 224 `.keras` (built, with the zoo's other forms, when missing)."""
    from zoo import fixtures

    subprocess.run([sys.executable, "-m", "zoo.fixtures", ZOO_MODEL, str(ZOO_SIZE), str(zoo_cache)], check=True,
                   stdout=subprocess.DEVNULL)
    return fixtures.paths(ZOO_MODEL, ZOO_SIZE, zoo_cache)["keras"]


def make_rows(small: Path, mobilenet: Path, targets: list[str], cache: Path) -> list[Row]:
    rows = [Row("`convert --help`", ["--help"], GOAL_HELP_S, writes=False),
            Row(f"small Keras ({SMALL_HW}x{SMALL_HW}) -> onnx", ["tf2onnx", str(small)], GOAL_SMALL_S),
            Row(f"small Keras ({SMALL_HW}x{SMALL_HW}) -> torch", ["tf2torch", str(small)], GOAL_SMALL_S),
            Row("MobileNetV2 `.keras` -> onnx", ["tf2onnx", str(mobilenet)], None)]
    for target in targets:
        args = [f"tf2{target}", str(mobilenet), "--verify"]
        warm = cache / f"tf-reference-{target}"
        shutil.rmtree(warm, ignore_errors=True)  # fresh: primed by the row's untimed run
        warm.mkdir(parents=True)
        rows.append(Row(f"MobileNetV2 `.keras` -> {target} `--verify`, cold", args, GOAL_VERIFY_S, {CACHE_ENV: "off"}))
        rows.append(Row(f"MobileNetV2 `.keras` -> {target} `--verify`, warm", args, GOAL_VERIFY_S,
                        {CACHE_ENV: str(warm)}))
    return rows


def measure_rows(rows: list[Row], rounds: int, outs: Path) -> None:
    """One untimed run of every row (bytecode, page cache; primes the warm rows' caches), then the rounds."""
    for i, row in enumerate(rows):
        run_once(row, outs / f"row{i}-untimed")
        print(f"untimed: {row.label}", flush=True)
    for k in range(rounds):
        order = list(enumerate(rows))
        for i, row in order if k % 2 == 0 else reversed(order):
            row.runs.append(run_once(row, outs / f"row{i}-{k}"))
            print(f"round {k + 1}: {row.label}: {row.runs[-1].wall:.2f} s", flush=True)


def checkout() -> str:
    """The short commit of the tf_convert tree the commands import, `(dirty)` when it has changes."""
    spec = importlib.util.find_spec("tf_convert")
    repo = Path(list(spec.submodule_search_locations)[0]).resolve()
    git = ["git", "-C", str(repo)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    changes = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                             text=True).stdout.strip()
    return f"{commit or '?'}{' (dirty)' if changes else ''}"


def exactness(row: Row) -> str:
    """max_rel of the verify record (every run's; one value when they agree) and the input sets checked."""
    records = [r.verify for r in row.runs if r.verify]
    if not records:
        return ""
    values = sorted({f"{v['max_rel']:.2e}" for v in records})
    sets = 1 + len(records[0].get("sizes") or [])
    verdicts = {v.get("verdict") for v in records} - {"ok"}
    return f"{'..'.join(values)} ({sets} input set{'s' if sets > 1 else ''})" + (
        f", verdict {', '.join(map(str, verdicts))}" if verdicts else "")


def table_line(row: Row) -> str:
    walls = [r.wall for r in row.runs]
    wall = statistics.median(walls)
    goal = f"<= {row.goal_s:g} s" if row.goal_s is not None else "—"
    met = "—" if row.goal_s is None else "met" if wall <= row.goal_s else "**not met**"
    return (f"| {row.label} | {wall:.2f} s | {min(walls):.2f} s | {statistics.median(r.cpu for r in row.runs):.2f} s "
            f"| {statistics.median(r.peak_mib for r in row.runs):.0f} MiB | {goal} | {met} | {exactness(row)} "
            f"| {' '.join(f'{w:.2f}' for w in walls)} |")


def warm_note(rows: list[Row]) -> str:
    """How many files each warm cache holds after the runs (none: this checkout ignores the variable)."""
    counts = [f"{Path(r.env[CACHE_ENV]).name}: {sum(1 for p in Path(r.env[CACHE_ENV]).rglob('*') if p.is_file())}"
              for r in rows if r.env.get(CACHE_ENV, "off") != "off"]
    return "Files in the warm caches after the runs: " + ", ".join(counts) + " (0: the checkout ignores the variable)."


def render(rows: list[Row], sources: dict[str, Path], facts: dict[str, str]) -> str:
    md = ["# Command latency", "",
          f"{facts['date']}, git {facts['git']}, nproc {facts['nproc']}, load average {facts['load_before']} "
          f"before, {facts['load_after']} after; timed rounds: {facts['rounds']} (`python -m bench.cli_latency`).", "",
          "Each command is a whole `python -m tf_convert.cli` process (imports included), to a fresh `-o`; rows "
          "interleaved round by round after one untimed run of each. CPU = user + sys of the process and the "
          "children it waited for; peak = resident memory of the process tree, sampled every 10 ms. Goals are "
          f"judged on the median wall. Cold: `{CACHE_ENV}=off`; warm: a fresh cache directory per target, primed "
          "by the row's untimed run. max_rel: conversion.json's `verify` record (TF as the reference).", "",
          "Sources: " + "; ".join(f"{name} `{path}`" for name, path in sources.items()) + ".", "",
          "| command | median wall | fastest wall | median CPU | median peak RSS | goal | met | max_rel | walls |",
          "|---|---|---|---|---|---|---|---|---|"]
    md += [table_line(row) for row in rows]
    return "\n".join([*md, "", warm_note(rows), ""])


def parse_targets(text: str) -> list[str]:
    targets = [t.strip() for t in text.split(",") if t.strip()]
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown or not targets:
        raise argparse.ArgumentTypeError(f"targets are a comma-separated subset of {','.join(TARGETS)}")
    return targets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path(".cache/bench-latency"))
    parser.add_argument("--zoo-cache", type=Path, default=Path(".cache/zoo"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--targets", type=parse_targets, default=list(TARGETS))
    parser.add_argument("--report", type=Path, help="the markdown report [CACHE/cli-latency-report.md]")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    args.cache.mkdir(parents=True, exist_ok=True)
    small, mobilenet = small_keras(args.cache), mobilenet_keras(args.zoo_cache)
    rows = make_rows(small, mobilenet, args.targets, args.cache)
    facts = {"git": checkout(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
             "nproc": str(len(os.sched_getaffinity(0))), "rounds": str(args.rounds),  # nproc: the usable CPUs
             "load_before": " ".join(f"{x:.2f}" for x in os.getloadavg())}
    measure_rows(rows, args.rounds, args.cache / "runs")
    facts["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    sources = {"MobileNetV2 224 (zoo/fixtures.py, random weights)": mobilenet, "small Keras": small}
    text = render(rows, sources, facts)
    report = args.report or args.cache / "cli-latency-report.md"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
