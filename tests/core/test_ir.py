"""convert.ir: building, validation, pruning, save/load round trip."""

from __future__ import annotations

import numpy as np
import pytest

from tf_convert.convert import ir


def small_graph() -> ir.Graph:
    g = ir.Graph(name="g")
    g.inputs = [g.add_tensor("x", (1, 3, 8, 8))]
    w = np.arange(2 * 3 * 3 * 3, dtype=np.float32).reshape(2, 3, 3, 3)
    c = g.add_node("conv2d", "conv", ["x"], (1, 2, 4, 4),
                   {"kernel": (3, 3), "stride": (2, 2), "dilation": (1, 1), "groups": 1, "pads": (0, 1, 0, 1)},
                   {"weight": w}, source_op="Conv2D")
    p = g.add_node("pad", "pad", [c], (1, 2, 5, 5),
                   {"pads": ((0, 0), (0, 0), (0, 1), (0, 1)), "mode": "constant", "value": float("-inf")})
    g.add_node("relu", "dead", [c], (1, 2, 4, 4))
    g.outputs = [p]
    g.source_names = {"x": "x:0", p: "pad:0"}
    g.source_layouts = {"x": "NHWC", p: "NHWC"}
    return g


def test_save_load_round_trip(tmp_path):
    g = small_graph()
    ir.save(g, tmp_path)
    back = ir.load(tmp_path)
    assert [n.name for n in back.nodes] == [n.name for n in g.nodes]
    assert back.node("conv").attrs["pads"] == (0, 1, 0, 1)
    assert back.node("pad").attrs["value"] == float("-inf")
    np.testing.assert_array_equal(back.node("conv").params["weight"], g.node("conv").params["weight"])
    assert back.shape("pad") == (1, 2, 5, 5)
    assert back.source_layouts == g.source_layouts
    back.validate()


def test_prune_drops_dead_nodes():
    g = small_graph()
    g.prune()
    assert [n.name for n in g.nodes] == ["conv", "pad"]


def test_validate_rejects_unknown_op_and_bad_order():
    g = small_graph()
    g.nodes.reverse()
    with pytest.raises(ValueError, match="not produced before"):
        g.validate()
    with pytest.raises(ValueError, match="unknown IR op"):
        g.add_node("frobnicate", "f", ["x"], (1,))


def test_every_op_is_documented():
    for name, spec in ir.OPS.items():
        assert spec.doc, name


def test_every_op_has_a_kind():
    from tf_convert.convert.ir.ops import KINDS

    assert {spec.kind for spec in ir.OPS.values()} == set(KINDS)
    assert "identity" in ir.ops_of_kind("unary") and "conv2d" not in ir.ops_of_kind("unary")


def test_public_names():
    """What parsers, emitters and the tools import from convert.ir."""
    for name in ("Graph", "Node", "Tensor", "OPS", "OpSpec", "save", "load", "evaluate", "evaluate_node"):
        assert hasattr(ir, name), name
