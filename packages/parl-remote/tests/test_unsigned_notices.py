"""No unsigned message stops anything: text notices, wrongly signed and malformed messages sent to a worker's job
port are information at most, and the worker, its jobs and the cluster go on (issue #16). A worker that its
master refuses (wrong token) exits with an error, not 0."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import psutil
import pytest
import zmq
from conftest import start_cluster, wait_until

import parl_remote as xparl
from parl_remote import ClusterClient
from parl_remote.client.master_link import MasterConnection
from parl_remote.wire import protocol
from parl_remote.wire.protocol import HEADER, MAGIC, PROTOCOL_VERSION, MsgType
from parl_remote.wire.signing import Signer


@xparl.remote_class
class Counter:
    def __init__(self):
        self.n = 0

    def add(self, k):
        self.n += k
        return self.n


def _listening_ports(pid: int) -> set[int]:
    return {c.laddr.port for c in psutil.Process(pid).net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}


def _fuzz_frames(rng: random.Random, n: int) -> list[list[bytes]]:
    """Unsigned notices (the kind that used to stop a worker), wrong signatures, bad headers, random bytes."""
    wrong = Signer("not-the-token")
    out = []
    for i in range(n):
        kind = i % 5
        if kind == 0:
            out.append(protocol.notice_frames(MsgType.AUTH_FAILED, "you are refused"))
        elif kind == 1:
            out.append(protocol.notice_frames(MsgType.VERSION_MISMATCH, "x" * rng.randrange(2000)))
        elif kind == 2:  # a correctly framed message signed with another token
            out.append(protocol.encode(wrong, MsgType(rng.choice([int(t) for t in MsgType])), i, [b"\x80\x05N."]))
        elif kind == 3:  # a header with another version or an unknown type, no valid signature
            head = HEADER.pack(MAGIC, PROTOCOL_VERSION + rng.randrange(1, 5), rng.randrange(256), 0, i)
            out.append([head + os.urandom(32) + b"payload"])
        else:
            out.append([os.urandom(rng.randrange(0, 300)) for _ in range(rng.randrange(1, 4))])
    return out


def test_fuzzed_job_port_changes_nothing():
    cluster = start_cluster(cpu_num=2)
    status_client = ClusterClient(cluster.address, token=cluster.token, timeout_s=3.0)
    try:
        before = status_client.status()
        worker = psutil.Process(before["workers"][0]["pid"])
        ports = _listening_ports(worker.pid)
        assert ports, "the worker listens on its job port"
        rss_before = worker.memory_info().rss
        ctx = zmq.Context.instance()
        rng = random.Random(0)
        sent = 0
        for port in ports:
            sock = ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.SNDHWM, 0)
            sock.connect(f"tcp://127.0.0.1:{port}")
            for frames in _fuzz_frames(rng, 3000):
                sock.send_multipart(frames)
                sent += 1
            sock.close()
        # the worker is still the cluster's, with its CPUs and jobs (it used to exit at the first notice)
        wait_until(lambda: status_client.status()["workers"] and worker.is_running(), 10.0, message="worker alive")
        xparl.connect(cluster.address, token=cluster.token)
        try:
            counter = Counter()
            assert [counter.add(1) for _ in range(50)][-1] == 50
        finally:
            xparl.disconnect()
        after = status_client.status()
        assert worker.is_running() and after["cpus"]["total"] == before["cpus"]["total"] == 2
        assert [w["pid"] for w in after["workers"]] == [worker.pid]
        assert worker.memory_info().rss - rss_before < 64 * 2**20  # bounded: nothing of the flood is kept
        assert sent >= 3000
    finally:
        status_client.close()
        cluster.stop()


def test_a_worker_refused_for_a_wrong_token_exits_with_an_error():
    cluster = start_cluster(cpu_num=1)
    try:
        env = dict(os.environ, XPARL_TOKEN="a-wrong-token")
        proc = subprocess.run(
            [sys.executable, "-m", "parl_remote.server.worker", "--address", cluster.address, "--cpu-num", "1"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert proc.returncode != 0
        assert "refused this worker" in proc.stderr and "token" in proc.stderr
    finally:
        cluster.stop()


def test_signed_but_malformed_acquire_requests_take_no_cpu():
    """A token holder's ACQUIRE_JOB is validated whole before the scheduler changes anything; a job is granted
    only to a registered client (issue #16: one without client_id used to take a CPU forever)."""
    cluster = start_cluster(cpu_num=1)
    status_client = ClusterClient(cluster.address, token=cluster.token, timeout_s=3.0)
    ctx = zmq.Context()
    conn = MasterConnection(ctx, cluster.address, Signer(cluster.token))
    try:
        bad_bodies = [None, [], {}, {"class_name": "X"}, {"client_id": ""}, {"client_id": 7},
                      {"client_id": "c-never-registered", "class_name": "X"},
                      {"client_id": "c-x", "n_gpu": -1}, {"client_id": "c-x", "n_gpu": 0.5},
                      {"client_id": "c-x", "n_gpu": True}, {"client_id": "c-x", "max_memory_mb": -5},
                      {"client_id": "c-x", "max_memory_mb": "lots"}, {"client_id": "c-x", "class_name": 3}]  # fmt: skip
        answers = [conn.request(MsgType.ACQUIRE_JOB, body)[0] for body in bad_bodies]
        assert MsgType.REPLY not in answers
        assert answers[6] is MsgType.REREGISTER  # a well-formed request from an unknown client: register first
        status = status_client.status()
        assert status["cpus"]["used"] == 0 and status["actors"] == []
        xparl.connect(cluster.address, token=cluster.token)  # the CPU is still there for a real client
        try:
            assert Counter().add(2) == 2
        finally:
            xparl.disconnect()
    finally:
        conn.close()
        ctx.term()
        status_client.close()
        cluster.stop()


def test_dropped_messages_are_logged_at_a_bounded_rate(caplog, monkeypatch):
    from parl_remote.transport import zmq_io

    clock = iter([0.0, 0.1, 0.2, 5.0, 10.5, 10.6])
    monkeypatch.setattr(zmq_io.time, "monotonic", lambda: next(clock))
    drop_log = zmq_io.DropLog(interval_s=10.0)
    with caplog.at_level("WARNING", logger="parl_remote.transport.zmq_io"):
        for i in range(6):
            drop_log(b"peer", f"bad signature {i}")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2  # the first at once, then one summary after the interval
    assert "bad signature 0" in lines[0] and "more since" not in lines[0]
    assert "bad signature 4" in lines[1] and "and 3 more since the last report" in lines[1]


@pytest.mark.parametrize("msg_type, body", [
    ("BATCH", [1, 2, 3]),  # items that are not (type, request id, body)
    ("BATCH", None),
    ("CALL", {"no": "method"}),
    ("GET_ATTR", 42),
    ("SET_ATTR", "not a pair"),
])  # fmt: skip
def test_a_job_answers_malformed_signed_requests_and_stays_up(connected, msg_type, body):
    from parl_remote.wire import serialization

    counter = Counter()
    assert counter.add(1) == 1
    reply = counter._xparl_actor.request(MsgType[msg_type], serialization.dumps(body))
    assert reply.type is MsgType.ERROR
    assert counter.add(1) == 2  # the same actor, alive, its state intact
