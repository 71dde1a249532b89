"""TF parser: dilated convolutions in TF's SpaceToBatchND -> conv -> BatchToSpaceND spelling, as every
TF API writes them, vs TensorFlow."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tests.support.tf_models import (
    reference_input,
    rel_err,
    run_ir,
    save_frozen,
)
from tests.support.tf_parser_cases import RTOL, check, const, one_op, padding_args
from tf_convert import parsers
from tf_convert.convert.errors import UsageError
from tf_convert.convert.padding import tf_pads
from tf_convert.parsers.base import ParseOptions

tf = pytest.importorskip("tensorflow")


# ---- dilated convs in TF's SpaceToBatchND -> conv -> BatchToSpaceND spelling -----------------------


def _dilated(kind, rng, kernel, dilation, padding, multiplier):
    """A builder of one dilated conv + BiasAdd as the TF API `kind` writes it (all via S2B/B2S)."""
    kh, kw = kernel

    def body(x):
        if kind == "depthwise":
            w = const(rng, (kh, kw, 3, multiplier))
            y = tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], padding_args(padding), dilations=dilation,
                                       name="conv")
        elif kind == "atrous":  # a single rate for both axes
            y = tf.nn.atrous_conv2d(x, const(rng, (kh, kw, 3, 5)), dilation[0], padding, name="conv")
        else:
            y = tf.nn.convolution(x, const(rng, (kh, kw, 3, 5)), padding=padding, dilations=dilation,
                                  name="conv")
        return tf.nn.bias_add(y, const(rng, (int(y.shape[-1]),)), name="out")

    return body


DILATED_CASES = [
    # (kind, hw, kernel, dilation, padding, multiplier)
    ("depthwise", (9, 8), (3, 3), (2, 2), "SAME", 1), ("depthwise", (8, 8), (3, 3), (2, 2), "SAME", 2),
    ("depthwise", (7, 10), (3, 3), (1, 2), "SAME", 1), ("depthwise", (10, 7), (2, 3), (2, 1), "SAME", 2),
    ("depthwise", (9, 11), (4, 4), (2, 2), "SAME", 1), ("depthwise", (11, 9), (3, 3), (3, 3), "SAME", 1),
    ("depthwise", (9, 8), (3, 3), (2, 2), "VALID", 1), ("depthwise", (8, 11), (3, 2), (1, 2), "VALID", 2),
    ("depthwise", (10, 10), (3, 3), (2, 2), "VALID", 1), ("depthwise", (8, 9), (2, 2), (2, 2), [1, 0, 2, 1], 1),
    ("atrous", (9, 8), (3, 3), (2, 2), "SAME", 1), ("atrous", (10, 7), (3, 3), (2, 2), "VALID", 1),
    ("convolution", (7, 10), (3, 3), (1, 2), "SAME", 1), ("convolution", (9, 9), (2, 2), (2, 2), "SAME", 1),
]


@pytest.mark.parametrize("kind,hw,kernel,dilation,padding,multiplier", DILATED_CASES)
def test_dilated_conv_via_space_to_batch(tmp_path, kind, hw, kernel, dilation, padding, multiplier):
    from tf_convert.convert.passes import run_default_passes

    rng = np.random.default_rng(11)
    graph = one_op(tmp_path, _dilated(kind, rng, kernel, dilation, padding, multiplier), (1, *hw, 3))
    conv = graph.node("conv")
    assert conv.op == "conv2d" and conv.source_op.startswith("SpaceToBatchND+")
    assert conv.attrs["dilation"] == dilation and conv.attrs["stride"] == (1, 1)
    # the S2B paddings / B2S crops come out as TF's own rule for the dilated conv
    explicit = padding if isinstance(padding, list) else None
    expect = tf_pads(hw, kernel, (1, 1), dilation, "EXPLICIT" if explicit else padding, explicit)
    assert conv.attrs["pads"] == tuple(expect)
    assert [n.op for n in graph.nodes if n.op not in ("const", "transpose")] == ["conv2d", "add"]
    if kind == "depthwise":
        assert conv.attrs["groups"] == 3 and conv.params["weight"].shape == (3 * multiplier, 1, *kernel)
    optimised = run_default_passes(graph)  # the BiasAdd after B2S folds into the conv
    assert [n.op for n in optimised.nodes] == ["conv2d"] and "bias" in optimised.nodes[0].params


@pytest.mark.parametrize("paddings,crops,inner,inner_dilation", [
    ([[3, 2], [0, 4]], [[1, 2], [0, 3]], "VALID", 1),  # crops smaller than the paddings
    ([[0, 1], [2, 0]], [[2, 3], [0, 2]], "VALID", 1),  # crops beyond the paddings: input rows dropped
    ([[2, 3], [1, 3]], [[0, 1], [1, 0]], "SAME", 1),  # inner SAME padding, scaled by the block
    ([[2, 3], [1, 3]], [[0, 1], [1, 0]], "SAME", 2),  # inner dilated Conv2D: dilations multiply
])
def test_hand_written_space_to_batch(tmp_path, paddings, crops, inner, inner_dilation):
    """S2B/B2S written by hand (not by tf.nn): any paddings/crops, inner padding and dilation."""
    rng = np.random.default_rng(12)

    def body(x):
        s = tf.space_to_batch_nd(x, [2, 2], paddings)
        if inner_dilation == 1:
            y = tf.nn.depthwise_conv2d(s, const(rng, (3, 2, 3, 2)), [1, 1, 1, 1], inner, name="conv")
        else:  # Conv2D's native dilation (depthwise_conv2d would nest another S2B)
            y = tf.nn.conv2d(s, const(rng, (3, 2, 3, 4)), 1, inner, dilations=inner_dilation, name="conv")
        return tf.identity(tf.batch_to_space(y, [2, 2], crops), name="out")

    graph = one_op(tmp_path, body, (1, 9, 10, 3))
    assert graph.node("conv").attrs["dilation"] == (2 * inner_dilation, 2 * inner_dilation)
    beyond = any(c > p for cs, ps in zip(crops, paddings) for c, p in zip(cs, ps))
    assert any(n.op == "slice" for n in graph.nodes) == beyond


def test_dilated_depthwise_nchw(tmp_path):
    """NCHW graphs move block 1 over C; TF's CPU cannot run them, so the NHWC twin is the reference."""

    w = np.random.default_rng(13).standard_normal((3, 3, 3, 2)).astype(np.float32)

    def nchw(x):
        return tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[2, 2], data_format="NCHW",
                                      name="out")

    graph = parsers.parse(save_frozen(tmp_path / "nchw.pb", nchw, [1, 3, 9, 8]))
    x = reference_input((1, 3, 9, 8))
    expected = tf.nn.depthwise_conv2d(x.transpose(0, 2, 3, 1), w, [1, 1, 1, 1], "SAME", dilations=[2, 2])
    got = run_ir(graph, [x])[0]
    assert rel_err(got, expected.numpy().transpose(0, 3, 1, 2)) <= RTOL


def test_dilated_depthwise_unknown_size_needs_input_shape(tmp_path):
    """Built for any input size, the S2B paddings are computed from Shape: ask for --input-shape."""
    rng = np.random.default_rng(14)
    path = save_frozen(tmp_path / "dyn.pb", _dilated("depthwise", rng, (3, 3), (2, 2), "SAME", 1),
                       [None, None, None, 3])
    with pytest.raises(UsageError, match=r"\(Shape\) reads a tensor size.*dilated convolution.*--input-shape"):
        parsers.parse(path)
    graph = check(path, ParseOptions(input_shapes={"input": (1, 9, 10, 3)}))
    assert graph.node("conv").attrs["pads"] == (2, 2, 2, 2)


def test_space_to_batch_outside_the_pattern(tmp_path):
    """Not a dilated conv: each op on its own, as the moves themselves (tests/parsers/test_runtime_values.py
    runs them in every target)."""
    def body(x):
        s = tf.nn.relu(tf.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]]))
        return tf.identity(tf.batch_to_space(s, [2, 2], [[0, 0], [0, 0]]), name="out")

    graph = check(save_frozen(tmp_path / "s2b.pb", body, [1, 4, 4, 3]), rtol=0.0)
    assert {n.source_op for n in graph.nodes} >= {"SpaceToBatchND", "BatchToSpaceND"}
    assert not any(n.op == "conv2d" for n in graph.nodes)


def test_output_inside_dilated_conv_is_a_usage_error(tmp_path):
    rng = np.random.default_rng(15)
    path = save_frozen(tmp_path / "d.pb", _dilated("depthwise", rng, (3, 3), (2, 2), "SAME", 1), [1, 9, 8, 3])
    with pytest.raises(UsageError, match=r"inside the dilated convolution .*; use 'conv/BatchToSpaceND'"):
        parsers.parse(path, ParseOptions(outputs=["conv"]))
