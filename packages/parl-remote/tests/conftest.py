"""Fixtures: real clusters on loopback, a private state folder, fast liveness settings."""

from __future__ import annotations

import os
import pathlib
import secrets
import subprocess
import sys
import time

import pytest

TESTS_DIR = pathlib.Path(__file__).parent

# Fast failure detection for tests (read by every cluster process through the environment).
FAST_SETTINGS = {
    "XPARL_HEARTBEAT_INTERVAL_S": "0.2",
    "XPARL_HEARTBEAT_LIVENESS": "5",
    "XPARL_CLIENT_HEARTBEAT_INTERVAL_S": "0.3",
    "XPARL_RESOURCE_WAIT_S": "10",
    "XPARL_RECONNECT_MAX_INTERVAL_S": "0.5",
    # no periodic /dev/shm sweeps by the clusters that outlive a test (the session's shared one): a test that kills
    # a worker checks who removes its jobs' files (test_shm_cleanup.py); starting workers still sweep once
    "XPARL_SHM_SWEEP_S": "3600",
}


def pytest_configure(config):
    # Ray (test_engines.py, test_ray_engine.py) reads its authentication settings once, when first imported: one
    # token for every Ray head these tests start, set before any test imports Ray
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(16))


def wait_until(predicate, timeout_s: float = 10.0, interval_s: float = 0.05, message: str = "condition"):
    """Polls ``predicate`` until it returns a truthy value (returned) or the deadline passes (AssertionError)."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {message} (last value {last!r})")


@pytest.fixture(scope="session", autouse=True)
def xparl_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("xparl-home")
    saved = {k: os.environ.get(k) for k in [*FAST_SETTINGS, "XPARL_HOME"]}
    os.environ.update(FAST_SETTINGS)
    os.environ["XPARL_HOME"] = str(home)
    yield home
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def start_cluster(cpu_num: int = 2, port: int = 0, token: str | None = None, parent: bool = True):
    from parl_remote import ClusterClient
    from parl_remote.cluster import LocalCluster

    cluster = LocalCluster(cpu_num=cpu_num, port=port, token=token, parent_pid=os.getpid() if parent else None)
    cluster.start()
    client = ClusterClient(cluster.address, token=cluster.token, timeout_s=2.0)

    def ready():
        status = client.status()
        return status["cpus"]["total"] == cpu_num and sum(1 for _ in status["workers"]) == 1

    try:
        wait_until(ready, 20.0, message="the cluster's worker to register")
    finally:
        client.close()
    return cluster


@pytest.fixture(scope="session")
def cluster(xparl_home):
    """A shared 3-CPU cluster for the tests that do not break it."""
    c = start_cluster(cpu_num=3)
    yield c
    import parl_remote

    parl_remote.disconnect()
    c.stop()


@pytest.fixture
def connected(cluster):
    """This process connected to the shared cluster (the global client), its actors deleted afterwards."""
    import parl_remote

    client = parl_remote.connect(cluster.address, token=cluster.token)
    yield client
    parl_remote.disconnect()


@pytest.fixture
def status_client(cluster):
    from parl_remote import ClusterClient

    client = ClusterClient(cluster.address, token=cluster.token, timeout_s=3.0)
    yield client
    client.close()


def run_python(code: str, env: dict | None = None, cwd=None, timeout_s: float = 60.0) -> subprocess.CompletedProcess:
    """Runs a Python snippet in a fresh interpreter (same venv); returns the completed process."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s,
        env={**os.environ, **(env or {})}, cwd=cwd,
    )  # fmt: skip
