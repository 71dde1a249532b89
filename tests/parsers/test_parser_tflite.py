"""The .tflite parser: detection by content, the operator table against the catalog and TFLite's schema,
SAME pads from convert.padding, weights (float16, quantized), signatures and the one-line errors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import tflite

from tests.support.tflite_cases import built
from tf_convert import parsers
from tf_convert.convert.errors import InputError, UnsupportedError, UsageError
from tf_convert.convert.ir.ops import OPS
from tf_convert.convert.padding import tf_pads
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tflite import FOLD, TABLE, weights
from tf_convert.parsers.tflite.op import Op
from tf_convert.parsers.tflite.schema import BUILTIN_NAMES, Operator, Quantization, Tensor


@pytest.fixture(scope="session")
def tflite_files(tmp_path_factory):
    return built(tmp_path_factory)


def _parse(path, **kw):
    return parsers.parse(path, ParseOptions(**kw))


def test_every_table_entry_is_a_tflite_builtin():
    names = set(BUILTIN_NAMES.values())
    assert set(TABLE.ops()) <= names and set(FOLD.ops()) <= names
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "FULLY_CONNECTED", "RESIZE_BILINEAR",
            "RESIZE_NEAREST_NEIGHBOR", "MEAN", "SOFTMAX", "PAD", "CONCATENATION", "RESHAPE"} <= set(TABLE.ops())


def test_detected_by_content_whatever_the_name(tflite_files, tmp_path):
    renamed = tmp_path / "model.bin"
    renamed.write_bytes(tflite_files["keras_convs_15"].read_bytes())
    assert parsers.detect(renamed) == "tflite"
    assert parsers.open_source(tflite_files["keras_convs_15"]).stem == "keras_convs_15"


def test_a_corrupt_flatbuffer_is_one_line(tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\x18\x00\x00\x00TFL3" + b"\xff" * 40)
    with pytest.raises(InputError, match="corrupt TFLite flatbuffer"):
        _parse(bad)


@pytest.mark.parametrize("name,size", [("keras_convs_15", 15), ("keras_convs_16", 16)])
def test_same_pads_are_tf_pads(name, size, tflite_files):
    graph = _parse(tflite_files[name])
    assert graph.metadata["source_format"] == "tflite"
    convs = [n for n in graph.nodes if n.op == "conv2d" and n.attrs.get("padding") == "SAME"]
    assert len(convs) == 2
    for node in convs:
        h, w = graph.shape(node.inputs[0])[2:]
        assert tuple(node.attrs["pads"]) == tuple(tf_pads((h, w), node.attrs["kernel"], node.attrs["stride"],
                                                          node.attrs["dilation"], "SAME"))
    depthwise = next(n for n in convs if n.attrs["groups"] > 1)
    assert depthwise.params["weight"].shape == (16, 1, 3, 3)  # channel multiplier 2
    assert {n.op for n in graph.nodes} <= set(OPS)
    assert graph.source_layouts[graph.inputs[0]] == "NHWC"


def test_float16_weights_are_taken_as_float32_with_a_note(tflite_files):
    options = ParseOptions()
    graph = parsers.parse(tflite_files["float16"], options)
    assert all(p.dtype.name == "float32" for n in graph.nodes for p in n.params.values() if p.dtype.kind == "f")
    assert any("float16" in note for note in options.notes)
    assert options.records[0]["stored"] == "float16" and options.records[0]["taken"] == "float32"


@pytest.mark.parametrize("name,named", [("dynamic_range", "hybrid (dynamic-range)"), ("unique", "UNIQUE")])
def test_refused_by_name(name, named, tflite_files):
    with pytest.raises(UnsupportedError, match=named.replace("(", r"\(").replace(")", r"\)")):
        _parse(tflite_files[name])


def test_signatures(tflite_files):
    path = tflite_files["signatures"]
    options = ParseOptions()
    main = parsers.parse(path, options)
    assert any("2 subgraphs" in note for note in options.notes)
    shift = _parse(path, settings={"signature": "shift"})
    assert [shift.source_names[t] for t in shift.inputs] == ["vector"]
    assert [shift.source_names[t] for t in shift.outputs] == ["shifted"]
    assert shift.metadata["tf_settings"] == {"signature": "shift"}
    assert main.shape(main.inputs[0]) == (1, 2, 7, 7)
    with pytest.raises(UsageError, match="signatures: scale, shift"):
        _parse(path, settings={"signature": "nope"})
    with pytest.raises(UsageError, match="no placeholders"):
        _parse(path, settings={"is_training": "false"})


def test_the_file_fixes_its_input_size(tflite_files):
    with pytest.raises(UsageError, match="fixed at"):
        _parse(tflite_files["keras_convs_15"], input_shapes={"": (1, 17, 17, 3)})
    assert _parse(tflite_files["keras_convs_15"], input_shapes={"": (1, 15, 15, 3)}).inputs


def test_reading_needs_no_tensorflow(tflite_files):
    code = ("import sys; from tf_convert import parsers; parsers.parse(sys.argv[1]); "
            "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules")
    subprocess.run([sys.executable, "-c", code, str(tflite_files["keras_convs_15"])], check=True)


def test_schema_enums_come_from_the_generated_classes():
    assert BUILTIN_NAMES[tflite.BuiltinOperator.CONV_2D] == "CONV_2D"


@pytest.mark.parametrize("scale,zero,axis", [([0.02], [3], 0), ([0.5, 0.25, 0.125], [0, -1, 2], 1)])
def test_int8_constants_dequantize_as_tflite_does(scale, zero, axis):
    """scale * (q - zero_point): per tensor in double then float32, per channel in float32 (TFLite's kernels)."""
    q = np.arange(-6, 6, dtype=np.int8).reshape(4, 3)
    quant = Quantization(np.asarray(scale, np.float32), np.asarray(zero, np.int64), axis)
    tensors = [Tensor(0, "w", q.shape, q.shape, "INT8", q, quant), Tensor(1, "w_dq", q.shape, q.shape, "FLOAT32",
                                                                          None, None)]
    op = Op(None, Operator(0, "DEQUANTIZE", False, [0], [1], None), tensors, {}, {0: q})
    value = weights.dequantize(op, [q])[0]
    shape = [1, 1]
    shape[axis] = -1
    expected = (q.astype(np.float32) - np.asarray(zero, np.float32).reshape(shape)) * \
        np.asarray(scale, np.float32).reshape(shape)
    assert value.dtype == np.float32 and np.array_equal(value, expected)


def test_sparse_weights_are_made_dense_with_a_note(tflite_files):
    options = ParseOptions()
    graph = parsers.parse(tflite_files["sparse"], options)
    linears = [n for n in graph.nodes if n.op == "linear"]
    assert len(linears) == 2 and 0.7 < float((linears[0].params["weight"] == 0).mean()) < 0.9
    assert any(r["stored"] == "sparse" for r in options.records)


def test_every_builtin_of_the_schema_has_a_handler_or_a_reason():
    """The schema's BuiltinOperator enum (the `tflite` package), walked: each builtin converts (TABLE) or is
    refused with its reason (parsers/tflite/refused.py), never both, never neither."""
    import tflite

    from tf_convert.parsers.tflite import TABLE, refused

    names = [k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_") and isinstance(v, int)]
    neither = [n for n in names if n not in TABLE and refused.reason(n) is None]
    both = [n for n in names if n in TABLE and refused.reason(n) is not None]
    assert not neither and not both, (neither, both)
    assert set(refused.REFUSED) <= set(names)  # no reason for a builtin the schema does not have
