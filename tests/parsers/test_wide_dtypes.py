"""Arithmetic in float64, float16 and int16 (convert.ir.dtypes.COMPUTED_WIDE): elementwise ops, reductions and
matmul of a TF graph computing in one, converted through the CLI's pipeline, run in PyTorch and onnxruntime and
compared with TF in TF's dtype; what a target cannot compute in (MXNet and Caffe: any of them; onnxruntime: the
kernels it lacks; every target: the unsigned dtypes) is refused by name."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

from tests.app.test_cli import run_cli
from tf_convert import emitters, parsers
from tf_convert.app import api
from tf_convert.convert.errors import UnsupportedError
from tf_convert.convert.ir.reference import evaluate
from tf_convert.parsers.base import ParseOptions

tf = pytest.importorskip("tensorflow")
rng = np.random.default_rng(11)
# max |target - TF| / max |TF|, as bench/op_graphs_run.py judges (float16: TF computes in float32 and rounds)
TOLERANCE = {"float64": 1e-9, "float16": 2e-3}


def _x(shape, dtype, low=-3.0, high=3.0):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(int(low) * 2, int(high) * 2 + 1, shape).astype(dtype)
    return rng.uniform(low, high, shape).astype(dtype)


def _pair(dtype, shape=(2, 3)):
    return {"x": _x(shape, dtype), "y": _x(shape, dtype)}


Case = tuple[dict[str, np.ndarray], Callable[[dict[str, Any]], Any]]
CASES: dict[str, Case] = {
    **{f"{name}_{dt}": (_pair(dt), lambda p, fn=fn: fn(p["x"], p["y"]))
       for name, fn in (("add", tf.add), ("mul", tf.multiply), ("maximum_of_sub", lambda a, b: tf.abs(a - b)),
                        ("less", tf.less), ("where", lambda a, b: tf.where(a < b, a, b * 2)))
       for dt in ("float64", "float16", "int16")},
    **{f"{name}_{dt}": ({"x": _x((2, 3), dt, 0.1, 3.0)}, lambda p, fn=fn: fn(p["x"]))
       for name, fn in (("exp", tf.exp), ("log", tf.math.log), ("rsqrt", tf.math.rsqrt), ("tanh", tf.tanh),
                        ("sigmoid", tf.sigmoid), ("floor", tf.floor), ("round", tf.round))
       for dt in ("float64", "float16")},
    **{f"{name}_{dt}": ({"x": _x((2, 3, 4), dt)}, lambda p, fn=fn: fn(p["x"], 1))
       for name, fn in (("sum", tf.reduce_sum), ("mean", tf.reduce_mean), ("max", tf.reduce_max),
                        ("min", tf.reduce_min), ("prod", tf.reduce_prod))
       for dt in ("float64", "float16", "int16")},
    **{f"matmul_{dt}": ({"x": _x((2, 3, 4), dt), "y": _x((2, 4, 5), dt)}, lambda p: tf.matmul(p["x"], p["y"]))
       for dt in ("float64", "float16", "int16")},
    **{f"{name}_{dt}": ({"x": _x((2, 5), dt)}, lambda p, fn=fn: fn(p["x"]))
       for name, fn in (("softmax", tf.nn.softmax), ("log_softmax", tf.nn.log_softmax))
       for dt in ("float64", "float16")},
    "maximum_int16": (_pair("int16"), lambda p: tf.maximum(p["x"], p["y"])),
    "minimum_int16": (_pair("int16"), lambda p: tf.minimum(p["x"], p["y"])),
    "relu_int16": ({"x": _x((2, 3), "int16")}, lambda p: tf.nn.relu(p["x"])),
    # a constant of the dtype keeps it (float64 0.1 is not float32 0.1)
    "add_const_float64": ({"x": _x((2, 3), "float64")}, lambda p: p["x"] * 0.1 + 1e-12),
    "floordiv_int16": ({"x": _x((2, 3), "int16"), "y": np.array([[3, -2, 5]] * 2, np.int16)},
                       lambda p: tf.math.floordiv(p["x"], p["y"])),
    "bitwise_and_int16": (_pair("int16"), lambda p: tf.bitwise.bitwise_and(p["x"], p["y"])),
}
# the cases onnxruntime has no kernel for: case -> the dtype it lacks
ONNX_LACKS = {f"{case}_int16": "int16" for case in ("where", "sum", "mean", "max", "min", "prod", "matmul",
                                                        "bitwise_and")}
# case -> what its refusal names, per target ("" -> every target refuses it)
REFUSED: dict[str, tuple[Case, str, str]] = {
    "add_uint16": ((_pair("uint16"), lambda p: p["x"] + p["y"]), "", "uint16"),
    "acos_float64": (({"x": _x((2, 3), "float64", -0.9, 0.9)}, lambda p: tf.acos(p["x"])), "onnx",
                     "onnxruntime has no float64 kernel"),
}


def _frozen(directory, inputs, fn) -> tuple[Any, list[str], list[np.ndarray]]:
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    names = list(inputs)
    signature = [tf.TensorSpec(v.shape, v.dtype, name=n) for n, v in inputs.items()]
    concrete = tf.function(lambda *a: tf.identity(fn(dict(zip(names, a)))), input_signature=signature)
    frozen = convert_variables_to_constants_v2(concrete.get_concrete_function())
    pb = directory / "graph.pb"
    pb.write_bytes(frozen.graph.as_graph_def().SerializeToString())
    expected = frozen(*[tf.constant(v) for v in inputs.values()])
    expected = expected if isinstance(expected, list) else [expected]
    return pb, [frozen.outputs[0].name.split(":")[0]], [np.asarray(e) for e in expected]


@pytest.fixture(scope="module")
def graphs(tmp_path_factory) -> dict[str, tuple[Any, list[str], list[np.ndarray]]]:
    """case -> (frozen .pb, its output names, TF's outputs), built once for every target."""
    root = tmp_path_factory.mktemp("wide_dtypes")
    built = {}
    for case, (inputs, fn) in {**CASES, **{c: spec for c, (spec, _, _) in REFUSED.items()}}.items():
        (root / case).mkdir()
        built[case] = _frozen(root / case, inputs, fn)
    return built


def _difference(got: np.ndarray, want: np.ndarray) -> Any:
    got = np.asarray(got)
    if got.shape != want.shape or got.dtype != want.dtype:
        return (got.shape, want.shape, got.dtype, want.dtype)
    if want.dtype.kind != "f":
        return None if np.array_equal(got, want) else (got.tolist(), want.tolist())
    error = float(np.abs(got.astype(np.float64) - want).max() / max(float(np.abs(want).max()), 1e-30))
    return None if error <= TOLERANCE[want.dtype.name] else error


@pytest.mark.parametrize("target", ("torch", "onnx"))
def test_exact_against_tf(target, graphs, tmp_path):
    wrong = {}
    for case, (inputs, _) in CASES.items():
        pb, outputs, (want,) = graphs[case]
        if target == "onnx" and case in ONNX_LACKS:
            with pytest.raises(UnsupportedError, match=f"onnxruntime has no {ONNX_LACKS[case]} kernel"):
                api.convert(pb, target, tmp_path / case, inputs=list(inputs), outputs=outputs)
            continue
        record = api.convert(pb, target, tmp_path / case, inputs=list(inputs), outputs=outputs)
        fed = [inputs[spec["source_name"].split(":")[0]] for spec in record["inputs"]]
        (got,) = emitters.get(target).run(tmp_path / case, fed)
        problem = _difference(got, want)
        if problem is not None:
            wrong[case] = problem
    assert wrong == {}


@pytest.mark.parametrize("target", emitters.TARGETS)
def test_refused_by_name(target, graphs, tmp_path):
    cases = {case: (spec[0], case.rsplit("_", 1)[1]) for case, spec in CASES.items() if target in ("mxnet", "caffe")}
    cases.update({case: (spec[0], why) for case, (spec, where, why) in REFUSED.items() if where in ("", target)})
    for case, (inputs, why) in cases.items():
        pb, outputs, _ = graphs[case]
        with pytest.raises(UnsupportedError) as refusal:
            api.convert(pb, target, tmp_path / case, inputs=list(inputs), outputs=outputs)
        assert why in str(refusal.value), (case, str(refusal.value))
        assert not (tmp_path / case).exists(), case


def test_reference_computes_in_the_dtype(graphs):
    """The numpy reference (convert.ir.reference) computes each case in its dtype, as TF does: no float32."""
    wrong = {}
    for case, (inputs, _) in CASES.items():
        pb, outputs, (want,) = graphs[case]
        graph = parsers.parse(pb, ParseOptions(inputs=list(inputs), outputs=outputs))
        fed = {name: inputs[graph.source_names[name].split(":")[0]] for name in graph.inputs}
        (got,) = evaluate(graph, fed).values()
        problem = _difference(got, want)
        if problem is not None:
            wrong[case] = problem
    assert wrong == {}


@pytest.mark.parametrize("case", ["tanh_float64", "sum_float16", "matmul_int16"])
def test_cli_verify_feeds_the_dtype(case, graphs, tmp_path):
    """--verify feeds a float64/float16 input in its dtype: TF's reference run and the target agree."""
    inputs, _ = CASES[case]
    pb, outputs, _ = graphs[case]
    code, _, stderr = run_cli("tf2torch", pb, "--inputs", ",".join(inputs), "--outputs", outputs[0], "--verify",
                              "-o", tmp_path / "out")
    assert code == 0, stderr
