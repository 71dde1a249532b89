"""Every output keeps TF's shape (rank 0 included) and dtype: many small graphs, one frozen GraphDef fed by
rank-0 and rank-2 inputs of every dtype the IR holds (integers over their whole range, where sums and
products overflow), each through torch, ONNX and MXNet in their real runtimes against TF: the same dtype, the
same shape (MXNet 1.x returns a 0-d result as (1,)), the same values (integers bit for bit). An input of a
dtype the IR does not hold is refused by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from tests.support import op_breadth
from tf_convert import emitters, parsers
from tf_convert.convert import passes
from tf_convert.convert.errors import UnsupportedError
from tf_convert.convert.ir import Graph
from tf_convert.convert.ir.dtypes import IR_DTYPES
from tf_convert.emitters.base import EmitOptions
from tf_convert.parsers.base import ParseOptions

tf = pytest.importorskip("tensorflow")

DTYPES = ("int8", "int32", "int64", "uint8", "float32")
# input name -> (dtype, shape): a scalar s_<dtype> and a matrix v_<dtype> of each, and a few more
FEEDS: dict[str, tuple[str, tuple[int, ...]]] = {
    **{f"{r}_{dt}": (dt, shape) for dt in (*DTYPES, "bool") for r, shape in (("s", ()), ("v", (3, 4)))},
    "idx": ("int32", ()), "i8a": ("int8", (2, 3, 4)), "i8b": ("int8", (2, 4, 5)),
}
# ONNX takes every IR dtype at its boundary (int8/uint8 included: TFLite's integer models hand them over)
ONNX_BOUNDARY = IR_DTYPES

Build = Callable[[dict[str, Any]], Any]
CASES: dict[str, Build] = {}


def _per_dtype(dt: str) -> None:
    for r in "sv":
        x, cond = f"{r}_{dt}", f"{r}_bool"
        CASES[f"identity_{x}"] = lambda t, x=x: tf.identity(t[x])
        CASES[f"add_{x}"] = lambda t, x=x: t[x] + t[x]
        CASES[f"mul_{x}"] = lambda t, x=x: t[x] * t[x]
        CASES[f"max_{x}"] = lambda t, x=x: tf.maximum(t[x], t[x] * 2)
        CASES[f"greater_{x}"] = lambda t, x=x: t[x] > t[x] * 2
        CASES[f"select_{x}"] = lambda t, x=x, c=cond: tf.where(t[c], t[x], t[x] * 2)
        CASES[f"to_float_{x}"] = lambda t, x=x: tf.cast(t[x], tf.float32)
        CASES[f"from_float_{x}"] = lambda t, r=r, dt=dt: tf.cast(tf.minimum(tf.abs(t[f"{r}_float32"]) * 50, 100.0), dt)
    v = f"v_{dt}"
    CASES[f"sum_{v}"] = lambda t, v=v: tf.reduce_sum(t[v])  # rank 0
    CASES[f"sum_rows_{v}"] = lambda t, v=v: tf.reduce_sum(t[v], 1)
    CASES[f"product_{v}"] = lambda t, v=v: tf.reduce_prod(t[v])
    CASES[f"product_columns_{v}"] = lambda t, v=v: tf.reduce_prod(t[v], 0)
    CASES[f"reduce_max_{v}"] = lambda t, v=v: tf.reduce_max(t[v])
    CASES[f"argmax_int32_{v}"] = lambda t, v=v: tf.argmax(t[v], 1, output_type=tf.int32)
    CASES[f"argmin_int64_{v}"] = lambda t, v=v: tf.argmin(t[v], 0)
    CASES[f"argmax_all_{v}"] = lambda t, v=v: tf.argmax(tf.reshape(t[v], [-1]), 0)  # rank 0
    CASES[f"expand_{dt}"] = lambda t, dt=dt: tf.expand_dims(t[f"s_{dt}"], 0)
    CASES[f"squeeze_{dt}"] = lambda t, dt=dt: tf.reshape(t[f"v_{dt}"][1:2, 2:3], [])
    CASES[f"stack_{dt}"] = lambda t, dt=dt: tf.stack([t[f"s_{dt}"], t[f"s_{dt}"]])


for _dt in DTYPES:
    _per_dtype(_dt)
CASES.update({
    "one_hot_scalar": lambda t: tf.one_hot(t["idx"] % 5, 5),  # (5,), not (1, 5)
    "where_indices": lambda t: tf.where(t["v_bool"]),  # int64
    "select_bool": lambda t: tf.where(t["v_bool"], t["v_bool"], tf.logical_not(t["v_bool"])),
    "select_bool_scalar": lambda t: tf.where(t["s_bool"], t["s_bool"], tf.logical_not(t["s_bool"])),
    "not_scalar": lambda t: tf.logical_not(t["s_bool"]),
    # int8 x int8 accumulated in int32, as BatchMatMulV3's Tout says (100 * 100 * 4 wraps in int8)
    "matmul_int8_to_int32": lambda t: tf.raw_ops.BatchMatMulV3(x=t["i8a"], y=t["i8b"], Tout=tf.int32),
})


def _draw(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[Graph, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(the parsed graph of every case, the feeds, TF's value of every case)."""
    rng = np.random.default_rng(7)
    feeds = {name: _draw(rng, dt, shape) for name, (dt, shape) in FEEDS.items()}
    feeds["i8a"] = np.full((2, 3, 4), 100, np.int8)
    feeds["i8b"] = np.full((2, 4, 5), 100, np.int8)
    graph = tf.Graph()
    with graph.as_default():
        ph = {n: tf.compat.v1.placeholder(dt, shape, name=n) for n, (dt, shape) in FEEDS.items()}
        outs = {case: tf.identity(build(ph), name=f"out_{case}") for case, build in CASES.items()}
        with tf.compat.v1.Session(graph=graph) as session:
            values = session.run(outs, {ph[n]: v for n, v in feeds.items()})
    pb = tmp_path_factory.mktemp("dtypes") / "dtypes.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    options = ParseOptions(inputs=[f"{n}:0" for n in FEEDS], outputs=[f"out_{c}:0" for c in CASES])
    return passes.run_default_passes(parsers.parse(pb, options)), feeds, values


def _case(graph: Graph, output: str) -> str:
    return graph.source_names[output].removeprefix("out_").rsplit(":", 1)[0]


def _reads(graph: Graph, output: str) -> set[str]:
    """Every tensor `output` is computed from, itself included."""
    producers = {node.output: node for node in graph.nodes}
    seen, stack = set(), [output]
    while stack:
        tensor = stack.pop()
        if tensor not in seen:
            seen.add(tensor)
            stack.extend(producers[tensor].inputs if tensor in producers else ())
    return seen


def test_the_ir_declares_tf_dtypes(sweep):
    graph, _, values = sweep
    wrong = {_case(graph, o): (graph.tensors[o].dtype, values[_case(graph, o)].dtype.name) for o in graph.outputs
             if graph.tensors[o].dtype != values[_case(graph, o)].dtype.name}
    assert not wrong, wrong


# MXNet refuses Where's coordinates (their count depends on the data), integer matmuls (float-only dot) and a
# one-hot of a 0-d index (held as (1,), it would add an axis)
MXNET_REFUSED = {"where_indices", "matmul_int8_to_int32", "one_hot_scalar"}


@pytest.mark.parametrize("target", ["torch", "onnx", "mxnet"])
def test_every_output_has_tf_shape_dtype_and_values(sweep, target, tmp_path):
    graph, feeds, values = sweep
    emitter = emitters.get(target)
    refused = {p.node for p in emitter.unsupported(graph)}
    taken = [o for o in graph.outputs if not _reads(graph, o) & refused]
    not_taken = {_case(graph, o) for o in graph.outputs if o not in taken}
    if target == "onnx":  # refused only where a boundary tensor is int8/uint8
        assert not_taken == {
            _case(graph, o) for o in graph.outputs
            if any(graph.tensors[t].dtype not in ONNX_BOUNDARY for t in _reads(graph, o) & {*graph.inputs, o})}
    else:
        assert not_taken == (MXNET_REFUSED if target == "mxnet" else set()), refused
    sub = op_breadth.trimmed(graph, taken)
    emitter.emit(sub, tmp_path, EmitOptions())
    got = emitter.run(tmp_path, [feeds[sub.source_names[n].rsplit(":", 1)[0]] for n in sub.inputs])
    wrong = {}
    for output, value in zip(sub.outputs, got):
        case = _case(sub, output)
        want, value = values[case], np.asarray(value)
        if target == "mxnet" and want.shape == () and value.shape == (1,):  # MXNet 1.x has no 0-d arrays
            value = value.reshape(())
        same = (value.dtype == want.dtype and value.shape == want.shape
                and (np.allclose(value, want, rtol=1e-5, atol=0) if want.dtype.kind == "f"
                     else np.array_equal(value, want)))
        if not same:
            wrong[case] = f"{value.dtype}{value.shape} vs TF's {want.dtype}{want.shape}"
    assert not wrong, wrong


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
def test_arithmetic_on_a_dtype_the_ir_only_carries_is_refused_by_name(dtype, tmp_path):
    """The unsigned wide dtypes go through casts and copies only (convert.ir.dtypes; float64, float16 and int16
    are computed in, tests/parsers/test_wide_dtypes.py): an add of them is refused, naming the dtype and the
    input."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(dtype, (3,), name="x")
        tf.identity(x + x, name="y")
    pb = Path(tmp_path) / "model.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    with pytest.raises(UnsupportedError) as caught:
        parsers.parse(pb, ParseOptions(inputs=["x:0"], outputs=["y:0"]))
    assert caught.value.exit_code == 3
    assert [(i.op, dtype in i.hint and "'x'" in i.hint) for i in caught.value.items] == [("AddV2", True)]


# ---- the cases of the report end to end, through the CLI with --verify ----------------------------------------

# output -> (TF's dtype, TF's shape; Where's: the most rows it can have); built on: ids () int32,
# mask (3, 4) bool, x (3, 4) float32, flag () bool, s () float32, plus a/b int8 matrices (torch: int8 is
# outside ONNX's boundary) or two bool vectors (ONNX)
E2E = {
    "torch": {"one_hot": ("float32", [5]), "select_scalar": ("float32", []), "indices": ("int64", [12, 2]),
              "argmax": ("int32", [3]), "matmul": ("int32", [2, 3, 5])},
    "onnx": {"one_hot": ("float32", [5]), "select_scalar": ("float32", []), "indices": ("int64", [12, 2]),
             "argmax": ("int32", [3]), "select_bool": ("bool", [4]), "total": ("float32", [])},
}


def _e2e_model(directory: Path, target: str) -> tuple[Path, list[str]]:
    graph = tf.Graph()
    with graph.as_default():
        ph = {n: tf.compat.v1.placeholder(dt, shape, name=n) for n, dt, shape in (
            ("ids", tf.int32, ()), ("mask", tf.bool, (3, 4)), ("x", tf.float32, (3, 4)), ("flag", tf.bool, ()),
            ("s", tf.float32, ()))}
        tf.one_hot(ph["ids"], 5, name="one_hot")
        tf.where(ph["flag"], ph["s"], -ph["s"], name="select_scalar")
        tf.identity(tf.where(ph["mask"]), name="indices")  # the coordinates, int64, as many rows as true elements
        tf.argmax(ph["x"], 1, output_type=tf.int32, name="argmax")
        if target == "torch":
            ph["a"] = tf.compat.v1.placeholder(tf.int8, (2, 3, 4), name="a")
            ph["b"] = tf.compat.v1.placeholder(tf.int8, (2, 4, 5), name="b")
            tf.raw_ops.BatchMatMulV3(x=ph["a"], y=ph["b"], Tout=tf.int32, name="matmul")
        else:
            ph["p"] = tf.compat.v1.placeholder(tf.bool, (4,), name="p")
            ph["q"] = tf.compat.v1.placeholder(tf.bool, (4,), name="q")
            tf.where(ph["p"], ph["q"], tf.logical_not(ph["q"]), name="select_bool")
            tf.reduce_sum(ph["x"], name="total")
    pb = directory / "model.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    return pb, [f"{n}:0" for n in ph]


@pytest.mark.parametrize("target", ["torch", "onnx"])
def test_reported_cases_verify_with_tf_dtypes_and_shapes(target, tmp_path):
    """One-hot of a 0-d index is (5,), a select of scalars (), Where's coordinates int64, argmax's output_type
    int32, an int8 matmul accumulated in int32 (--verify feeds the whole int8 range: an int8 accumulation
    would wrap), a select of masks loads in onnxruntime, a scalar output passes the ONNX checker."""
    import json

    from tests.app.test_cli import run_cli

    pb, inputs = _e2e_model(tmp_path, target)
    out = tmp_path / "out"
    code, _, stderr = run_cli(f"tf2{target}", pb, "--inputs", ",".join(inputs),
                              "--outputs", ",".join(f"{o}:0" for o in E2E[target]), "--verify", "-o", out)
    assert code == 0, stderr
    doc = json.loads((out / "conversion.json").read_text())
    assert {r["source_name"].removesuffix(":0"): (r["dtype"], r["shape"]) for r in doc["outputs"]} == E2E[target]
    assert doc["verify"]["passed"]
    ranges = {r["source_name"]: r.get("value_range") for r in doc["inputs"]}
    assert ranges["ids:0"] == [0, 5] and (target != "torch" or ranges["a:0"] == [-128, 128])
