"""Shared fixtures for parl-core's tests: ``backend`` runs a test body on torch and on paddle."""

import importlib.util

import pytest
from backends import BACKEND_NAMES, load_backend


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    """Small nets train 2-4x faster on one thread; set once for the test process (never in the library)."""
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.set_num_threads(1)


@pytest.fixture(params=BACKEND_NAMES)
def backend(request):
    """The framework vocabulary of one backend (see ``backends.py``); each test runs once per backend."""
    return load_backend(request.param)
