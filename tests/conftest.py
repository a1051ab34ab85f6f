"""Cross-package tests: the QuickStart end to end, and repository-wide consistency checks."""

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a learn-to-threshold run (still part of the test command; keep it short)")
    config.addinivalue_line("markers", "ray: needs Ray and starts a Ray cluster; run by nox's `ray` session only")


@pytest.fixture
def repo_root() -> pathlib.Path:
    return ROOT
