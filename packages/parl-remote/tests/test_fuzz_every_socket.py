"""Fuzz every socket of a running cluster (issue #16): the master's port, every TCP port of the worker and of each
job, each job's same-host ``ipc://`` endpoint and its Unix stream socket. Thousands of unsigned, wrongly signed and
malformed messages (pickles that would create a marker file when unpickled among them): no state change, no
process exits, no marker, memory bounded; then the actors answer with their state and a new actor works."""

from __future__ import annotations

import os
import pathlib
import pickle
import random
import socket

import psutil
import pytest
import zmq
from conftest import start_cluster, wait_until
from test_security import _Touch
from test_unsigned_notices import Counter, _fuzz_frames

import parl_remote as xparl
from parl_remote import ClusterClient
from parl_remote.wire import framing, protocol
from parl_remote.wire.signing import Signer

pytestmark = pytest.mark.timeout(240)

PER_ENDPOINT = 1500  # messages sent to each endpoint


def _marker_frames(marker: pathlib.Path, rng: random.Random, i: int) -> list[bytes]:
    """A message whose body would create ``marker`` if unpickled: unsigned, or signed with another token."""
    msg_type = protocol.MsgType(rng.choice([int(t) for t in protocol.MsgType]))
    body = pickle.dumps(_Touch(str(marker)))
    if i % 2:
        return protocol.encode(Signer("not-the-token"), msg_type, i, [body])
    header = protocol.HEADER.pack(protocol.MAGIC, protocol.PROTOCOL_VERSION, int(msg_type), 0, i)
    return [header + b"\0" * 32 + body]


def _messages(marker: pathlib.Path, seed: int) -> list[list[bytes]]:
    rng = random.Random(seed)
    noise = _fuzz_frames(rng, PER_ENDPOINT * 2 // 3)
    evil = [_marker_frames(marker, rng, i) for i in range(PER_ENDPOINT - len(noise))]
    return noise + evil


def _fuzz_zmq(endpoint: str, messages: list[list[bytes]]) -> int:
    """Sends every message; returns once zmq has handed them all to the peer's socket (a context of its own,
    terminated with the socket's linger: ``term()`` waits until the queue is flushed)."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 5_000)  # a peer that is not zmq (a stream socket) never takes them: 5 s
    sock.setsockopt(zmq.SNDHWM, 0)
    sock.connect(endpoint)
    for frames in messages:
        sock.send_multipart(frames)
    sock.close()
    ctx.term()
    return len(messages)


def _fuzz_stream(name: str, messages: list[list[bytes]], rng: random.Random) -> int:
    """The Unix stream socket: well-framed messages (each one closes the connection when it fails verification, so
    each goes on a new connection) and raw garbage."""
    sent = 0
    for i, frames in enumerate(messages[: len(messages) // 3]):  # a connection each: the job drops a bad one
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2.0)
            try:
                sock.connect("\0" + name)
                data = framing.stream_prefix(frames) + b"".join(frames) if i % 4 else os.urandom(rng.randrange(1, 600))
                sock.sendall(data)
                sent += 1
            except OSError:  # the job closed the connection first: what it should do with garbage
                sent += 1
    return sent


def _tcp_ports(pid: int) -> set[int]:
    return {c.laddr.port for c in psutil.Process(pid).net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}


def test_fuzzing_every_socket_of_a_cluster_changes_nothing(tmp_path):
    cluster = start_cluster(cpu_num=3)
    status = ClusterClient(cluster.address, token=cluster.token, timeout_s=3.0)
    marker = tmp_path / "unpickled"
    try:
        xparl.connect(cluster.address, token=cluster.token)
        actors = [Counter(), Counter()]
        assert [a.add(i + 1) for i, a in enumerate(actors)] == [1, 2]
        before = status.status()
        master = psutil.Process(before["master"]["pid"])
        worker = psutil.Process(before["workers"][0]["pid"])
        jobs = worker.children(recursive=True)  # the actors' jobs, the idle pooled job, the zygote
        assert {a._xparl_actor.pid for a in actors} <= {j.pid for j in jobs}
        processes = [master, worker, *jobs]
        rss_before = {p.pid: p.memory_info().rss for p in processes}
        endpoints = [f"tcp://127.0.0.1:{port}" for p in processes for port in sorted(_tcp_ports(p.pid))]
        # each job's abstract Unix sockets: its stream listener and its zmq ipc endpoint; each gets both kinds of
        # traffic (zmq's to the stream is garbage to it, and the reverse)
        abstract = sorted({c.laddr for p in jobs for c in p.net_connections(kind="unix")
                           if isinstance(c.laddr, str) and c.laddr.startswith("@")})
        assert {a._xparl_actor.stream_name for a in actors} <= {name[1:] for name in abstract}
        ipc = [f"ipc://{name}" for name in abstract]
        streams = [name[1:] for name in abstract]
        assert len(endpoints) >= 4, endpoints  # the master's, the worker's job port, one per job at least
        sent = 0
        for i, endpoint in enumerate(endpoints + ipc):
            sent += _fuzz_zmq(endpoint, _messages(marker, i))
        rng = random.Random(99)
        for name in streams:
            sent += _fuzz_stream(name, _messages(marker, 100), rng)
        assert sent >= PER_ENDPOINT * 4
        print(f"{sent} messages to {len(endpoints)} TCP, {len(ipc)} ipc and {len(streams)} stream endpoints")

        # nothing was unpickled, every process is alive, the cluster's state is the same
        assert not marker.exists(), "a message was unpickled before its signature was verified"
        after = wait_until(lambda: status.status(), 10.0, message="the master answering")
        assert all(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in processes)
        assert after["cpus"] == before["cpus"]
        assert [w["pid"] for w in after["workers"]] == [worker.pid]
        alive = lambda s: sorted(a["id"] for a in s["actors"] if a.get("state", "alive") == "alive")  # noqa: E731
        assert alive(after) == alive(before)
        for p in processes:  # bounded: nothing of the flood is kept
            assert p.memory_info().rss - rss_before[p.pid] < 64 * 2**20, p
        # the actors answer with their state, and the cluster makes new ones
        assert [a.add(10) for a in actors] == [11, 12]
        assert Counter().add(5) == 5
        assert not marker.exists()
    finally:
        xparl.disconnect()
        status.close()
        cluster.stop()
