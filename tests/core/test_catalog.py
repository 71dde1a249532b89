"""The op catalog (convert/ir/ops.py) is complete and is the one place an op is stated.

Completeness: every catalog op has a reference function, a shape rule, a parser that produces it
(TensorFlow or Keras) and, for every target, a handler or a declared refusal with its reason.
Derivation: the op sets other modules read are the catalog's, pinned to what the hand-kept lists
held before they went (so behaviour is unchanged).
"""

from __future__ import annotations

import ast
import importlib
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tf_convert.convert import ir
from tf_convert.convert.ir import check, ops
from tf_convert.convert.ir.ops import OPS, Attr, OpSpec
from tf_convert.convert.ir.reference import RECURRENT_ACTIVATIONS, REFERENCE
from tf_convert.convert.ir.shapes import RUN_TIME

REPO = Path(__file__).resolve().parents[2]
EMITTERS = {target: f"tf_convert.emitters.{target}" for target in ops.TARGETS}  # the package fills its TABLE
PARSERS = {"tensorflow": REPO / "parsers" / "tensorflow", "keras": REPO / "parsers" / "keras",
           "tflite": REPO / "parsers" / "tflite"}


def _ops_named_in(package: Path) -> set[str]:
    """Catalog op names a parser package's code names as values: the IR ops its handlers emit,
    directly (`ctx.emit("relu", ...)`) or through a table (`{"Relu": ("relu", {})}`). Dict keys
    (attribute names, source op names) do not count."""
    found = set()
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text())
        keys = {id(k) for d in ast.walk(tree) if isinstance(d, ast.Dict) for k in d.keys if k is not None}
        found |= {n.value for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and n.value in OPS and id(n) not in keys}
    return found


# ---- completeness -------------------------------------------------------------------------------


def test_every_op_has_a_reference_function():
    assert set(REFERENCE) == set(OPS)


def test_every_cell_activation_has_a_reference_function():
    assert set(RECURRENT_ACTIVATIONS) == set(ops.CELL_ACTIVATIONS)


def test_every_op_has_a_shape_rule_a_family_and_typed_attrs_it_declares():
    for name, spec in OPS.items():
        assert spec.shape is not None, name
        assert spec.family in ops.FAMILIES, (name, spec.family)
        assert spec.kind in ops.KINDS, (name, spec.kind)
        assert set(spec.types) <= set(spec.attributes), (name, set(spec.types) - set(spec.attributes))
        assert spec.size in {"free", "broadcast", "channel_axis", "global_reduce", "tf_padding", "constant_pad",
                             "bound", "unit_axes", "permute", "matmul", "gather_indices", "resample",
                             "last_axis", "own_axes", "recurrent"}, (name, spec.size)


def test_padding_is_declared_on_the_ops_that_carry_it():
    """parsers set attrs['padding'] (TF's rule: SAME pads follow the input size); padding/ reads it."""
    carriers = {name for name, spec in OPS.items() if "padding" in spec.attributes}
    volume = {"conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d"}
    assert carriers == {"conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d"} | volume
    for name in carriers:
        attr = OPS[name].attributes["padding"]
        assert attr.required == (name in ops.WINDOW_OPS) and set(attr.choices) == {"SAME", "VALID", "EXPLICIT"}


def test_a_window_op_declares_its_padding_and_every_node_sets_it():
    """Its pads alone do not say whether they follow the input size: the node built says (no later stamping)."""
    assert ops.WINDOW_OPS == {"conv2d", "max_pool2d", "avg_pool2d"}
    for name in ops.WINDOW_OPS:
        assert OPS[name].attributes["padding"].required, f"window op {name} without a required padding"
    g = ir.Graph("g")
    g.inputs = [g.add_tensor("x", (1, 3, 4, 4))]
    g.outputs = [g.add_node("max_pool2d", "p", ["x"], (1, 3, 2, 2), {"kernel": (2, 2), "stride": (2, 2),
                                                                     "pads": (0, 0, 0, 0)})]
    assert check.problems(g) == ["node p (max_pool2d): attribute 'padding' is required"]


@pytest.mark.parametrize("target", ops.TARGETS)
def test_every_op_has_a_handler_or_a_declared_refusal(target):
    table = importlib.import_module(EMITTERS[target]).TABLE
    handled = set(table.ops())
    refused = {name for name, spec in OPS.items() if target in spec.refused}
    assert handled <= set(OPS), sorted(handled - set(OPS))
    assert not handled & refused, f"{target}: both a handler and a refusal for {sorted(handled & refused)}"
    neither = sorted(set(OPS) - handled - refused)
    assert not neither, f"{target}: neither a handler nor a declared refusal for {neither}"
    for name in refused:
        assert len(OPS[name].refused[target]) > 20, (name, "a refusal says why")


def test_a_refusal_is_the_hint_the_target_gives():
    from tf_convert.emitters.caffe import TABLE

    g = ir.Graph("g")
    g.inputs = [g.add_tensor("x", (1, 3, 4, 4))]
    g.outputs = [g.add_node("argmax", "am", ["x"], (1, 4, 4), {"axis": 1, "keepdims": False}, out_dtype="int64")]
    [problem] = TABLE.unsupported(g)
    assert problem.hint == OPS["argmax"].refused["caffe"]


def test_refusals_name_known_targets():
    for name, spec in OPS.items():
        assert set(spec.refused) <= set(ops.TARGETS), name


def test_every_op_is_produced_by_a_parser():
    """By a handler that names it, or by the catalog row's `tf` / `keras` (the parsers register those)."""
    produced = {source: _ops_named_in(path) for source, path in PARSERS.items()}
    from_rows = {op for op, _ in [*ops.TF_OPS.values(), *ops.KERAS_ACTIVATIONS.values()]}
    missing = set(OPS) - produced["tensorflow"] - produced["keras"] - produced["tflite"] - from_rows
    assert not missing, f"catalog ops no parser emits: {sorted(missing)}"


def test_abs_comes_from_tensorflow_abs():
    importlib.import_module("tf_convert.parsers.tensorflow.ops")
    from tf_convert.parsers.tensorflow.table import TABLE

    assert "Abs" in TABLE and ops.TF_OPS["Abs"] == ("abs", {})


def test_every_row_s_source_ops_are_registered():
    """A row's `tf` ops have a parser handler, a TF shape function and a constant fold; its `keras` names
    are activations the Keras parser applies; its `tflite` builtins have a TFLite parser handler."""
    importlib.import_module("tf_convert.parsers.tensorflow.ops")
    from tf_convert.parsers.keras.elementwise import ACTIVATIONS
    from tf_convert.parsers.tensorflow.table import TABLE
    from tf_convert.parsers.tensorflow.tfgraph import FOLDS, SHAPE_FNS
    from tf_convert.parsers.tflite import TABLE as TFLITE_TABLE

    for tf_op in ops.TF_OPS:
        assert tf_op in TABLE and tf_op in SHAPE_FNS and tf_op in FOLDS, tf_op
    assert set(ops.KERAS_ACTIVATIONS) <= set(ACTIVATIONS)
    assert set(ops.TFLITE_BUILTINS) <= set(TFLITE_TABLE)


# ---- shape rules ----------------------------------------------------------------------------------


def _shape_cases():
    """(op, attrs, params, inputs) from the reference tests' table, each with the reference's output."""
    from tests.core.test_ir_reference import OTHER_OPS

    for op, rows in sorted(OTHER_OPS.items()):
        for attrs, params, inputs, _ in rows:
            yield op, attrs, params, inputs


def test_shape_rules_agree_with_the_reference():
    seen = set()
    for op, attrs, params, inputs in _shape_cases():
        node = ir.Node("n", op, [f"in{i}" for i in range(len(inputs))], ["n"], dict(attrs), dict(params))
        want = ir.evaluate_node(node, inputs).shape
        got = OPS[op].shape([x.shape for x in inputs], attrs, {k: np.shape(v) for k, v in params.items()})
        # a size that follows a run-time value (RUN_TIME) is the reference's to say
        assert len(got) == len(want) and all(g in (w, RUN_TIME) for g, w in zip(got, want)), (op, attrs, got, want)
        seen.add(op)
    assert seen == set(OPS) - {"conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d"}


def test_check_finds_a_wrong_shape_and_a_missing_attr():
    g = ir.Graph("g")
    g.inputs = [g.add_tensor("x", (1, 3, 8, 8))]
    w = np.zeros((4, 3, 3, 3), np.float32)
    attrs = {"kernel": (3, 3), "stride": (2, 2), "dilation": (1, 1), "groups": 1, "pads": (0, 1, 0, 1),
             "padding": "SAME"}
    good = g.add_node("conv2d", "good", ["x"], (1, 4, 4, 4), attrs, {"weight": w})
    bad = g.add_node("conv2d", "bad", ["x"], (1, 4, 3, 4), attrs, {"weight": w})
    g.add_node("softmax", "nosoftaxis", [good], (1, 4, 4, 4), {})
    g.outputs = [bad]
    found = check.problems(g)
    assert len(found) == 2
    assert "node bad (conv2d): output shape (1, 4, 3, 4), the op's shape rule gives (1, 4, 4, 4)" in found
    assert "node nosoftaxis (softmax): attribute 'axis' is required" in found


def test_parsed_padding_matrix_graphs_agree_with_their_shape_rules(tmp_path):
    pytest.importorskip("tensorflow")
    from tests.support.ir_cases import matrix
    from tests.support.tf_cases import build_pb
    from tf_convert import parsers
    from tf_convert.convert import passes
    from tf_convert.parsers.base import ParseOptions

    cases = matrix()[::12]
    for i, case in enumerate(cases):
        graph = parsers.parse(build_pb(case, tmp_path / str(i)).pb, ParseOptions())
        assert check.problems(graph) == [], case.id
        assert check.problems(passes.run_default_passes(graph)) == [], case.id


# ---- old-style rows -------------------------------------------------------------------------------


def test_an_old_style_row_gets_its_flags_from_its_kind():
    unary = OpSpec(("alpha",), (), "doc", "unary")
    assert (unary.family, unary.elementwise, unary.positional, unary.size) == ("elementwise", True, True, "broadcast")
    assert unary.shape([(1, 2, 3, 4)], {}, {}) == (1, 2, 3, 4)
    assert not unary.foldable and not unary.window and not unary.padded and unary.refused == {}
    assert unary.attributes == {"alpha": Attr()} and unary.attributes["alpha"].required
    binary = OpSpec((), (), "doc", "binary")
    assert binary.shape([(1, 4, 1, 1), (1, 1, 5, 6)], {}, {}) == (1, 4, 5, 6)
    spatial = OpSpec(("k?",), (), "doc", "spatial")
    assert (spatial.family, spatial.positional, spatial.size, spatial.shape) == ("spatial", False, "bound", None)
    assert not spatial.attributes["k"].required


# ---- the derived sets equal the hand-kept lists they replaced --------------------------------------

OLD_FOLDABLE = {"add", "sub", "mul", "div", "maximum", "minimum", "relu", "clip", "sigmoid", "tanh", "exp", "sqrt",
                "rsqrt", "square", "neg", "identity", "transpose", "reshape", "concat"}
OLD_POSITIONAL = {"add", "sub", "mul", "div", "maximum", "minimum", "relu", "clip", "leaky_relu", "elu", "sigmoid",
                  "hard_sigmoid", "tanh", "swish", "hard_swish", "gelu", "exp", "sqrt", "rsqrt", "square", "neg",
                  "identity", "channel_affine"}
NEW_OPS = {"abs", "lrn", "fake_quant"}  # ops added since the lists went: they follow their flags
# elementwise (positional), and reductions/running ops along axes (positional on the
# channel axis only, size-free when global or along N/C: the rules reduce_mean and softmax follow)
ISSUE22_AXES_OPS = {"reduce_sum", "reduce_prod", "reduce_min", "reduce_all", "reduce_any"}
ISSUE22_AXIS_OPS = {"log_softmax", "cumsum", "cumprod"}
NEW_OPS |= {"softplus", "softsign", "selu", "erf", "erfc", "floor", "ceil", "round", "sign", "log", "log1p", "expm1",
            "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
            "is_nan", "is_inf", "is_finite", "logical_not", "cast", "pow", "floor_div", "floor_mod", "truncate_div",
            "truncate_mod", "div_no_nan", "atan2", "equal", "not_equal", "less", "less_equal", "greater",
            "greater_equal", "logical_and", "logical_or", "select"}
NEW_OPS |= {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "left_shift", "right_shift"}  # part A (opsa)
NEW_OPS |= {"quantize", "dequantize", "lookup"}  # TFLite's integer edges and tables: elementwise
VOLUME_FREE = {"conv3d", "max_pool3d", "avg_pool3d", "repeat", "crop"}  # free at every volume size
VOLUME_FREE |= {"pad_by", "tile_by"}  # a pad or tile by run-time amounts reads no size: free at every size


def test_derived_sets_equal_the_old_lists():
    from tf_convert.app import inspect
    from tf_convert.app.diagnose import border
    from tf_convert.convert import padding
    from tf_convert.convert.padding import sizes, targets
    from tf_convert.convert.passes import constants, layout

    window = {"conv2d", "max_pool2d", "avg_pool2d"}
    assert constants.FOLDABLE - NEW_OPS == OLD_FOLDABLE
    assert set(targets.PADDED_OPS) == set(padding.PADDED_OPS) == window | {"conv_transpose2d", "pad"}
    assert set(targets.WINDOW_OPS) == set(border.WINDOW_OPS) == set(inspect.WINDOW_OPS) == window
    assert set(sizes._SIZE_FREE) - NEW_OPS - VOLUME_FREE == window | {"channel_affine", "identity"}
    elementwise_kinds = ops.ops_of_kind("unary") | ops.ops_of_kind("binary")  # the old _ELEMENTWISE_KINDS
    # identity: size-free, as before; matmul: free along its left operand's rows only (1-D lengths)
    assert set(sizes._BROADCASTING) == elementwise_kinds - {"identity", "matmul"}
    assert set(sizes._GLOBAL_REDUCTIONS) - ISSUE22_AXES_OPS == {"reduce_mean", "reduce_max"}
    assert set(layout._KEEPDIMS_REDUCTIONS) == set(sizes._GLOBAL_REDUCTIONS)
    assert ops.ops_of_size("channel_axis") - ISSUE22_AXIS_OPS == {"concat"}
    # sequences at every length: softmax over attention's keys, layer norm over features
    assert ops.ops_of_size("own_axes") == {"softmax", "layer_norm", "integer_softmax"}
    assert ops.ops_of_size("tf_padding") == {"conv_transpose2d", "conv_transpose3d"}
    assert ops.ops_of_size("constant_pad") == {"pad"}
    assert set(sizes.SLIDING_OPS) == window | {"conv3d", "max_pool3d", "avg_pool3d"}


@pytest.mark.parametrize("op", sorted(OPS))
def test_positional_equals_the_old_rule(op):
    """border._positional before the catalog: the old set, concat/softmax along axis 1, reductions and
    layer_norm over (1,) keeping it."""
    from tf_convert.app.diagnose import border

    def old(attrs):
        if op in axis_ops:
            return attrs["axis"] == 1
        if op in axes_ops:
            return bool(tuple(attrs["axes"]) == (1,) and attrs.get("keepdims", True))
        return op in OLD_POSITIONAL | NEW_OPS

    axis_ops = {"concat", "softmax", "integer_softmax"} | ISSUE22_AXIS_OPS
    axes_ops = {"reduce_mean", "reduce_max", "layer_norm"} | ISSUE22_AXES_OPS
    for attrs in ({"axis": 1}, {"axis": 3}, {"axis": -3}, {"axes": (1,), "keepdims": True}, {"axes": (1,)},
                  {"axes": (1,), "keepdims": False}, {"axes": (2, 3), "keepdims": True}, {"axes": [1]}):
        if op in axis_ops and "axis" not in attrs or op in axes_ops and "axes" not in attrs:
            continue
        node = ir.Node("n", op, ["x"], ["n"], dict(attrs))
        assert border._positional(node) == old(attrs), (op, attrs)


def test_torch_literal_consumers_are_its_python_operators():
    from tf_convert.emitters.torch import elementwise

    assert elementwise.LITERAL_CONSUMERS == {"add", "sub", "mul", "div"}


def test_integer_flags_are_known_values():
    """`integers` decides what --verify feeds an integer input: only "wrap", "end" or unset mean anything."""
    assert {spec.integers for spec in ops.OPS.values()} <= {"", "wrap", "end"}
    assert ops.INTEGER_WRAPPING and ops.INTEGER_ENDING and not ops.INTEGER_WRAPPING & ops.INTEGER_ENDING
