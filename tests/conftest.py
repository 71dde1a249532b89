"""Shared test set-up: quiet TensorFlow, a cache for generated fixtures, CLI runner helpers."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("CONVERT_CHECK_PASSES", "1")  # validate after every IR pass, naming one that breaks it
# TF runs in every check (app/verify/reference_store.py: its own tests turn the store on): a CLI run here neither
# reads nor writes the user's store
os.environ["TF_CONVERT_CACHE_DIR"] = "off"

import pytest


@pytest.fixture(scope="session")
def fixture_cache(tmp_path_factory) -> os.PathLike:
    """A per-session directory for generated models shared between tests."""
    return tmp_path_factory.mktemp("fixtures")
