"""What the size-following tests (sequence lengths, free sequences, volume sizes) share."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tf_convert.convert.ir import Graph


def assert_bound_as_expected(graph: Graph, expected: str | None) -> None:
    """`graph` follows the input size (expected None), or is bound with `expected` in size_bound's reason."""
    from tf_convert.convert.padding.sizes import size_bound

    bound = size_bound(graph)
    if expected is None:
        assert bound is None, bound
    else:
        assert bound is not None and expected in bound, bound


def free_twin(build, keras, model, free_size):
    """The model `build(keras, free_size)` makes (a free length or volume: None axes), holding `model`'s
    weights: TF's reference at any size for a model converted at `model`'s fixed one."""
    twin = build(keras, free_size)
    twin.set_weights(model.get_weights())
    return twin


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """`python -m tf_convert.cli ARGS` in a fresh process, this checkout first on its path (a --verify
    there is the user's whole run: its own reference child, its own imports)."""
    path = [os.environ.get("PYTHONPATH"), str(Path(__file__).resolve().parents[2])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, path)))
    return subprocess.run([sys.executable, "-m", "tf_convert.cli", *args], capture_output=True, text=True, env=env)
