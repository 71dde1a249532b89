"""Sizes that follow run-time values (convert.ir.runtime_dims): a Reshape to a fed shape, a Fill of fed dims, a Pad
of fed paddings, a slice to fed bounds, a one-hot of a fed depth, a Range of fed bounds. All cases in one TF graph,
parsed once; PyTorch and ONNX run each case at two different parameter values (empty and rank-0 results among
them) against TF, exactly; MXNet and Caffe refuse each by name. An op that needs such a size while converting is
refused by name (exit 3), never "pass --input-shape"."""

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
from tf_convert.emitters.options import OnnxOptions
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tensorflow.runtime_shapes import RUN_TIME_SIZES

tf = pytest.importorskip("tensorflow")

i32, i64, f32 = np.int32, np.int64, np.float32
X = (np.random.default_rng(43).standard_normal((3, 5, 4)) * 4).astype(np.float32)
IDS = i32([0, 3, -1, 5])  # a negative and an out-of-range id: all-off rows, as TF

# case -> (its run-time parameters: name -> (dtype, static shape), the op on x and the parameters, the
# parameters' values at run A and at run B)
Case = tuple[dict[str, tuple[Any, list[int]]], Callable[[Any, dict[str, Any]], Any], dict[str, Any], dict[str, Any]]
CASES: dict[str, Case] = {
    "pad": ({"pads": (tf.int32, [3, 2])}, lambda x, p: tf.pad(x, p["pads"]),
            {"pads": i32([[1, 0], [0, 2], [3, 1]])}, {"pads": i32([[0, 0], [0, 0], [0, 0]])}),
    "pad_v2_int64": ({"pads": (tf.int64, [3, 2])}, lambda x, p: tf.pad(x, p["pads"], constant_values=-1.5),
                     {"pads": i64([[0, 1], [2, 2], [0, 0]])}, {"pads": i64([[1, 1], [0, 0], [4, 0]])}),
    "pad_rank0": ({"pads": (tf.int32, [0, 2])}, lambda x, p: tf.pad(x[1, 2, 3], p["pads"]),
                  {"pads": i32(np.zeros((0, 2)))}, {"pads": i32(np.zeros((0, 2)))}),
    "pad_rank1": ({"pads": (tf.int32, [1, 2])}, lambda x, p: tf.pad(x[0, 1], p["pads"], constant_values=2.0),
                  {"pads": i32([[2, 0]])}, {"pads": i32([[0, 3]])}),
    "mirror_pad_reflect": ({"pads": (tf.int32, [3, 2])}, lambda x, p: tf.pad(x, p["pads"], "REFLECT"),
                           {"pads": i32([[2, 0], [0, 4], [3, 1]])}, {"pads": i32([[0, 0], [0, 0], [0, 0]])}),
    "mirror_pad_symmetric": ({"pads": (tf.int64, [3, 2])}, lambda x, p: tf.pad(x, p["pads"], "SYMMETRIC"),
                             {"pads": i64([[3, 0], [2, 5], [0, 4]])}, {"pads": i64([[0, 1], [0, 0], [1, 1]])}),
    "mirror_pad_rank4": ({"pads": (tf.int32, [4, 2])}, lambda x, p: tf.pad(x[None], p["pads"], "SYMMETRIC"),
                         {"pads": i32([[1, 0], [0, 3], [1, 1], [0, 2]])},
                         {"pads": i32([[0, 1], [1, 0], [0, 0], [4, 0]])}),
    "mirror_pad_rank1": ({"pads": (tf.int32, [1, 2])}, lambda x, p: tf.pad(x[2, 1], p["pads"], "REFLECT"),
                         {"pads": i32([[3, 1]])}, {"pads": i32([[0, 2]])}),
    "reshape": ({"shape": (tf.int32, [2])}, lambda x, p: tf.reshape(x, p["shape"]),
                {"shape": i32([4, 15])}, {"shape": i32([-1, 2])}),
    "reshape_empty": ({"shape": (tf.int32, [3])}, lambda x, p: tf.reshape(x[:0], p["shape"]),
                      {"shape": i32([0, 3, 1])}, {"shape": i32([2, 0, 7])}),
    "reshape_to_scalar": ({"shape": (tf.int32, [0])}, lambda x, p: tf.reshape(x[1, 2, 3], p["shape"]),
                          {"shape": i32([])}, {"shape": i32([])}),
    "slice_open_end": ({"i": (tf.int32, [])}, lambda x, p: x[p["i"]:], {"i": i32(1)}, {"i": i32(-1)}),
    "slice_bounds": ({"i": (tf.int32, [])}, lambda x, p: x[:, 1:p["i"], 2:], {"i": i32(-1)}, {"i": i32(9)}),
    # strides other than 1 (backward ones too), masks, an ellipsis and new axes around run-time bounds
    "strided_step2": ({"b": (tf.int32, []), "e": (tf.int32, [])}, lambda x, p: x[:, p["b"]:p["e"]:2],
                      {"b": i32(1), "e": i32(5)}, {"b": i32(-4), "e": i32(-1)}),
    "strided_backward": ({"b": (tf.int32, [])}, lambda x, p: x[:, p["b"]::-1],
                         {"b": i32(3)}, {"b": i32(-10)}),
    "strided_backward_step2": ({"b": (tf.int64, []), "e": (tf.int64, [])},
                               lambda x, p: x[p["e"]:p["b"]:-2, :, 1:p["e"]],
                               {"b": i64(0), "e": i64(7)}, {"b": i64(-3), "e": i64(2)}),
    "strided_ellipsis": ({"e": (tf.int32, [])}, lambda x, p: x[..., 1:p["e"]:3], {"e": i32(4)}, {"e": i32(-1)}),
    "strided_new_axes": ({"b": (tf.int32, [])}, lambda x, p: x[None, ::-1, None, p["b"]:],
                         {"b": i32(2)}, {"b": i32(-9)}),
    # resizes to a run-time size, every flag combination TF allows (TF's grid computed while the model runs)
    **{f"resize_{method}{flag}": (
        {"size": (tf.int32, [2])},
        lambda x, p, op=op, flags=flags: op(images=x[None], size=p["size"], **flags),
        {"size": i32([7, 9])}, {"size": i32([1, 2])} if flag != "_align" else {"size": i32([2, 1])})
        for method, op in (("bilinear", tf.compat.v1.raw_ops.ResizeBilinear),
                           ("nearest", tf.compat.v1.raw_ops.ResizeNearestNeighbor))
        for flag, flags in (("", {}), ("_half_pixel", {"half_pixel_centers": True}),
                            ("_align", {"align_corners": True}))},
    "image_resize_computed": ({"n": (tf.int32, [])},
                              lambda x, p: tf.image.resize(x[None], tf.stack([p["n"], p["n"] * 2])),
                              {"n": i32(4)}, {"n": i32(1)}),
    "slice_size": ({"size": (tf.int32, [3])}, lambda x, p: tf.slice(x, [0, 0, 0], p["size"]),
                   {"size": i32([2, -1, 3])}, {"size": i32([0, 5, 4])}),
    "slice_begin_size": ({"b": (tf.int32, [3]), "s": (tf.int32, [3])}, lambda x, p: tf.slice(x, p["b"], p["s"]),
                         {"b": i32([1, 0, 2]), "s": i32([2, 3, -1])}, {"b": i32([0, 4, 0]), "s": i32([-1, 1, 4])}),
    "tile": ({"multiples": (tf.int32, [3])}, lambda x, p: tf.tile(x, p["multiples"]),
             {"multiples": i32([2, 1, 3])}, {"multiples": i32([1, 0, 1])}),
    "fill": ({"dims": (tf.int32, [2])}, lambda x, p: x[0, 0, 0] + tf.fill(p["dims"], 1.0),
             {"dims": i32([2, 3])}, {"dims": i32([0, 4])}),
    "fill_scalar": ({"dims": (tf.int32, [0])}, lambda x, p: x[0, 1, 2] * tf.fill(p["dims"], 2.5),
                    {"dims": i32([])}, {"dims": i32([])}),
    "broadcast_to": ({"shape": (tf.int64, [3])}, lambda x, p: tf.broadcast_to(x[0], p["shape"]),
                     {"shape": i64([2, 5, 4])}, {"shape": i64([0, 5, 4])}),
    "expand_dims": ({"axis": (tf.int32, [])}, lambda x, p: tf.expand_dims(x, p["axis"]),
                    {"axis": i32(0)}, {"axis": i32(-1)}),
    "one_hot_depth": ({"ids": (tf.int32, [4]), "depth": (tf.int32, [])},
                      lambda x, p: x[0, 0, 0] + tf.one_hot(p["ids"], p["depth"]),
                      {"ids": IDS, "depth": i32(4)}, {"ids": IDS, "depth": i32(6)}),
    "one_hot_int_axis0": ({"depth": (tf.int32, [])},
                          lambda x, p: tf.one_hot(IDS, p["depth"], axis=0, on_value=7, off_value=-2, dtype=tf.int32),
                          {"depth": i32(3)}, {"depth": i32(0)}),
    "one_hot_scalar_index": ({"i": (tf.int32, []), "depth": (tf.int32, [])},
                             lambda x, p: tf.one_hot(p["i"], p["depth"]), {"i": i32(2), "depth": i32(4)},
                             {"i": i32(2), "depth": i32(2)}),
    "expand_dims_scalar": ({"axis": (tf.int32, [])}, lambda x, p: tf.expand_dims(x[2, 1, 0], p["axis"]),
                           {"axis": i32(0)}, {"axis": i32(-1)}),
    "range": ({"n": (tf.int32, [])}, lambda x, p: tf.cast(tf.range(p["n"]), tf.float32) * x[0, 0, 0],
              {"n": i32(5)}, {"n": i32(0)}),
    "range_bounds_int64": ({"start": (tf.int64, []), "limit": (tf.int64, []), "delta": (tf.int64, [])},
                           lambda x, p: tf.range(p["start"], p["limit"], p["delta"]),
                           {"start": i64(2), "limit": i64(11), "delta": i64(3)},
                           {"start": i64(5), "limit": i64(-3), "delta": i64(-2)}),
    # float ranges: TF's length ceil(|(limit - start) / delta|) and start + float(i) * delta in the inputs' type
    "range_float": ({"start": (tf.float32, []), "limit": (tf.float32, []), "delta": (tf.float32, [])},
                    lambda x, p: tf.range(p["start"], p["limit"], p["delta"]),
                    {"start": f32(0.1), "limit": f32(100.0), "delta": f32(0.1)},
                    {"start": f32(10.0), "limit": f32(-5.0), "delta": f32(-0.3)}),
    "range_float_length": ({"n": (tf.float32, [])}, lambda x, p: x[0, 0, 0] * tf.range(p["n"]),
                           {"n": f32(5.5)}, {"n": f32(0.0)}),
    "bincount_size": ({"n": (tf.int32, [])}, lambda x, p: x[1, 1, 1] * tf.raw_ops.Bincount(
        arr=i32([1, 3, 1, 0]), size=p["n"], weights=X[0, 0]), {"n": i32(5)}, {"n": i32(0)}),
    "dense_bincount_size": ({"n": (tf.int64, [])}, lambda x, p: tf.raw_ops.DenseBincount(
        input=i64([[2, 2, 0], [1, 7, 1]]), size=p["n"], weights=f32([])) * x[0, 0, 0], {"n": i64(3)}, {"n": i64(8)}),
}
# a shape vector of length 0 holds no value: TF knows the (rank-0) result, the graph stays static
STATIC = {"reshape_to_scalar", "fill_scalar", "pad_rank0"}


def _build(directory) -> tuple[Any, list[str], list[dict[str, np.ndarray]], list[dict[str, np.ndarray]]]:
    """All cases in one frozen graph (placeholders <case>__<name>, outputs out_<case>); TF's outputs at runs A
    and B."""
    graph = tf.Graph()
    runs: list[dict[str, np.ndarray]] = [{}, {}]
    fetches = {}
    with graph.as_default():
        for case, (params, fn, *values) in CASES.items():
            x = tf.compat.v1.placeholder(tf.float32, X.shape, name=f"{case}__x")
            held = {n: tf.compat.v1.placeholder(d, s, name=f"{case}__{n}") for n, (d, s) in params.items()}
            fetches[case] = tf.identity(fn(x, held), name=f"out_{case}")
            for run, given in zip(runs, values):
                run.update({f"{case}__{n}": np.asarray(v) for n, v in given.items()})
                if x.consumers():  # a case that reads x
                    run[f"{case}__x"] = X
        with tf.compat.v1.Session() as sess:
            expected = [sess.run(fetches, {f"{n}:0": v for n, v in run.items()}) for run in runs]
    pb = directory / "runtime_shapes.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    return pb, list(runs[0]), runs, expected


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    work = tmp_path_factory.mktemp("runtime_shapes")
    pb, inputs, runs, expected = _build(work)
    graph = parsers.parse(pb, ParseOptions(inputs=[f"{n}:0" for n in inputs], outputs=[f"out_{c}:0" for c in CASES]))
    return passes.run_default_passes(graph), runs, expected, work


def test_the_graph_holds_run_time_sizes_and_agrees_with_its_shape_rules(converted):
    graph = converted[0]
    assert check.problems(graph) == []
    assert {n.op for n in graph.nodes} >= {"reshape_to", "broadcast_to", "tile_by", "pad_by", "slice_to", "one_hot_by",
                                           "range", "expand_dims_by"}


@pytest.mark.parametrize("target", ["torch", "onnx"])
def test_each_case_exact_at_two_parameter_values(converted, target):
    graph, runs, expected, work = converted
    taken, refused = op_breadth.target_split(graph, target)
    assert refused == {}, refused
    emitter = emitters.get(target)
    out = work / target
    out.mkdir()
    emitter.emit(graph, out, EmitOptions())
    wrong = {}
    for run, want_all in zip(runs, expected):
        for name, got in zip(graph.outputs, emitter.run(out, op_breadth.ir_feeds(graph, run))):
            case = op_breadth.case_of(graph, name)
            want, got = op_breadth.ir_expected(graph, name, np.asarray(want_all[case])), np.asarray(got)
            if got.shape != want.shape or got.dtype != want.dtype or not np.array_equal(got, want):
                wrong[case] = (got.shape, got.dtype, want.shape, want.dtype)
    assert not wrong, wrong


def test_onnx_opset_13_reshapes_a_non_empty_tensor(converted):
    """Reshape's allowzero (opset 14) matters only where TF's shape can hold a 0: the input may be empty (a
    non-empty one with a 0 in its shape is TF's error). At opset 13 the others run exactly, that one is refused."""
    graph, runs, expected, work = converted
    options = OnnxOptions(opset=13)
    problems = emitters.get("onnx").unsupported(graph, options)
    refused = {op_breadth.case_of(graph, o) for o in graph.outputs
               if op_breadth._ancestors(graph, o) & {p.node for p in problems}}
    assert refused == {"reshape_empty"} and all("opset 14" in p.hint for p in problems), problems
    kept = [o for o in graph.outputs if op_breadth.case_of(graph, o).startswith("reshape") and
            op_breadth.case_of(graph, o) not in refused]
    sub = op_breadth.trimmed(graph, kept)
    out = work / "onnx13"
    out.mkdir()
    emitters.get("onnx").emit(sub, out, options)
    for run, want_all in zip(runs, expected):
        for name, got in zip(sub.outputs, emitters.get("onnx").run(out, op_breadth.ir_feeds(sub, run))):
            want = want_all[op_breadth.case_of(sub, name)]
            assert np.array_equal(got, want) and got.shape == want.shape, name


@pytest.mark.parametrize("target", ["mxnet", "caffe"])
def test_each_case_refused_naming_the_run_time_size(converted, target):
    graph = converted[0]
    problems = emitters.get(target).unsupported(graph)
    refused = op_breadth.target_split(graph, target)[1]
    assert set(refused) == set(CASES) - STATIC, set(refused) ^ (set(CASES) - STATIC)
    sized = {p.node for p in problems if "follows a run-time value" in p.hint}
    for name in graph.outputs:  # each case has a node refused for its run-time size, whatever else it refuses
        if op_breadth.case_of(graph, name) not in STATIC:
            assert op_breadth._ancestors(graph, name) & sized, op_breadth.case_of(graph, name)


def test_the_model_py_scripts(converted):
    """model.py stays plain torch that torch.jit.script takes (torch.export cannot follow data-dependent sizes)."""
    torch = pytest.importorskip("torch")
    from tf_convert.emitters.torch.runner import import_model, load_weights

    graph, runs, expected, work = converted
    out = work / "torch_script"
    out.mkdir()
    emitters.get("torch").emit(graph, out, EmitOptions())
    module = import_model(out)
    scripted = torch.jit.script(load_weights(module, out))
    inputs = [torch.from_numpy(np.ascontiguousarray(x)) for x in op_breadth.ir_feeds(graph, runs[1])]
    got = scripted(*inputs)
    case = "reshape"
    want = expected[1][case]
    assert np.array_equal(got[graph.outputs.index(f"out_{case}")].numpy(), want)


def test_every_entry_of_the_table_is_run():
    """Each TF op of the parser's RUN_TIME_SIZES (docs/ops.md's column) is fed a placeholder parameter above."""
    covered = set()
    with tf.Graph().as_default() as graph:
        for params, fn, *_ in CASES.values():
            x = tf.compat.v1.placeholder(tf.float32, X.shape)
            fn(x, {n: tf.compat.v1.placeholder(d, s) for n, (d, s) in params.items()})
    fed = set()
    for op in graph.get_operations():  # in creation order: inputs first
        reads = {t.op.name for t in op.inputs}
        if op.type == "Placeholder" and op.outputs[0].dtype.is_integer or reads & fed:
            fed.add(op.name)
        if reads & fed:
            covered.add(op.type)
    assert set(RUN_TIME_SIZES) <= covered, set(RUN_TIME_SIZES) - covered


# ---- what still needs a size while converting: refused by name, exit 3 -------------------------------------

def _refused() -> dict[str, tuple[Callable[[Any], Any], str]]:
    def p(dtype, shape, name):
        return tf.compat.v1.placeholder(dtype, shape, name=name)

    return {
        # a conv's weights and pads need the channels and the spatial size
        "conv_after_reshape": (lambda x: tf.nn.conv2d(tf.reshape(x, p(tf.int32, [4], "shape")),
                                                      np.ones((1, 1, 4, 2), np.float32), 1, "SAME"), "Conv2D"),
        "deconv_output_shape": (lambda x: tf.nn.conv2d_transpose(
            x[None], np.ones((3, 3, 2, 4), np.float32), p(tf.int32, [4], "shape"), 2, "SAME"), "Conv2DBackpropInput"),
        "crop_size": (lambda x: tf.image.crop_and_resize(x[None], [[0.0, 0.1, 0.9, 1.0]], [0],
                                                         p(tf.int32, [2], "size")), "crop_size"),
        "strided_shrink": (lambda x: x[:, 1:p(tf.int32, [], "e"), 2], "shrunk axis"),
        "strided_run_time_step": (lambda x: x[::p(tf.int32, [], "s")], "strides"),
    }


@pytest.mark.parametrize("case", list(_refused()))
def test_what_needs_the_size_while_converting_is_refused_by_name(case, tmp_path):
    build, named = _refused()[case]
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
    assert "run-time" in message and named in message and "--input-shape" not in message, message


# ---- end to end: --verify runs the model at the values --feed gives, and says so -------------------------------

@pytest.fixture(scope="module")
def reshape_pb(tmp_path_factory):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3, 5, 4], name="x")
        tf.identity(tf.reshape(x, tf.compat.v1.placeholder(tf.int32, [2], name="shape")) * 2.0, name="y")
    pb = tmp_path_factory.mktemp("reshape") / "reshape.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    return pb


def test_verify_runs_at_the_fed_values_and_records_them(reshape_pb, tmp_path):
    from tf_convert.app import api

    doc = api.convert(reshape_pb, "onnx", tmp_path / "out", outputs="y:0", verify=True, feeds=["shape=[-1, 6]"])
    assert doc["verify"]["passed"] and doc["verify"]["max_abs"] == 0.0
    assert doc["verify_feeds"] == {"shape": [-1, 6]}
    assert doc["outputs"][0]["shape"] == [-1, -1]  # sizes that follow the run-time value


@pytest.mark.parametrize("target, feeds, code, says", [
    ("onnx", None, 2, "--feed shape="),  # a shape drawn at random would fail TF, not check the model
    ("onnx", ["shape=[4]"], 2, "the input has shape [2]"),
    ("mxnet", None, 3, "follows a run-time value"),
])
def test_what_cannot_be_checked_or_written_is_refused(reshape_pb, tmp_path, target, feeds, code, says):
    from tf_convert.app import api
    from tf_convert.convert.errors import ConvertError

    with pytest.raises(ConvertError) as caught:
        api.convert(reshape_pb, target, tmp_path / "out", outputs="y:0", verify=True, feeds=feeds)
    assert caught.value.exit_code == code and says in str(caught.value), str(caught.value)
    assert not (tmp_path / "out").exists()
