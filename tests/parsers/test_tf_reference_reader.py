"""The TF reference run reads checkpoint weights with TensorFlow's own reader (RestoreV2), never with ours:
a bug in our bundle reader makes the converted model wrong, and the reference must not share it,
or --verify would say OK to a wrong model."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support import tf_models
from tf_convert import parsers
from tf_convert.app.verify import make_inputs
from tf_convert.convert.ir import reference
from tf_convert.parsers.tensorflow import bundle


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tf_models.build_resnet_v1_tiny(tmp_path_factory.mktemp("reader") / "resnet")


@pytest.mark.parametrize("kind", ["ckpt", "saved_model"])
def test_reference_does_not_share_our_reading_of_the_weights(model, kind):
    graph = parsers.parse(model[kind])
    inputs = make_inputs(graph)
    truth = parsers.run_reference(model[kind], graph, inputs)
    with pytest.MonkeyPatch.context() as patch:
        right = bundle.Bundle.read
        patch.setattr(bundle.Bundle, "read", lambda self, key, view=None: _scaled(right(self, key, view)))
        bundle._OPEN.clear()
        wrong_graph = parsers.parse(model[kind])
        converted = reference.evaluate(wrong_graph, inputs)[wrong_graph.outputs[0]]
        under_bug = parsers.run_reference(model[kind], wrong_graph, inputs)
    bundle._OPEN.clear()
    assert np.max(np.abs(converted - truth[0])) > 1e-3  # the planted bug changes the converted model
    np.testing.assert_array_equal(under_bug[0], truth[0])  # ... and not TF's reference


def _scaled(value: np.ndarray) -> np.ndarray:
    return value * np.asarray(1.5, value.dtype) if value.dtype.kind == "f" else value
