"""Ops on empty tensors, reductions over no axes and over empty axes, an Erf no GELU reads, integer relu and
mean, in the style of TF's own op tests (bench/op_graphs.py found each one wrong or crashing): each TF graph
converted through the CLI's pipeline to every target, run in its real runtime and compared with TF, value for
value, in TF's shape and dtype. The runtimes disagree with TF on empties (onnxruntime's mean of nothing is 0,
torch's max of nothing an error) and take an empty axes list as "every axis": the converted graph must not
depend on them."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

from tf_convert import emitters
from tf_convert.app import api
from tf_convert.convert.errors import UnsupportedError

tf = pytest.importorskip("tensorflow")
rng = np.random.default_rng(7)


def _x(shape, dtype="float32"):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    return (rng.standard_normal(shape) * 4).astype(dtype)


# case -> (inputs, the op on them)
CASES: dict[str, tuple[dict[str, np.ndarray], Callable[[dict[str, Any]], Any]]] = {
    **{f"{name}_over_empty_axis_{dt}": ({"x": _x((0, 3), dt)}, lambda p, fn=fn: fn(p["x"], 0))
       for name, fn in (("sum", tf.reduce_sum), ("max", tf.reduce_max), ("min", tf.reduce_min),
                        ("mean", tf.reduce_mean), ("prod", tf.reduce_prod)) for dt in ("float32", "int32")},
    "any_over_empty_axis": ({"x": _x((0, 3), "bool")}, lambda p: tf.reduce_any(p["x"], 0)),
    "all_over_empty_axis": ({"x": _x((0, 3), "bool")}, lambda p: tf.reduce_all(p["x"], 0)),
    "max_of_all_of_empty": ({"x": _x((2, 0))}, lambda p: tf.reduce_max(p["x"])),
    "bitwise_and_empty": ({"x": _x((0, 3), "int8"), "y": _x((1, 3), "int8")},
                          lambda p: tf.bitwise.bitwise_and(p["x"], p["y"])),
    "reshape_empty": ({"x": _x((0, 3))}, lambda p: tf.reshape(p["x"], [3, 0])),
    **{f"{name}_no_axes": ({"x": _x((2, 3))}, lambda p, fn=fn: fn(p["x"], []))
       for name, fn in (("sum", tf.reduce_sum), ("max", tf.reduce_max), ("mean", tf.reduce_mean),
                        ("norm", tf.math.reduce_euclidean_norm))},
    "any_no_axes": ({"x": _x((2, 3), "bool")}, lambda p: tf.reduce_any(p["x"], [])),
    **{f"{name}_of_rank0": ({"x": _x((), dt)}, lambda p, fn=fn: fn(p["x"]))
       for name, fn, dt in (("mean", tf.reduce_mean, "float32"), ("max", tf.reduce_max, "float32"),
                            ("prod", tf.reduce_prod, "float32"), ("all", tf.reduce_all, "bool"))},
    **{f"relu_{dt}": ({"x": _x((2, 3), dt)}, lambda p: tf.nn.relu(p["x"])) for dt in ("int8", "int32", "int64")},
    # TF's integer mean: the sum without wrapping, divided by the count and truncated toward zero
    "mean_int32": ({"x": np.array([[2**31 - 1, 1, 5], [-7, 2, 3]], np.int32)}, lambda p: tf.reduce_mean(p["x"], 1)),
    "mean_int8": ({"x": np.array([[-7, 2, 3, 1]], np.int8)}, lambda p: tf.reduce_mean(p["x"], 1)),
    # outputs TF computes from no input value: a model of constants, in TF's dtype
    **{f"ones_like_{dt}": ({"x": _x((2, 3), dt)}, lambda p: tf.ones_like(p["x"]))
       for dt in ("float32", "float64", "float16", "int16", "uint64")},
    "zeros_like_bool": ({"x": _x((2, 3), "bool")}, lambda p: tf.zeros_like(p["x"])),
    "shape_of_static": ({"x": _x((2, 3))}, lambda p: tf.shape(p["x"]) * 2),
    "pad_int32": ({"x": _x((2, 3), "int32")}, lambda p: tf.pad(p["x"], [[1, 0], [0, 2]], constant_values=-3)),
    "erf_alone": ({"x": _x((2, 3))}, lambda p: tf.math.erf(p["x"])),
    "erf_rank0": ({"x": _x(())}, lambda p: tf.math.erf(p["x"])),
}
CONSTANT_OUTPUTS = ("ones_like", "zeros_like", "shape_of")
# MXNet 1.x reads a 0 in a shape as "unknown": it refuses every graph with an empty tensor, by name; its
# loaders bind at least one input: it refuses a model of constants
MXNET_REFUSES = ("an empty tensor", "takes no input")


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
    root = tmp_path_factory.mktemp("empty_and_no_axes")
    built = {}
    for case, (inputs, fn) in CASES.items():
        (root / case).mkdir()
        built[case] = _frozen(root / case, inputs, fn)
    return built


@pytest.mark.parametrize("target", emitters.TARGETS)
def test_exact_against_tf(target, graphs, tmp_path):
    mxnet_jobs, wrong = [], {}
    for case, (inputs, _) in CASES.items():
        pb, outputs, expected = graphs[case]
        work = tmp_path / case
        try:
            named = None if case.startswith(CONSTANT_OUTPUTS) else list(inputs)  # no input is read: none named
            record = api.convert(pb, target, work / "out", inputs=named, outputs=outputs)
        except UnsupportedError as exc:
            assert target in ("mxnet", "caffe"), (case, str(exc))
            assert target != "mxnet" or any(why in str(exc) for why in MXNET_REFUSES), (case, str(exc))
            continue
        fed = [inputs[spec["source_name"].split(":")[0]] for spec in record["inputs"]]
        if target == "mxnet":
            mxnet_jobs.append((case, work / "out", fed, expected))
            continue
        got = emitters.get(target).run(work / "out", fed)
        wrong.update(_differences(case, got, expected))
    if mxnet_jobs:
        from tf_convert.emitters.mxnet import runtime

        results = runtime.run_many([(out, fed) for _, out, fed, _ in mxnet_jobs])
        for (case, _, _, expected), got in zip(mxnet_jobs, results):
            got = [g.reshape(()) if g.shape == (1,) and e.shape == () else g for g, e in zip(got, expected)]  # 0-d
            wrong.update(_differences(case, got, expected))
    assert wrong == {}


def _differences(case: str, got: list, expected: list[np.ndarray]) -> dict[str, Any]:
    (got,), (want,) = got, expected
    got = np.asarray(got)
    if got.shape != want.shape or got.dtype != want.dtype:
        return {case: (got.shape, want.shape, got.dtype, want.dtype)}
    if want.dtype.kind == "f":
        same = np.allclose(got, want, rtol=1e-6, atol=0, equal_nan=True)
        same = same and np.array_equal(np.isinf(got), np.isinf(want))
    else:
        same = np.array_equal(got, want)
    return {} if same else {case: (got.tolist(), want.tolist())}
