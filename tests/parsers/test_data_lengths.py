"""Outputs whose length the data decides (convert.ir.runtime_dims): Unique / UniqueV2 / UniqueWithCounts(V2) in
TF's first-occurrence order, Bincount / DenseBincount with as many bins as the data says (tf.math.bincount's
max + 1, minlength / maxlength, weights, binary_output), RaggedRange's values and row splits, CTCGreedyDecoder's
SparseTensor and log probability. All cases in one TF graph, parsed once; PyTorch and ONNX run each at two data
values (empty tensors and rank 0 among them; int32, int64 and float32 data; int32 and int64 indices) against TF,
exactly, with TF's shapes and dtypes; MXNet and Caffe refuse each by name. End to end: the CLI converts and
verifies against TF. Constant hash tables with numeric keys: their lookups against TF's own (initialized)
table."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

from tests.support import op_breadth
from tf_convert import emitters, parsers
from tf_convert.convert import passes
from tf_convert.convert.errors import UnsupportedError
from tf_convert.convert.ir import check
from tf_convert.emitters.base import EmitOptions
from tf_convert.parsers.base import ParseOptions

tf = pytest.importorskip("tensorflow")

i32, i64, f32 = np.int32, np.int64, np.float32
ZEROS = f32([0.0, -0.0, 1.5, -0.0, 1.5, 0.0])  # -0.0 == 0.0: one value, the first one's sign kept
# equal logits (the first is the best) and repeats
CTC_TIES = np.random.default_rng(7).integers(-2, 2, (6, 3, 4)).astype(np.float32) * 0.75

# case -> (its placeholders: name -> (dtype, static shape), the op on them (one tensor or several), the
# placeholders' values at run A and at run B)
Case = tuple[dict[str, tuple[Any, list[int]]], Callable[[dict[str, Any]], Any], dict[str, Any], dict[str, Any]]
CASES: dict[str, Case] = {
    "unique_int32": ({"x": (tf.int32, [8])}, lambda p: tuple(tf.unique(p["x"])),
                     {"x": i32([3, 1, 3, 2, 1, 5, 0, 3])}, {"x": i32([7, 7, 7, 7, 7, 7, 7, 7])}),
    "unique_int64_counts_idx64": ({"x": (tf.int64, [7])}, lambda p: tuple(tf.unique_with_counts(p["x"], tf.int64)),
                                  {"x": i64([2**40, -1, 2**40, 0, -1, -1, 9])}, {"x": i64([5, 4, 3, 2, 1, 0, -1])}),
    "unique_float": ({"x": (tf.float32, [6])}, lambda p: tuple(tf.unique_with_counts(p["x"])),
                     {"x": ZEROS}, {"x": ZEROS[::-1].copy()}),
    "unique_empty": ({"x": (tf.int32, [0])}, lambda p: tuple(tf.unique_with_counts(p["x"], tf.int64)),
                     {"x": i32([])}, {"x": i32([])}),
    "unique_v2_columns": ({"x": (tf.float32, [2, 5])},
                          lambda p: tuple(tf.raw_ops.UniqueWithCountsV2(x=p["x"], axis=i64([-1]), out_idx=tf.int64)),
                          {"x": f32([[1, 2, 1, 2, 0], [3, 4, 3, 0, 3]])},
                          {"x": f32([[1, 1, 1, 1, 1], [2, 2, 2, 2, 2]])}),
    "unique_v2_rows": ({"x": (tf.int32, [4, 2])}, lambda p: tuple(tf.raw_ops.UniqueV2(x=p["x"], axis=i32([0]))),
                       {"x": i32([[1, 2], [3, 4], [1, 2], [1, 3]])}, {"x": i32([[0, 0], [1, 1], [2, 2], [3, 3]])}),
    "unique_v2_no_axis": ({"x": (tf.int64, [5])}, lambda p: tuple(tf.raw_ops.UniqueV2(x=p["x"], axis=i64([]))),
                          {"x": i64([4, 4, 1, 4, 2])}, {"x": i64([0, 1, 0, 1, 0])}),
    "unique_then_arithmetic": ({"x": (tf.float32, [6])}, lambda p: tf.unique(p["x"]).y * 2.0 + 1.0,
                               {"x": f32([0.5, 0.25, 0.5, -3, 0.25, 8])}, {"x": f32([1, 2, 3, 4, 5, 6])}),
    "ragged_range": ({"s": (tf.int32, [4]), "n": (tf.int32, [])}, lambda p: tuple(tf.raw_ops.RaggedRange(
        starts=p["s"], limits=p["n"], deltas=i32([1, 2, -1, 3]))), {"s": i32([0, 3, 5, 9]), "n": i32(6)},
        {"s": i32([7, 7, 7, 7]), "n": i32(0)}),
    "ragged_range_int64_scalars": ({"n": (tf.int64, [])}, lambda p: tuple(tf.raw_ops.RaggedRange(
        starts=i64(-2), limits=p["n"], deltas=i64(3), Tsplits=tf.int32)), {"n": i64(10)}, {"n": i64(-4)}),
    "ctc_greedy_merged": ({"x": (tf.float32, [6, 3, 4]), "n": (tf.int32, [3])}, lambda p: tuple(
        tf.raw_ops.CTCGreedyDecoder(inputs=p["x"], sequence_length=p["n"], merge_repeated=True)),
        {"x": CTC_TIES, "n": i32([6, 0, 4])}, {"x": CTC_TIES[::-1].copy() * 1.5, "n": i32([2, 6, 6])}),
    "ctc_greedy_blank_0": ({"x": (tf.float32, [6, 3, 4])}, lambda p: tuple(tf.raw_ops.CTCGreedyDecoder(
        inputs=p["x"], sequence_length=i32([6, 6, 6]), merge_repeated=False, blank_index=0)),
        {"x": CTC_TIES}, {"x": -CTC_TIES}),
    "unique_of_run_time_length": ({"x": (tf.int32, [8])}, lambda p: tf.unique_with_counts(
        tf.unique(p["x"]).y * 0 + 3).count, {"x": i32([5, 1, 5, 2, 3, 1, 9, 4])}, {"x": i32([2] * 8)}),
    "bincount": ({"x": (tf.int32, [9])}, lambda p: tf.math.bincount(p["x"]),
                 {"x": i32([1, 4, 1, 0, 7, 4, 1, 2, 2])}, {"x": i32([0, 0, 0, 0, 0, 0, 0, 0, 0])}),
    "bincount_weights_bounds": ({"x": (tf.int32, [6]), "w": (tf.float32, [6])},
                                lambda p: tf.math.bincount(p["x"], weights=p["w"], minlength=3, maxlength=6),
                                {"x": i32([1, 9, 1, 0, 5, 1]), "w": f32([0.5, 2, 0.25, -1, 3, 1e-3])},
                                {"x": i32([0, 0, 0, 0, 0, 0]), "w": f32([1, 2, 3, 4, 5, 6])}),
    "bincount_int64_values_counts": ({"x": (tf.int64, [5])}, lambda p: tf.math.bincount(p["x"], dtype=tf.int64),
                                     {"x": i64([3, 0, 3, 3, 1])}, {"x": i64([6, 6, 6, 6, 6])}),
    "bincount_int_weights": ({"x": (tf.int32, [5]), "w": (tf.int32, [5])},
                             lambda p: tf.math.bincount(p["x"], weights=p["w"], dtype=tf.int32),
                             {"x": i32([2, 2, 0, 4, 2]), "w": i32([2**30, 2**30, 5, -7, 2**30])},
                             {"x": i32([1, 1, 1, 1, 1]), "w": i32([1, 2, 3, 4, 5])}),
    "bincount_rows_binary": ({"x": (tf.int32, [2, 4])},
                             lambda p: tf.math.bincount(p["x"], axis=-1, binary_output=True),
                             {"x": i32([[1, 1, 3, 0], [2, 2, 2, 2]])}, {"x": i32([[0, 0, 0, 0], [5, 0, 5, 0]])}),
    "bincount_empty_minlength": ({"x": (tf.int32, [0])}, lambda p: tf.math.bincount(p["x"], minlength=3),
                                 {"x": i32([])}, {"x": i32([])}),
    "bincount_scalar_size": ({"x": (tf.int32, []), "n": (tf.int32, [])},
                             lambda p: tf.raw_ops.Bincount(arr=p["x"], size=p["n"], weights=f32([])),
                             {"x": i32(2), "n": i32(4)}, {"x": i32(5), "n": i32(3)}),
}


def _build(directory) -> tuple[Any, list[str], list[str], list[dict[str, np.ndarray]], list[dict[str, np.ndarray]]]:
    """All cases in one frozen graph (placeholders <case>__<name>, outputs out_<case>__<k>); TF's outputs at
    runs A and B."""
    graph = tf.Graph()
    runs: list[dict[str, np.ndarray]] = [{}, {}]
    fetches = {}
    with graph.as_default():
        for case, (params, fn, *values) in CASES.items():
            held = {n: tf.compat.v1.placeholder(d, s, name=f"{case}__{n}") for n, (d, s) in params.items()}
            results = fn(held)
            for k, t in enumerate(results if isinstance(results, tuple) else (results,)):
                fetches[f"out_{case}__{k}"] = tf.identity(t, name=f"out_{case}__{k}")
            for run, given in zip(runs, values):
                run.update({f"{case}__{n}": np.asarray(v) for n, v in given.items()})
        with tf.compat.v1.Session() as sess:
            expected = [sess.run(fetches, {f"{n}:0": v for n, v in run.items()}) for run in runs]
    pb = directory / "data_lengths.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    return pb, list(runs[0]), list(fetches), runs, expected


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    work = tmp_path_factory.mktemp("data_lengths")
    pb, inputs, outputs, runs, expected = _build(work)
    graph = parsers.parse(pb, ParseOptions(inputs=[f"{n}:0" for n in inputs], outputs=[f"{o}:0" for o in outputs]))
    return passes.run_default_passes(graph), runs, expected, work, pb


def _case(name: str) -> str:
    return name.removeprefix("out_").split("__")[0]


def test_the_graph_holds_run_time_lengths_and_agrees_with_its_shape_rules(converted):
    graph = converted[0]
    assert check.problems(graph) == []
    assert {n.op for n in graph.nodes} >= {"unique", "bincount_by", "ragged_range", "ctc_greedy_decoder"}


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """TF's shape, dtype and values; a float's sign bit too (Unique keeps the first zero's sign)."""
    if got.shape != want.shape or got.dtype != want.dtype or not np.array_equal(got, want):
        return False
    return want.dtype.kind != "f" or np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("target", ["torch", "onnx"])
def test_each_case_exact_at_two_data_values(converted, target):
    graph, runs, expected, work, _ = converted
    assert op_breadth.target_split(graph, target)[1] == {}
    emitter = emitters.get(target)
    out = work / target
    out.mkdir()
    emitter.emit(graph, out, EmitOptions())
    wrong = {}
    for run, want_all in zip(runs, expected):
        for name, got in zip(graph.outputs, emitter.run(out, op_breadth.ir_feeds(graph, run))):
            source = graph.source_names[name].split(":")[0]
            want, got = np.asarray(want_all[source]), np.asarray(got)
            if not _same(got, want):
                wrong[source] = (got.shape, got.dtype, got.ravel()[:8], want.shape, want.dtype, want.ravel()[:8])
    assert not wrong, wrong


@pytest.mark.parametrize("target", ["mxnet", "caffe"])
def test_each_case_refused_by_name(converted, target):
    graph = converted[0]
    refused = {p.node: p for p in emitters.get(target).unsupported(graph)}
    by_op = {n.name: n.op for n in graph.nodes}
    cases = {_case(graph.source_names[o].split(":")[0]) for o in graph.outputs}
    lengths = {n for n in refused if by_op.get(n) in ("unique", "bincount_by", "ragged_range", "ctc_greedy_decoder")}
    named = {_case(graph.source_names[o].split(":")[0]) for o in graph.outputs
             if op_breadth._ancestors(graph, o) & lengths}
    if target == "mxnet":  # Caffe refuses their integer tensors first
        assert all("decided by the data" in refused[n].hint or "run-time value" in refused[n].hint for n in lengths)
    assert named == cases, cases - named


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_the_model_py_scripts(converted):
    """model.py's tf_unique and the bins of a run-time count are plain torch that torch.jit.script takes."""
    torch = pytest.importorskip("torch")
    from tf_convert.emitters.torch.runner import import_model, load_weights

    graph, runs, expected, work, _ = converted
    out = work / "torch_script"
    out.mkdir()
    emitters.get("torch").emit(graph, out, EmitOptions())
    assert "def tf_unique(" in (out / "model.py").read_text()
    scripted = torch.jit.script(load_weights(import_model(out), out))
    got = scripted(*[torch.from_numpy(np.ascontiguousarray(x)) for x in op_breadth.ir_feeds(graph, runs[0])])
    for name, value in zip(graph.outputs, got):
        source = graph.source_names[name].split(":")[0]
        assert _same(value.numpy(), np.asarray(expected[0][source])), source


# ---- end to end through the CLI: converted, run and compared with TF (--verify at the values --feed gives) ----

@pytest.fixture(scope="module")
def small_pb(tmp_path_factory):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.int64, [7], name="x")
        values, idx, counts = tf.unique_with_counts(x, out_idx=tf.int64)
        tf.identity(values, name="values")
        tf.identity(idx, name="idx")
        tf.identity(counts, name="counts")
        tf.identity(tf.math.bincount(x, dtype=tf.int64), name="bins")
    pb = tmp_path_factory.mktemp("small") / "lengths.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    return pb


@pytest.mark.parametrize("target, code, says", [("torch", 0, "OK"), ("onnx", 0, "OK"),
                                                 ("mxnet", 3, "unique"), ("caffe", 3, "unique")])
def test_the_cli_converts_and_verifies_against_tf(small_pb, tmp_path, target, code, says):
    from click.testing import CliRunner

    from tf_convert import cli

    result = CliRunner().invoke(cli.main, [f"tf2{target}", str(small_pb), "-o", str(tmp_path / "out"), "--inputs",
                                           "x", "--outputs", "values,idx,counts,bins", "--verify",
                                           "--feed", "x=[5, 0, 5, 2, 0, 5, 9]"])
    assert result.exit_code == code, result.output
    assert says in result.output, result.output
    assert (tmp_path / "out").exists() == (code == 0)


# ---- what still needs more than the data's length: refused by name (exit 3) --------------------------------

def _refused() -> dict[str, tuple[Callable[[], Any], str]]:
    def p(dtype, shape, name):
        return tf.compat.v1.placeholder(dtype, shape, name=name)

    return {
        "run_time_axis": (lambda: tf.raw_ops.UniqueV2(x=p(tf.int32, [3, 4], "x"), axis=p(tf.int64, [1], "a")).y,
                          "axis 'a:0' is computed at run time"),
        "float64_bins": (lambda: tf.math.bincount(p(tf.int32, [4], "x"), dtype=tf.float64), "float64"),
    }


@pytest.mark.parametrize("case", list(_refused()))
def test_refused_by_name(case, tmp_path):
    build, says = _refused()[case]
    graph = tf.Graph()
    with graph.as_default():
        tf.identity(build(), name="y")
    pb = tmp_path / f"{case}.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    inputs = [f"{op.name}:0" for op in graph.get_operations() if op.type == "Placeholder"]
    with pytest.raises(UnsupportedError) as caught:
        parsers.parse(pb, ParseOptions(inputs=inputs, outputs=["y:0"]))
    assert says in str(caught.value), str(caught.value)


# ---- constant hash tables with numeric keys: a lookup computed from the constants (training/tables.py) --------

# case -> (keys, values, default, the query's dtype and value): TF's own table (initialized) is the reference
TABLES = {
    "int64_to_int64": (i64([3, 5, -2, 2**40]), i64([10, 20, 30, -40]), -1, (tf.int64, i64([[3, 4], [2**40, -2]]))),
    "int64_to_float": (i64([0, 7, 1]), f32([0.5, -0.0, 2.25]), 9.5, (tf.int64, i64([7, 1, 2, 0, 7]))),
    "int32_to_float_rank0": (i32([4, 2]), f32([1.5, -3.0]), 0.0, (tf.int32, i32(2))),
    "int64_empty_query": (i64([1, 2]), i64([5, 6]), 0, (tf.int64, i64([]))),
}


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    graph = tf.Graph()
    feeds, fetches = {}, {}
    with graph.as_default():
        for case, (keys, values, default, (dtype, query)) in TABLES.items():
            init = tf.lookup.KeyValueTensorInitializer(tf.constant(keys), tf.constant(values))
            held = tf.compat.v1.placeholder(dtype, np.shape(query), name=f"{case}__q")
            fetches[case] = tf.identity(tf.lookup.StaticHashTable(init, default).lookup(held), name=f"out_{case}")
            feeds[f"{case}__q"] = query
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.tables_initializer())  # TF's table, filled as TF fills it
            expected = sess.run(fetches, {f"{n}:0": v for n, v in feeds.items()})
    work = tmp_path_factory.mktemp("tables")
    pb = work / "tables.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    parsed = parsers.parse(pb, ParseOptions(inputs=[f"{n}:0" for n in feeds], outputs=[f"out_{c}:0" for c in TABLES]))
    return passes.run_default_passes(parsed), feeds, expected, work


@pytest.mark.parametrize("target", ["torch", "onnx", "mxnet"])
def test_constant_numeric_tables_look_up_as_tf(tables, target):
    """Plain gathers and comparisons: MXNet takes them too (but for an empty query, its shapes read 0 as
    unknown, and a rank-0 one, its symbols hold none)."""
    graph, feeds, expected, work = tables
    wanted = [o for o in graph.outputs if target != "mxnet" or not {"empty", "rank0"} & set(
        _case(graph.source_names[o].split(":")[0]).split("_"))]
    sub = op_breadth.trimmed(graph, wanted)
    assert op_breadth.target_split(sub, target)[1] == {}
    emitter = emitters.get(target)
    out = work / target
    out.mkdir()
    emitter.emit(sub, out, EmitOptions())
    wrong = {}
    for name, got in zip(sub.outputs, emitter.run(out, op_breadth.ir_feeds(sub, feeds))):
        case = _case(graph.source_names[name].split(":")[0])
        if not _same(np.asarray(got), np.asarray(expected[case])):
            wrong[case] = (np.asarray(got), expected[case])
    assert not wrong, wrong
