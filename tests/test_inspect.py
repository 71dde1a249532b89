"""convert.inspect: the per-target plan columns come from each target's padding plan."""

from __future__ import annotations

import numpy as np

from convert import inspect, ir


def graph_with_asymmetric_pads() -> ir.Graph:
    g = ir.Graph(name="g")
    g.inputs = [g.add_tensor("x", (1, 3, 8, 8))]
    w = np.ones((4, 3, 3, 3), np.float32)
    c = g.add_node("conv2d", "conv", ["x"], (1, 4, 4, 4),
                   {"kernel": (3, 3), "stride": (2, 2), "dilation": (1, 1), "groups": 1, "pads": (0, 1, 0, 1)},
                   {"weight": w})
    m = g.add_node("max_pool2d", "pool", [c], (1, 4, 2, 2), {"kernel": (3, 3), "stride": (2, 2), "pads": (0, 1, 0, 1)})
    a = g.add_node("avg_pool2d", "avg", [m], (1, 4, 2, 2),
                   {"kernel": (2, 2), "stride": (1, 1), "pads": (0, 1, 0, 1), "count_include_pad": False})
    g.outputs = [a]
    return g


def test_rows_carry_pads_and_plans():
    rows = {r["node"]: r for r in inspect.rows(graph_with_asymmetric_pads())}
    assert rows["conv"]["pads"] == [0, 1, 0, 1]
    assert rows["conv"]["plan"] == {"torch": "pad layer", "caffe": "pad group", "mxnet": "pad layer", "onnx": "in layer"}
    assert rows["pool"]["plan"]["torch"] == "pad layer (-inf)"
    assert rows["avg"]["plan"]["torch"] == "pad layer + divisor map"
    assert rows["avg"]["plan"]["mxnet"] == "aligned pad + slice"
    assert "scale map" in rows["avg"]["plan"]["caffe"]


def test_render_counts_asymmetric_nodes():
    text = inspect.render(graph_with_asymmetric_pads())
    assert text.splitlines()[0].split()[:5] == ["node", "op", "in", "out", "pads"]
    assert "3 with asymmetric pads" in text.splitlines()[-1]
