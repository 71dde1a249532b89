"""--into-kwargs (app/into_kwargs.py): anything but a small JSON object, and a module whose arguments ask for
more memory than there is, is one line and exit 2, through the CLI and the API alike (never a RecursionError
or an allocator's failure as exit 1, never the OOM killer)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.tf_models import save_frozen
from tests.support.verify_faults import run_cli
from tf_convert.app import api, into_kwargs
from tf_convert.convert.errors import UsageError

MODULE = """
import torch


class Net(torch.nn.Module):
    def __init__(self, width=4, **unused):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, width, 3, padding=1)

    def forward(self, x):
        return self.conv(x)
"""

DEEP = '{"a": ' + "[" * 5000 + "]" * 5000 + "}"  # json's decoder recurses: RecursionError where unchecked
CASES = {  # case: (--into-kwargs, words of the error, whether the API's mapping form of it is refused too)
    "deeply nested": (DEEP, "nests deeper", False),
    "nested past the limit": ('{"a": ' + "[" * 7 + "1" + "]" * 7 + "}", "levels deep", True),
    "too long": (json.dumps({"a": "x" * (into_kwargs.MAX_CHARS + 1)}), "characters long", False),
    "too many values": (json.dumps({"a": list(range(into_kwargs.MAX_VALUES + 1))}), "values", True),
    "not an object": ("[1, 2]", "must be a JSON object", True),
    "not JSON": ("{width: 4}", "is not JSON", False),
    "an integer too long to read": ('{"width": 1' + "0" * 5000 + "}", "is not JSON", False),
    "a module larger than memory": ('{"width": 100000000000}', "more than the", True),
}


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("into_kwargs")

    def build(x):
        import tensorflow as tf

        w = tf.constant(np.random.default_rng(0).standard_normal((3, 3, 3, 4)).astype(np.float32))
        tf.identity(tf.nn.conv2d(x, w, 1, "SAME"), name="out")

    pb = Path(save_frozen(root / "conv.pb", build, [1, 8, 8, 3]))
    (root / "net.py").write_text(MODULE)
    return {"pb": pb, "module": root / "net.py"}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_into_kwargs_is_exit_2_on_one_line(source, case, tmp_path):
    text, words, through_api = CASES[case]
    code, _, err = run_cli("tf2torch", source["pb"], "-o", tmp_path / "out", "--into", f"{source['module']}:Net",
                           "--into-kwargs", text)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and words in err and "internal error" not in err
    assert not (tmp_path / "out").exists()
    if not through_api:  # a text-only fault: the API takes a mapping
        return
    with pytest.raises(UsageError) as refused:
        api.into(source["pb"], f"{source['module']}:Net", tmp_path / "api", kwargs=json.loads(text))
    assert refused.value.exit_code == 2 and words in str(refused.value)


def test_a_small_object_still_works(source, tmp_path):
    code, _, err = run_cli("tf2torch", source["pb"], "-o", tmp_path / "out", "--into", f"{source['module']}:Net",
                           "--into-kwargs", '{"width": 4, "extra": {"sizes": [[1, 2], [3, 4]]}}')
    assert code == 0, err
