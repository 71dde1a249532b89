"""Shared set-up of the emitter tests that build Keras models (sequence and volume sizes)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def keras():
    """Keras, seeded once per test module: its fixtures get the same weights in every run."""
    import keras

    keras.utils.set_random_seed(23)
    return keras
