"""The CLI (click, in-process and as a real subprocess) and the start/stop helpers used by xparl."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from browser_helpers import wait_for
from click.testing import CliRunner

from parl_monitor import default_monitor_port, start_monitor_process, stop_monitor_process, wait_monitor_ready
from parl_monitor.cli import main
from parl_monitor.process import is_monitor_process, parse_address, stop_monitor_from_pid_file

pytestmark = pytest.mark.timeout(90)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=15) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_default_port_and_address_parsing():
    assert default_monitor_port("127.0.0.1:8010") == 8110
    assert parse_address("[::1]:8010") == ("::1", 8010)
    for bad in ("8010", "host:", "host:port", "host:70000", ""):
        with pytest.raises(ValueError, match="host:port"):
            parse_address(bad)
    with pytest.raises(ValueError, match="not a valid port"):
        default_monitor_port("127.0.0.1:65500")


def test_cli_help_and_usage_errors():
    runner = CliRunner()
    result = runner.invoke(main, ["--help"])
    assert result.exit_code == 0 and "--address" in result.output and "[default: 127.0.0.1]" in result.output
    result = runner.invoke(main, ["--address", "nonsense"])
    assert result.exit_code == 2 and "host:port" in result.output
    result = runner.invoke(main, ["--address", "127.0.0.1:8010", "--host", "0.0.0.0"], env={"XPARL_TOKEN": "",
                                                                                          "PARL_MONITOR_TOKEN": ""})
    assert result.exit_code == 2 and "requires the cluster token" in result.output


def test_start_refuses_non_loopback_without_token():
    with pytest.raises(ValueError, match="requires the cluster token"):
        start_monitor_process("127.0.0.1:8010", 9999, host="0.0.0.0")


def test_process_serves_follows_its_parent_and_stops(tmp_path):
    """A monitor for an address where no master runs: it serves, reports 503, and exits with its parent."""
    parent = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    port = free_port()
    pid_file = tmp_path / "monitor.pid"
    log_file = tmp_path / "monitor.log"
    proc = start_monitor_process("127.0.0.1:1", port, token="tok", parent_pid=parent.pid, pid_file=pid_file,
                                 log_file=log_file)
    try:
        wait_monitor_ready("127.0.0.1", port, timeout_s=30, proc=proc)
        assert int(pid_file.read_text()) == proc.pid and is_monitor_process(proc.pid)
        assert "tok" not in " ".join(proc.args)  # the token travels in the environment, not the command line
        status, body = get(f"http://127.0.0.1:{port}/api/overview")
        assert status == 503 and json.loads(body)["error"] == "cluster_unavailable"
        status, body = get(f"http://127.0.0.1:{port}/")
        assert status == 503 and b"Cluster unavailable" in body
        parent.stdin.close()  # the "master" ends: the monitor follows within a few seconds
        parent.wait(10)
        wait_for(lambda: proc.poll() is not None, timeout_s=20, what="the monitor to exit with its parent")
        assert proc.returncode == 0
        wait_for(lambda: not pid_file.exists(), timeout_s=5, what="the pid file to be removed")
        assert "parl monitor of 127.0.0.1:1" in log_file.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        if parent.poll() is None:
            parent.kill()
        proc.wait(10)
        parent.wait(10)


def test_stop_by_pid_and_pid_file(tmp_path):
    port = free_port()
    pid_file = tmp_path / "m.pid"
    proc = start_monitor_process("127.0.0.1:1", port, pid_file=pid_file)
    try:
        wait_monitor_ready("127.0.0.1", port, timeout_s=30, proc=proc)
        assert stop_monitor_process(os.getpid()) is False  # not a monitor: left alone
        assert stop_monitor_from_pid_file(tmp_path / "missing.pid") is False
        assert stop_monitor_from_pid_file(pid_file) is True
        assert proc.wait(10) == 0 and not pid_file.exists()
        assert stop_monitor_process(proc) is False  # already gone
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = start_monitor_process("127.0.0.1:1", port, log_file=tmp_path / "m.log")
        with pytest.raises(RuntimeError, match="exited with code 1"):
            wait_monitor_ready("127.0.0.1", port, timeout_s=30, proc=proc)
    assert "cannot bind the monitor" in (tmp_path / "m.log").read_text()
