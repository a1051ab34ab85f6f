"""Tokens (issue #16): --token-file and XPARL_TOKEN for `xparl start` and `xparl connect`, a warning for --token
(visible in `ps`), and refusals that say where the token came from and end at once."""

from __future__ import annotations

import os
import socket
import time

import pytest
from click.testing import CliRunner

import parl_remote as xparl
from parl_remote.cli import main

pytestmark = pytest.mark.timeout(120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cluster_from_token_file(xparl_home, tmp_path, monkeypatch):
    monkeypatch.delenv("XPARL_TOKEN", raising=False)
    secret = tmp_path / "token"
    secret.write_text("s3cret-from-a-file\n")
    port = _free_port()
    runner = CliRunner()
    result = runner.invoke(main, ["start", "--port", str(port), "--cpu-num", "1", "--no-monitor",
                                  "--token-file", str(secret)])  # fmt: skip
    assert result.exit_code == 0, result.output
    yield runner, port, secret
    runner.invoke(main, ["stop", "--port", str(port)])


def test_start_reads_the_token_file_and_warns_for_a_token_on_the_command_line(cluster_from_token_file, xparl_home):
    runner, port, _ = cluster_from_token_file
    assert (xparl_home / "clusters" / str(port) / "token").read_text().strip() == "s3cret-from-a-file"
    client = xparl.connect(f"127.0.0.1:{port}", token="s3cret-from-a-file")
    assert client is not None
    xparl.disconnect()
    other = _free_port()
    result = runner.invoke(main, ["start", "--port", str(other), "--cpu-num", "1", "--no-monitor", "--token", "t"])
    try:
        assert result.exit_code == 0 and "other users" not in result.output  # the warning goes to stderr
        assert "warning: --token shows the token to every user" in result.stderr
    finally:
        runner.invoke(main, ["stop", "--port", str(other)])


def test_start_takes_xparl_token(xparl_home, monkeypatch):
    monkeypatch.setenv("XPARL_TOKEN", "from-the-environment")
    port = _free_port()
    runner = CliRunner()
    result = runner.invoke(main, ["start", "--port", str(port), "--cpu-num", "1", "--no-monitor"])
    try:
        assert result.exit_code == 0, result.output
        assert (xparl_home / "clusters" / str(port) / "token").read_text().strip() == "from-the-environment"
        assert "warning" not in result.stderr
    finally:
        runner.invoke(main, ["stop", "--port", str(port)])


def test_a_refused_token_file_is_named_and_ends_the_connect_at_once(cluster_from_token_file, tmp_path):
    runner, port, _ = cluster_from_token_file
    wrong = tmp_path / "wrong"
    wrong.write_text("not-the-token")
    start = time.monotonic()
    result = runner.invoke(main, ["connect", "--address", f"127.0.0.1:{port}", "--token-file", str(wrong)])
    assert result.exit_code == 1
    assert f"--token-file {wrong}" in result.output and "refused" in result.output
    assert time.monotonic() - start < 4  # a definitive refusal is not retried
    missing = runner.invoke(main, ["connect", "--address", f"127.0.0.1:{port}", "--token-file", str(tmp_path / "no")])
    assert missing.exit_code == 2 and "cannot read" in missing.output
    address = f"127.0.0.1:{port}"
    both = runner.invoke(main, ["connect", "--address", address, "--token", "a", "--token-file", str(wrong)])
    assert both.exit_code == 2 and "not both" in both.output


def test_a_stale_xparl_token_overriding_the_token_file_is_named(cluster_from_token_file, monkeypatch):
    runner, port, _ = cluster_from_token_file
    monkeypatch.setenv("XPARL_TOKEN", "stale")
    result = runner.invoke(main, ["connect", "--address", f"127.0.0.1:{port}"])
    assert result.exit_code == 1
    assert "$XPARL_TOKEN, which overrides the token file" in result.output
    with pytest.raises(xparl.AuthenticationError, match=r"XPARL_TOKEN, which overrides the token file"):
        xparl.connect(f"127.0.0.1:{port}")
    monkeypatch.delenv("XPARL_TOKEN")
    xparl.connect(f"127.0.0.1:{port}")  # the token file alone: accepted
    xparl.disconnect()
    assert os.environ.get("XPARL_TOKEN") is None
