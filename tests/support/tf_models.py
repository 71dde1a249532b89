"""Small TF1 networks written in raw tf.nn / tf.compat.v1 ops, saved as every TF source kind.

Each builder writes into `directory`:
  ckpt/model.ckpt(.meta/.index/.data-*)  (+ ckpt/checkpoint)   a TF1 checkpoint with its graph
  frozen.pb                                                   the frozen GraphDef
  saved_model/                                                a TF1 SavedModel (tag 'serve')
and returns dict(ckpt=..., ckpt_dir=..., pb=..., saved_model=..., input_name=..., output_name=...,
input_shape=...). Deterministic (seeded) and fast; batch-norm statistics are random and far from
identity so folding mistakes show up in the numbers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


class _Init:
    """Seeded numpy initial values, so every build gives the same weights."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def conv(self, kh: int, kw: int, cin: int, cout: int) -> np.ndarray:
        return (self.rng.standard_normal((kh, kw, cin, cout)) * np.sqrt(2.0 / (kh * kw * cin))).astype(
            np.float32
        )

    def vec(self, n: int, lo: float, hi: float) -> np.ndarray:
        return self.rng.uniform(lo, hi, n).astype(np.float32)


def _var(name: str, value: np.ndarray):
    import tensorflow as tf

    return tf.compat.v1.get_variable(name, initializer=tf.constant(value))


def _bn(x, init: _Init, name: str):
    """Inference batch norm as FusedBatchNormV3 with random, non-trivial statistics."""
    import tensorflow as tf

    c = int(x.shape[-1])
    with tf.compat.v1.variable_scope(name):
        gamma = _var("gamma", init.vec(c, 0.5, 1.5))
        beta = _var("beta", init.vec(c, -0.5, 0.5))
        mean = _var("moving_mean", init.vec(c, -0.3, 0.3))
        var = _var("moving_variance", init.vec(c, 0.5, 2.0))
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(
            x, gamma, beta, mean, var, epsilon=1e-3, is_training=False, name="FusedBatchNormV3"
        )
    return y


def _conv(x, init: _Init, name: str, k: int, cout: int, stride: int = 1, padding: str = "SAME"):
    import tensorflow as tf

    cin = int(x.shape[-1])
    with tf.compat.v1.variable_scope(name):
        w = _var("weights", init.conv(k, k, cin, cout))
        return tf.nn.conv2d(x, w, [1, stride, stride, 1], padding, name="Conv2D")


def _depthwise(x, init: _Init, name: str, k: int, stride: int, multiplier: int = 1):
    import tensorflow as tf

    cin = int(x.shape[-1])
    with tf.compat.v1.variable_scope(name):
        w = _var("depthwise_weights", init.conv(k, k, cin, multiplier))
        return tf.nn.depthwise_conv2d(x, w, [1, stride, stride, 1], "SAME", name="depthwise")


def _dense_head(x, init: _Init, classes: int):
    """Flatten (TF element order, NHWC) -> MatMul + BiasAdd -> Softmax."""
    import tensorflow as tf

    n = int(np.prod(x.shape[1:]))
    flat = tf.reshape(x, [-1, n], name="flatten/Reshape")
    with tf.compat.v1.variable_scope("logits"):
        w = _var("weights", (init.rng.standard_normal((n, classes)) / np.sqrt(n)).astype(np.float32))
        b = _var("biases", init.vec(classes, -0.1, 0.1))
        logits = tf.nn.bias_add(tf.matmul(flat, w, name="MatMul"), b, name="BiasAdd")
    return tf.nn.softmax(logits, name="predictions")


def _mobilenet_v1(x, init: _Init):
    import tensorflow as tf

    def relu6_bn(y, name):
        return tf.nn.relu6(_bn(y, init, f"{name}/BatchNorm"), name=f"{name}/Relu6")

    y = relu6_bn(_conv(x, init, "Conv2d_0", 3, 8, stride=2), "Conv2d_0")
    for i, (stride, cout, mult) in enumerate([(1, 16, 1), (2, 24, 2), (2, 32, 1)], start=1):
        y = relu6_bn(_depthwise(y, init, f"Conv2d_{i}_depthwise", 3, stride, mult), f"Conv2d_{i}_depthwise")
        y = relu6_bn(_conv(y, init, f"Conv2d_{i}_pointwise", 1, cout), f"Conv2d_{i}_pointwise")
    return _dense_head(y, init, classes=10)


def _fixed_padding_conv(x, init: _Init, name: str, k: int, cout: int, stride: int):
    """The official TF ResNet `conv2d_fixed_padding`: explicit tf.pad then VALID for stride > 1."""
    import tensorflow as tf

    if stride > 1:
        total = k - 1
        beg = total // 2
        x = tf.pad(x, [[0, 0], [beg, total - beg], [beg, total - beg], [0, 0]], name=f"{name}/Pad")
    return _conv(x, init, name, k, cout, stride, "SAME" if stride == 1 else "VALID")


def _resnet_v1(x, init: _Init):
    import tensorflow as tf

    y = _fixed_padding_conv(x, init, "conv1", 5, 8, stride=2)
    y = tf.nn.relu(_bn(y, init, "conv1/bn"), name="conv1/Relu")
    y = tf.nn.max_pool2d(y, 3, 2, "SAME", name="pool1/MaxPool")
    for i, (cout, stride) in enumerate([(8, 1), (16, 2)], start=1):
        name = f"block{i}"
        shortcut = y
        if stride != 1 or int(y.shape[-1]) != cout:
            shortcut = _bn(_fixed_padding_conv(y, init, f"{name}/shortcut", 1, cout, stride), init,
                           f"{name}/shortcut/bn")
        r = _fixed_padding_conv(y, init, f"{name}/conv1", 3, cout, stride)
        r = tf.nn.relu(_bn(r, init, f"{name}/conv1/bn"), name=f"{name}/conv1/Relu")
        r = _bn(_fixed_padding_conv(r, init, f"{name}/conv2", 3, cout, 1), init, f"{name}/conv2/bn")
        y = tf.nn.relu(tf.add(r, shortcut, name=f"{name}/add"), name=f"{name}/Relu")
    return _dense_head(y, init, classes=10)


def _save_all(directory: Path, body: Callable, input_hw: tuple[int, int], channels: int, seed: int) -> dict:
    import tensorflow as tf

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, input_hw[0], input_hw[1], channels], name="input")
        y = body(x, _Init(seed))
        output_name = y.op.name
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            (directory / "ckpt").mkdir(exist_ok=True)
            ckpt = str(directory / "ckpt" / "model.ckpt")
            saver.save(sess, ckpt)
            frozen = tf.compat.v1.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), [output_name]
            )
            (directory / "frozen.pb").write_bytes(frozen.SerializeToString())
            tf.compat.v1.saved_model.simple_save(
                sess, str(directory / "saved_model"), inputs={"input": x}, outputs={"output": y}
            )
    return dict(
        ckpt=ckpt,
        ckpt_dir=str(directory / "ckpt"),
        pb=str(directory / "frozen.pb"),
        saved_model=str(directory / "saved_model"),
        input_name="input",
        output_name=output_name,
        input_shape=(1, input_hw[0], input_hw[1], channels),
    )


def build_mobilenet_v1_tiny(directory: str | Path, input_hw: tuple[int, int] = (32, 32), seed: int = 0) -> dict:
    """MobileNet-v1-style: SAME stride-2 3x3 conv/depthwise (one with multiplier 2), 1x1 convs,
    FusedBatchNormV3, Relu6, then Flatten -> Dense -> Softmax.

    The default 32x32 makes every stride-2 SAME layer asymmetric (32 -> 16: pads 0/1). An odd size
    such as 33 does not: 3x3 stride 2 on an odd n always pads 1/1 (33 -> 17 -> 9 -> 5)."""
    return _save_all(Path(directory), _mobilenet_v1, input_hw, 3, seed)


def build_resnet_v1_tiny(directory: str | Path, input_hw: tuple[int, int] = (32, 32), seed: int = 1) -> dict:
    """ResNet-v1-style: conv2d_fixed_padding (tf.pad + VALID for stride 2), BN, ReLU, max pool SAME
    3x3/2, residual Add with a projection shortcut, then Flatten -> Dense -> Softmax."""
    return _save_all(Path(directory), _resnet_v1, input_hw, 3, seed)


def reference_input(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def run_ir(graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The graph outputs for `inputs` (in `graph.inputs` order), by the IR's reference evaluator."""
    from tf_convert.convert.ir import evaluate

    values = evaluate(graph, inputs)
    return [values[o] for o in graph.outputs]


def rel_err(a: np.ndarray, ref: np.ndarray) -> float:
    """max|a - ref| / max|ref| (tests.support.ir_cases.rel_error)."""
    from tests.support.ir_cases import rel_error

    return rel_error(a, ref)


def save_frozen(path: str | Path, build: Callable, placeholder_shape: list, name: str = "input") -> str:
    """Write a frozen .pb of `build(x)` (weights as tf.constant); returns its path. The output
    node is whatever `build` returns (name it)."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, placeholder_shape, name=name)
        build(x)
    Path(path).write_bytes(graph.as_graph_def().SerializeToString())
    return str(path)


def run_frozen(pb: str | Path, feeds: dict[str, np.ndarray], output: str = "out:0") -> np.ndarray:
    """TensorFlow's value of `output` in the frozen graph `pb` for `feeds` (tensor name -> value)."""
    import tensorflow as tf

    graph_def = tf.compat.v1.GraphDef.FromString(Path(pb).read_bytes())
    with tf.Graph().as_default() as g:
        tf.compat.v1.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=g) as sess:
            return sess.run(output, feeds)
