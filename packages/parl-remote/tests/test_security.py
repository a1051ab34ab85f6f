"""Authentication: wrong / missing tokens, version mismatch, and nothing unpickled before verification."""

from __future__ import annotations

import os
import pathlib
import pickle
import subprocess
import sys
import time

import pytest
import zmq

import parl_remote as xparl
from parl_remote import ClusterClient
from parl_remote.wire import protocol

pytestmark = pytest.mark.timeout(60)


class _Touch:
    """Unpickling this creates a file: the proof that bytes were unpickled."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.path),))


def _send_raw(address: str, frames: list, timeout_ms: int = 2000) -> list | None:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(f"tcp://{address}")
    try:
        sock.send_multipart(frames)
        return sock.recv_multipart() if sock.poll(timeout_ms) else None
    finally:
        sock.close()
        ctx.term()


def _evil_frames(marker: pathlib.Path, token: str | None, version: int = protocol.PROTOCOL_VERSION) -> list:
    header = protocol.HEADER.pack(protocol.MAGIC, version, protocol.MsgType.STATUS, 0, 1)
    body = pickle.dumps(_Touch(str(marker)))
    signature = protocol.Signer(token).sign(header, body) if token else b"\x01" * 32
    return [header + signature + body]


@pytest.mark.parametrize("token", [None, "not-the-token"])
def test_unsigned_or_wrongly_signed_messages_are_never_unpickled(cluster, connected, tmp_path, token):
    marker = tmp_path / "unpickled"
    reply = _send_raw(cluster.address, _evil_frames(marker, token))
    assert reply is not None and len(reply) == 1
    header = protocol.HEADER.unpack(reply[0][: protocol.HEADER.size])
    assert header[2] == protocol.MsgType.AUTH_FAILED
    assert reply[0][protocol.HEADER.size : protocol.HEADER.size + 32] == bytes(32)  # an unsigned notice, no data
    assert b"token" in reply[0]
    # the same against a job's socket
    actor_address = _any_job_address(connected)
    job_reply = _send_raw(actor_address, _evil_frames(marker, token), timeout_ms=5000)
    # the job answered (so it has handled the message) with the same unsigned notice, and unpickled nothing
    assert job_reply is not None and len(job_reply) == 1
    assert protocol.HEADER.unpack(job_reply[0][: protocol.HEADER.size])[2] == protocol.MsgType.AUTH_FAILED
    assert not marker.exists()
    with ClusterClient(cluster.address, token=cluster.token) as client:
        assert client.status()["cpus"]["total"] == 3  # the master still serves


@xparl.remote_class
class Probe:
    def ping(self):
        return "pong"


def _any_job_address(client) -> str:
    probe = Probe()
    assert probe.ping() == "pong"
    _any_job_address.keep = probe
    return probe._xparl_actor.address


def test_version_mismatch_notice(cluster, tmp_path):
    marker = tmp_path / "unpickled"
    reply = _send_raw(cluster.address, _evil_frames(marker, cluster.token, version=99))
    assert protocol.HEADER.unpack(reply[0][: protocol.HEADER.size])[2] == protocol.MsgType.VERSION_MISMATCH
    assert not marker.exists()


def test_client_version_mismatch_is_clear(cluster, monkeypatch):
    monkeypatch.setattr(protocol, "PROTOCOL_VERSION", 99)
    start = time.monotonic()
    with pytest.raises(xparl.VersionMismatchError, match="upgrade parl-remote"):
        xparl.connect(cluster.address, token=cluster.token)
    assert time.monotonic() - start < 5


def test_wrong_token_is_refused_quickly(cluster):
    start = time.monotonic()
    with pytest.raises(xparl.AuthenticationError, match="token"):
        xparl.connect(cluster.address, token="wrong")
    assert time.monotonic() - start < 5


def test_missing_token_names_the_fix(cluster, monkeypatch):
    monkeypatch.delenv("XPARL_TOKEN", raising=False)
    with pytest.raises(xparl.AuthenticationError, match="XPARL_TOKEN"):
        xparl.connect(cluster.address)


def test_unreachable_master(monkeypatch):
    import socket

    monkeypatch.setenv("XPARL_MASTER_TIMEOUT_S", "1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(xparl.ClusterConnectionError, match="xparl start"):
        xparl.connect(f"127.0.0.1:{port}", token="t")
    assert time.monotonic() - start < 3
    with pytest.raises(ValueError, match="host:port"):
        xparl.connect("no-port-here", token="t")


def test_shm_sweep_removes_files_of_dead_senders(tmp_path):
    from parl_remote.wire import shm

    if not shm.available():
        pytest.skip("no /dev/shm on this machine")
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    orphan = shm.SHM_DIR / f"xparl-{proc.pid}-deadbeef"
    orphan.write_bytes(b"x")
    mine = shm.SHM_DIR / f"xparl-{os.getpid()}-cafecafe"
    mine.write_bytes(b"x")
    try:
        shm.sweep()  # (its count is not checked: another test's cluster on this host may sweep the orphan first)
        assert not orphan.exists() and mine.exists()
        with pytest.raises(ValueError, match="refusing"):
            shm.restore(shm._ENTRY.pack(shm.KIND_SHM, b"../etc/passwd", 1), [])
    finally:
        mine.unlink(missing_ok=True)
        orphan.unlink(missing_ok=True)
