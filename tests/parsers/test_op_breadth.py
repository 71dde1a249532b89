"""Every elementwise / comparison / logical / cast / reduction sample (tests/support/
op_samples.py, one TF graph) through the parser and every target's real runtime against TF: each
sample is exact (max relative error <= 1e-5, integer and bool results equal) or refused by the target with
a hint. The targets that must take every sample: torch, ONNX, MXNet."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support import op_breadth, op_samples
from tf_convert import emitters
from tf_convert.app import verify
from tf_convert.convert.ir.ops import DATA_DEPENDENT, OPS
from tf_convert.emitters.base import EmitOptions

tf = pytest.importorskip("tensorflow")

MUST_TAKE_ALL = ("torch", "onnx", "mxnet")
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def parsed(tmp_path_factory):
    pb, feeds, values = op_samples.build_graph(tmp_path_factory.mktemp("op_samples"))
    return op_breadth.parse_samples(pb), feeds, values


# sample -> what the parser's refusal says: resizes with no exact form in any target (naming what to use
# instead), and ops whose output size depends on runtime values
REFUSED_BY_THE_PARSER = {"ResizeBicubic": "antialias=False", "ResizeArea": "antialias=False",
                         "ScaleAndTranslate": "antialias=False"}


def test_the_parser_takes_every_sample_but_the_inexact_resizes(parsed):
    refused = parsed[0].refused
    assert set(refused) == set(REFUSED_BY_THE_PARSER)
    assert all(REFUSED_BY_THE_PARSER[case] in hint for case, hint in refused.items())


@pytest.mark.parametrize("target", emitters.TARGETS)
def test_each_sample_exact_or_refused(parsed, target, tmp_path):
    result, feeds, values = parsed
    graph = result.graph
    taken, refused = op_breadth.target_split(graph, target)
    if target in MUST_TAKE_ALL:  # all but an output whose length depends on the data, where MXNet says so, and
        # an op the catalog declares the target lacks (ONNX has no matrix inverse)
        assert {c: h for c, h in refused.items()
                if h.split(":")[0] not in DATA_DEPENDENT and "depends on the data" not in h
                and target not in getattr(OPS.get(h.split(":")[0]), "refused", {})} == {}, refused
    assert all(hint for hint in refused.values())
    sub = op_breadth.trimmed(graph, taken)
    emitter = emitters.get(target)
    emitter.emit(sub, tmp_path, EmitOptions())
    actual = emitter.run(tmp_path, op_breadth.ir_feeds(sub, feeds))
    errors = {}
    for out, got in zip(sub.outputs, actual):
        case = op_breadth.case_of(sub, out)
        want = op_breadth.ir_expected(sub, out, values[case])
        got = np.asarray(got)
        if want.dtype.kind in "biu":  # integers and masks: equal, in the TF dtype's values
            errors[case] = float(np.any(got.astype(np.float64) != want.astype(np.float64)))
        else:
            errors[case] = verify.metrics(got, want)["max_rel"]
    bad = {c: e for c, e in errors.items() if not e <= TOLERANCE}
    assert not bad, bad


# ---- integer and bool tensors end to end, through the CLI ------------------------------------------------

@pytest.fixture(scope="module")
def token_model(tmp_path_factory):
    """Token ids (int32) and a mask (bool) in; a float score, an int64 count and a bool mask out."""
    graph = tf.Graph()
    with graph.as_default():
        ids = tf.compat.v1.placeholder(tf.int32, [2, 7], name="ids")
        mask = tf.compat.v1.placeholder(tf.bool, [2, 7], name="mask")
        scaled = tf.cast(ids, tf.float32) * 0.5 - 1.0
        tf.identity(tf.reduce_sum(tf.where(mask, tf.nn.softplus(scaled), 0.0), axis=1), name="score")
        tf.identity(tf.reduce_sum(tf.cast(mask, tf.int64), axis=1), name="count")
        tf.identity(tf.logical_and(mask, ids > 0), name="keep")  # ids nothing bounds: fed 0/1
    pb = tmp_path_factory.mktemp("tokens") / "tokens.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    return pb


@pytest.mark.parametrize("target", MUST_TAKE_ALL)
def test_integer_and_bool_inputs_verify_and_record_their_dtypes(token_model, target, tmp_path):
    import json

    from tests.app.test_cli import run_cli

    out = tmp_path / "out"
    code, _, stderr = run_cli(f"tf2{target}", str(token_model), "--outputs", "score:0,count:0,keep:0",
                              "--verify", "-o", str(out))
    assert code == 0, stderr
    doc = json.loads((out / "conversion.json").read_text())
    assert [(r["source_name"], r["dtype"]) for r in doc["inputs"]] == [("ids:0", "int32"), ("mask:0", "bool")]
    assert [r["dtype"] for r in doc["outputs"]] == ["float32", "int64", "bool"]
    assert doc["verify"]["passed"] and doc["verify"]["max_rel"] <= 1e-6


def test_caffe_refuses_integer_tensors_with_the_reason(token_model, tmp_path):
    from tests.app.test_cli import _check_error

    _check_error(["tf2caffe", token_model, "--outputs", "score:0"], 3, ["float32", "int32"], tmp_path / "out")


# ---- docs/ops.md's op x target table is the code's --------------------------------------------------------

def test_readme_op_table_matches_the_code():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "op_table.py"
    spec = importlib.util.spec_from_file_location("op_table", path)
    op_table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(op_table)
    text = op_table.PAGE.read_text()
    assert op_table.BEGIN in text, "docs/ops.md has no op table: run python scripts/op_table.py"
    expected = op_table.replace_section(text, op_table.render(op_table.cells()))
    assert expected == text, "docs/ops.md's op table differs from the code: run python scripts/op_table.py"
