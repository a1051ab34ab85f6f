"""The distributed examples on a cluster built with PARL's CLI: `xparl start` on one "machine" and `xparl connect`
adding a second worker (both on loopback). The examples take the cluster by `--address` alone, and actors land on
the worker that joined."""

import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest
from test_algorithms_examples import run_example

XPARL = str(pathlib.Path(sys.executable).with_name("xparl"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _xparl(*args, env, timeout=120):
    proc = subprocess.run([XPARL, *args], capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"xparl {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def two_worker_cluster(tmp_path_factory):
    """A master with a 1-CPU local worker (`xparl start`) and a 2-CPU worker added by `xparl connect`."""
    home = tmp_path_factory.mktemp("xparl-home")
    env = dict(os.environ, XPARL_HOME=str(home))
    port = _free_port()
    address = f"127.0.0.1:{port}"
    _xparl("start", "--port", str(port), "--cpu-num", "1", "--no-monitor", env=env)
    try:
        out = _xparl("connect", "--address", address, "--cpu-num", "2", env=env)
        joined_pid = int(out.split("worker (pid ")[1].split(")")[0])
        yield address, env, joined_pid
    finally:
        _xparl("stop", "--port", str(port), env=env)


def _status(address, env):
    return json.loads(_xparl("status", "--address", address, "--json", env=env))


# name: (flags of a tiny budget, check of the env steps it ran)
TINY = {
    "impala": (["--total-steps", "1600"], lambda steps: steps == 1600),  # 10 unrolls of 8 envs x 20 steps
    "a2c_distributed": (["--total-steps", "512"], lambda steps: steps == 512),  # 2 updates of 2 x 8 x 16
    "ga3c": (["--total-steps", "1000"], lambda steps: 1000 <= steps < 1000 + 4 * 128),  # whole unrolls of 128
}


@pytest.mark.parametrize("name", sorted(TINY))
def test_example_runs_on_a_cluster_joined_with_xparl_connect(two_worker_cluster, tmp_path, monkeypatch, name):
    address, env, joined_pid = two_worker_cluster
    before = {a["id"] for a in _status(address, env)["actors"]}
    monkeypatch.setenv("XPARL_HOME", env["XPARL_HOME"])  # the example finds the cluster's token file there
    flags, steps_ok = TINY[name]
    result = run_example(name, tmp_path, "--address", address, "--actors", "2", "--target-return", "1e9", *flags)
    assert result["actors"] == 2 and result["actors_replaced"] == 0 and result["reached"] is False
    assert steps_ok(result["env_steps"]), result
    status = _status(address, env)
    workers = {w["id"]: w["pid"] for w in status["workers"]}
    ran = [a for a in status["actors"] if a["id"] not in before]
    assert len(ran) == 2, ran
    # the local worker has one CPU: at least one of the two actors ran on the worker that `xparl connect` added
    assert any(workers.get(a["worker_id"]) == joined_pid for a in ran), (ran, workers, joined_pid)
    # the example ended its actors: every CPU is free again
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _status(address, env)["cpus"]["used"]:
        time.sleep(0.2)
    assert _status(address, env)["cpus"]["used"] == 0
