"""Parameters the graph computes while it runs, op by op in the style of TF's own op tests: each op with its
parameters as constants and as placeholders fed at run time (rank 0, negative indices, empty results), all
in one TF graph, through the parser and every target's real runtime against TF. Each case is exact on a
target or refused by it with a reason; never wrong. Ops whose output shape follows a run-time value:
test_runtime_shapes.py."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

from tests.support import op_breadth, op_tail_cases
from tf_convert import emitters, parsers
from tf_convert.app import verify
from tf_convert.convert import passes
from tf_convert.emitters.base import EmitOptions
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tensorflow.runtime_values import RUN_TIME_PARAMETERS

tf = pytest.importorskip("tensorflow")

TOLERANCE = 0.0  # copies of elements: equal, bit for bit
ARITHMETIC = {"contrast": 1e-5}  # case prefix -> max relative error: a mean over the image, summed in another order
# case -> what MXNet's refusal says: it has no empty or rank-0 arrays, and its one_hot adds the last axis only
MXNET_REFUSES = {"slice_empty": "empty tensor", "one_hot_int32_axis0": "axis other than the last",
                 "one_hot_scalar_index": "rank-0 index"}
COUNTS: dict[str, dict[str, list[str]]] = {}  # target -> exact / refused / wrong -> cases


def _x(rng: np.random.Generator, shape=(3, 5, 4), dtype=np.float32) -> np.ndarray:
    return (rng.standard_normal(shape) * 4).astype(dtype)


def _conv(x):
    """A rank-4 NHWC activation the IR holds as NCHW (exact: 1x1, weights 2 * identity)."""
    c = x.shape[-1]
    return tf.nn.conv2d(x, (2 * np.eye(c, dtype=np.float32)).reshape(1, 1, c, c), 1, "SAME")


def _taps(channels_in: int, channels_out: int, rank: int) -> np.ndarray:
    """A transposed conv's filter (kernel 3, TF's (..., out, in) order) with one tap per output channel: each
    output element is one product, exact in every runtime."""
    w = np.zeros((3,) * rank + (channels_out, channels_in), np.float32)
    for k in range(channels_out):
        w[(1,) * rank + (k, k % channels_in)] = 1.0 + k
    return w


# case -> (feeds: name -> value, the op on placeholders named like the feeds). A feed whose name starts with
# "const_" is baked into the graph as a constant: the same op with the parameter known at conversion.
Case = tuple[dict[str, np.ndarray], Callable[[dict[str, Any]], Any]]


def _cases() -> dict[str, Case]:
    rng = np.random.default_rng(43)
    x, v, ints = _x(rng), _x(rng, (6,)), _x(rng, (4, 6), np.int32)
    square = _x(rng, (2, 4, 4))
    image = _x(rng, (2, 5, 8, 3))
    i32 = np.int32
    ids = i32([[0, 3, -1], [5, 1, 2]])  # out of range and negative ids: an all-off row, as TF
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
        "gather_batch_dims": ({"x": x, "i": i32([[4, 0], [1, 1], [2, 3]])},
                              lambda p: tf.gather(p["x"], p["i"], axis=1, batch_dims=1)),
        "gather_batch_dims_middle": ({"x": x, "i": i32([[[3, 0]], [[1, 1]], [[2, 0]]])},
                                     lambda p: tf.gather(p["x"], p["i"], axis=2, batch_dims=1)),
        "gather_batch_dims_const": ({"x": x, "const_i": i32([[4, 0], [1, 1], [2, 3]])},
                                    lambda p: tf.gather(p["x"], p["const_i"], axis=-2, batch_dims=-1)),
        "gather_batch_dims_two": ({"x": x, "i": np.int64(rng.integers(0, 4, (3, 5, 2)))},
                                  lambda p: tf.gather(p["x"], p["i"], axis=2, batch_dims=2)),
        "gather_batch_dims_int": ({"m": ints, "i": i32([[5], [0], [2], [3]])},
                                  lambda p: tf.gather(p["m"], p["i"], axis=1, batch_dims=1)),
        "scatter_update": ({"m": ints, "i": i32([[3], [0]]), "u": _x(rng, (2, 6), np.int32)},
                           lambda p: tf.tensor_scatter_nd_update(p["m"], p["i"], p["u"])),
        "scatter_update_elements": ({"x": x, "i": np.int64([[2, 4], [0, 0], [1, 3]]), "u": _x(rng, (3, 4))},
                                    lambda p: tf.tensor_scatter_nd_update(p["x"], p["i"], p["u"])),
        "scatter_update_scalars": ({"v": v, "i": i32([[5], [1]]), "u": _x(rng, (2,))},
                                   lambda p: tf.tensor_scatter_nd_update(p["v"], p["i"], p["u"])),
        "scatter_update_repeated": ({"v": v, "i": i32([[1], [4], [1]]), "u": _x(rng, (3,))},  # the last one wins
                                    lambda p: tf.tensor_scatter_nd_update(p["v"], p["i"], p["u"])),
        "scatter_update_const": ({"x": x, "const_i": i32([[2], [0]]), "u": _x(rng, (2, 5, 4))},
                                 lambda p: tf.tensor_scatter_nd_update(p["x"], p["const_i"], p["u"])),
        "gather_nd": ({"x": x, "i": i32([[2, 4], [0, 1], [2, 0]])}, lambda p: tf.gather_nd(p["x"], p["i"])),
        # OneHot to integer and bool types (made float32, cast: exact for whole on/off values)
        "one_hot_int64": ({"ids": ids}, lambda p: tf.one_hot(p["ids"], 4, on_value=np.int64(7),
                                                            off_value=np.int64(-2), dtype=tf.int64)),
        "one_hot_int32_axis0": ({"ids": ids}, lambda p: tf.one_hot(p["ids"], 3, axis=0, dtype=tf.int32)),
        "one_hot_uint8": ({"ids": ids}, lambda p: tf.cast(tf.one_hot(p["ids"], 5, dtype=tf.uint8), tf.int32)),
        "one_hot_bool": ({"ids": ids}, lambda p: tf.one_hot(p["ids"], 4, on_value=True, off_value=False,
                                                           dtype=tf.bool)),
        "one_hot_scalar_index": ({"i": i32(2)}, lambda p: tf.one_hot(p["i"], 4, dtype=tf.int32)),
        "roll": ({"x": x, "s": i32(-7)}, lambda p: tf.roll(p["x"], p["s"], 1)),
        "roll_two_axes": ({"img": image, "s": i32([3, 1, -2])}, lambda p: tf.roll(_conv(p["img"]), p["s"], [2, 1, 2])),
        "roll_mixed": ({"x": x, "s": i32(2)}, lambda p: tf.roll(p["x"], tf.stack([p["s"], 1]), [0, 2])),
        "contrast": ({"img": image, "f": np.float32(1.7)}, lambda p: tf.image.adjust_contrast(_conv(p["img"]), p["f"])),
        "contrast_const": ({"img": image, "const_f": np.float32(0.3)},
                           lambda p: tf.image.adjust_contrast(p["img"], p["const_f"])),
        # sizes computed from tf.shape (static once the input's shape is given): folded while converting
        "deconv_shape_computed": ({"img": image}, lambda p: tf.nn.conv2d_transpose(
            p["img"], _taps(3, 4, 2), tf.stack([tf.shape(p["img"])[0], tf.shape(p["img"])[1] * 2,
                                                tf.shape(p["img"])[2] * 2, 4]), 2, "SAME")),
        "conv3d_backprop_shape_computed": ({"img": image}, lambda p: tf.nn.conv3d_transpose(
            p["img"][None], _taps(3, 2, 3), tf.concat([[1], tf.shape(p["img"])[:3] * [1, 2, 1], [2]], 0),
            [1, 1, 2, 1, 1], "SAME")),
        "crop_size_computed": ({"img": image, "boxes": np.float32([[0.1, 0.0, 0.9, 0.7], [0.5, 0.2, 1.0, 1.0]]),
                                "box_ind": i32([1, 0])},
                               lambda p: tf.image.crop_and_resize(p["img"], p["boxes"], p["box_ind"],
                                                                  tf.shape(p["img"])[1:3] // 2 + 1)),
        # SpaceToBatchND / BatchToSpaceND on their own (constant blocks: the op tail)
        "space_to_batch": ({"img": image}, lambda p: tf.space_to_batch_nd(p["img"], [2, 3], [[1, 0], [0, 1]])),
        "space_to_batch_1d": ({"x": x}, lambda p: tf.space_to_batch_nd(p["x"], [3], [[0, 1]])),
        "space_to_batch_conv": ({"img": image},
                                lambda p: tf.space_to_batch_nd(_conv(p["img"]), [2, 2], [[1, 0], [0, 0]])),
        "batch_to_space": ({"img": image}, lambda p: tf.batch_to_space(p["img"], [2, 1], [[1, 0], [0, 2]])),
        "batch_to_space_1d": ({"x": x}, lambda p: tf.batch_to_space(p["x"], [3], [[1, 1]])),
        "space_batch_round_trip": ({"img": image}, lambda p: tf.batch_to_space(
            tf.space_to_batch_nd(p["img"], [2, 2], [[1, 0], [0, 2]]) * 2.0, [2, 2], [[1, 0], [0, 2]])),
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
    if target == "mxnet":
        assert all(MXNET_REFUSES[c] in hint for c, hint in refused.items()), refused
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
        tolerance = next((t for prefix, t in ARITHMETIC.items() if case.startswith(prefix)), None)
        same = got.shape == want.shape and want.size
        error = verify.metrics(got, want)["max_abs" if tolerance is None else "max_rel"] if same else 0.0
        if got.shape != want.shape or error > (tolerance or TOLERANCE):
            wrong[case] = (got.shape, want.shape)
    COUNTS[target] = {"exact": sorted(set(map(lambda o: op_breadth.case_of(sub, o), sub.outputs)) - set(wrong)),
                      "refused": sorted(refused), "wrong": sorted(wrong)}
    assert not wrong, wrong


def test_every_run_time_parameter_is_run():
    """Each entry of the parser's table of run-time parameters is fed by a placeholder in some case above."""
    covered = set()
    with tf.Graph().as_default() as graph:
        for values, fn in [*_cases().values(), *op_tail_cases.cases().values()]:  # the op tail's too
            held = {n: tf.constant(v) if n.startswith("const_") else tf.compat.v1.placeholder(
                tf.as_dtype(v.dtype), v.shape) for n, v in values.items()}
            fn(held)
    fed = set()
    for op in graph.get_operations():  # in creation order: inputs first
        if op.type == "Placeholder" or any(t.op.name in fed for t in op.inputs):
            fed.add(op.name)
        if any(t.op.name in fed for t in op.inputs[1:]):
            covered.add(op.type)
    assert set(RUN_TIME_PARAMETERS) <= covered, set(RUN_TIME_PARAMETERS) - covered


def teardown_module(module) -> None:
    """The figures for the issue note: cases exact / refused / wrong per target."""
    for target, split in COUNTS.items():
        print(f"\n{target}: " + ", ".join(f"{k} {len(v)}" for k, v in split.items())
              + "".join(f"\n  refused {c}" for c in split["refused"]))
