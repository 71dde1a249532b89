"""convert.padding.plans: what each target is told to do, case by case."""

from __future__ import annotations

import numpy as np
import pytest

from tf_convert.convert.padding import MXNET, ONNX, TORCH, Pads, plan_transposed, plan_window, transposed_conv_crop

CASES = [
    # op, in_hw, kernel, stride, pads, caps, pad layer?, layer pads
    ("conv2d", (8, 8), (3, 3), (1, 1), (1, 1, 1, 1), TORCH, None, (1, 1, 1, 1)),
    ("conv2d", (8, 8), (3, 3), (2, 2), (0, 1, 0, 1), TORCH, 0.0, (0, 0, 0, 0)),
    ("conv2d", (8, 8), (3, 3), (2, 2), (0, 1, 0, 1), ONNX, None, (0, 1, 0, 1)),
    ("conv2d", (8, 8), (3, 3), (2, 2), (0, 1, 0, 1), MXNET, 0.0, (0, 0, 0, 0)),
    ("max_pool2d", (8, 8), (3, 3), (2, 2), (0, 1, 0, 1), TORCH, float("-inf"), (0, 0, 0, 0)),
    ("max_pool2d", (7, 7), (3, 3), (2, 2), (1, 1, 1, 1), TORCH, None, (1, 1, 1, 1)),
    ("max_pool2d", (7, 7), (2, 2), (1, 1), (2, 2, 2, 2), TORCH, float("-inf"), (0, 0, 0, 0)),  # pad > k//2
    ("avg_pool2d", (7, 7), (3, 3), (2, 2), (1, 1, 1, 1), TORCH, None, (1, 1, 1, 1)),
    ("avg_pool2d", (8, 8), (3, 3), (2, 2), (0, 1, 0, 1), TORCH, 0.0, (0, 0, 0, 0)),
    ("avg_pool2d", (8, 8), (3, 3), (2, 2), (0, 1, 0, 1), ONNX, None, (0, 1, 0, 1)),
    ("conv2d", (8, 8), (3, 3), (1, 1), (0, 0, 0, 0), TORCH, None, (0, 0, 0, 0)),
]


@pytest.mark.parametrize("op,in_hw,k,s,pads,caps,pad_value,layer", CASES)
def test_plan_window(op, in_hw, k, s, pads, caps, pad_value, layer):
    plan = plan_window(op, in_hw, k, s, pads, caps)
    if pad_value is None:
        assert plan.pad_layer is None
    else:
        assert plan.pad_layer is not None and plan.pad_layer.pads == Pads(*pads)
        assert plan.pad_layer.value == pad_value
        assert plan.reason
    assert tuple(plan.layer_pads) == layer


def test_avg_pool_divisor_map_counts_only_real_elements():
    plan = plan_window("avg_pool2d", (4, 4), (3, 3), (2, 2), (0, 1, 0, 1), TORCH)
    assert plan.count_include_pad is True
    # windows [0,3) and [2,5): the second one has one padded row/column
    np.testing.assert_allclose(plan.divisor_map, 9 / np.outer([3, 2], [3, 2]))


@pytest.mark.parametrize("n,k,s", [(4, 3, 2), (4, 1, 3), (5, 4, 2), (3, 5, 1), (6, 2, 2)])
def test_transposed_plan_covers_the_tf_window(n, k, s):
    o = n * s
    crop = transposed_conv_crop((o, o), (k, k), (s, s), padding="SAME")
    plan = plan_transposed((n, n), (k, k), (s, s), (1, 1), crop, (o, o))
    full = (n - 1) * s + k
    ph, oph = plan.layer_pad[0], plan.output_padding[0]
    produced = full - 2 * ph + oph
    assert produced - plan.crop.top - plan.crop.bottom == o
    assert ph + plan.crop.top == crop[0]
    assert 0 <= oph < s or oph == 0


# ---- plan(node, graph, options): one Plan per target, what emitters and inspect both follow -----


def _node(op: str, in_hw=(8, 8), **attrs):
    from tf_convert.convert import ir

    g = ir.Graph(name="g")
    g.inputs = [g.add_tensor("x", (1, 3, *in_hw))]
    params = {}
    if op in ("conv2d", "conv_transpose2d"):
        k = attrs["kernel"]
        shape = (3, 3, *k) if op == "conv_transpose2d" else (3, 3 // attrs["groups"], *k)
        params["weight"] = np.ones(shape, np.float32)
    out = attrs.pop("out")
    y = g.add_node(op, "y", ["x"], (1, 3, *out), attrs, params)
    g.outputs = [y]
    return g.nodes[-1], g


CONV = dict(kernel=(3, 3), stride=(2, 2), dilation=(1, 1), groups=1, pads=(0, 1, 0, 1), out=(4, 4))
AVG = dict(kernel=(3, 3), stride=(2, 2), pads=(0, 1, 0, 1), count_include_pad=False, out=(4, 4))
PAD, KERNEL = ({"extra": {"conv_lowering": lowering}} for lowering in ("pad", "kernel"))  # else costs.py decides
UP = dict(kernel=(1, 1), stride=(2, 2), dilation=(1, 1), groups=1, crop=(0, 0), output_size=(8, 8), out=(8, 8))


@pytest.mark.parametrize("op,attrs,in_hw,target,values,summary,pad_layer,size_dependent", [
    ("conv2d", CONV, (8, 8), "torch", PAD, "pad layer", True, False),
    ("conv2d", CONV, (8, 8), "torch", KERNEL, "kernel taps", False, False),
    ("conv2d", {**CONV, "padding": "SAME"}, (8, 8), "torch", {}, "runtime pad", True, True),  # recorded SAME
    ("conv2d", {**CONV, "padding": "SAME"}, (8, 8), "torch", {"static_shapes": True, **PAD}, "pad layer", True, True),
    ("conv2d", {**CONV, "padding": "SAME"}, (8, 8), "torch", {"static_shapes": True, **KERNEL}, "kernel taps", False,
     True),
    ("conv2d", {**CONV, "padding": "SAME"}, (8, 8), "torch", KERNEL, "runtime pad", True, True),  # not at every size
    ("conv2d", {**CONV, "padding": "SAME"}, (8, 8), "onnx", {}, "auto_pad SAME_UPPER", False, True),
    ("conv2d", CONV, (8, 8), "onnx", {}, "in layer", False, False),
    ("conv2d", CONV, (8, 8), "mxnet", PAD, "pad layer", True, False),
    ("conv2d", CONV, (8, 8), "mxnet", KERNEL, "kernel taps", False, False),
    ("conv2d", CONV, (8, 8), "caffe", {"caffe_pad": "layer"}, "pad group", True, False),
    ("conv2d", CONV, (8, 8), "caffe", {"caffe_pad": "kernel"}, "kernel taps", False, False),
    ("avg_pool2d", AVG, (8, 8), "torch", {}, "pad layer + divisor map", True, True),
    ("avg_pool2d", AVG, (8, 8), "onnx", {}, "in layer", False, False),
    ("avg_pool2d", AVG, (8, 8), "mxnet", {}, "aligned pad + slice", True, True),
    ("conv_transpose2d", UP, (4, 4), "torch", {}, "in layer", False, True),
    ("conv_transpose2d", UP, (4, 4), "caffe", {}, "pad group + slice", True, True),
])
def test_plan_per_target(op, attrs, in_hw, target, values, summary, pad_layer, size_dependent):
    from tf_convert.convert.padding import Plan, plan
    from tf_convert.emitters.options import options_for

    node, graph = _node(op, in_hw, **dict(attrs))
    p = plan(node, graph, options_for(target, values).plan_options())
    assert isinstance(p, Plan) and p.target == target
    assert p.summary() == summary
    assert p.separate_pad_layer is pad_layer
    assert p.size_dependent is size_dependent
    assert p.as_dict()["pad_layer"] is pad_layer


def test_ops_without_padding_get_an_empty_plan():
    from tf_convert.convert import ir
    from tf_convert.convert.padding import plan
    from tf_convert.emitters.options import TorchOptions

    g = ir.Graph(name="g")
    g.inputs = [g.add_tensor("x", (1, 3))]
    g.outputs = [g.add_node("relu", "r", ["x"], (1, 3))]
    p = plan(g.nodes[-1], g, TorchOptions().plan_options())
    assert p.summary() == "-" and not p.separate_pad_layer
