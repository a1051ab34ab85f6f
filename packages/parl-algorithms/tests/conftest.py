"""Shared fixtures of parl-algorithms' tests: ``M`` runs a test body on torch and on paddle."""

import pytest
from algo_models import BACKENDS, models


@pytest.fixture(params=BACKENDS)
def M(request):  # noqa: N802 (a namespace of model classes)
    """The test models, algorithms (``M.algs``), ``Agent`` and ops (``M.ops``) of one backend."""
    return models(request.param)
