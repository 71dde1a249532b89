"""`make bench-ckpt`: the checkpoint benchmarks -- wall time and peak RSS of `convert` on TF1
checkpoints (synthetic ones of 0.1 to 6 GB, VGG16, ResNet50, MobileNetV2) and a SavedModel, beside the
naive floor (bench/naive_floor.py) and OpenVINO's `ovc` measured in the same run; exactness of the big
conversions against TF; the issue's goals as PASS/FAIL lines.

    python -m bench.ckpt [--cache .cache/bench-ckpt] [--zoo-cache .cache/zoo] [--sizes 0.1,0.5,2.6[,6]]
                         [--targets torch,onnx,mxnet] [--skip-zoo] [--skip-synthetic] [--label NAME]
                         [--disk-repeats 3] [--skip-verify]

Every measured command is its own process (wall clock and ru_maxrss from os.wait4, imports included);
fixtures are built by child processes and reused from the cache. Outputs are deleted after each measurement
(disk). A command whose RSS passes --rss-cap-gb is killed (the machine is shared) and reported as such.
Writes bench-ckpt-report[-LABEL].md and .json into the cache directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import checkpoints, launch

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
# every --verify row runs TensorFlow (the goal is the check from nothing): no reference store; its warm
# figures are bench.cli_latency's
os.environ["TF_CONVERT_CACHE_DIR"] = "off"

BIN = Path(sys.executable).parent
CONVERT = str(BIN / "convert")
OVC = BIN / "ovc"
CHANNELS = 1024
INPUT_SHAPE = "1,8,8,1024"  # small: the exactness runs stay quick; stride 2 on even sizes pads asymmetrically
GOAL_SIZE = 2.6
ZOO_SIZE = 224
GB = 1e9
MB = 1 << 20


def measure(cmd: list[str], rss_cap: float, wall_cap: float) -> dict[str, Any]:
    """Wall seconds and peak RSS (MB) of one process; killed past `rss_cap` bytes or `wall_cap` seconds."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(suffix=".json") as result:
        # through the launcher: the command's own ru_maxrss, not the bench's inherited high-water mark
        proc = subprocess.Popen(launch.wrap(cmd, result.name), stdout=out, stderr=err, start_new_session=True)
        killed = ""
        tree_peak = 0  # sampled every 0.1 s: parent + children at the same moment (ru_maxrss is their max)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            tree = _rss(proc.pid)
            tree_peak = max(tree_peak, tree)
            if not killed and tree > rss_cap:
                killed = f"killed above the {rss_cap / GB:.0f} GB RSS cap"
            elif not killed and time.perf_counter() - start > wall_cap:
                killed = f"killed after {wall_cap:.0f} s"
            if killed:
                os.killpg(proc.pid, signal.SIGKILL)
            time.sleep(0.1)
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
        own = launch.usage(result.name)
    code = os.waitstatus_to_exitcode(status)
    if own is not None:
        code, peak_kb, cpu_s = own["exit"], own["maxrss_kb"], own["cpu_s"]
    else:  # killed (RSS or wall cap) before the launcher wrote: the launcher's tree figures
        peak_kb, cpu_s = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    try:  # `convert --json` says where its time went
        doc = json.loads(stdout) if code == 0 else None
    except ValueError:
        doc = None
    stages = doc.get("seconds") if isinstance(doc, dict) else None
    lines = [ln for ln in stderr.strip().splitlines() if "UTF-8" not in ln]  # OpenVINO's protobuf noise
    # CPU seconds (user + system) say more than wall time on a machine shared with other work
    return {"exit": code, "seconds": round(seconds, 2), "cpu_s": round(cpu_s, 2),
            "peak_mb": round(peak_kb / 1024, 1), "tree_peak_mb": round(tree_peak / MB, 1),
            "error": killed or (lines[-1][:300] if code and lines else ""), "stages": stages,
            "stdout": stdout[-2000:]}


def _rss(pid: int) -> int:
    """Resident bytes of the process and its children (a conversion may spawn runtimes)."""
    total = 0
    for p in [pid, *_children(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def _children(pid: int) -> list[int]:
    try:
        kids = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
    return kids + [g for k in kids for g in _children(k)]


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self.rows: list[dict[str, Any]] = []
        self.rss_cap = args.rss_cap_gb * GB
        self.ovc = OVC.exists() and not args.skip_ovc

    def run(self, case: str, tool: str, cmd: list[str], **extra: Any) -> dict[str, Any]:
        row = {"case": case, "tool": tool, **measure(cmd, self.rss_cap, self.args.wall_cap), **extra}
        self.rows.append(row)
        note = f" -- exit {row['exit']}: {row['error']}" if row["exit"] else ""
        note += f" {row['stages']}" if row.get("stages") else ""
        print(f"{case} | {tool}: {row['seconds']} s ({row['cpu_s']} s CPU), {row['peak_mb']} MB{note}", flush=True)
        return row

    def convert(self, case: str, target: str, src: Path, *options: str, exact_ref: Path | None = None,
                **extra: Any) -> dict[str, Any]:
        out = self.work / "out"
        shutil.rmtree(out, ignore_errors=True)
        row = self.run(case, f"convert tf2{target}", [CONVERT, f"tf2{target}", str(src), "-o", str(out),
                                                     "--json", *options], target=target, **extra)
        if row["exit"] == 0:
            row["output_mb"] = round(sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / MB, 1)
            if exact_ref is not None:
                row.update(exactness(out, target, exact_ref))
        shutil.rmtree(out, ignore_errors=True)
        return row

    def naive(self, case: str, prefix: Path, **extra: Any) -> dict[str, Any]:
        out = self.work / "naive.pt"
        row = self.run(case, "naive floor", [sys.executable, "-m", "bench.naive_floor", str(prefix), str(out)],
                       target="torch", **extra)
        out.unlink(missing_ok=True)
        return row

    def openvino(self, case: str, src: Path, input_arg: str | None, exact_ref: Path | None = None,
                 **extra: Any) -> dict[str, Any] | None:
        if not self.ovc:
            return None
        out = self.work / "ov"
        shutil.rmtree(out, ignore_errors=True)
        cmd = [str(OVC), str(src), "--output_model", str(out / "model.xml"), "--compress_to_fp16=False"]
        row = self.run(case, "ovc", cmd + (["--input", input_arg] if input_arg else []), target="openvino",
                       **extra)
        if row["exit"] == 0 and exact_ref is not None:
            row.update(exactness(out, "openvino", exact_ref))
        shutil.rmtree(out, ignore_errors=True)
        return row


def exactness(out: Path, target: str, ref: Path) -> dict[str, Any]:
    """max_rel of the converted model vs TF's output (bench/exactness.py, its own process)."""
    proc = subprocess.run([sys.executable, "-m", "bench.exactness", "compare", str(out), target, str(ref)],
                          capture_output=True, text=True)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"max_rel": None, "exact_error": (proc.stderr.strip().splitlines() or ["?"])[-1][:300]}


def synthetic_checkpoint(bench: Bench, size: float) -> tuple[Path, int, float]:
    """The synthetic checkpoint of `size` GB in the cache (built by a child process when missing):
    (prefix, convs, seconds it took)."""
    convs = checkpoints.conv_count(size, CHANNELS)
    prefix = bench.args.cache / f"synthetic-{size:g}GB" / "model.ckpt"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bench.checkpoints", str(prefix), "--convs", str(convs),
                    "--channels", str(CHANNELS)], check=True, stdout=subprocess.DEVNULL)
    return prefix, convs, time.perf_counter() - start


def verify_rows(bench: Bench, sizes: list[float], targets: list[str]) -> list[dict[str, Any]]:
    """`convert tf2X --verify` beside TF's own run of the same graph from the same files
    (bench/exactness.py reference: restore the .meta's Saver, run once on the same input)."""
    table = []
    for size in sizes:
        prefix, convs, _ = synthetic_checkpoint(bench, size)
        nbytes = checkpoints.files_bytes(prefix)
        case = f"{nbytes / GB:.2f} GB TF1 ckpt ({convs} convs) --verify"
        info = {"size_gb": round(nbytes / GB, 2)}
        ref = bench.work / "tf-own-run.npz"
        entry: dict[str, Any] = {"case": case, **info, "tf": bench.run(
            case, "TF's own run", [sys.executable, "-m", "bench.exactness", "reference", str(prefix), INPUT_SHAPE,
                                   str(ref)], **info)}
        ref.unlink(missing_ok=True)
        for target in targets:
            entry[target] = bench.convert(case, target, prefix, "--input-shape", INPUT_SHAPE, "--outputs", "output",
                                          "--verify", **info)
        table.append(entry)
    return table


def synthetic(bench: Bench, sizes: list[float], targets: list[str]) -> list[dict[str, Any]]:
    """Peak RSS vs checkpoint size: build, measure naive / ovc / convert per target, check exactness."""
    table = []
    for size in sizes:
        prefix, convs, built = synthetic_checkpoint(bench, size)
        nbytes = checkpoints.files_bytes(prefix)
        ref = prefix.parent / f"reference-{INPUT_SHAPE.replace(',', 'x')}.npz"
        if not ref.exists() and not bench.args.skip_exact:
            subprocess.run([sys.executable, "-m", "bench.exactness", "reference", str(prefix), INPUT_SHAPE,
                            str(ref)], check=True)
        ref_or_none = ref if ref.exists() else None
        case = f"{nbytes / GB:.2f} GB TF1 ckpt ({convs} convs 3x3x{CHANNELS}x{CHANNELS})"
        info = {"size_gb": round(nbytes / GB, 2), "largest_mib": round(9 * CHANNELS * CHANNELS * 4 / MB, 1)}
        print(f"{case}: built/reused in {built:.0f} s", flush=True)
        entry: dict[str, Any] = {"case": case, **info, "naive": bench.naive(case, prefix, **info)}
        entry["ovc"] = bench.openvino(case, Path(f"{prefix}.meta"), f"input[{INPUT_SHAPE}]", ref_or_none, **info)
        for target in targets:
            entry[target] = bench.convert(case, target, prefix, "--input-shape", INPUT_SHAPE, "--outputs", "output",
                                          exact_ref=ref_or_none, **info)
        table.append(entry)
        if bench.args.delete_fixtures:
            checkpoints.remove(prefix)
    return table


def disk_rows(bench: Bench, size: float, targets: list[str], repeats: int) -> dict[str, Any]:
    """Each conversion of the `size` GB checkpoint beside a durable write of the same bytes
    (`dd bs=16M conv=fdatasync` of the data shard), interleaved, `repeats` rounds; the fastest of each."""
    prefix, _, _ = synthetic_checkpoint(bench, size)
    nbytes = checkpoints.files_bytes(prefix)
    case = f"{nbytes / GB:.2f} GB (disk)"
    shards = sorted(prefix.parent.glob(prefix.name + ".data-*"))
    runs: dict[str, list[dict[str, Any]]] = {"dd": [], **{t: [] for t in targets}}
    for _ in range(repeats):
        copy = bench.work / "dd.out"
        cmd = ["sh", "-c", " && ".join(f"dd if={shard} of={copy}.{i} bs=16M conv=fdatasync status=none"
                                        for i, shard in enumerate(shards))]
        runs["dd"].append(bench.run(case, "dd conv=fdatasync", cmd))
        for stale in bench.work.glob("dd.out.*"):
            stale.unlink()
        for target in targets:
            runs[target].append(bench.convert(case, target, prefix, "--input-shape", INPUT_SHAPE,
                                              "--outputs", "output"))
    fastest = {k: min((r for r in rows if r["exit"] == 0), key=lambda r: r["seconds"], default=None)
               for k, rows in runs.items()}
    return {"size_gb": round(nbytes / GB, 2), "repeats": repeats, "fastest": fastest,
            "all": {k: [r["seconds"] for r in rows] for k, rows in runs.items()}}


def disk_goals(report: dict[str, Any]) -> list[str]:
    """Wall <= 1.25x the durable write of the same bytes, peak RSS <= 0.4 GB."""
    disk = report["disk"]
    dd = disk["fastest"]["dd"]
    lines = []
    for target in report["targets"]:
        row = disk["fastest"].get(target)
        if not row or not dd:
            lines.append(f"- SKIP: 2.6 GB ckpt -> {target} vs dd — not measured")
            continue
        ratio = row["seconds"] / dd["seconds"]
        ok = ratio <= 1.25 and row["peak_mb"] <= 0.4 * GB / MB
        lines.append(f"- {'PASS' if ok else 'FAIL'}: 2.6 GB ckpt -> {target}: wall <= 1.25x dd conv=fdatasync "
                     f"({dd['seconds']} s) and peak RSS <= 0.4 GB — {row['seconds']} s = {ratio:.2f}x, "
                     f"{row['peak_mb']} MB")
    return lines


def zoo(bench: Bench) -> dict[str, dict[str, Any]]:
    """ResNet50, VGG16, MobileNetV2: TF1 checkpoints (and MobileNetV2's SavedModel) from zoo/fixtures.py."""
    from zoo import fixtures

    found = {}
    for name in ("mobilenet_v2", "resnet50", "vgg16"):
        subprocess.run([sys.executable, "-m", "zoo.fixtures", name, str(ZOO_SIZE), str(bench.args.zoo_cache)],
                       check=True, stdout=subprocess.DEVNULL)
        found[name] = fixtures.paths(name, ZOO_SIZE, bench.args.zoo_cache)
    shape = ["--input-shape", f"1,{ZOO_SIZE},{ZOO_SIZE},3"]
    # ovc reads a .meta's inputs and outputs from its serving signature only (zoo checkpoints have none):
    # it gets the same checkpoint files under a .meta that has one, written here before any measurement
    signed = {}
    for name, paths in found.items():
        dest = bench.work / f"signed-{name}"
        subprocess.run([sys.executable, "-m", "bench.checkpoints", "sign", str(paths["ckpt"]), str(dest)], check=True)
        signed[name] = Path(f"{dest}/model.ckpt.meta")
    results: dict[str, dict[str, Any]] = {}
    for label, name, target in (("ResNet50 TF1 ckpt -> torch", "resnet50", "torch"),
                                ("VGG16 TF1 ckpt -> torch", "vgg16", "torch"),
                                ("VGG16 TF1 ckpt -> onnx", "vgg16", "onnx"),
                                ("MobileNetV2 TF1 ckpt -> onnx", "mobilenet_v2", "onnx")):
        prefix = found[name]["ckpt"]
        info = {"size_gb": round(checkpoints.files_bytes(prefix) / GB, 3)}
        results[label] = {"convert": bench.convert(label, target, prefix, *shape, **info)}
        if target == "torch":
            results[label]["naive"] = bench.naive(label, prefix, **info)
        results[label]["ovc"] = bench.openvino(label, signed[name], None, **info)
    label = "MobileNetV2 SavedModel -> onnx"
    saved = found["mobilenet_v2"]["saved_model"]
    results[label] = {"convert": bench.convert(label, "onnx", saved, *shape),
                      "ovc": bench.openvino(label, saved, None)}
    return results


def cell(row: dict[str, Any] | None) -> str:
    if not row:
        return "—"
    if row["exit"]:
        return f"**fails** ({row['seconds']} s / {row['peak_mb'] / 1024:.2f} GB): {row['error'][:120]}"
    return f"{row['seconds']} s ({row['cpu_s']} CPU) / {row['peak_mb'] / 1024:.2f} GB"


def exact_cell(row: dict[str, Any] | None) -> str:
    if not row or row["exit"]:
        return ""
    value = row.get("max_rel")
    return f"{value:.2e}" if isinstance(value, float) else row.get("exact_error", row.get("error", ""))[:80]


def goals(report: dict[str, Any]) -> list[str]:
    """The goals as PASS/FAIL lines (a goal whose measurement is missing is SKIP)."""
    lines = []

    def check(name: str, ok: bool | None, detail: str) -> None:
        lines.append(f"- {'SKIP' if ok is None else 'PASS' if ok else 'FAIL'}: {name} — {detail}")

    goal = next((e for e in report["synthetic"] if abs(e["size_gb"] - GOAL_SIZE) < 0.2), None)
    for target in report["targets"]:
        row = goal.get(target) if goal else None
        naive = goal["naive"] if goal else None
        if not row:
            check(f"2.6 GB ckpt -> {target}", None, "not measured")
            continue
        ok_rss = row["exit"] == 0 and row["peak_mb"] <= 1.5 * 1024
        floor = naive["seconds"] if naive and naive["exit"] == 0 else None
        ok_wall = row["exit"] == 0 and floor is not None and row["seconds"] <= 0.5 * floor
        rel = row.get("max_rel")
        ok_exact = isinstance(rel, float) and rel <= 1e-4
        check(f"2.6 GB ckpt -> {target}: peak RSS <= 1.5 GB", ok_rss, cell(row))
        check(f"2.6 GB ckpt -> {target}: wall <= 0.5x naive floor ({floor} s)", ok_wall if floor else None,
              f"{row['seconds']} s" + (f" = {row['seconds'] / floor:.2f}x; CPU {row['cpu_s']} s = "
                                       f"{row['cpu_s'] / max(naive['cpu_s'], 1e-9):.2f}x" if floor else ""))
        check(f"2.6 GB ckpt -> {target}: exact (max_rel <= 1e-4 vs TF)", ok_exact if row["exit"] == 0 else False,
              exact_cell(row) or "no output")
    z = report["zoo"]
    for label, seconds, gb in (("VGG16 TF1 ckpt -> torch", 6.0, 1.0), ("MobileNetV2 TF1 ckpt -> onnx", 1.5, 0.3)):
        row = z.get(label, {}).get("convert")
        if not row:
            check(f"{label} <= {seconds:g} s and <= {gb:g} GB", None, "not measured")
            continue
        ok = row["exit"] == 0 and row["seconds"] <= seconds and row["peak_mb"] <= gb * 1024
        check(f"{label} <= {seconds:g} s and <= {gb:g} GB", ok, cell(row))
    return lines


def verify_cell(row: dict[str, Any] | None) -> str:
    if not row:
        return "—"
    tree = f", tree {row['tree_peak_mb'] / 1024:.2f} GB" if row.get("tree_peak_mb") else ""
    return cell(row) + tree


def verify_goals(report: dict[str, Any]) -> list[str]:
    """The --verify goals: peak RSS <= 1.3x the checkpoint, wall <= 2x TF's own run."""
    lines = []
    for e in report["verify"]:
        for target in report["verify_targets"]:
            row, tf = e.get(target), e["tf"]
            if not row or row["exit"]:
                lines.append(f"- FAIL: {e['size_gb']} GB -> {target} --verify: {cell(row)}")
                continue
            peak_gb = max(row["peak_mb"], row.get("tree_peak_mb") or 0) * MB / GB
            ok_rss = peak_gb <= 1.3 * e["size_gb"]
            ratio = row["seconds"] / tf["seconds"] if tf["exit"] == 0 else None
            lines.append(f"- {'PASS' if ok_rss else 'FAIL'}: {e['size_gb']} GB -> {target} --verify peak RSS "
                         f"{peak_gb:.2f} GB <= 1.3x ({1.3 * e['size_gb']:.2f} GB)")
            lines.append(f"- {'SKIP' if ratio is None else 'PASS' if ratio <= 2 else 'FAIL'}: {e['size_gb']} GB -> "
                         f"{target} --verify wall {row['seconds']} s <= 2x TF's own run ({tf['seconds']} s)"
                         + (f" = {ratio:.2f}x; CPU {row['cpu_s']} s vs {tf['cpu_s']} s" if ratio else ""))
    return lines


def render(report: dict[str, Any]) -> str:
    z, syn, targets = report["zoo"], report["synthetic"], report["targets"]
    md = [f"# Checkpoint benchmarks{' (' + report['label'] + ')' if report['label'] else ''}", "",
          f"{report['when']}, {report['cores']} cores, git {report['git']}; wall seconds / peak RSS of the whole "
          "process (GB = 2^30 bytes; CPU = user + system seconds, steadier than wall on a shared machine), "
          "no `--verify`; naive floor = bench/naive_floor.py (TF + torch, read all, transpose, torch.save).", "",
          "## (a) wall time and peak RSS per checkpoint", "",
          "| conversion | naive floor | OpenVINO `ovc` | `convert` |", "|---|---|---|---|"]
    rows = [(label, z[label]) for label in ("ResNet50 TF1 ckpt -> torch", "VGG16 TF1 ckpt -> torch",
                                            "VGG16 TF1 ckpt -> onnx") if label in z]
    goal = next((e for e in syn if abs(e["size_gb"] - GOAL_SIZE) < 0.2), None)
    if goal:
        rows.append((f"{goal['case']} -> torch",
                     {"naive": goal["naive"], "ovc": goal["ovc"], "convert": goal.get("torch")}))
    rows += [(label, z[label]) for label in ("MobileNetV2 SavedModel -> onnx", "MobileNetV2 TF1 ckpt -> onnx")
             if label in z]
    for label, r in rows:
        md.append(f"| {label} | {cell(r.get('naive'))} | {cell(r.get('ovc'))} | {cell(r.get('convert'))} |")
    if syn:
        md += ["", f"## (b) peak RSS vs checkpoint size (input {INPUT_SHAPE}; max_rel vs TF in brackets)", "",
               "| checkpoint | largest tensor | naive floor | ovc | "
               + " | ".join(f"convert tf2{t}" for t in targets) + " |",
               "|---|---|---|---|" + "---|" * len(targets)]
        for e in syn:
            cells = [cell(e["naive"])]
            for row in [e["ovc"], *(e.get(t) for t in targets)]:
                cells.append(cell(row) + (f" [{exact_cell(row)}]" if exact_cell(row) else ""))
            md.append(f"| {e['size_gb']} GB | {e['largest_mib']} MiB | " + " | ".join(cells) + " |")
    if report.get("verify"):
        md += ["", f"## (d) `--verify` (input {INPUT_SHAPE}; peak = max RSS of the process and its children, "
               "tree = parent + children sampled together every 0.1 s)", "",
               "| checkpoint | TF's own run | "
               + " | ".join(f"convert tf2{t} --verify" for t in report["verify_targets"]) + " |",
               "|---|---|" + "---|" * len(report["verify_targets"])]
        for e in report["verify"]:
            cells = [verify_cell(e["tf"])] + [verify_cell(e.get(t)) for t in report["verify_targets"]]
            md.append(f"| {e['size_gb']} GB | " + " | ".join(cells) + " |")
        md += ["", *verify_goals(report)]
    if report.get("disk"):
        disk = report["disk"]
        md += ["", f"## (e) at the disk's speed ({disk['size_gb']} GB, fastest of {disk['repeats']} "
               "interleaved runs each; all runs in seconds in brackets)", "",
               "| command | fastest | runs |", "|---|---|---|"]
        for key, row in disk["fastest"].items():
            label = "dd bs=16M conv=fdatasync" if key == "dd" else f"convert tf2{key}"
            md.append(f"| {label} | {cell(row)} | {disk['all'][key]} |")
        md += ["", *disk_goals(report)]
    md += ["", "## (c) goals", "", *goals(report), ""]
    return "\n".join(md)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path(".cache/bench-ckpt"))
    parser.add_argument("--zoo-cache", type=Path, default=Path(".cache/zoo"))
    parser.add_argument("--sizes", default="0.1,0.5,2.6", help="synthetic checkpoint sizes in GB (6 is optional: disk)")
    parser.add_argument("--targets", default="torch,onnx,mxnet")
    parser.add_argument("--skip-zoo", action="store_true")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--skip-ovc", action="store_true")
    parser.add_argument("--skip-exact", action="store_true")
    parser.add_argument("--verify-sizes", default="0.5,2.6", help="synthetic sizes (GB) for the --verify rows")
    parser.add_argument("--verify-targets", default="torch,onnx")
    parser.add_argument("--skip-verify", action="store_true")
    parser.add_argument("--disk-repeats", type=int, default=3,
                        help="rounds of dd vs each conversion of the 2.6 GB checkpoint (0: skip)")
    parser.add_argument("--delete-fixtures", action="store_true", help="remove each synthetic checkpoint after use")
    parser.add_argument("--rss-cap-gb", type=float, default=12.0, help="kill a measured command above this RSS")
    parser.add_argument("--wall-cap", type=float, default=900.0, help="kill a measured command after this many s")
    parser.add_argument("--label", default="", help="suffix of the report files, e.g. before / after")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    targets = [t for t in args.targets.split(",") if t]
    sizes = [float(s) for s in args.sizes.split(",") if s]
    git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    report: dict[str, Any] = {"label": args.label, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "cores": os.cpu_count(), "git": git, "targets": targets, "input_shape": INPUT_SHAPE,
                              "zoo": {}, "synthetic": []}
    work = Path(tempfile.mkdtemp(prefix="bench-ckpt-", dir=args.cache))
    try:
        bench = Bench(args, work)
        if not args.skip_zoo:
            report["zoo"] = zoo(bench)
        if not args.skip_synthetic:
            report["synthetic"] = synthetic(bench, sizes, targets)
        if args.disk_repeats > 0:
            report["disk"] = disk_rows(bench, GOAL_SIZE, targets, args.disk_repeats)
        if not args.skip_verify:
            report["verify_targets"] = [t for t in args.verify_targets.split(",") if t]
            report["verify"] = verify_rows(bench, [float(s) for s in args.verify_sizes.split(",") if s],
                                           report["verify_targets"])
        report["rows"] = bench.rows
    finally:
        shutil.rmtree(work, ignore_errors=True)
    stem = "bench-ckpt-report" + (f"-{args.label}" if args.label else "")
    md = render(report)
    (args.cache / f"{stem}.md").write_text(md)
    (args.cache / f"{stem}.json").write_text(json.dumps(report, indent=1, default=str))
    print(md)
    print(f"written: {args.cache / stem}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
