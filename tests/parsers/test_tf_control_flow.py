"""Run-time control flow: TF While loops whose trip count the data decides and If/cond with a run-time
predicate become IR while_loop / cond nodes with nested graphs, written as a plain Python while/if in
PyTorch's model.py and as ONNX Loop/If; MXNet runs a conditional as both branches and `where`, refuses a loop by
name; Caffe refuses both.

Fixtures (tf.function graphs frozen to .pb, weights as constants):
- `counter`: a counter bounded by an input scalar `n` (the trip count is n);
- `reduced`: a condition on a reduced value (sum(y) < 10, y grown by the body);
- `conv`: an NHWC image as the loop variable, a conv applied n times;
- `nested`: an outer loop bounded by `n` whose body runs an inner data-dependent loop and a matmul;
- `nested_pairs`: an outer loop whose body reads both values of an inner loop and of a cond;
- `cond`: tf.cond on sum(x) > 1 between a matmul branch and an elementwise one;
- `cond_loop`: tf.cond whose taken branch runs a data-dependent loop that would never end if the branch
  ran when not taken (a select of both branches would hang);
- `tf1_loop`, `tf1_cond`: the counter loop and a cond as TF 1.x wrote them (Enter/Merge/Switch/LoopCond/Exit
  frames; Switch/Merge).
Each is run in TF, in the IR's numpy reference, in PyTorch and in onnxruntime at two inputs that give
different trip counts (different branches) and compared.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tf_convert import cli, emitters
from tf_convert.app import verify
from tf_convert.convert import ir
from tf_convert.convert.ir import check
from tf_convert.convert.ir.subgraph import Subgraph, walk
from tf_convert.emitters.base import EmitOptions
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tensorflow import parse, run_reference

RTOL = 1e-5
W = np.linspace(-0.6, 0.5, 16, dtype=np.float32).reshape(4, 4)
X_SMALL = np.array([[0.1, 0.3, -0.2, 0.4]], np.float32)
X_LARGE = np.array([[1.5, 2.0, 0.5, 1.0]], np.float32)
IMAGE = np.random.default_rng(5).standard_normal((1, 2, 5, 6)).astype(np.float32)  # NCHW, as the IR takes it


def _counter(tf):
    def f(x, n):
        return tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * 1.25 + 0.5), [tf.constant(0), x])[1]
    return f, [tf.TensorSpec((1, 4), tf.float32), tf.TensorSpec((), tf.int32)]


def _reduced(tf):
    def f(x):
        return tf.while_loop(lambda i, y: tf.reduce_sum(y) < 10.0, lambda i, y: (i + 1, y * 1.5 + 0.25),
                             [tf.constant(0), x])[1]
    return f, [tf.TensorSpec((1, 4), tf.float32)]


def _nested(tf):
    w = tf.constant(W)

    def body(i, h):
        _, h = tf.while_loop(lambda j, g: tf.reduce_max(tf.abs(g)) < 4.0, lambda j, g: (j + 1, g * 2.0 + 0.125),
                             [tf.constant(0), h])
        return i + 1, tf.tanh(tf.matmul(h, w)) + h * 0.5

    def f(x, n):
        return tf.while_loop(lambda i, h: i < n, body, [tf.constant(0), x])[1]
    return f, [tf.TensorSpec((1, 4), tf.float32), tf.TensorSpec((), tf.int32)]


def _nested_pairs(tf):
    """An inner loop read for both its values, and a cond for both of its, inside an outer loop's body."""
    def body(i, h):
        j, g = tf.while_loop(lambda j, g: tf.reduce_max(tf.abs(g)) < 4.0, lambda j, g: (j + 1, g * 2.0 + 0.125),
                             [tf.constant(0), h])
        a, b = tf.cond(j > 1, lambda: (g * 0.5, j - 1), lambda: (g - 0.25, j + 2))
        return i + 1, tf.tanh(a) + tf.cast(b, tf.float32) * 0.125

    def f(x, n):
        return tf.while_loop(lambda i, h: i < n, body, [tf.constant(0), x])[1]
    return f, [tf.TensorSpec((1, 4), tf.float32), tf.TensorSpec((), tf.int32)]


def _cond(tf):
    w = tf.constant(W)

    def f(x):
        return tf.cond(tf.reduce_sum(x) > 1.0, lambda: tf.matmul(x, w) + 1.0, lambda: x * 2.0 - 1.0)
    return f, [tf.TensorSpec((1, 4), tf.float32)]


def _conv(tf):
    """An NHWC image as the loop variable (NCHW in the IR, inside the body too): a conv applied n times."""
    kernel = tf.constant(np.linspace(-0.3, 0.4, 36, dtype=np.float32).reshape(3, 3, 2, 2))

    def f(x, n):
        step = lambda i, y: (i + 1, tf.nn.relu(tf.nn.conv2d(y, kernel, 1, "SAME")) + 0.1)  # noqa: E731
        return tf.while_loop(lambda i, y: i < n, step, [tf.constant(0), x])[1]
    return f, [tf.TensorSpec((1, 5, 6, 2), tf.float32), tf.TensorSpec((), tf.int32)]


def _cond_loop(tf):
    """A branch that must not run when not taken: for sum(x) <= 0 its loop would never end (y grows ever more
    negative), so computing both branches and selecting would hang; only a real conditional is exact."""
    def f(x):
        grow = lambda: tf.while_loop(lambda y: tf.reduce_sum(y) < 10.0, lambda y: (y * 1.5 + 0.25,), [x])[0]  # noqa: E731
        return tf.cond(tf.reduce_sum(x) > 0.0, grow, lambda: x - 1.0)
    return f, [tf.TensorSpec((1, 4), tf.float32)]


def _tf1(kind: str):
    """The counter loop or the cond as TF 1.x wrote them (control flow v2 off: Enter/Merge/Switch/LoopCond/Exit
    frames, Switch/Merge conds): builders of a GraphDef."""
    def build(tf):
        tf.compat.v1.disable_control_flow_v2()
        try:
            graph = tf.Graph()
            with graph.as_default():
                x = tf.compat.v1.placeholder(tf.float32, (1, 4), name="x")
                if kind == "loop":
                    n = tf.compat.v1.placeholder(tf.int32, (), name="n")
                    _, y = tf.compat.v1.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * 1.25 + 0.5),
                                                   [tf.constant(0), x])
                else:
                    y = tf.compat.v1.cond(tf.reduce_sum(x) > 1.0, lambda: tf.matmul(x, W) + 1.0, lambda: x * 2.0 - 1.0)
                tf.identity(y, name="y")
        finally:
            tf.compat.v1.enable_control_flow_v2()
        return graph.as_graph_def(), None
    return build


# fixture -> (builder, input names, two input sets giving different trip counts / branches)
CASES = {
    "counter": (_counter, "x,n", [[X_SMALL, np.int32(3)], [X_SMALL, np.int32(7)]]),
    "reduced": (_reduced, "x", [[X_SMALL], [X_LARGE]]),
    "nested": (_nested, "x,n", [[X_SMALL, np.int32(2)], [X_LARGE, np.int32(4)]]),
    "nested_pairs": (_nested_pairs, "x,n", [[X_SMALL, np.int32(1)], [X_LARGE, np.int32(3)]]),
    "cond": (_cond, "x", [[X_SMALL], [X_LARGE]]),
    "cond_loop": (_cond_loop, "x", [[X_SMALL], [-X_LARGE]]),
    "conv": (_conv, "x,n", [[IMAGE, np.int32(1)], [IMAGE, np.int32(3)]]),
    "tf1_loop": (_tf1("loop"), "x,n", [[X_SMALL, np.int32(2)], [X_SMALL, np.int32(5)]]),
    "tf1_cond": (_tf1("cond"), "x", [[X_SMALL], [X_LARGE]]),
}


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


def _frozen(tf, directory: Path, case: str) -> Path:
    build, _, _ = CASES[case]
    fn, signature = build(tf)
    graph_def = fn if signature is None else tf.function(fn, input_signature=signature).get_concrete_function(
    ).graph.as_graph_def()
    path = directory / f"{case}.pb"
    path.write_bytes(graph_def.SerializeToString())
    return path


def _output(tf, path: Path) -> str:
    graph_def = tf.compat.v1.GraphDef.FromString(path.read_bytes())
    return [n.name for n in graph_def.node if n.op == "Identity"][-1]


@pytest.fixture(scope="module")
def sources(tf, tmp_path_factory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("control_flow")
    return {case: _frozen(tf, directory, case) for case in CASES}


@pytest.mark.parametrize("case", sorted(CASES))
def test_runtime_control_flow_matches_tensorflow(tf, sources, tmp_path, case):
    _, inputs, feeds = CASES[case]
    path = sources[case]
    graph = parse(path, ParseOptions(inputs=inputs.split(","), outputs=[_output(tf, path)]))
    assert {"while_loop", "cond"} & {n.op for n in graph.nodes}, [n.op for n in graph.nodes]
    assert check.problems(graph) == []
    expected = [run_reference(path, graph, feed)[0] for feed in feeds]
    assert not np.array_equal(expected[0], expected[1])  # different trip counts / branches
    for feed, want in zip(feeds, expected):  # the IR's own meaning
        got = ir.evaluate(graph, feed)[graph.outputs[0]]
        assert verify.metrics(got, want)["max_rel"] <= RTOL, case
    for target in ("torch", "onnx"):
        emitter = emitters.get(target)
        assert not emitter.unsupported(graph), (target, emitter.unsupported(graph))
        out = tmp_path / target
        out.mkdir()
        emitter.emit(graph, out, EmitOptions())
        for feed, want in zip(feeds, expected):
            [got] = emitter.run(out, feed)
            assert got.shape == want.shape and verify.metrics(np.asarray(got), want)["max_rel"] <= RTOL, (target, feed)
    problems = emitters.get("mxnet").unsupported(graph)  # a conditional runs (MXNET_CASES), a loop is refused
    if any(n.op == "while_loop" for n in walk(graph)):
        assert problems and all(p.op in ("while_loop", "cond") and p.node for p in problems), problems
        assert "while_loop" in " ".join(f"{p.op} {p.hint}" for p in problems), problems
    else:
        assert case in MXNET_CASES and not problems, problems
    problems = emitters.get("caffe").unsupported(graph)  # refused by name, with the catalog's reason
    assert any(p.op in ("while_loop", "cond") and p.node for p in problems), problems


MXNET_CASES = ("cond", "tf1_cond")  # the cases without a loop


def test_mxnet_runs_a_conditional(tf, sources, tmp_path):
    """Both branches and a `where` per output, in one MXNet process for every case and input set."""
    from tf_convert.emitters.mxnet.runtime import run_many

    jobs = []
    for case in MXNET_CASES:
        _, inputs, feeds = CASES[case]
        graph = parse(sources[case], ParseOptions(inputs=inputs.split(","), outputs=[_output(tf, sources[case])]))
        (tmp_path / case).mkdir()
        emitters.get("mxnet").emit(graph, tmp_path / case, EmitOptions())
        jobs += [(tmp_path / case, feed, run_reference(sources[case], graph, feed)[0]) for feed in feeds]
    for (_, _, want), [got] in zip(jobs, run_many([(out, feed) for out, feed, _ in jobs])):
        assert verify.metrics(np.asarray(got).reshape(want.shape), want)["max_rel"] <= RTOL


def test_torch_model_py_keeps_a_plain_while(tf, sources, tmp_path):
    """model.py spells the loop as Python does: `while True:` ... `break`, the body's lines inside it."""
    path = sources["counter"]
    code = CliRunner().invoke(cli.main, ["tf2torch", str(path), "-o", str(tmp_path / "out"), "--inputs", "x,n",
                                         "--outputs", _output(tf, path)])
    assert code.exit_code == 0, code.output
    source = (tmp_path / "out" / "model.py").read_text()
    assert "while True:" in source and "break" in source, source


@pytest.mark.parametrize("target", ["mxnet", "caffe"])
def test_mxnet_and_caffe_refuse_by_name(tf, sources, tmp_path, target):
    path = sources["reduced"]
    result = CliRunner().invoke(cli.main, [f"tf2{target}", str(path), "-o", str(tmp_path / "out"), "--inputs", "x",
                                           "--outputs", _output(tf, path)])
    assert result.exit_code == 3 and "while_loop" in result.output and "Traceback" not in result.output, result.output
    assert not (tmp_path / "out").exists()


def _loop_graphs():
    """while sum(y) < limit: i += 1; y = y * 1.5 + 0.25 (loop variables i, y; invariant limit)."""
    cond = Subgraph("cond")
    cond.inputs = [cond.add_tensor("i", (), "int32"), cond.add_tensor("y", (1, 4)), cond.add_tensor("limit", ())]
    cond.add_node("reduce_sum", "s", ["y"], (), {"axes": (0, 1), "keepdims": False})
    cond.outputs = [cond.add_node("less", "go", ["s", "limit"], (), out_dtype="bool")]
    body = Subgraph("body")
    body.inputs = [body.add_tensor("i", (), "int32"), body.add_tensor("y", (1, 4)), body.add_tensor("limit", ())]
    body.add_node("const", "one", [], (), params={"value": np.int32(1)}, out_dtype="int32")
    body.add_node("const", "k", [], (), params={"value": np.float32(1.5)})
    body.add_node("const", "b", [], (), params={"value": np.float32(0.25)})
    body.add_node("mul", "scaled", ["y", "k"], (1, 4))
    body.outputs = [body.add_node("add", "next_i", ["i", "one"], ()),
                    body.add_node("add", "next_y", ["scaled", "b"], (1, 4))]
    return cond, body


def _branch_graphs():
    """then: x * 2 - 1, else: x + 3 (operand x)."""
    branches = []
    for name, (op1, v1, op2, v2) in (("then", ("mul", 2.0, "sub", 1.0)), ("else", ("add", 3.0, "add", 0.0))):
        g = Subgraph(name)
        g.inputs = [g.add_tensor("x", (1, 4))]
        g.add_node("const", "a", [], (), params={"value": np.float32(v1)})
        g.add_node("const", "b", [], (), params={"value": np.float32(v2)})
        g.add_node(op1, "first", ["x", "a"], (1, 4))
        g.outputs = [g.add_node(op2, "second", ["first", "b"], (1, 4))]
        branches.append(g)
    return branches


def _control_graph() -> ir.Graph:
    """A loop (sum(y) < limit) feeding a branch (pred), built by hand."""
    (cond, body), (then, other) = _loop_graphs(), _branch_graphs()
    g = ir.Graph("control")
    g.inputs = [g.add_tensor("y", (1, 4)), g.add_tensor("limit", ()), g.add_tensor("pred", (), "bool")]
    zero = g.add_node("const", "zero", [], (), params={"value": np.int32(0)}, out_dtype="int32")
    loop = g.add_node("while_loop", "loop", [zero, "y", "limit"], (1, 4),
                      {"cond": cond, "body": body, "carried": 2, "output": 1})
    g.outputs = [g.add_node("cond", "branch", ["pred", loop], (1, 4),
                            {"then_branch": then, "else_branch": other, "output": 0})]
    return g


def test_ir_files_keep_nested_graphs(tmp_path):
    """graph.json + weights.npz (tf2ir, --keep-ir) hold the loop's and the branches' graphs and weights."""
    g = _control_graph()
    ir.save(g, tmp_path)
    loaded = ir.load(tmp_path)
    assert check.problems(loaded) == []
    for limit, pred in ((5.0, True), (40.0, False)):
        feeds = [X_SMALL, np.float32(limit), np.bool_(pred)]
        assert np.array_equal(ir.evaluate(loaded, feeds)[loaded.outputs[0]], ir.evaluate(g, feeds)[g.outputs[0]])


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_torch_control_flow_scripts(tmp_path):
    """model.py's while/if compile with torch.jit.script and give the eager numbers (torch.export does not
    take them: it traces one path through data-dependent control flow)."""
    import torch

    from tf_convert.emitters.torch.runner import import_model

    g = _control_graph()
    branch = g.outputs[0]
    emitters.get("torch").emit(g, tmp_path, EmitOptions())
    model = import_model(tmp_path).load(str(tmp_path / "model.pt"))
    scripted = torch.jit.script(model)
    for limit, pred in ((5.0, True), (40.0, False)):
        feeds = [X_SMALL, np.float32(limit), np.bool_(pred)]
        want = ir.evaluate(g, feeds)[branch]
        args = [torch.from_numpy(np.asarray(f)) for f in feeds]
        with torch.no_grad():
            assert np.array_equal(model(*args).numpy(), want) and np.array_equal(scripted(*args).numpy(), want)


def test_loop_variable_that_changes_shape_is_refused_by_name(tf, tmp_path):
    """A loop that grows a variable (shape_invariants relaxed) has no static shape: exit 3 naming the loop and
    the variable, nothing written."""
    def grow(x, n):
        return tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, tf.concat([y, y], 0)), [tf.constant(0), x],
                             shape_invariants=[tf.TensorShape([]), tf.TensorShape([None, 4])])[1]

    signature = [tf.TensorSpec((1, 4), tf.float32), tf.TensorSpec((), tf.int32)]
    graph = tf.function(grow, input_signature=signature).get_concrete_function().graph
    path = tmp_path / "grow.pb"
    path.write_bytes(graph.as_graph_def().SerializeToString())
    result = CliRunner().invoke(cli.main, ["tf2onnx", str(path), "-o", str(tmp_path / "out"), "--inputs", "x,n",
                                           "--outputs", _output(tf, path)])
    assert result.exit_code == 3 and "While" in result.output and "changes from float32 [1, 4]" in result.output, \
        result.output
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()


def test_loop_and_branch_read_for_two_values_are_written_once(tf, tmp_path):
    """A loop read for two of its variables and a cond returning two values are one `while` and one `if` in
    model.py and one Loop and one If in ONNX (not one per value read), and exact at two trip counts."""
    import onnx

    def f(x, n):
        i, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 2, y * 1.25 + 0.5), [tf.constant(1), x])
        a, b = tf.cond(tf.reduce_sum(y) > 8.0, lambda: (y * 2.0, i + 1), lambda: (y - 1.0, i * 3))
        return tf.identity(a, name="a"), tf.identity(b, name="b"), tf.identity(i * 2, name="twice")

    signature = [tf.TensorSpec((1, 4), tf.float32), tf.TensorSpec((), tf.int32)]
    path = tmp_path / "pairs.pb"
    path.write_bytes(tf.function(f, input_signature=signature).get_concrete_function().graph.as_graph_def()
                     .SerializeToString())
    graph = parse(path, ParseOptions(inputs=["x", "n"], outputs=["a", "b", "twice"]))
    assert check.problems(graph) == []
    feeds = [[X_SMALL, np.int32(2)], [X_SMALL, np.int32(9)]]
    expected = [run_reference(path, graph, feed) for feed in feeds]
    assert not np.array_equal(expected[0][1], expected[1][1])
    for target in ("torch", "onnx"):
        emitter, out = emitters.get(target), tmp_path / target
        out.mkdir()
        emitter.emit(graph, out, EmitOptions())
        for feed, want in zip(feeds, expected):
            got = emitter.run(out, feed)
            for g, w in zip(got, want):
                assert np.asarray(g).dtype == w.dtype and np.array_equal(np.asarray(g), w), (target, feed)
    source = (tmp_path / "torch" / "model.py").read_text()
    assert source.count("while True:") == 1 and source.count("if bool(") == 1, source
    ops = [n.op_type for n in onnx.load(str(tmp_path / "onnx" / "model.onnx")).graph.node]
    assert ops.count("Loop") == 1 and ops.count("If") == 1, ops


class _ElmanCell:
    """h <- tanh(x W + h U), weights as constants: the cell tf.compat.v1.nn.dynamic_rnn steps."""

    state_size = output_size = 4

    def zero_state(self, batch, dtype):
        import tensorflow as tf

        return tf.zeros((batch, 4), dtype)

    def __call__(self, x, h, scope=None):
        import tensorflow as tf

        h = tf.tanh(tf.matmul(x, W[:3]) + tf.matmul(h, W))
        return h, h


def test_dynamic_rnn_with_sequence_length_is_exact_or_refused_by_name(tf, tmp_path):
    """dynamic_rnn's `sequence_length` (a While bounded by the longest length, writing a TensorList, a select on
    the time step): converted exactly at two length sets, or refused by name (exit 3, the While and what bounds
    it named, nothing written) -- never a loop run to the static length."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, (2, 5, 3), name="x")
        lengths = tf.compat.v1.placeholder(tf.int32, (2,), name="lengths")
        outputs, _ = tf.compat.v1.nn.dynamic_rnn(_ElmanCell(), x, sequence_length=lengths, dtype=tf.float32)
        tf.identity(outputs, name="y")
    path = tmp_path / "dynamic_rnn.pb"
    path.write_bytes(graph.as_graph_def().SerializeToString())
    result = CliRunner().invoke(cli.main, ["tf2onnx", str(path), "-o", str(tmp_path / "out"), "--inputs",
                                           "x,lengths", "--outputs", "y"])
    assert "Traceback" not in result.output, result.output
    if result.exit_code == 3:
        assert "While" in result.output and "lengths" in result.output, result.output
        assert not (tmp_path / "out").exists()
        return
    assert result.exit_code == 0, result.output
    parsed = parse(path, ParseOptions(inputs=["x", "lengths"], outputs=["y"]))
    feed = np.linspace(-1, 1, 30, dtype=np.float32).reshape(2, 5, 3)
    for lens in (np.array([2, 4], np.int32), np.array([5, 1], np.int32)):
        [want] = run_reference(path, parsed, [feed, lens])
        [got] = emitters.get("onnx").run(tmp_path / "out", [feed, lens])
        assert verify.metrics(np.asarray(got), want)["max_rel"] <= RTOL, lens
