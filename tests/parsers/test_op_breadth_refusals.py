"""The lowerings with constant indices refuse, naming the op and why, what they
cannot convert exactly (exit 3, nothing guessed): repeated indices whose winner TF leaves unspecified,
unsorted segment ids, runtime values that set an output's size."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.op_samples import raw
from tf_convert import parsers
from tf_convert.convert.errors import UnsupportedError

tf = pytest.importorskip("tensorflow")

X = np.arange(12, dtype=np.float32).reshape(4, 3)

# case -> (build(tf, x placeholder (4, 3) float32), the refused TF op, words of the hint)
CASES = {
    "scatter_update_repeated": (lambda x: raw(tf, "TensorScatterUpdate", x, np.int32([[1], [1]]), x[:2]),
                                "TensorScatterUpdate", "repeated index"),
    "parallel_stitch_repeated": (lambda x: raw(tf, "ParallelDynamicStitch", [np.int32([0, 1]), np.int32([1])],
                                               [x[:2], x[2:3]]), "ParallelDynamicStitch", "repeated index"),
    "segment_ids_unsorted": (lambda x: raw(tf, "SegmentSum", x, np.int32([1, 0, 0, 2])), "SegmentSum", "sorted"),
    # Where converts with a length that depends on the data; an op that would mix its rows is refused
    "where_runtime_summed": (lambda x: tf.reduce_sum(tf.cast(raw(tf, "Where", x > 3.0), tf.float32)), "Sum",
                             "depends on the data"),
    # an integer or float32 range of run-time length converts (tests/parsers/test_runtime_shapes.py); float64 not
    "range_runtime_float64": (lambda x: raw(tf, "Range", np.float64(0.0), tf.cast(tf.reduce_max(x), tf.float64),
                                            np.float64(1.0)), "Range", "float64 values"),
    "strided_update_broadcast": (lambda x: raw(tf, "TensorStridedSliceUpdate", x, np.int32([0]), np.int32([2]),
                                               np.int32([1]), x[0]), "TensorStridedSliceUpdate", "broadcasting"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_by_name(case, tmp_path):
    build, op, words = CASES[case]
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, X.shape, name="x")
        tf.identity(build(x), name="out")
    pb = tmp_path / "model.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    with pytest.raises(UnsupportedError) as info:
        parsers.parse(pb)
    assert info.value.exit_code == 3
    hints = {u.op: u.hint for u in info.value.items}
    assert op in hints and words in hints[op], hints
