"""emitters.options: each target's options defined once -- the CLI flags, the manifest's view
(option_specs) and what the emitters and their limit checks see all come from the dataclasses."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tf_convert import cli
from tf_convert.convert import ir
from tf_convert.convert.ir import ops
from tf_convert.emitters import options as eo
from tf_convert.emitters.base import EmitOptions, HandlerTable


def test_one_target_list():
    from tf_convert import emitters

    assert emitters.TARGETS == eo.TARGETS == tuple(eo.OPTIONS) == ops.TARGETS == ("torch", "onnx", "mxnet", "caffe")


@pytest.mark.parametrize("target,expected", [
    ("torch", [("nhwc", bool, False, None, None), ("static_shapes", bool, False, None, None)]),
    ("caffe", [("caffe_pad", str, "auto", ("auto", "layer", "kernel", "shift", "opencv"), None),
               ("caffe_dialect", str, "bvlc", ("bvlc", "opencv"), None)]),
    ("mxnet", []),
    ("onnx", [("opset", int, eo.DEFAULT_OPSET, None, (eo.MIN_OPSET, eo.MAX_OPSET)),
              ("static_shapes", bool, False, None, None)]),
])
def test_option_specs(target, expected):
    specs = eo.option_specs(target)
    assert [(s.name, s.type, s.default, s.choices, s.range) for s in specs] == expected
    assert all(s.help for s in specs)


def test_all_option_specs_are_flat_and_unique():
    specs = eo.all_option_specs()
    assert sorted(specs) == ["caffe_dialect", "caffe_pad", "nhwc", "opset", "static_shapes"]
    # a name two targets share (static_shapes: torch, onnx) is one option: the same spec everywhere
    for t in eo.TARGETS:
        assert all(specs[s.name] == s for s in eo.option_specs(t))
    eo.check(specs["opset"], 13)
    with pytest.raises(ValueError, match="--caffe-pad 'x'"):
        eo.check(specs["caffe_pad"], "x")


@pytest.mark.parametrize("target", eo.TARGETS)
def test_cli_flags_are_generated_from_the_specs(target):
    out = CliRunner().invoke(cli.main, [f"tf2{target}", "--help"]).output
    for spec in eo.option_specs(target):
        assert spec.flag in out
    assert eo.OPTIONS[target].COMMAND_HELP.split(" (")[0] in " ".join(out.split())


def test_cli_rejects_values_outside_the_spec(tmp_path):
    result = CliRunner().invoke(cli.main, ["tf2onnx", str(tmp_path / "m.pb"), "--opset", str(eo.MAX_OPSET + 1)])
    assert result.exit_code == 2
    result = CliRunner().invoke(cli.main, ["tf2caffe", str(tmp_path / "m.pb"), "--caffe-pad", "nope"])
    assert result.exit_code == 2


def test_options_for_accepts_mappings_dataclasses_and_the_bag():
    assert eo.options_for("onnx") == eo.OnnxOptions()
    assert eo.options_for("onnx", {"opset": 13, "caffe_pad": "kernel"}) == eo.OnnxOptions(opset=13)
    assert eo.options_for("caffe", EmitOptions(caffe_pad="kernel")) == eo.CaffeOptions(caffe_pad="kernel")
    same = eo.TorchOptions(nhwc=True)
    assert eo.options_for("torch", same) is same
    with pytest.raises(ValueError, match="--opset 12"):
        eo.validate(eo.OnnxOptions(opset=12))


def test_limit_checks_see_the_real_options():
    """What the pipeline's pre-check relies on: unsupported(graph, options) hands the limits the
    target's options (e.g. the ONNX opset), not the defaults."""
    table = HandlerTable("onnx", "no handler")
    table.register("relu", limit=lambda ctx: None if ctx.options.opset >= 14 else f"opset {ctx.options.opset}")(
        lambda ctx: None)
    g = ir.Graph(name="g")
    g.inputs = [g.add_tensor("x", (1, 2))]
    g.outputs = [g.add_node("relu", "r", ["x"], (1, 2)), g.add_node("sigmoid", "s", ["x"], (1, 2))]
    assert [(u.node, u.hint) for u in table.unsupported(g, {"opset": 13})] == [("r", "opset 13"), ("s", "no handler")]
    assert [u.node for u in table.unsupported(g, eo.OnnxOptions(opset=17))] == ["s"]
