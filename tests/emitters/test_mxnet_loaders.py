"""MXNet's two loaders (`SymbolBlock.imports` and `mx.mod.Module`, emitters/mxnet/runtime.py) disagreeing is a
failed check, exit 4 naming both results, through the CLI and the API (it was an internal error, exit 1). The
disagreement is real, not mocked: a random op added to a written model draws other numbers in each loader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.verify_faults import run_cli
from tf_convert import emitters
from tf_convert.app import api
from tf_convert.convert.errors import VerifyError

pytestmark = pytest.mark.skipif(not (Path(emitters.__file__).parents[1] / ".venv-mxnet").exists(),
                                reason="no .venv-mxnet (run `make mxnet-env`)")


@pytest.fixture(scope="module")
def noisy(tmp_path_factory) -> Path:
    """A written MXNet model whose output gets uniform noise added (a `_random_uniform` node)."""
    import tensorflow as tf

    root = tmp_path_factory.mktemp("mxnet_loaders")
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [1, 4], name="x")
        tf.identity(x * 2.0, name="out")
    (root / "model.pb").write_bytes(graph.as_graph_def().SerializeToString())
    out = root / "out"
    code, _, err = run_cli("tf2mxnet", root / "model.pb", "-o", out)
    assert code == 0, err
    path = out / "model-symbol.json"
    symbol = json.loads(path.read_text())
    (head, _, _), = symbol["heads"]
    symbol["nodes"] += [
        {"op": "_random_uniform", "name": "noise", "attrs": {"shape": "(1, 4)", "low": "0", "high": "1"},
         "inputs": []},
        {"op": "broadcast_add", "name": "noisy", "inputs": [[head, 0, 0], [len(symbol["nodes"]), 0, 0]]}]
    symbol["heads"] = [[len(symbol["nodes"]) - 1, 0, 0]]
    symbol["node_row_ptr"] = list(range(len(symbol["nodes"]) + 1))
    path.write_text(json.dumps(symbol))
    return out


def test_loaders_that_disagree_are_exit_4_naming_both(noisy):
    code, _, err = run_cli("verify", noisy)
    assert code == 4, err
    assert len(err.strip().splitlines()) == 1 and "internal error" not in err
    assert "SymbolBlock.imports gives" in err and "mx.mod.Module" in err and "disagree" in err
    with pytest.raises(VerifyError, match="two loaders disagree") as failed:
        api.verify(noisy)
    assert failed.value.exit_code == 4
