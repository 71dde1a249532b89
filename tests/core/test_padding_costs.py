"""convert.padding.costs and the two exact lowerings of a conv's asymmetric pads it chooses between.

Whatever the measured table says, both lowerings ('pad' layer, 'kernel' taps) must give TF's numbers:
each is forced here (options.extra['conv_lowering']) on the asymmetric conv cases of the padding
matrix and run in PyTorch and MXNet against TensorFlow.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support import ir_cases
from tf_convert import emitters
from tf_convert.convert.padding import Pads, costs, kernel_extension, plan, tf_pads, with_kernel_taps
from tf_convert.emitters.base import EmitOptions
from tf_convert.emitters.options import options_for

TOL = 1e-5


@pytest.mark.parametrize("pads,dilation,expected", [
    ((0, 1, 0, 1), (1, 1), ((1, 0, 1, 0), (1, 1, 1, 1))),  # TF SAME 3x3 s2 at an even size
    ((1, 2, 2, 3), (1, 1), ((1, 0, 1, 0), (2, 2, 3, 3))),
    ((2, 1, 1, 1), (1, 1), ((0, 1, 0, 0), (2, 2, 1, 1))),  # more before than after: taps behind
    ((0, 2, 0, 0), (2, 2), ((1, 0, 0, 0), (2, 2, 0, 0))),  # a tap moves the window by the dilation
    ((0, 1, 0, 0), (2, 1), None),  # an odd difference at dilation 2 has no exact tap
    ((1, 1, 2, 2), (1, 1), ((0, 0, 0, 0), (1, 1, 2, 2))),
])
def test_kernel_extension(pads, dilation, expected):
    got = kernel_extension(Pads(*pads), dilation)
    assert got == (None if expected is None else (Pads(*expected[0]), Pads(*expected[1])))


def test_with_kernel_taps_adds_zero_rows_and_columns():
    w = np.arange(2 * 1 * 3 * 3, dtype=np.float32).reshape(2, 1, 3, 3)
    out = with_kernel_taps(w, Pads(1, 0, 0, 2))
    assert out.shape == (2, 1, 4, 5)
    np.testing.assert_array_equal(out[:, :, 1:, :3], w)
    assert not out[:, :, 0].any() and not out[:, :, :, 3:].any()
    assert with_kernel_taps(w, Pads(0, 0, 0, 0)) is w


# ---- the measured table -------------------------------------------------------------------------


def test_measured_table_is_complete():
    assert costs.MEASURED, "run `python -m bench.lowering --write`"
    for (target, kind, k), row in costs.MEASURED.items():
        assert target in ("torch", "caffe", "mxnet") and kind in ("depthwise", "stem", "dense") and k > 0
        assert set(row) == set(costs.lowerings_of(target)) and all(ms > 0 for ms in row.values())


@pytest.mark.parametrize("key", sorted(costs.MEASURED))
def test_conv_lowering_picks_the_cheaper_measured(key):
    target, kind, k = key
    row = costs.MEASURED[key]
    in_channels = costs.STEM_CHANNELS if kind == "stem" else 64
    assert costs.layer_kind(kind == "depthwise", in_channels) == kind
    assert costs.conv_lowering(target, kind == "depthwise", (k, k), in_channels) == min(row, key=row.get)


def test_conv_lowering_falls_back(monkeypatch):
    monkeypatch.setattr(costs, "MEASURED", {("torch", "dense", 3): {"pad": 2.0, "kernel": 1.0},
                                            ("torch", "dense", 7): {"pad": 1.0, "kernel": 2.0}})
    assert costs.conv_lowering("torch", False, (4, 4)) == "kernel"  # nearest measured: 3
    assert costs.conv_lowering("torch", False, (6, 5)) == "pad"  # nearest measured: 7
    assert costs.conv_lowering("torch", True, (3, 3)) == "pad"  # nothing measured for depthwise
    assert costs.conv_lowering("onnx", False, (3, 3)) == "pad"
    assert costs.conv_lowering("torch", False, (3, 3), in_channels=3) == "pad"  # no 'stem' row measured


def _conv_node(groups: int, pads=(0, 1, 0, 1)):
    from tf_convert.convert import ir

    g = ir.Graph(name="g")
    g.inputs = [g.add_tensor("x", (1, 4, 8, 8))]
    attrs = {"kernel": (3, 3), "stride": (2, 2), "dilation": (1, 1), "groups": groups, "pads": pads}
    g.outputs = [g.add_node("conv2d", "y", ["x"], (1, 4, 4, 4), attrs,
                            {"weight": np.ones((4, 4 // groups, 3, 3), np.float32)})]
    return g.nodes[-1], g


@pytest.mark.parametrize("target", ["torch", "mxnet", "caffe"])
@pytest.mark.parametrize("groups", [1, 4])
def test_default_plan_follows_the_table(target, groups):
    node, graph = _conv_node(groups)
    values = {"caffe_pad": "auto"} if target == "caffe" else {}
    p = plan(node, graph, options_for(target, values).plan_options())
    choice = costs.conv_lowering(target, groups == 4, (3, 3), in_channels=4)
    assert p.summary() == ("kernel taps" if choice == "kernel" else "pad group" if target == "caffe" else "pad layer")
    assert p.separate_pad_layer is (choice == "pad")


@pytest.mark.parametrize("target", ["torch", "mxnet"])
def test_forced_lowerings(target):
    node, graph = _conv_node(4)
    kernel = plan(node, graph, options_for(target, {"extra": {"conv_lowering": "kernel"}}).plan_options())
    assert kernel.kernel_taps == Pads(1, 0, 1, 0) and kernel.layer_pads == Pads(1, 1, 1, 1)
    assert kernel.pad_layer is None and not kernel.records and kernel.summary() == "kernel taps"
    pad = plan(node, graph, options_for(target, {"extra": {"conv_lowering": "pad"}}).plan_options())
    assert pad.pad_layer is not None and pad.kernel_taps.zero and pad.summary() == "pad layer"


# ---- both lowerings against TF ------------------------------------------------------------------


def _asymmetric_conv_cases() -> list[ir_cases.Case]:
    cases, per_group = [], {}
    for c in ir_cases.matrix():
        if c.op in ("conv", "depthwise", "depthwise_m2") and c.padding in ("SAME", "EXPLICIT"):
            explicit = c.explicit_pads if c.padding == "EXPLICIT" else None
            group = (c.op, c.dilation, c.padding)
            if not tf_pads(c.in_hw, c.kernel, c.stride, c.dilation, c.padding, explicit).symmetric \
                    and per_group.get(group, 0) < 4:  # a few of every op x dilation x padding mode
                per_group[group] = per_group.get(group, 0) + 1
                cases.append(c)
    return cases


CASES = _asymmetric_conv_cases()


def test_cases_cover_dilations_and_ops():
    assert {c.op for c in CASES} == {"conv", "depthwise", "depthwise_m2"}
    assert {c.dilation for c in CASES} >= {(1, 1), (2, 2), (1, 2)}


@pytest.fixture(scope="module")
def built():
    return {c.id: ir_cases.build(c) for c in CASES}


def _options(lowering: str) -> EmitOptions:
    return EmitOptions(static_shapes=True, extra={"conv_lowering": lowering})


@pytest.mark.parametrize("lowering", costs.LOWERINGS)
def test_torch_lowerings_match_tf(lowering, built, tmp_path):
    torch_emitter = emitters.get("torch")
    bad = []
    for case in CASES:
        b, out = built[case.id], tmp_path / case.id
        out.mkdir()
        result = torch_emitter.emit(b.graph, out, _options(lowering))
        (y,) = torch_emitter.run(out, [b.x_nchw])
        if ir_cases.rel_error(y, b.expected_nchw) > TOL:
            bad.append(case.id)
        taps = "zero taps added to the kernel" in (out / "model.py").read_text()
        assert taps != bool(result.pad_layers), case.id  # a kernel-tap conv writes no pad layer
    assert not bad


@pytest.mark.parametrize("lowering", costs.LOWERINGS)
def test_mxnet_lowerings_match_tf(lowering, built, tmp_path):
    from tf_convert.emitters.mxnet import runtime

    mx = emitters.get("mxnet")
    jobs = []
    for case in CASES:
        b, out = built[case.id], tmp_path / case.id
        out.mkdir()
        result = mx.emit(b.graph, out, _options(lowering))
        ops = [n["op"] for n in json.loads((out / "model-symbol.json").read_text())["nodes"]]
        assert ("Pad" in ops) == bool(result.pad_layers), case.id
        jobs.append((out, [b.x_nchw]))
    try:
        runtime.mxnet_python()
    except Exception:  # noqa: BLE001 - any failure to find the runtime skips
        pytest.skip("no MXNet runtime")
    bad = [case.id for case, (y,) in zip(CASES, runtime.run_many(jobs))
           if ir_cases.rel_error(y, built[case.id].expected_nchw) > TOL]
    assert not bad


def test_the_forced_kernel_lowering_is_used(built, tmp_path):
    """Guard against a silently ignored hook: 'kernel' must leave no pad layer where taps are exact."""
    case = next(c for c in CASES if c.dilation == (1, 1))
    out = Path(tmp_path)
    result = emitters.get("torch").emit(built[case.id].graph, out, _options("kernel"))
    assert result.pad_layers == []
