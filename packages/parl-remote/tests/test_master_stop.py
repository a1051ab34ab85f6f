"""PARL's rule (#14): workers on other machines exit when their master is stopped with `xparl stop` (a master that
crashes is different: its workers wait and rejoin it, test_master_restart.py). Real processes on loopback; the
worker "on another machine" is one added with `xparl connect`, and only the master gets the signal that
`xparl stop` sends, as on a real second machine."""

from __future__ import annotations

import json
import os
import re
import signal
import socket

import psutil
import pytest
from click.testing import CliRunner
from conftest import wait_until

from parl_remote.cli import main

pytestmark = pytest.mark.timeout(120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ended(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_connected_worker_exits_when_its_master_is_stopped(xparl_home, monkeypatch):
    monkeypatch.delenv("XPARL_TOKEN", raising=False)
    runner = CliRunner()
    port = _free_port()
    address = f"127.0.0.1:{port}"
    cdir = xparl_home / "clusters" / str(port)
    assert runner.invoke(main, ["start", "--port", str(port), "--cpu-num", "1", "--no-monitor"]).exit_code == 0
    try:
        joined = runner.invoke(main, ["connect", "--address", address, "--cpu-num", "1"])
        assert joined.exit_code == 0, joined.output
        worker_pid = int(re.search(r"worker \(pid (\d+)\)", joined.output).group(1))
        master_pid = json.loads((cdir / "info.json").read_text())["pids"]["master"]
        os.kill(master_pid, signal.SIGTERM)  # what `xparl stop` does to the master
        wait_until(lambda: _ended(worker_pid), timeout_s=10, message="the connected worker to exit")
        if psutil.pid_exists(worker_pid):  # our child (CliRunner runs xparl in this process): reap it
            assert os.waitpid(worker_pid, 0)[1] == 0  # a clean exit
        log = (cdir / "worker-connect.log").read_text()
        assert "was stopped (xparl stop)" in log and f"xparl connect --address {address}" in log
    finally:
        runner.invoke(main, ["stop", "--port", str(port)])
