"""Corrupt `.tflite` files: mutants of four small TFLiteConverter files (tests/support/tflite_mutants.py),
each converted in process through the CLI's own entry (click's runner: the same code path, without a
process per mutant) to torch and ONNX.

Each must end with exit 2 or 3 (one error line, nothing left behind) or exit 0 with a model that runs: the
torch `model.py` imports and runs, the ONNX file loads and runs in onnxruntime, at the shapes
`conversion.json` states, giving outputs of the shapes and dtypes it states. Never exit 1, never a hang
(--timeout: 124), never a memory blow-up. A fixed-seed sample runs in the default suite; `make fuzz-tflite`
runs them all and prints the counts by exit code (CONVERT_FUZZ_TFLITE_FULL=1); there each mutant that
converts is converted again with --verify: equal to what TFLite's interpreter computes for it, or refused
by that interpreter.
"""

from __future__ import annotations

import collections
import json
import os
import resource
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.support.tflite_mutants import BASES, KINDS, bases, edited, mutant
from tf_convert import cli, emitters, parsers
from tf_convert.convert.errors import InputError
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tflite import run_reference

FULL = bool(os.environ.get("CONVERT_FUZZ_TFLITE_FULL"))
PER_BASE = 140 if FULL else 0  # mutants per base in the full run (the first len(KINDS) take each kind once)
SAMPLE = (0, 1, 3, 8, 9, 13, 19, 23, 25, 27)  # run by default, per base (the kinds KINDS lists at these places)
TIMEOUT_S = 60  # --timeout: a conversion that hangs ends in exit 124, which fails the mutant
MAX_GROWTH_MB = 1500  # peak RSS may grow this much over one mutant
MAX_RUN_ELEMENTS = 1 << 24  # inputs of more elements (a corrupt size): the model is loaded, not run
TARGETS = ("tf2torch", "tf2onnx")
COUNTS: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)


@pytest.fixture(scope="session")
def base_files(tmp_path_factory) -> dict[str, Path]:
    return bases(tmp_path_factory.mktemp("tflite_fuzz_bases"))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _run_converted(target: str, out: Path) -> None:
    """The written model runs in its runtime at the shapes conversion.json states and gives outputs of the
    shapes and dtypes it states (one whose inputs a corrupt size made too large to feed is only loaded)."""
    doc = json.loads((out / "conversion.json").read_text())
    runtime = emitters.get(target.removeprefix("tf2"))
    if sum(int(np.prod(i["shape"])) for i in doc["inputs"]) > MAX_RUN_ELEMENTS:
        runtime.run_sets(out, [])
        return
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(i["shape"]).astype(i["dtype"]) if i["dtype"].startswith("float")
              else np.ones(i["shape"], i["dtype"]) for i in doc["inputs"]]
    outputs = [np.asarray(y) for y in runtime.run(out, inputs)]
    assert [(y.shape, y.dtype.name) for y in outputs] == [(tuple(o["shape"]), o["dtype"]) for o in doc["outputs"]]


def _verified(target: str, src: Path, out: Path, label: str) -> None:
    """A mutant that converts is equal to what TFLite's interpreter computes for that very file, or the
    interpreter refuses the file (exit 2 naming it); never silently another model."""
    result = CliRunner().invoke(cli.main, [target, str(src), "-o", str(out), "--verify", "--timeout", str(TIMEOUT_S)])
    COUNTS[f"{target} --verify"][result.exit_code] += 1
    refused = result.exit_code == 2 and "TFLite's interpreter cannot run this file" in result.stderr
    assert result.exit_code == 0 or refused, f"{label} --verify: exit {result.exit_code}: {result.stderr}"


def check_mutant(base: Path, index: int, target: str, tmp_path: Path) -> int:
    src, what = mutant(base, index, tmp_path / "src")
    out = tmp_path / "out" / "model"
    label = f"{target} {base.stem}#{index} ({what})"
    before = _peak_mb()
    result = CliRunner().invoke(cli.main, [target, str(src), "-o", str(out), "--timeout", str(TIMEOUT_S)])
    assert _peak_mb() - before < MAX_GROWTH_MB, f"{label}: peak RSS grew {_peak_mb() - before:.0f} MB"
    stderr = result.stderr
    COUNTS[target][result.exit_code] += 1
    if os.environ.get("CONVERT_FUZZ_REPORT"):  # one JSON line per mutant, for the counts in the closing note
        with open(os.environ["CONVERT_FUZZ_REPORT"], "a") as log:
            log.write(json.dumps({"base": base.stem, "index": index, "target": target, "what": what,
                                  "exit": result.exit_code, "error": stderr.strip()[:300]}) + "\n")
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), (
        f"{label}: {result.exception!r}")
    left = sorted(p.name for p in out.parent.iterdir()) if out.parent.exists() else []
    if result.exit_code == 0:
        assert left == ["model"], f"{label}: {left}"
        _run_converted(target, out)
        if FULL:
            _verified(target, src, tmp_path / "verified", label)
    else:
        lines = [line for line in stderr.splitlines() if line.strip()]
        assert result.exit_code in (2, 3), f"{label}: exit {result.exit_code}: {stderr}"
        assert len(lines) == 1 and lines[0].startswith("convert: error:"), f"{label}: {stderr}"
        assert left == [], f"{label}: left {left}"
    return result.exit_code


# the sample, one target per mutant (none in the full run, which holds them all)
CASES = [] if FULL else [(b, i, TARGETS[(i + k) % 2]) for k, b in enumerate(BASES) for i in SAMPLE]


@pytest.mark.parametrize("base,index,target", CASES, ids=[f"{b}-{i}-{t}" for b, i, t in CASES])
def test_mutant(base_files, base, index, target, tmp_path):
    check_mutant(base_files[base], index, target, tmp_path)


FULL_CASES = [(b, i) for b in BASES for i in range(PER_BASE)]


@pytest.mark.slow
@pytest.mark.skipif(not FULL, reason="the full .tflite fuzz: make fuzz-tflite (CONVERT_FUZZ_TFLITE_FULL=1)")
@pytest.mark.parametrize("base,index", FULL_CASES, ids=[f"{b}-{i}" for b, i in FULL_CASES])
@pytest.mark.parametrize("target", TARGETS)
def test_mutant_full(base_files, base, index, target, tmp_path):
    check_mutant(base_files[base], index, target, tmp_path)


# ---- the checks one by one, on the conv base (ops: 0 dilated CONV_2D, 1 CONV_2D, 2 DEPTHWISE_CONV_2D,
# 3 MAX_POOL_2D; tensor 0 the input, 9 the output, 3 a bias that ops 1 and 2 share) --------------------

def _set(path: str, value):
    """An edit setting the attribute at `path` ("subgraphs.0.operators.1.builtinOptions.strideH") of a ModelT."""
    def edit(model):
        *parents, last = path.split(".")
        obj = model
        for part in parents:
            obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
        if last.isdigit():
            obj[int(last)] = value
        else:
            setattr(obj, last, value)
    return edit


def _empty(model):
    g = model.subgraphs[0]
    g.tensors, g.operators, g.inputs, g.outputs = [], [], [], []


def _two_writers(model):
    g = model.subgraphs[0]
    g.operators[1].outputs = list(g.operators[0].outputs)


def _deleted(k: int):
    def edit(model):
        del model.subgraphs[0].operators[k]
    return edit


def _no_options(model):
    op = model.subgraphs[0].operators[2]
    op.builtinOptionsType, op.builtinOptions = 0, None


def _swapped_options(model):
    """A conv given the depthwise conv's options (with every accessor a conv reads): TFLite ignores them."""
    conv, depthwise = model.subgraphs[0].operators[0], model.subgraphs[0].operators[2]
    conv.builtinOptionsType, conv.builtinOptions = depthwise.builtinOptionsType, depthwise.builtinOptions


def _signature(model):
    from tensorflow.lite.python import schema_py_generated as schema

    sig = schema.SignatureDefT()
    sig.signatureKey, sig.subgraphIndex, sig.inputs, sig.outputs = "main", 3, [], []
    model.signatureDefs = [sig]


def _while_body(model):
    from tensorflow.lite.python import schema_py_generated as schema

    op = model.subgraphs[0].operators[3]
    op.builtinOptionsType, op.builtinOptions = schema.BuiltinOptions.WhileOptions, schema.WhileOptionsT()
    op.builtinOptions.condSubgraphIndex, op.builtinOptions.bodySubgraphIndex = 0, 7


def _short_constant(model):
    t = model.subgraphs[0].tensors[4]
    model.buffers[t.buffer].data = model.buffers[t.buffer].data[:-4]


OP = "subgraphs.0.operators"
BAD = [  # (what, edit, the message names)
    ("zero dilation", _set(f"{OP}.0.builtinOptions.dilationWFactor", 0), r"operator 0 CONV_2D .*dilation_w_factor 0"),
    ("zero stride", _set(f"{OP}.3.builtinOptions.strideH", 0), r"operator 3 MAX_POOL_2D .*stride_h 0"),
    ("zero filter", _set(f"{OP}.3.builtinOptions.filterWidth", 0), r"filter_width 0: it must be 1 or more"),
    ("negative stride", _set(f"{OP}.1.builtinOptions.strideW", -2), r"operator 1 CONV_2D .*stride_w -2"),
    ("unknown padding", _set(f"{OP}.0.builtinOptions.padding", 5), r"padding 5, which TFLite's schema does not name"),
    ("unknown activation", _set(f"{OP}.2.builtinOptions.fusedActivationFunction", 9), r"fused_activation_function 9"),
    ("cycle", _set(f"{OP}.0.inputs.0", 9), r"operators 0 CONV_2D .* in a cycle"),
    ("no outputs", _set("subgraphs.0.outputs", []), r"subgraph 0 has no outputs"),
    ("empty subgraph", _empty, r"subgraph 0 has no outputs"),
    ("no subgraph", _set("subgraphs", []), r"holds no subgraph"),
    ("operator input out of range", _set(f"{OP}.1.inputs.1", 10), r"operator 1 CONV_2D .*names tensor 10, the subgraph "
                                                                 r"has 10"),
    ("operator output out of range", _set(f"{OP}.3.outputs.0", -4), r"operator 3 MAX_POOL_2D .*names tensor -4"),
    ("required input left out", _set(f"{OP}.1.inputs.0", -1), r"operator 1 CONV_2D .*leaves out input 0"),
    ("bias left out", _set(f"{OP}.1.inputs.2", -1), r"operator 1 CONV_2D .*leaves out input 2"),
    ("output out of range", _set("subgraphs.0.outputs", [99]), r"its outputs name tensor 99"),
    ("input out of range", _set("subgraphs.0.inputs", [-1]), r"its inputs name tensor -1"),
    ("buffer out of range", _set("subgraphs.0.tensors.4.buffer", 400), r"tensor 'Conv2D': names buffer 400"),
    ("opcode out of range", _set(f"{OP}.2.opcodeIndex", 50), r"operator 2 names opcode 50, the file has 3"),
    ("negative size", _set("subgraphs.0.tensors.7.shape", [1, -9, 9, 5]), r"tensor 7 'Conv2D_11' has shape "
                                                                          r"\(1, -9, 9, 5\)"),
    ("unknown type", _set("subgraphs.0.tensors.8.type", 77), r"tensor 8 .* type 77"),
    ("operator deleted", _deleted(1), r"reads tensor 7 'Conv2D_11', which no operator, input or constant produces"),
    ("output never computed", _deleted(3), r"output tensor 9 'Identity' is computed by no operator"),
    ("two writers", _two_writers, r"operator 1 CONV_2D .*writes tensor 6 .* which operator 0 CONV_2D"),
    ("options deleted", _no_options, r"operator 2 DEPTHWISE_CONV_2D .*builtin options \(none\) have no"),
    ("subgraph index in options", _while_body, r"operator 3 MAX_POOL_2D .*body_subgraph_index 7, the file has 1"),
    ("options of another type", _swapped_options, r"operator 0 CONV_2D .*holds DepthwiseConv2DOptions, not its "
                                                  r"own Conv2DOptions"),
    ("signature subgraph", _signature, r"signature 'main' names subgraph 3, the file has 1"),
    ("constant too short", _short_constant, r"tensor 'Conv2D': buffer \d+ holds 107 values for a tensor of shape"),
]


@pytest.mark.parametrize("what,edit,message", BAD, ids=[b[0] for b in BAD])
def test_each_violation_is_one_line_naming_it(base_files, tmp_path, what, edit, message):
    path = edited(base_files["conv"], tmp_path, edit)
    with pytest.raises(InputError, match=message):
        parsers.parse(path, ParseOptions())


def _reversed(model):
    model.subgraphs[0].operators.reverse()


def test_operators_out_of_file_order_convert_exactly(base_files, tmp_path):
    """The schema asks for topologically sorted operators; a file that is not still has an order that runs."""
    path = edited(base_files["conv"], tmp_path / "src", _reversed)
    result = CliRunner().invoke(cli.main, ["tf2onnx", str(path), "-o", str(tmp_path / "out"), "--verify"])
    assert result.exit_code == 0, result.stderr
    assert json.loads((tmp_path / "out" / "conversion.json").read_text())["verify"]["passed"]


def test_a_file_the_interpreter_refuses_is_exit_2(base_files, tmp_path):
    """An operator version TFLite's interpreter has no kernel for: the conversion reads it, --verify's reference
    cannot run it: exit 2 naming the interpreter, nothing written."""
    path = edited(base_files["dense"], tmp_path / "src", _set("operatorCodes.0.version", 99))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli.main, ["tf2torch", str(path), "-o", str(out), "--verify"])
    assert result.exit_code == 2, result.stderr
    assert "TFLite's interpreter cannot run this file" in result.stderr
    assert not out.exists()
    with pytest.raises(InputError, match="TFLite's interpreter cannot run this file"):
        run_reference(path, parsers.parse(path, ParseOptions()), [np.zeros((2, 12), np.float32)])


def test_every_kind_is_sampled():
    """The default sample covers byte-level and structured mutations alike."""
    kinds = {KINDS[i] for i in SAMPLE}
    assert {"bitflip", "truncate", "cycle", "reorder", "zero_window"} <= kinds, kinds


def counts() -> str:
    """The mutants run so far, by target and exit code."""
    return "; ".join(f"{t}: " + ", ".join(f"exit {c}: {n}" for c, n in sorted(counted.items()))
                     for t, counted in COUNTS.items() if counted)


@pytest.fixture(scope="session", autouse=True)
def _print_counts(request):
    """The counts by exit code, printed past pytest's capture once the session's mutants have run."""
    yield
    if COUNTS:
        capture = request.config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled():
            print(f"\n.tflite fuzz, mutants by exit code: {counts()}")
