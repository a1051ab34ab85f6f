"""A loopback monitor shows the cluster's figures to any local user, but the actors' own output (logs, error
messages, tracebacks) only with the cluster token, unless it was started with ``--public`` (Flask's test client)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fake_cluster import FakeCluster
from test_process import free_port

from parl_monitor import create_app, stop_monitor_process, wait_monitor_ready

SECRET_PARTS = (b"division by zero", b"return 1 / x", b"secret line")
PRIVATE_PATHS = ("/errors", "/api/errors", "/api/actors/a-2/log", "/api/actors/a-2/log/download")
OPEN_PATHS = ("/", "/workers/w-aaa", "/clients/c-111", "/actors/a-2", "/api/status", "/api/overview",
              "/api/workers", "/api/workers/w-aaa", "/api/clients", "/api/clients/c-111", "/api/actors",
              "/api/actors/a-2")


@pytest.fixture
def fake():
    fake = FakeCluster()
    fake.logs["a-2"] = b"secret line\n"
    return fake


def _client(fake, **config):
    return create_app({"CLIENT": fake, "CACHE_TTL_S": 0.0, "TOKEN": "s3cret", **config}).test_client()


@pytest.mark.parametrize("path", PRIVATE_PATHS)
def test_logs_and_tracebacks_need_the_token_on_loopback(fake, path):
    c = _client(fake)
    resp = c.get(path)
    assert resp.status_code == 401
    assert not any(part in resp.data for part in SECRET_PARTS)
    assert b"--public" in resp.data  # the refusal names both ways in
    assert c.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert fake.log_calls == []  # nothing was read for a refused request
    resp = c.get(path, headers={"Authorization": "Bearer s3cret"})
    assert resp.status_code == 200
    assert any(part in resp.data for part in SECRET_PARTS)


@pytest.mark.parametrize("path", OPEN_PATHS)
def test_figures_stay_open_without_the_error_text(fake, path):
    c = _client(fake)
    resp = c.get(path)
    assert resp.status_code == 200
    assert not any(part in resp.data for part in SECRET_PARTS)
    authorized = c.get(path, headers={"Authorization": "Bearer s3cret"})
    assert authorized.status_code == 200
    if "a-2" in path or path in ("/api/status", "/api/actors", "/api/overview", "/api/clients/c-111"):
        assert b"division by zero" in authorized.data


def test_hidden_error_keeps_its_type(fake):
    c = _client(fake)
    err = c.get("/api/actors/a-2").get_json()["actor"]["last_error"]
    assert err == {"type": "ZeroDivisionError", "time": fake.snapshot["actors"][1]["last_error"]["time"],
                   "message": None, "traceback": None, "hidden": True}
    assert c.get("/api/overview").get_json()["counts"]["errors"] == 1  # still counted
    html = c.get("/actors/a-2").get_data(as_text=True)
    assert "ZeroDivisionError" in html and 'data-field="log.hidden"' in html and 'id="log"' not in html
    assert fake.snapshot["actors"][1]["last_error"]["message"] == "division by zero"  # the cache is not changed


def test_token_form_opens_them_for_the_session(fake):
    c = _client(fake)
    resp = c.get("/actors/a-2?token=s3cret")
    assert resp.status_code == 302 and resp.headers["Location"] == "/actors/a-2"
    html = c.get("/actors/a-2").get_data(as_text=True)
    assert "division by zero" in html and 'id="log"' in html
    assert c.get("/api/actors/a-2/log").get_json()["data"] == "secret line\n"


def test_public_shows_them_without_the_token(fake):
    c = _client(fake, PUBLIC=True)
    for path in PRIVATE_PATHS + ("/actors/a-2",):
        resp = c.get(path)
        assert resp.status_code == 200 and any(part in resp.data for part in SECRET_PARTS), path


def test_without_a_token_configured_the_refusal_names_the_fix(fake):
    c = create_app({"CLIENT": fake, "CACHE_TTL_S": 0.0}).test_client()
    resp = c.get("/api/actors/a-2/log")
    assert resp.status_code == 403
    message = resp.get_json()["message"]
    assert "--token" in message and "--public" in message
    assert c.get("/api/actors/a-2/log", headers={"Authorization": "Bearer "}).status_code == 403
    assert c.get("/api/overview").status_code == 200


def test_non_loopback_ignores_public(fake):
    c = _client(fake, HOST="0.0.0.0", PUBLIC=True)
    assert c.get("/").status_code == 401 and c.get("/api/errors").status_code == 401


@pytest.mark.parametrize("public", [True, False])
def test_cli_public_says_so_on_stdout(public, tmp_path):
    port = free_port()
    cmd = [sys.executable, "-m", "parl_monitor", "--address", "127.0.0.1:1", "--port", str(port)]
    out = tmp_path / "stdout.txt"
    with open(out, "wb") as stdout:
        proc = subprocess.Popen(cmd + (["--public"] if public else []), stdout=stdout, stderr=subprocess.DEVNULL,
                                env={k: v for k, v in os.environ.items() if "TOKEN" not in k})
    try:
        wait_monitor_ready("127.0.0.1", port, timeout_s=30, proc=proc)
    finally:
        stop_monitor_process(proc)
    said = out.read_text()
    if public:
        assert f"http://127.0.0.1:{port}/ are open to every user of this machine" in said and "--public" in said
    else:
        assert said == ""
