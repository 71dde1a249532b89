"""Family files line up everywhere: every target keeps its contract (TABLE, Ctx) in contract.py and its
handlers in modules named after the catalog families, and one op lives in the same family in every
target; every op table is a convert.registry.OpTable."""

from __future__ import annotations

import importlib
import importlib.util

import pytest

from tf_convert import emitters
from tf_convert.convert.ir.ops import FAMILIES, OPS
from tf_convert.convert.ir.reference import REFERENCE
from tf_convert.convert.registry import OpTable


def _family(fn) -> str:
    """A handler's family is its module's name; `spatial_3d` is the spatial family's 3-D part."""
    return fn.__module__.rsplit(".", 1)[-1].split("_")[0]


def _table(target: str) -> OpTable:
    emitters.get(target)  # the package's __init__ imports the family modules
    return importlib.import_module(f"tf_convert.emitters.{target}.contract").TABLE


@pytest.mark.parametrize("target", emitters.TARGETS)
def test_contract_module_holds_table_and_context(target):
    contract = importlib.import_module(f"tf_convert.emitters.{target}.contract")
    assert isinstance(contract.TABLE, OpTable) and hasattr(contract, "Ctx")
    assert not importlib.util.find_spec(f"tf_convert.emitters.{target}.ops")


@pytest.mark.parametrize("target", emitters.TARGETS)
def test_handlers_live_in_family_modules(target):
    table = _table(target)
    misplaced = {op: _family(table.get(op)) for op in table if _family(table.get(op)) not in FAMILIES}
    assert not misplaced


@pytest.mark.parametrize("parser", ["tensorflow", "keras"])
def test_parser_handlers_live_in_family_modules(parser):
    importlib.import_module(f"tf_convert.parsers.{parser}.ops" if parser == "tensorflow"
                            else "tf_convert.parsers.keras")
    table = importlib.import_module(f"tf_convert.parsers.{parser}.table").TABLE
    # tf_keras's TF-op layers hand each call to the TF parser's own handler, of whatever family that op is
    bridges = {"TFOpLambda", "SlicingOpLambda"} if parser == "keras" else set()
    misplaced = {op: _family(table.get(op)) for op in table
                 if op not in bridges and _family(table.get(op)) not in FAMILIES}
    assert len(table) > 0 and not misplaced


def test_reference_functions_live_in_their_catalog_family():
    misplaced = {op: _family(REFERENCE.get(op)) for op in OPS if _family(REFERENCE.get(op)) != OPS[op].family}
    assert not misplaced


def test_an_op_has_one_family_across_targets():
    families: dict[str, set[str]] = {}
    for target in emitters.TARGETS:
        table = _table(target)
        for op in table:
            families.setdefault(op, set()).add(_family(table.get(op)))
    assert {op: f for op, f in families.items() if len(f) > 1} == {}


@pytest.mark.parametrize("module,table", [
    ("tf_convert.convert.ir.reference", "REFERENCE"),
    ("tf_convert.parsers.tensorflow.table", "TABLE"),
    ("tf_convert.parsers.keras.table", "TABLE"),
    ("tf_convert.parsers.keras.weights", "SPECS"),
    ("tf_convert.parsers.tensorflow.tfgraph", "FOLDS"),
    ("tf_convert.parsers.tensorflow.tfgraph", "SHAPE_FNS"),
])
def test_every_op_table_is_an_op_table(module, table):
    for filler in ("tf_convert.parsers.tensorflow.ops", "tf_convert.parsers.keras"):  # their handlers
        importlib.import_module(filler)
    found = getattr(importlib.import_module(module), table)
    assert isinstance(found, OpTable) and len(found) == len(list(found)) > 0


def test_a_second_handler_for_an_op_is_refused():
    table = OpTable("test")
    table.register("relu")(lambda: None)
    with pytest.raises(ValueError, match="two handlers for 'relu'"):
        table.register("relu")(lambda: None)
