"""parsers/tensorflow/known_ops: the vendored op table is TF's op registry."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tf_convert.parsers.tensorflow.known_ops import is_known_op, output_args

ROOT = Path(__file__).resolve().parents[2]
needs_tf = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="TF is the reference")

# op -> its output arguments (name, number_attr, type_list_attr), as TF defines them
SAMPLES = {
    "FusedBatchNormV3": [("y", "", ""), ("batch_mean", "", ""), ("batch_variance", "", ""),
                         ("reserve_space_1", "", ""), ("reserve_space_2", "", ""), ("reserve_space_3", "", "")],
    "Split": [("output", "num_split", "")],
    "SplitV": [("output", "num_split", "")],
    "Unpack": [("output", "num", "")],
    "IdentityN": [("output", "", "T")],
    "StatefulPartitionedCall": [("output", "", "Tout")],
    "PartitionedCall": [("output", "", "Tout")],
    "While": [("output", "", "T")],
    "Conv2D": [("output", "", "")],
    "Const": [("output", "", "")],
    "NoOp": [],
    "VarHandleOp": [("resource", "", "")],
    "TopKV2": [("values", "", ""), ("indices", "", "")],
}


@pytest.mark.parametrize("op", SAMPLES)
def test_output_args_of_samples(op):
    assert is_known_op(op)
    assert output_args(op) == SAMPLES[op]


@pytest.mark.parametrize("name", ["NotAnOp", "", "conv2d", "Conv2D "])
def test_unknown_ops(name):
    assert not is_known_op(name) and output_args(name) is None


def test_output_args_is_a_fresh_list():
    output_args("Split").append(("x", "", ""))
    assert output_args("Split") == SAMPLES["Split"]


@needs_tf
def test_files_equal_tf_registry():
    """Every op TF registers, none more, each one's output arguments and attrs (both whole files), as a fresh
    interpreter that imports only TensorFlow sees them: modules other tests import register ops of their own."""
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "vendor_tf_ops.py"), "--check"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


@needs_tf
def test_table_agrees_with_op_def_registry():
    from tensorflow.python.framework import op_def_registry

    for name in SAMPLES:
        op_def = op_def_registry.get(name)
        assert [(a.name, a.number_attr, a.type_list_attr) for a in op_def.output_arg] == SAMPLES[name]
