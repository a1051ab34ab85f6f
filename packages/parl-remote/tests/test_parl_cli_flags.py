"""PARL's `xparl start --debug` and `--log_server_port_range` (issue #14): accepted, with what they mean here."""

from __future__ import annotations

import socket

import pytest
from click.testing import CliRunner
from conftest import wait_until

from parl_remote.cli import main

pytestmark = pytest.mark.timeout(120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_debug_and_log_server_port_range(xparl_home, monkeypatch):
    monkeypatch.delenv("XPARL_DEBUG", raising=False)
    runner = CliRunner()
    port = _free_port()
    result = runner.invoke(main, ["start", "--port", str(port), "--cpu_num", "1", "--no-monitor", "--debug",
                                  "--log_server_port_range", "8000-9000"])  # fmt: skip
    try:
        assert result.exit_code == 0, result.output
        assert "not needed: actor logs travel through the master" in result.stderr
        cdir = xparl_home / "clusters" / str(port)
        # with --debug the master logs every message it handles (the worker's registration, heartbeats)
        wait_until(lambda: any(" DEBUG " in p.read_text(errors="replace") for p in cdir.glob("master-*.log")),
                   10.0, message="a DEBUG line in the master's log")
    finally:
        runner.invoke(main, ["stop", "--port", str(port)])
    bad = runner.invoke(main, ["start", "--port", str(port), "--log_server_port_range", "9000"])
    assert bad.exit_code == 2 and "START-END" in bad.output
