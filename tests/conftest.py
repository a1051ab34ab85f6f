"""Cross-package tests: the QuickStart end to end, and repository-wide consistency checks."""

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a learn-to-threshold run (still part of the test command; keep it short)")


@pytest.fixture
def repo_root() -> pathlib.Path:
    return ROOT
