"""The op tail, in the style of TF's own op tests: each op with its parameters as constants and as placeholders
fed at run time (rank 0, empty, odd sizes), all in one TF graph, through the parser and every target's real
runtime against TF. Each case is exact on a target (equal, or within the tolerance its arithmetic honestly
has: float32 linear algebra) or refused by it with a reason; never wrong. Ops the IR cannot hold are refused by
the parser, by name, with the reason (exit 3)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

from tests.support import op_breadth
from tests.support.op_tail_cases import cases
from tf_convert import emitters, parsers
from tf_convert.app import verify
from tf_convert.convert import passes
from tf_convert.convert.errors import UnsupportedError
from tf_convert.emitters.base import EmitOptions
from tf_convert.parsers.base import ParseOptions

tf = pytest.importorskip("tensorflow")

# case prefix -> max relative error: saturation (TF adds its hue offsets in double: one unit in the last place
# of the hue), sums in another order, and float32 linear algebra (LU with partial
# pivoting in TF's Eigen and in LAPACK / the target's kernel: the same algorithm, other rounding orders, so
# about n * eps * cond(A); the cases' matrices are well conditioned)
TOLERANCE = {"saturation": 1e-5, "unsorted_sum": 1e-6, "unsorted_prod": 1e-6, "sparse_segment": 1e-6,
             "det": 1e-5, "inverse": 1e-5}
# case prefix -> what a target's refusal says (every other case must be taken by every target named here)
REFUSES: dict[str, dict[str, str]] = {
    "torch": {},
    "onnx": {"inverse": "ONNX has no matrix inverse operator"},
    "mxnet": {"dtype_": "MXNet models here"},
}
COUNTS: dict[str, dict[str, list[str]]] = {}  # target -> exact / refused / wrong -> cases

def _build(directory) -> tuple[Any, dict[str, np.ndarray], dict[str, np.ndarray], list[str]]:
    """All cases in one frozen graph: placeholder <case>__<name>, output out_<case>."""
    graph = tf.Graph()
    feeds, fetches = {}, {}
    with graph.as_default():
        for case, (values, fn) in cases().items():
            held = {}
            for name, value in values.items():
                if name.startswith("const_"):
                    held[name] = tf.constant(value)
                    continue
                held[name] = tf.compat.v1.placeholder(tf.as_dtype(value.dtype), value.shape, name=f"{case}__{name}")
                feeds[f"{case}__{name}"] = value
            fetches[case] = tf.identity(fn(held), name=f"out_{case}")
        with tf.compat.v1.Session() as sess:
            expected = sess.run(fetches, {f"{n}:0": v for n, v in feeds.items()})
    pb = directory / "op_tail.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    return pb, feeds, expected, list(fetches)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    work = tmp_path_factory.mktemp("op_tail")
    pb, feeds, expected, names = _build(work)
    graph = parsers.parse(pb, ParseOptions(inputs=[f"{n}:0" for n in feeds], outputs=[f"out_{c}:0" for c in names]))
    return passes.run_default_passes(graph), feeds, expected, work


def _refusal(target: str, case: str) -> str | None:
    return next((hint for prefix, hint in REFUSES.get(target, {}).items() if case.startswith(prefix)), None)


@pytest.mark.parametrize("target", emitters.TARGETS)
def test_each_case_exact_or_refused(converted, target):
    graph, feeds, expected, work = converted
    taken, refused = op_breadth.target_split(graph, target)
    assert all(refused.values()), refused
    if target in REFUSES:
        assert {c: h for c, h in refused.items() if (_refusal(target, c) or "\0") not in h} == {}, refused
    if not taken:
        COUNTS[target] = {"exact": [], "refused": sorted(refused), "wrong": []}
        return
    sub = op_breadth.trimmed(graph, taken)
    emitter = emitters.get(target)
    out = work / target
    out.mkdir()
    emitter.emit(sub, out, EmitOptions())
    actual = emitter.run(out, op_breadth.ir_feeds(sub, feeds))
    wrong = {}
    for name, got in zip(sub.outputs, actual):
        case = op_breadth.case_of(sub, name)
        want = op_breadth.ir_expected(sub, name, np.asarray(expected[case]))
        got = np.asarray(got)
        if target == "mxnet" and got.shape == (1,) and want.shape == ():  # MXNet 1.x returns a 0-d result as (1,)
            got = got.reshape(())
        tolerance = next((t for prefix, t in TOLERANCE.items() if case.startswith(prefix)), None)
        same = got.shape == want.shape and want.size
        error = verify.metrics(got, want)["max_abs" if tolerance is None else "max_rel"] if same else 0.0
        if got.shape != want.shape or got.dtype != want.dtype or error > (tolerance or 0.0):
            wrong[case] = (got.shape, want.shape, got.dtype, want.dtype, error)
    COUNTS[target] = {"exact": sorted({op_breadth.case_of(sub, o) for o in sub.outputs} - set(wrong)),
                      "refused": sorted(refused), "wrong": sorted(wrong)}
    assert not wrong, wrong


# ---- refused by the parser, by name, with the reason (exit 3) ---------------------------------------------

def _refused_cases() -> dict[str, tuple[Callable[[], Any], str]]:
    def p(dtype, shape, name):
        return tf.compat.v1.placeholder(dtype, shape, name=name)

    def table(keys):
        # string values (numeric constant tables convert: tests/parsers/test_data_lengths.py)
        init = tf.lookup.KeyValueTensorInitializer(tf.constant([3, 5], tf.int64), tf.constant(["a", "b"]))
        return tf.strings.length(tf.lookup.StaticHashTable(init, "").lookup(keys))

    return {
        # float64, float16 and int16 compute (tests/parsers/test_wide_dtypes.py); the unsigned wide ones do not
        "uint16_arithmetic": (lambda: tf.square(p(tf.uint16, [3], "x")), "of a uint16 tensor ('x')"),
        "uint32_reduction": (lambda: tf.reduce_sum(p(tf.uint32, [3], "x")), "of a uint32 tensor ('x')"),
        "bfloat16_input": (lambda: tf.identity(p(tf.bfloat16, [3], "x")), "dtype bfloat16"),
        "diag_part_run_time_k": (lambda: tf.linalg.diag_part(p(tf.float32, [3, 3], "x"), k=p(tf.int32, [], "k")),
                                 "run-time value of its input 'k:0'"),
        "sparse_segment_run_time_count": (lambda: tf.sparse.segment_sum(
            p(tf.float32, [3, 2], "x"), p(tf.int32, [2], "i"), p(tf.int32, [2], "s")), "run-time value"),
        "string": (lambda: tf.strings.length(tf.strings.lower(p(tf.string, [2], "x"))), "no target holds string"),
        "set": (lambda: tf.sets.size(tf.sets.intersection(p(tf.int32, [2, 3], "a"), p(tf.int32, [2, 3], "b"))),
                "a set operation"),
        "hash_table": (lambda: table(p(tf.int64, [4], "keys")), "a hash table"),
        "qdq_v3_run_time_bits": (lambda: tf.raw_ops.QuantizeAndDequantizeV3(
            input=p(tf.float32, [4], "x"), input_min=-1.0, input_max=1.0, num_bits=p(tf.int32, [], "bits")),
            "'bits:0' is computed at run time"),
    }


@pytest.mark.parametrize("case", list(_refused_cases()))
def test_refused_by_name(case, tmp_path):
    build, says = _refused_cases()[case]
    graph = tf.Graph()
    with graph.as_default():
        tf.identity(build(), name="y")
    pb = tmp_path / f"{case}.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    inputs = [f"{op.name}:0" for op in graph.get_operations() if op.type == "Placeholder"]
    with pytest.raises(UnsupportedError) as caught:
        parsers.parse(pb, ParseOptions(inputs=inputs, outputs=["y:0"]))
    assert says in str(caught.value), str(caught.value)


def teardown_module(module) -> None:
    """The figures for the issue note: cases exact / refused / wrong per target."""
    for target, split in COUNTS.items():
        print(f"\n{target}: " + ", ".join(f"{k} {len(v)}" for k, v in split.items())
              + "".join(f"\n  refused {c}" for c in split["refused"]))
