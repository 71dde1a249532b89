"""Run the op graphs (bench/op_graphs.py) through our converter and tf2onnx, judge each against TF, report.

    python -m bench.op_graphs_run --graphs DIR [--work DIR] [--targets torch,onnx,mxnet]
                                  [--peer PYTHON | --peer-results DIR] [--report op-graphs.md]
                                  [--json op-graphs.json] [--only S]

Ours: each graph converted in this process through the Python API (app.api.convert: the CLI's pipeline,
its errors and exit codes), the written model run in its real runtime (torch, onnxruntime; MXNet 1.9.1 in
.venv-mxnet, all models in a few processes) on both feed sets. The peer: bench/op_graphs_peer.py run by
`--peer` (a virtualenv with tf2onnx 1.17.0). Every result is one of
  exact    both feed sets: TF's shapes and dtypes, integers and bools equal, floats within TOLERANCE of max|TF|
           (NaN and inf where TF has them);
  wrong    converted, but some output differs (silently wrong: the worst, listed one by one);
  refused  a one-line error (ours: exit 2 or 3; tf2onnx: any conversion error), grouped by reason;
  crash    ours: any other exception (an exit 1: a bug), or the written model fails to load or run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

TARGETS = ("torch", "onnx", "mxnet")
PEER = "tf2onnx"
# max |target - TF| / max |TF| per dtype: a few units in the last place of the largest value
TOLERANCE = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 1e-5, "float64": 1e-9}
PER_CASE_SECONDS = 120
PEER_SCRIPT = Path(__file__).with_name("op_graphs_peer.py")


# ---- judging -----------------------------------------------------------------------------------------------------


def judge(actual: np.ndarray, expected: np.ndarray) -> tuple[str | None, float]:
    """(None, error) when `actual` is TF's `expected`; else (why not, error)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        return f"shape {list(actual.shape)} (TF: {list(expected.shape)})", float("inf")
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype} (TF: {expected.dtype})", float("inf")
    if expected.dtype.kind not in "fc":
        differ = int(np.sum(actual != expected))
        return (f"{differ} of {expected.size} values differ" if differ else None), float(differ)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    if any(not np.array_equal(test(a), test(e)) for test in (np.isnan, np.isposinf, np.isneginf)):
        return "NaN/inf where TF has none (or the other way)", float("inf")
    finite = np.isfinite(e)
    if not finite.any():
        return None, 0.0
    scale = max(float(np.abs(e[finite]).max()), np.finfo(expected.dtype).tiny)
    error = float(np.abs(a[finite] - e[finite]).max()) / scale
    limit = TOLERANCE.get(str(expected.dtype), 1e-5)
    return (f"max relative error {error:.3g} > {limit:g}" if error > limit else None), error


def judge_sets(outputs: dict[str, np.ndarray], feeds: Any, count: int) -> tuple[str | None, float]:
    worst = 0.0
    for which in "ab":
        for k in range(count):
            key = f"{which}_out/{k}"
            if key not in outputs:
                return f"output {k} missing", float("inf")
            why, error = judge(outputs[key], feeds[key])
            if why:
                return f"feed set {which}, output {k}: {why}", error
            worst = max(worst, error)
    return None, worst


# ---- refusal reasons -----------------------------------------------------------------------------------------------

_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(r"\b\d+(\.\d+)?\b")
_PREFIX = re.compile(r"^\d+ unsupported node\(s\)( for \w+)?: ")


def reason(message: str) -> str:
    """The message's first clause with names and numbers taken out: the key refusals are grouped by."""
    text = _PREFIX.sub("", message.strip())
    text = re.sub(r"^\w+ \(node '[^']*'\)(: |, )", "", text)  # "Transpose (node 'x'): ..."
    text = re.sub(r"^(\w+Error|\w+Exception): ", "", text)
    clause = re.split(r"[;:]\s|\.\s|\n", text, maxsplit=1)[0]
    clause = _NUMBER.sub("N", _QUOTED.sub("'…'", clause))
    # one group per kind, not per op: "abs of a float16 tensor" and "add of a float16 tensor" are one reason
    clause = re.sub(r"^[\w ]+ of an? (\w+) tensor", r"an op of a \1 tensor", clause)
    clause = re.sub(r"^the output shape of \w+ '…'", "the output shape of an op", clause)
    return clause.strip()[:140] or message[:140]


# ---- ours ------------------------------------------------------------------------------------------------------------


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout(f"took over {PER_CASE_SECONDS} s")


def _layout_perm(record: dict) -> tuple[int, ...] | None:
    """The permutation from TF's layout to the written model's (NHWC -> NCHW), or None when it keeps TF's."""
    source, written = record.get("source_layout") or "", record.get("layout") or ""
    if not source or not written or source == written or sorted(source) != sorted(written):
        return None
    return tuple(source.index(axis) for axis in written)


def _convert_ours(case_dir: Path, meta: dict, target: str, out: Path) -> dict:
    from tf_convert.app import api
    from tf_convert.convert.errors import ConvertError, UsageError

    start = time.perf_counter()
    signal.alarm(PER_CASE_SECONDS)
    try:
        try:  # --inputs and --outputs named as tf2onnx gets them
            record = api.convert(case_dir / "graph.pb", target, out, inputs=meta["inputs"], outputs=meta["outputs"],
                                 force=True)
        except UsageError as exc:
            if "never read it" not in str(exc):
                raise
            # what the message tells the user to do: leave the inputs the outputs do not read out
            record = api.convert(case_dir / "graph.pb", target, out, outputs=meta["outputs"], force=True)
    except ConvertError as exc:
        code = getattr(exc, "exit_code", 2)
        return {
            "status": "refused",
            "exit": code,
            "error": " ".join(str(exc).split())[:400],
            "seconds": time.perf_counter() - start,
        }
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return {
            "status": "crash",
            "exit": 1,
            "error": f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:400],
            "seconds": time.perf_counter() - start,
        }
    finally:
        signal.alarm(0)
    return {
        "status": "converted",
        "record": {"inputs": record["inputs"], "outputs": record["outputs"]},
        "seconds": time.perf_counter() - start,
    }


def _fed(meta: dict, record: dict, feeds: Any, which: str) -> list[np.ndarray]:
    arrays = []
    for spec in record["inputs"]:
        value = feeds[f"{which}/{spec['source_name'].split(':')[0]}"]
        perm = _layout_perm(spec)
        arrays.append(np.transpose(value, perm) if perm else value)
    return arrays


def _as_tf(record: dict, outputs: list[np.ndarray], which: str) -> dict[str, np.ndarray]:
    result = {}
    for k, (spec, value) in enumerate(zip(record["outputs"], outputs)):
        perm = _layout_perm(spec)
        value = np.asarray(value)
        if spec.get("shape") == [] and value.shape == (1,):  # MXNet 1.x returns a 0-d result as (1,) (documented)
            value = value.reshape(())
        result[f"{which}_out/{k}"] = np.transpose(value, np.argsort(perm)) if perm else value
    return result


def run_ours(cases: list[Path], targets: tuple[str, ...], work: Path, log) -> dict[str, dict[str, dict]]:
    """case name -> target -> result."""
    from tf_convert import emitters
    from tf_convert.emitters.mxnet import runtime as mx_runtime

    signal.signal(signal.SIGALRM, _alarm)
    results: dict[str, dict[str, dict]] = defaultdict(dict)
    mxnet_jobs: list[tuple[str, Path, dict, Any, dict]] = []
    for n, case_dir in enumerate(cases):
        meta = json.loads((case_dir / "case.json").read_text())
        feeds = np.load(case_dir / "feeds.npz")
        for target in targets:
            out = work / case_dir.name / target
            result = _convert_ours(case_dir, meta, target, out)
            results[meta["name"]][target] = result
            if result["status"] != "converted":
                continue
            record = result.pop("record")
            if target == "mxnet":
                mxnet_jobs.append((meta["name"], out, record, feeds, meta))
                continue
            try:
                sets = emitters.get(target).run_sets(out, [_fed(meta, record, feeds, w) for w in "ab"])
                outputs = {**_as_tf(record, sets[0], "a"), **_as_tf(record, sets[1], "b")}
            except Exception as exc:  # noqa: BLE001 -- the written model fails in its runtime: a bug
                result.update(status="crash", error=f"run: {type(exc).__name__}: {' '.join(str(exc).split())}"[:400])
                continue
            _judged(result, outputs, feeds, len(meta["outputs"]))
        if n % 50 == 0:
            log(f"ours: {n}/{len(cases)} graphs")
    for start in range(0, len(mxnet_jobs), 100):
        chunk = mxnet_jobs[start : start + 100]
        jobs = [(out, _fed(meta, record, feeds, w)) for _, out, record, feeds, meta in chunk for w in "ab"]
        raw = mx_runtime.evaluate(jobs, ("gluon",))
        for k, (name, _, record, feeds, meta) in enumerate(chunk):
            result = results[name]["mxnet"]
            got_a, got_b = raw[2 * k], raw[2 * k + 1]
            if "error" in got_a or "error" in got_b:
                error = got_a.get("error") or got_b.get("error")
                result.update(status="crash", error=f"run: {' '.join(str(error).split())}"[:400])
                continue
            outputs = {
                **_as_tf(record, got_a["outputs"]["gluon"], "a"),
                **_as_tf(record, got_b["outputs"]["gluon"], "b"),
            }
            _judged(result, outputs, feeds, len(meta["outputs"]))
        log(f"mxnet: {min(start + 100, len(mxnet_jobs))}/{len(mxnet_jobs)} models run")
    return results


def _judged(result: dict, outputs: dict, feeds: Any, count: int) -> None:
    why, error = judge_sets(outputs, feeds, count)
    result["error_max"] = error
    if why:
        result.update(status="wrong", error=why)
    else:
        result["status"] = "exact"


# ---- the peer ---------------------------------------------------------------------------------------------


def run_peer(python: str | None, graphs: Path, cases: list[Path], results_dir: Path,
             only: str | None) -> dict[str, dict]:
    """tf2onnx's results on `cases`: run by `python` into `results_dir`, or (None) read from an earlier run there."""
    if python:
        command = [python, str(PEER_SCRIPT), str(graphs), str(results_dir)] + (["--only", only] if only else [])
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    results = {}
    for case_dir in cases:
        meta = json.loads((case_dir / "case.json").read_text())
        path = results_dir / f"{case_dir.name}.json"
        if not path.exists():
            results[meta["name"]] = {"status": "crash", "error": "tf2onnx's process ended before this graph"}
            continue
        result = json.loads(path.read_text())
        if result["status"] == "run-failed":
            result["status"] = "crash"
        elif result["status"] == "converted":
            with np.load(results_dir / f"{case_dir.name}.npz") as outputs:
                _judged(result, dict(outputs), np.load(case_dir / "feeds.npz"), len(meta["outputs"]))
        results[meta["name"]] = result
    return results


# ---- the report -------------------------------------------------------------------------------------------


def report(results: dict[str, dict[str, dict]], metas: dict[str, dict], columns: list[str], dropped: dict) -> str:
    total = len(results)
    lines = [
        f"# Op graphs: {total} TF graphs, our targets and tf2onnx against TF",
        "",
        "Generated by `make op-graphs` (bench/op_graphs.py, bench/op_graphs_run.py). exact = TF's shapes and dtypes, "
        "integers equal, floats within "
        + ", ".join(f"{k} {v:g}" for k, v in TOLERANCE.items())
        + " of max|TF|, on two feed sets.",
        "",
        "| | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for status in ("exact", "wrong", "refused", "crash"):
        row = []
        for column in columns:
            count = sum(1 for r in results.values() if r.get(column, {}).get("status") == status)
            row.append(f"{count} ({100 * count / total:.1f} %)" if status == "exact" else str(count))
        lines.append(f"| {status} | " + " | ".join(row) + " |")
    worst = []
    for column in columns:
        errors = [
            r[column]["error_max"]
            for r in results.values()
            if r.get(column, {}).get("status") == "exact" and "error_max" in r[column]
        ]
        worst.append(f"{max(errors):.2g}" if errors else "-")
    lines.append("| max error when exact | " + " | ".join(worst) + " |")
    styles = sorted({m["style"] for m in metas.values()})
    lines += [
        "",
        "## Exact by style",
        "",
        "| style | graphs | " + " | ".join(columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for style in styles:
        names = [n for n, m in metas.items() if m["style"] == style]
        counts = [sum(1 for n in names if results[n].get(c, {}).get("status") == "exact") for c in columns]
        lines.append(f"| {style} | {len(names)} | " + " | ".join(map(str, counts)) + " |")
    lines += ["", "## Wrong (silently wrong: converted, ran, differs from TF)", ""]
    wrong = [
        (c, n, r[c]["error"])
        for n, r in sorted(results.items())
        for c in columns
        if r.get(c, {}).get("status") == "wrong"
    ]
    lines += [f"- **{c}** `{n}`: {why}" for c, n, why in wrong] or ["none"]
    lines += ["", "## Crashes (exit 1, or a written model that does not run)", ""]
    crashes = [
        (c, n, r[c]["error"])
        for n, r in sorted(results.items())
        for c in columns
        if r.get(c, {}).get("status") == "crash"
    ]
    lines += [f"- {c} `{n}`: {why[:200]}" for c, n, why in crashes] or ["none"]
    lines += ["", "## Refusals by reason", ""]
    for column in columns:
        groups: dict[str, list[str]] = defaultdict(list)
        for name, r in sorted(results.items()):
            if r.get(column, {}).get("status") == "refused":
                prefix = f"[exit {r[column]['exit']}] " if "exit" in r[column] else ""
                groups[prefix + reason(r[column]["error"])].append(name)
        lines += [f"### {column}: {sum(len(v) for v in groups.values())} refused", ""]
        for key, names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            lines.append(
                f"- {len(names)} × {key}: "
                + ", ".join(f"`{n}`" for n in names[:12])
                + (" …" if len(names) > 12 else "")
            )
        lines.append("")
    ops = Counter(m["op"] for m in metas.values())
    lines += [
        f"Ops: {len(ops)} TF ops. Dropped (TF itself has no kernel or rejects the graph): {len(dropped)}"
        + (": " + ", ".join(f"`{n}`" for n in sorted(dropped)) if dropped else ""),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--graphs", type=Path, required=True, help="bench/op_graphs.py's output (written if empty)")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--peer", default=None, help="python of a virtualenv with tf2onnx (skipped when not given)")
    parser.add_argument("--peer-results", type=Path, default=None, help="tf2onnx's results of an earlier run, to judge")
    parser.add_argument("--report", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--only", default=None)
    args = parser.parse_args(argv)

    def log(text: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    if not any(args.graphs.glob("*/graph.pb")):
        from bench import op_graphs

        args.graphs.mkdir(parents=True, exist_ok=True)
        op_graphs.generate(args.graphs)
    cases = sorted(
        p for p in args.graphs.iterdir() if (p / "case.json").exists() and (not args.only or args.only in p.name)
    )
    metas = {
        json.loads((c / "case.json").read_text())["name"]: json.loads((c / "case.json").read_text()) for c in cases
    }
    dropped_path = args.graphs / "dropped.json"
    dropped = json.loads(dropped_path.read_text()) if dropped_path.exists() else {}
    work = args.work or Path(tempfile.mkdtemp(prefix="op-graphs-"))
    targets = tuple(t for t in args.targets.split(",") if t)
    log(f"{len(cases)} graphs; ours: {', '.join(targets)}; work in {work}")
    results = run_ours(cases, targets, work, log)
    columns = list(targets)
    if args.peer or args.peer_results:
        log("tf2onnx ...")
        peer = run_peer(args.peer, args.graphs, cases, args.peer_results or work / PEER, args.only)
        for name, result in peer.items():
            results[name][PEER] = result
        columns.append(PEER)
    text = report(results, metas, columns, dropped)
    if args.report:
        args.report.write_text(text)
    if args.json:
        args.json.write_text(
            json.dumps({n: {"meta": metas[n], **r} for n, r in results.items()}, indent=1, default=float)
        )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
