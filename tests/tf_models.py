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


# ---- a reference interpreter for IR graphs (torch functional ops), used by the parser/pass tests ----


def run_ir(graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Evaluate an IR graph with torch.nn.functional, following each op's doc in convert.ir.OPS."""
    import torch
    import torch.nn.functional as F

    env = {name: torch.from_numpy(np.ascontiguousarray(x)) for name, x in zip(graph.inputs, inputs)}

    def t(a):
        return torch.from_numpy(np.array(a))  # a contiguous copy; keeps 0-d arrays 0-d

    def conv2d(n, x):
        t_, b_, l_, r_ = n.attrs["pads"]
        x = F.pad(x, (l_, r_, t_, b_))
        bias = t(n.params["bias"]) if "bias" in n.params else None
        return F.conv2d(x, t(n.params["weight"]), bias, tuple(n.attrs["stride"]), 0,
                        tuple(n.attrs["dilation"]), n.attrs["groups"])

    def conv_t(n, x):
        bias = t(n.params["bias"]) if "bias" in n.params else None
        full = F.conv_transpose2d(x, t(n.params["weight"]), None, tuple(n.attrs["stride"]), 0, 0,
                                  n.attrs["groups"], tuple(n.attrs["dilation"]))
        (ct, cl), (oh, ow) = n.attrs["crop"], n.attrs["output_size"]
        full = F.pad(full, (0, max(0, cl + ow - full.shape[3]), 0, max(0, ct + oh - full.shape[2])))
        y = full[:, :, ct:ct + oh, cl:cl + ow]
        return y + bias.view(1, -1, 1, 1) if bias is not None else y

    def max_pool(n, x):
        t_, b_, l_, r_ = n.attrs["pads"]
        return F.max_pool2d(F.pad(x, (l_, r_, t_, b_), value=float("-inf")), n.attrs["kernel"], n.attrs["stride"])

    def avg_pool(n, x):
        t_, b_, l_, r_ = n.attrs["pads"]
        k, s = n.attrs["kernel"], n.attrs["stride"]
        total = F.avg_pool2d(F.pad(x, (l_, r_, t_, b_)), k, s) * (k[0] * k[1])
        if n.attrs["count_include_pad"]:
            return total / (k[0] * k[1])
        ones = F.pad(torch.ones_like(x[:1, :1]), (l_, r_, t_, b_))
        return total / (F.avg_pool2d(ones, k, s) * (k[0] * k[1]))

    def pad(n, x):
        flat = [p for pair in reversed(n.attrs["pads"]) for p in pair]
        mode = {"constant": "constant", "reflect": "reflect", "symmetric": "symmetric"}[n.attrs["mode"]]
        if mode == "symmetric":
            arr = np.pad(x.numpy(), n.attrs["pads"], mode="symmetric")
            return t(arr)
        if mode == "reflect":
            return t(np.pad(x.numpy(), n.attrs["pads"], mode="reflect"))
        return F.pad(x, flat, value=float(n.attrs["value"]))

    def affine(n, x):
        shape = [1] * x.dim()
        shape[n.attrs["axis"]] = -1
        return x * t(n.params["scale"]).view(shape) + t(n.params["shift"]).view(shape)

    def layer_norm(n, x):
        axes = tuple(n.attrs["axes"])
        mean = x.mean(dim=axes, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=axes, keepdim=True)
        y = (x - mean) / torch.sqrt(var + n.attrs["epsilon"])
        y = y * t(n.params["gamma"]) if "gamma" in n.params else y
        return y + t(n.params["beta"]) if "beta" in n.params else y

    def linear(n, x):
        return F.linear(x, t(n.params["weight"]), t(n.params["bias"]) if "bias" in n.params else None)

    unary = {
        "relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "exp": torch.exp,
        "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "square": lambda x: x * x, "neg": torch.neg,
        "identity": lambda x: x, "swish": lambda x: x * torch.sigmoid(x),
        "hard_swish": lambda x: x * F.relu6(x + 3) / 6,
    }
    binary = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
              "maximum": torch.maximum, "minimum": torch.minimum}
    other = {
        "conv2d": conv2d, "conv_transpose2d": conv_t, "max_pool2d": max_pool, "avg_pool2d": avg_pool,
        "pad": pad, "channel_affine": affine, "linear": linear, "layer_norm": layer_norm,
        "clip": lambda n, x: torch.clamp(x, n.attrs["min"], n.attrs["max"]),
        "leaky_relu": lambda n, x: F.leaky_relu(x, n.attrs["alpha"]),
        "elu": lambda n, x: F.elu(x, n.attrs["alpha"]),
        "hard_sigmoid": lambda n, x: torch.clamp(n.attrs["alpha"] * x + n.attrs["beta"], 0, 1),
        "gelu": lambda n, x: F.gelu(x, approximate=n.attrs["approximate"]),
        "softmax": lambda n, x: torch.softmax(x, n.attrs["axis"]),
        "reshape": lambda n, x: x.reshape(tuple(n.attrs["shape"])),
        "transpose": lambda n, x: x.permute(*n.attrs["perm"]),
        "slice": lambda n, x: x[tuple(slice(b, e) for b, e in zip(n.attrs["begin"], n.attrs["end"]))],
        "reduce_mean": lambda n, x: x.mean(dim=tuple(n.attrs["axes"]), keepdim=n.attrs["keepdims"]),
        "reduce_max": lambda n, x: x.amax(dim=tuple(n.attrs["axes"]), keepdim=n.attrs["keepdims"]),
    }
    for n in graph.nodes:
        args = [env[i] for i in n.inputs]
        if n.op == "const":
            y = t(n.params["value"])
        elif n.op == "concat":
            y = torch.cat(args, n.attrs["axis"])
        elif n.op in unary:
            y = unary[n.op](args[0])
        elif n.op in binary:
            y = binary[n.op](args[0], args[1])
        else:
            y = other[n.op](n, *args)
        assert tuple(y.shape) == tuple(graph.shape(n.output)), (n.name, tuple(y.shape), graph.shape(n.output))
        env[n.output] = y
    return [env[o].numpy() for o in graph.outputs]


def rel_err(a: np.ndarray, ref: np.ndarray) -> float:
    """max|a - ref| / max(1, max|ref|), the project's metric."""
    return float(np.max(np.abs(a - ref)) / max(1.0, float(np.max(np.abs(ref)))))


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
