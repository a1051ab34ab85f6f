"""Cross-package tests: the QuickStart end to end, and repository-wide consistency checks."""

import importlib
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHIMS = ROOT / "tests" / "parl2" / "shims"


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a learn-to-threshold run (still part of the test command; keep it short)")
    config.addinivalue_line("markers", "ray: needs Ray and starts a Ray cluster; run by nox's `ray` session only")


@pytest.fixture
def repo_root() -> pathlib.Path:
    return ROOT


@pytest.fixture
def old_gym(monkeypatch):
    """The test-only ``gym`` (gymnasium through the old gym API) that PARL's examples were run against."""
    monkeypatch.syspath_prepend(str(SHIMS))
    monkeypatch.delitem(sys.modules, "gym", raising=False)
    module = importlib.import_module("gym")
    yield module
    sys.modules.pop("gym", None)
