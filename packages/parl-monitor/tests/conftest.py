import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

from fake_cluster import FakeCluster  # noqa: E402

from parl_monitor import create_app  # noqa: E402


@pytest.fixture
def fake():
    return FakeCluster()


@pytest.fixture
def app(fake, monkeypatch):
    for key in [k for k in os.environ if k.startswith("PARL_MONITOR_")]:
        monkeypatch.delenv(key)
    return create_app({"CLIENT": fake, "CACHE_TTL_S": 0.0, "HISTORY_INTERVAL_S": 0.0, "TESTING": True})


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def artifacts_dir() -> pathlib.Path:
    """Where screenshots go: $PARL_TEST_ARTIFACTS or <repo>/test-artifacts (gitignored)."""
    root = os.environ.get("PARL_TEST_ARTIFACTS") or str(pathlib.Path(__file__).resolve().parents[3] / "test-artifacts")
    path = pathlib.Path(root) / "parl-monitor"
    path.mkdir(parents=True, exist_ok=True)
    return path
