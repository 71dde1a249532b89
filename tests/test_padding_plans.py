"""convert.padding.plans: what each target is told to do, case by case."""

from __future__ import annotations

import numpy as np
import pytest

from convert.padding import MXNET, ONNX, TORCH, Pads, plan_transposed, plan_window, transposed_conv_crop

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
