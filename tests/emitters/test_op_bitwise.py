"""The bitwise IR ops (bitwise_and/or/xor/not, left/right_shift) in every target's runtime
against TF's BitwiseAnd/Or/Xor, Invert, LeftShift and RightShift, on int32 and int64, with values over
the whole range and shift amounts past the width and negative (TF clamps them). ONNX at opset 17 (the
bit-by-bit lowering) and 18 (BitwiseAnd/Or/Xor/Not). Caffe refuses them: its blobs are float32."""

from __future__ import annotations

import numpy as np
import pytest

from tf_convert import emitters
from tf_convert.convert import ir
from tf_convert.emitters.base import EmitOptions

tf = pytest.importorskip("tensorflow")

TF_OPS = {"bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr", "bitwise_xor": "BitwiseXor",
          "left_shift": "LeftShift", "right_shift": "RightShift", "bitwise_not": "Invert"}
SHAPE, OTHER = (2, 3, 4, 5), (4, 5)
# (target, ONNX opset) runs
RUNS = [("torch", None), ("onnx", 17), ("onnx", 18), ("mxnet", None)]


def _values(op: str, dtype: str) -> list[np.ndarray]:
    rng = np.random.default_rng(sum(map(ord, op + dtype)))
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, SHAPE, dtype=dtype, endpoint=True)
    a.reshape(-1)[:4] = [info.min, info.max, 0, -1 if info.min else 1]
    if op == "bitwise_not":
        return [a]
    width = np.dtype(dtype).itemsize * 8
    if op.endswith("shift"):
        low = -5 if info.min else 0
        b = rng.integers(low, width + 6, OTHER).astype(dtype)
        b.reshape(-1)[:4] = [width - 1, width, 0, width + 3]
    else:
        b = rng.integers(info.min, info.max, OTHER, dtype=dtype, endpoint=True)
    return [a, b]


def _graph(op: str, dtype: str) -> ir.Graph:
    g = ir.Graph(name=f"t_{op}")
    g.inputs = [g.add_tensor("a", SHAPE, dtype)] + ([] if op == "bitwise_not" else [g.add_tensor("b", OTHER, dtype)])
    g.add_node(op, "y", list(g.inputs), SHAPE, out_dtype=dtype)
    g.outputs = ["y"]
    return g


def _tf(op: str, inputs: list[np.ndarray]) -> np.ndarray:
    names = ["x", "y"] if len(inputs) == 2 else ["x"]
    return getattr(tf.raw_ops, TF_OPS[op])(**dict(zip(names, inputs))).numpy()


CASES = [(op, dtype) for op in TF_OPS for dtype in ("int32", "int64")]  # the boundary dtypes every target has


@pytest.mark.parametrize("target,opset", RUNS, ids=[f"{t}{o or ''}" for t, o in RUNS])
@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_bitwise_op_equals_tensorflow(op, dtype, target, opset, tmp_path):
    graph = _graph(op, dtype)
    inputs = _values(op, dtype)
    expected = _tf(op, inputs)
    np.testing.assert_array_equal(ir.evaluate_node(graph.nodes[0], inputs), expected)  # the reference
    emitter = emitters.get(target)
    problems = emitter.unsupported(graph)
    if target == "mxnet" and op.endswith("shift") and dtype == "int64":  # refused, with the reason
        assert problems and "int64" in problems[0].hint
        return
    assert not problems, problems
    emitter.emit(graph, tmp_path, EmitOptions(opset=opset) if opset else EmitOptions())
    (got,) = emitter.run(tmp_path, inputs)
    np.testing.assert_array_equal(np.asarray(got).astype(dtype), expected)
    assert np.asarray(got).dtype == np.dtype(dtype) or target == "mxnet"


def test_caffe_refuses_bitwise_ops_for_their_integers():
    for op in TF_OPS:
        problems = emitters.get("caffe").unsupported(_graph(op, "int32"))
        assert problems and "float32" in problems[0].hint
