"""Parameters the graph computes while it runs, op by op in the style of TF's own op tests: each op with its
parameters as constants and as placeholders fed at run time (rank 0, negative indices, empty results), all
in one TF graph, through the parser and every target's real runtime against TF. Each case is exact on a
target or refused by it with a reason; never wrong. Ops whose output shape would follow a run-time value
are refused by the parser, by name, exit 3 (not "pass --input-shape": every input shape is given)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

from tests.support import op_breadth
from tf_convert import emitters, parsers
from tf_convert.app import verify
from tf_convert.convert import passes
from tf_convert.convert.errors import UnsupportedError
from tf_convert.emitters.base import EmitOptions
from tf_convert.parsers.base import ParseOptions

tf = pytest.importorskip("tensorflow")

TOLERANCE = 0.0  # copies of elements: equal, bit for bit
COUNTS: dict[str, dict[str, list[str]]] = {}  # target -> exact / refused / wrong -> cases


def _x(rng: np.random.Generator, shape=(3, 5, 4), dtype=np.float32) -> np.ndarray:
    return (rng.standard_normal(shape) * 4).astype(dtype)


# case -> (feeds: name -> value, the op on placeholders named like the feeds). A feed whose name starts with
# "const_" is baked into the graph as a constant: the same op with the parameter known at conversion.
Case = tuple[dict[str, np.ndarray], Callable[[dict[str, Any]], Any]]


def _cases() -> dict[str, Case]:
    rng = np.random.default_rng(43)
    x, v, ints = _x(rng), _x(rng, (6,)), _x(rng, (4, 6), np.int32)
    square = _x(rng, (2, 4, 4))
    i32 = np.int32
    cases: dict[str, Case] = {
        "slice_begin": ({"x": x, "b": i32([1, 2, 0])}, lambda p: tf.slice(p["x"], p["b"], [2, 3, 4])),
        "slice_begin_const": ({"x": x, "const_b": i32([1, 2, 0])},
                              lambda p: tf.slice(p["x"], p["const_b"], [2, 3, 4])),
        "slice_begin_partial": ({"x": x, "i": i32(2)},
                                lambda p: tf.slice(p["x"], tf.stack([p["i"], 1, 0]), [1, 3, -1])),
        "slice_empty": ({"x": x, "b": i32([1, 2, 0])}, lambda p: tf.slice(p["x"], p["b"], [2, 0, 4])),
        "slice_int": ({"m": ints, "b": i32([1, 3])}, lambda p: tf.slice(p["m"], p["b"], [2, 2])),
        "slice_int64_begin": ({"x": x, "b": np.int64([0, 1, 1])}, lambda p: tf.slice(p["x"], p["b"], [3, 2, 2])),
        "index": ({"x": x, "i": i32(1)}, lambda p: p["x"][p["i"]]),
        "index_negative": ({"x": x, "i": i32(-1)}, lambda p: p["x"][p["i"]]),
        "index_const": ({"x": x, "const_i": i32(-2)}, lambda p: p["x"][p["const_i"]]),
        "index_mixed": ({"x": x, "i": i32(-3)}, lambda p: p["x"][:, p["i"], 1:3]),
        "index_two": ({"x": x, "i": i32(2), "j": i32(-4)}, lambda p: p["x"][p["i"], p["j"]]),
        "index_to_scalar": ({"v": v, "i": i32(4)}, lambda p: p["v"][p["i"]]),
        "index_new_axis": ({"x": x, "i": i32(0)}, lambda p: p["x"][None, ..., p["i"]]),
        "index_int": ({"m": ints, "i": i32(-1)}, lambda p: p["m"][:, p["i"]]),
        "band_part": ({"s": square, "lo": np.int64(1), "hi": np.int64(-1)},
                      lambda p: tf.linalg.band_part(p["s"], p["lo"], p["hi"])),
        "band_part_diagonal": ({"s": square, "lo": np.int64(0), "hi": np.int64(0)},
                               lambda p: tf.linalg.band_part(p["s"], p["lo"], p["hi"])),
        "band_part_one_side": ({"s": square, "hi": np.int64(2)},
                               lambda p: tf.linalg.band_part(p["s"], np.int64(-1), p["hi"])),
        "band_part_const": ({"s": square, "const_lo": np.int64(2), "const_hi": np.int64(0)},
                            lambda p: tf.linalg.band_part(p["s"], p["const_lo"], p["const_hi"])),
        "band_part_int": ({"m": ints, "lo": np.int64(0), "hi": np.int64(2)},
                          lambda p: tf.linalg.band_part(p["m"], p["lo"], p["hi"])),
    }
    return cases


def _build(directory) -> tuple[Any, dict[str, np.ndarray], dict[str, np.ndarray], list[str]]:
    """All cases in one frozen graph: placeholder <case>__<name>, output out_<case>."""
    graph = tf.Graph()
    feeds, fetches = {}, {}
    with graph.as_default():
        for case, (values, fn) in _cases().items():
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
    pb = directory / "runtime_values.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    return pb, feeds, expected, list(fetches)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    work = tmp_path_factory.mktemp("runtime_values")
    pb, feeds, expected, cases = _build(work)
    graph = parsers.parse(pb, ParseOptions(inputs=[f"{n}:0" for n in feeds], outputs=[f"out_{c}:0" for c in cases]))
    return passes.run_default_passes(graph), feeds, expected, work


@pytest.mark.parametrize("target", emitters.TARGETS)
def test_each_case_exact_or_refused(converted, target):
    graph, feeds, expected, work = converted
    taken, refused = op_breadth.target_split(graph, target)
    assert all(refused.values()), refused
    if target in ("torch", "onnx"):
        assert refused == {}, refused
    if target == "mxnet":  # MXNet 1.x has no rank-0 and no empty arrays
        assert set(refused) <= {"index_to_scalar", "slice_empty"}, refused
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
        if got.shape != want.shape or (want.size and verify.metrics(got, want)["max_abs"] > TOLERANCE):
            wrong[case] = (got.shape, want.shape)
    COUNTS[target] = {"exact": sorted(set(map(lambda o: op_breadth.case_of(sub, o), sub.outputs)) - set(wrong)),
                      "refused": sorted(refused), "wrong": sorted(wrong)}
    assert not wrong, wrong


# ---- a shape that follows a run-time value: refused by name, exit 3 -------------------------------------

def _shape_following() -> dict[str, tuple[Callable[[Any], Any], str]]:
    def p(dtype, shape, name):
        return tf.compat.v1.placeholder(dtype, shape, name=name)

    return {
        "pad": (lambda x: tf.pad(x, p(tf.int32, [3, 2], "pads")), "pads"),
        "reshape": (lambda x: tf.reshape(x, p(tf.int32, [2], "shape")), "shape"),
        "slice_open_end": (lambda x: x[p(tf.int32, [], "i"):], "begin"),
        "slice_size": (lambda x: tf.slice(x, [0, 0, 0], p(tf.int32, [3], "size")), "size"),
        "tile": (lambda x: tf.tile(x, p(tf.int32, [3], "multiples")), "multiples"),
        "fill": (lambda x: x[0, 0, 0] + tf.fill(p(tf.int32, [2], "dims"), 1.0), "dims"),
        "expand_dims": (lambda x: tf.expand_dims(x, p(tf.int32, [], "axis")), "axis"),
    }


@pytest.mark.parametrize("case", list(_shape_following()))
def test_a_shape_that_follows_a_value_is_refused_by_name(case, tmp_path):
    build, named = _shape_following()[case]
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3, 5, 4], name="x")
        tf.identity(build(x), name="y")
    pb = tmp_path / f"{case}.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    inputs = [f"{op.name}:0" for op in graph.get_operations() if op.type == "Placeholder"]
    with pytest.raises(UnsupportedError) as caught:
        parsers.parse(pb, ParseOptions(inputs=inputs, outputs=["y:0"]))
    message = str(caught.value)
    assert "run-time value" in message and named in message and "--input-shape" not in message, message


def teardown_module(module) -> None:
    """The figures for the issue note: cases exact / refused / wrong per target."""
    for target, split in COUNTS.items():
        print(f"\n{target}: " + ", ".join(f"{k} {len(v)}" for k, v in split.items())
              + "".join(f"\n  refused {c}" for c in split["refused"]))
