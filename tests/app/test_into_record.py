"""The record's names of torch calls (app/into_module/record.py): one name per op, whichever of torch's spellings
a module uses (ConvBERT's `torch.multiply` is the `mul` TF's graph has)."""

from __future__ import annotations

import operator

import pytest

from tf_convert.app.into_module import record

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("func, name", [
    (torch.Tensor.__add__, "add"), (torch.Tensor.__radd__, "add"), (torch.Tensor.__getitem__, "getitem"),
    (torch.multiply, "mul"), (torch.Tensor.multiply, "mul"), (torch.subtract, "sub"), (torch.divide, "div"),
    (torch.true_divide, "div"), (torch.concatenate, "cat"), (torch.mul, "mul"), (operator.mul, "mul"),
    (torch.matmul, "matmul"),
])
def test_each_spelling_of_an_op_is_one_name(func, name):
    assert record.canonical(func) == name
