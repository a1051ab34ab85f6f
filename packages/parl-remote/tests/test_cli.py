"""The xparl CLI, through click's CliRunner and as real subprocesses."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import stat
import subprocess
import sys

import psutil
import pytest
from click.testing import CliRunner
from conftest import wait_until

from parl_remote.cli import main

pytestmark = pytest.mark.timeout(120)

XPARL = str(pathlib.Path(sys.executable).with_name("xparl"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_cli_runner_start_status_connect_stop(xparl_home):
    runner = CliRunner()
    port = _free_port()
    result = runner.invoke(main, ["start", "--port", str(port), "--cpu_num", "1", "--no-monitor"])
    try:
        assert result.exit_code == 0, result.output
        assert f"127.0.0.1:{port}" in result.output and "token" in result.output and "xparl connect" in result.output
        cdir = xparl_home / "clusters" / str(port)
        token_file = cdir / "token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        info = json.loads((cdir / "info.json").read_text())
        pids = list(info["pids"].values())
        assert all(psutil.pid_exists(p) for p in pids)
        # a second start on the same port is refused, naming the fix
        again = runner.invoke(main, ["start", "--port", str(port)])
        assert again.exit_code == 1 and "xparl stop --port" in again.output
        status = runner.invoke(main, ["status"])
        assert (
            status.exit_code == 0
            and f"Cluster 127.0.0.1:{port}: 1 workers, 0 used CPUs, 1 vacant CPUs" in status.output
        )
        added = runner.invoke(main, ["connect", "--address", f"127.0.0.1:{port}", "--cpu-num", "2"])
        assert added.exit_code == 0, added.output
        full = runner.invoke(main, ["status", "--json"])
        assert json.loads(full.output)["cpus"]["total"] == 3
        worker_pid_files = list(cdir.glob("worker-*.pid"))
        assert len(worker_pid_files) == 1
        pids.append(int(worker_pid_files[0].read_text()))
    finally:
        stopped = runner.invoke(main, ["stop", "--port", str(port)])
    assert stopped.exit_code == 0 and f"port {port}" in stopped.output
    for pid in pids:
        wait_until(lambda pid=pid: _gone(pid), message=f"pid {pid} to end")
    assert "No xparl cluster" in runner.invoke(main, ["status"]).output


def test_cli_errors_name_the_fix(xparl_home):
    runner = CliRunner()
    port = _free_port()
    result = runner.invoke(main, ["connect", "--address", f"127.0.0.1:{port}", "--token", "x"])
    assert result.exit_code == 1 and "cannot reach the master" in result.output
    bad = runner.invoke(main, ["connect", "--address", "nocolon", "--token", "x"])
    assert bad.exit_code == 1 and "host:port" in bad.output
    assert runner.invoke(main, ["start", "--cpu-num", "0"]).exit_code == 2  # click validation


def test_real_subprocess_cli(xparl_home):
    port = _free_port()
    env = {**os.environ}
    start = subprocess.run([XPARL, "start", "--port", str(port), "--cpu-num", "1"], capture_output=True, text=True,
                           env=env, timeout=60)  # fmt: skip
    try:
        assert start.returncode == 0, start.stderr
        assert f"master at 127.0.0.1:{port}" in start.stdout
        code = (
            "import parl_remote as xparl\n"
            "@xparl.remote_class\n"
            "class A:\n"
            "    def f(self):\n"
            "        return 41 + 1\n"
            f"xparl.connect('127.0.0.1:{port}')  # the token is found in the state folder\n"
            "print(A().f())\n"
        )
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
        assert run.returncode == 0 and run.stdout.strip() == "42", run.stderr
        status = subprocess.run([XPARL, "status"], capture_output=True, text=True, env=env, timeout=30)
        assert f"Cluster 127.0.0.1:{port}: 1 workers" in status.stdout
        info = json.loads((xparl_home / "clusters" / str(port) / "info.json").read_text())
    finally:
        stop = subprocess.run([XPARL, "stop", "--port", str(port)], capture_output=True, text=True, env=env, timeout=30)
    assert stop.returncode == 0 and "stopped" in stop.stdout
    for pid in info["pids"].values():
        wait_until(lambda pid=pid: _gone(pid), message=f"pid {pid} to end")


def test_connect_jobs_listen_on_the_address_that_routes_to_the_master():
    """``xparl connect`` without ``--host``: the jobs of a worker on another machine must listen where that machine's
    clients reach them, not on its loopback (docs/tests/test_cluster_page.py runs the two-machine case over a
    network namespace)."""
    from parl_remote.config import address_towards

    assert address_towards("127.0.0.1", 8010) == "127.0.0.1"
    assert address_towards("localhost", 8010) == "127.0.0.1"
    assert address_towards("no-such-host.invalid", 8010) == "127.0.0.1"  # no route: loopback, as before
    # the source address the kernel picks for another machine is one of this machine's own, not loopback
    routed = address_towards("192.0.2.1", 8010)  # TEST-NET-1: routed by the default route, if there is one
    assert routed == "127.0.0.1" or not routed.startswith("127.")
