"""`--into` pairs TF's Roll (the IR's tail-then-head slices and concat per axis) with `torch.roll`: the weights on
either side of it map and the module matches TF; a module rolling the other way is exit 3 naming both shifts."""

from __future__ import annotations

import numpy as np
import pytest

from tf_convert import app as convert
from tf_convert.app.into_module.mismatch import ArchitectureMismatch

tf = pytest.importorskip("tensorflow")
torch = pytest.importorskip("torch")


class RollNet(torch.nn.Module):
    """Linear, a cyclic shift of the tokens and the features (Swin's shifted windows), Linear."""

    def __init__(self, shift: int = -2):
        super().__init__()
        self.first, self.last, self.shift = torch.nn.Linear(4, 6), torch.nn.Linear(6, 3), shift

    def forward(self, x):
        return self.last(torch.roll(self.first(x), shifts=(self.shift, 1), dims=(1, 2)))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(0)
    module = tf.Module()
    module.w1, module.b1 = (tf.Variable(rng.standard_normal(s).astype(np.float32)) for s in ((4, 6), (6,)))
    module.w2, module.b2 = (tf.Variable(rng.standard_normal(s).astype(np.float32)) for s in ((6, 3), (3,)))

    @tf.function(input_signature=[tf.TensorSpec((2, 5, 4), tf.float32, name="x")])
    def serve(x):
        h = tf.roll(tf.einsum("btc,cd->btd", x, module.w1) + module.b1, shift=[-2, 1], axis=[1, 2])
        return tf.einsum("btc,cd->btd", h, module.w2) + module.b2

    path = tmp_path_factory.mktemp("roll") / "saved"
    tf.saved_model.save(module, str(path), signatures={"serving_default": serve})
    return path


def test_tf_roll_pairs_with_torch_roll(saved, tmp_path):
    doc = convert.into(saved, "tests.app.test_into_roll:RollNet", tmp_path / "out", verify=True)
    assert doc["verify"]["passed"] and doc["verify"]["max_rel"] < 1e-6, doc["verify"]
    assert any(p["kind"] == "roll" for p in doc["pairs"])


def test_a_roll_the_other_way_is_refused(saved, tmp_path):
    with pytest.raises(ArchitectureMismatch, match="rolls by"):
        convert.into(saved, "tests.app.test_into_roll:RollNet", tmp_path / "out", kwargs={"shift": 2})
    assert not (tmp_path / "out").exists()
