"""The generated Keras layer suite (keras_layer_suite) through the CLI to every target runtime.

Each layer of the suite, saved in each form (Keras 3 `.keras` and legacy `.h5`, tf_keras `.h5` and
SavedModel), goes through `convert tf2<target> --verify --json` for torch, ONNX, MXNet (.venv-mxnet) and
Caffe (OpenCV DNN). Each cell is then judged twice: by the tool's own `--verify` (Keras/TF against the
target on its random input) and by running the written model on the suite's own input against the outputs
Keras gave when it saved the file. A cell is

- exact: exit 0 and both comparisons within the suite's tolerance (its max relative error is kept);
- refused: exit 3 (its one-line reason is kept);
- a failure: exit 1, exit 2 (Keras wrote and loads the file), exit 4 (`--verify` found the numbers off:
  without --verify the user would have had them), or exit 0 with numbers off from Keras's (silently wrong).

`python -m tests.support.keras_suite_targets [--all] [--forms F,..] [--targets T,..] [--layers L,..]
[--json PATH]`
prints the form x target table and every refusal reason; exit 1 when any cell is a failure.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.support import keras_layer_suite as suite

TARGETS = ("torch", "onnx", "mxnet", "caffe")
BATCH = 2  # batch 1 leaves a (1, 1) output as one number, which --verify's metric cannot judge


@dataclass
class Cell:
    verdict: str  # "exact", "refused", "wrong" (exit 0, numbers off), "error N", "unloadable" (Keras cannot
    # load the file it wrote: exit 2 is the truth there)
    detail: str = ""  # the reason line (refused, error) or the comparison
    max_rel: float | None = None  # exact/wrong: the worse of --verify's and the suite's own comparison

    @property
    def failed(self) -> bool:
        return self.verdict not in ("exact", "refused", "unloadable")


def _perm(source: str | None, target: str | None) -> tuple[int, ...] | None:
    """The transpose taking an array in `source` layout (e.g. NHWC) to `target` (NCHW); None: same."""
    if not source or not target or source == target or sorted(source) != sorted(target):
        return None
    return tuple(source.index(axis) for axis in target)


def _source_index(name: str, count: int) -> int | None:
    """Which suite input (`in0`, `in1`, ...) a converted input's source name is."""
    bare = name.split(":")[0].split("/")[-1]
    for i in range(count):
        if bare == f"in{i}" or bare.endswith(f"_in{i}"):
            return i
    return None


def _own_comparison(target: str, out: Path, doc: dict, feeds: list[np.ndarray], refs: list[np.ndarray]) -> float:
    """The written model run on the suite's input against Keras's outputs: the worst max_rel."""
    from tf_convert import emitters
    from tf_convert.app import verify

    ins = []
    for k, spec in enumerate(doc["inputs"]):
        i = _source_index(spec.get("source_name", spec["name"]), len(feeds))
        x = feeds[k if i is None else i]
        perm = _perm(spec.get("source_layout"), spec.get("layout"))
        x = x.transpose(perm) if perm and x.ndim == len(perm) else x
        ins.append(x.astype(spec.get("dtype", str(x.dtype))))
    actual = emitters.get(target).run(out, ins)
    if len(actual) != len(refs):
        raise AssertionError(f"{len(actual)} outputs, Keras has {len(refs)}")
    worst = 0.0
    for spec, a, ref in zip(doc["outputs"], actual, refs):
        a = np.asarray(a)
        perm = _perm(spec.get("layout"), spec.get("source_layout"))
        a = a.transpose(perm) if perm and a.ndim == len(perm) else a
        if a.shape != ref.shape:
            raise AssertionError(f"shape {a.shape} != Keras's {ref.shape}")
        worst = max(worst, verify.metrics(a.astype(np.float64), ref.astype(np.float64))["max_rel"])
    return worst


def _keras_loads(path: Path) -> bool:
    """Whether the library that wrote `path` loads it back (tf_keras for `_tfk.h5` and SavedModels)."""
    import importlib

    library = "tf_keras" if path.name.endswith(("_tfk.h5", "_sm")) else "keras"
    try:
        importlib.import_module(library).models.load_model(str(path), compile=False)
    except Exception:  # noqa: BLE001 - any failure to load is the answer
        return False
    return True


def through(target: str, path: Path, c: suite.Case, refs: list[np.ndarray], seed: int, work: Path) -> Cell:
    """`path` (a saved suite layer) through `convert tf2<target> --verify`, judged as the module says."""
    from tests.support.verify_faults import run_cli

    shapes = [arg for i, s in enumerate(c.inputs) for arg in ("--input-shape", f"in{i}:{BATCH}," +
                                                              ",".join(map(str, s)))]
    out = work / f"{path.name}-{target}"
    code, stdout, stderr = run_cli(f"tf2{target}", path, "-o", out, "--verify", "--json", "--force", *shapes)
    try:
        doc = json.loads(stdout)
    except ValueError:
        doc = {}
    if code != 0:
        line = doc.get("error") or next((ln for ln in stderr.splitlines() if "error" in ln), stderr.strip()[-300:])
        line = line.removeprefix("convert: error: ")
        if code == 2 and not _keras_loads(path):  # Keras cannot read back what it wrote: no file Keras loads
            return Cell("unloadable", line[:300])
        return Cell("refused" if code == 3 else "wrong" if code == 4 else f"error {code}", line[:300])
    verified = float(doc["verify"]["max_rel"])
    try:
        own = _own_comparison(target, out, doc, suite.feeds(c, seed, BATCH), refs)
    except Exception as err:  # noqa: BLE001 - the written model does not run on Keras's input: a finding
        return Cell("wrong", f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:300], verified)
    worst = max(verified, own)
    detail = f"--verify {verified:.1e}, own {own:.1e}"
    return Cell("exact" if worst <= suite.RTOL else "wrong", detail, worst)


def sweep(names: list[str], forms: tuple[str, ...] = suite.FORMS, targets: tuple[str, ...] = TARGETS,
          work: Path | None = None, echo=None) -> dict[tuple[str, str, str], Cell]:
    """(layer, form, target) -> Cell for every layer in `names`."""
    cells: dict[tuple[str, str, str], Cell] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = work or Path(tmp)
        for name in names:
            seed = [x.name for x in suite.CASES].index(name)
            c = suite.case(name)
            for form in forms:
                where = root / form
                where.mkdir(parents=True, exist_ok=True)
                try:
                    path, refs = suite.save(c, form, where, seed, BATCH)
                except Exception as err:  # noqa: BLE001 - the library cannot save it: not the converter's
                    for target in targets:
                        cells[name, form, target] = Cell("unsaveable", f"{type(err).__name__}: {err}"[:200])
                    continue
                for target in targets:
                    cells[name, form, target] = cell = through(target, path, c, refs, seed, where)
                    if echo:
                        echo(f"{name:24} {form:22} {target:6} {cell.verdict:9} {cell.detail}")
    return cells


def table(cells: dict[tuple[str, str, str], Cell]) -> str:
    """Rows = form, columns = target; each cell `exact/refused/failed (max_rel)`, then the refusal reasons
    grouped and every failure."""
    forms = list(dict.fromkeys(f for _, f, _ in cells))
    targets = list(dict.fromkeys(t for _, _, t in cells))
    lines = ["| form | " + " | ".join(targets) + " |", "|---|" + "---|" * len(targets)]
    for form in forms:
        row = []
        for target in targets:
            here = [c for (_, f, t), c in cells.items() if f == form and t == target]
            exact = [c for c in here if c.verdict == "exact"]
            worst = max((c.max_rel for c in exact if c.max_rel is not None), default=0.0)
            unloadable = sum(c.verdict == "unloadable" for c in here)
            row.append(f"{len(exact)}/{sum(c.verdict == 'refused' for c in here)}/{sum(c.failed for c in here)}"
                       f" ({worst:.1e})" + (f" +{unloadable} unloadable" if unloadable else ""))
        lines.append(f"| {form} | " + " | ".join(row) + " |")
    lines.append("cells: exact/refused/failed (max relative error of the exact ones); unloadable: Keras cannot "
                 "load the file it wrote")
    reasons: dict[str, list[str]] = defaultdict(list)
    for (name, form, target), c in cells.items():
        if c.verdict in ("refused", "unloadable"):  # grouped without node names and counts, which differ per form
            why = re.sub(r" \(nodes? '[^)]*\)?|^\d+ unsupported node\(s\) for \w+: ", "", c.detail)
            reasons[f"{c.verdict}: {target}: {why[:110]}"].append(f"{name}/{form}")
    if reasons:
        lines.append("refusals:")
        lines += [f"- {why}\n    {', '.join(where)}" for why, where in sorted(reasons.items())]
    failures = [f"- {name}/{form}/{target}: {c.verdict}: {c.detail}" for (name, form, target), c in cells.items()
                if c.failed]
    if failures:
        lines.append("failures:")
        lines += failures
    return "\n".join(lines)


def _arg(argv: list[str], flag: str, default):
    return tuple(argv[argv.index(flag) + 1].split(",")) if flag in argv else default


def main(argv: list[str]) -> int:
    names = list(_arg(argv, "--layers", tuple(c.name for c in suite.CASES) if "--all" in argv else suite.DEFAULT))
    start = time.monotonic()
    cells = sweep(names, _arg(argv, "--forms", suite.FORMS), _arg(argv, "--targets", TARGETS),
                  echo=lambda line: print(line, flush=True))
    print(table(cells))
    if "--json" in argv:
        Path(argv[argv.index("--json") + 1]).write_text(json.dumps(
            [{"layer": n, "form": f, "target": t, **vars(c)} for (n, f, t), c in cells.items()], indent=1))
    print(f"{len(cells)} cells in {time.monotonic() - start:.0f} s")
    return 1 if any(c.failed for c in cells.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
