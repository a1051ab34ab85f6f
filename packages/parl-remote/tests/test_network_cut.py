"""Network cuts between hosts (issue #16): two hosts simulated with a network namespace joined by a veth pair
(``netns.py``); the master and the client here, the worker and its actors there.

A cut shorter than ``LINK_GRACE_S`` costs latency, not actors: the call in flight completes once the link is
back, every actor answers with its state, the master lists each actor once (``unreachable`` during the cut,
``alive`` after). A cut longer than the grace ends them with an ``ActorDiedError`` naming the lost link.
The figures printed (``pytest -s``) are those of the README's Reliability section.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest
from conftest import wait_until
from netns import TwoHosts, unavailable_reason

import parl_remote as xparl
from parl_remote import ClusterClient, cli, config
from parl_remote.cluster import LocalCluster

pytestmark = pytest.mark.timeout(180)


class _Count:
    def __init__(self):
        self.n = 0

    def add(self, k):
        self.n += k
        return self.n


@xparl.remote_class
class Counter(_Count):
    pass


@xparl.remote_class(wait=False)
class FutureCounter(_Count):
    pass


@pytest.mark.parametrize(("grace", "idle", "count", "maxrt_ms"), [("60", "5", 56, 60000), ("3", "1", 3, 3000),
                                                                  ("600", "5", 127, 600000)])  # fmt: skip
def test_tcp_options_follow_the_grace(monkeypatch, grace, idle, count, maxrt_ms):
    import zmq

    from parl_remote import config

    monkeypatch.setenv("XPARL_LINK_GRACE_S", grace)
    monkeypatch.setenv("XPARL_TCP_KEEPALIVE_IDLE_S", idle)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    try:
        config.set_keepalive(sock)
        assert sock.getsockopt(zmq.TCP_MAXRT) == maxrt_ms  # TCP_USER_TIMEOUT: data in flight given up after it
        assert sock.getsockopt(zmq.TCP_KEEPALIVE_CNT) == count  # probes until the grace (Linux's cap: 127)
        assert sock.getsockopt(zmq.TCP_KEEPALIVE_IDLE) == int(idle)
    finally:
        sock.close(linger=0)
        ctx.term()


@pytest.mark.parametrize("bad", ["0", "-1", "nan"])
def test_a_grace_that_is_not_positive_is_refused_naming_the_variable(monkeypatch, bad):
    from parl_remote import config

    monkeypatch.setenv("XPARL_LINK_GRACE_S", bad)
    with pytest.raises(ValueError, match="XPARL_LINK_GRACE_S must be a positive number of seconds"):
        config.link_grace_s()


@pytest.fixture
def two_hosts(xparl_home):
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"two simulated hosts unavailable: {reason}")
    with TwoHosts() as hosts:
        yield hosts


def _start(hosts: TwoHosts, xparl_home, worker_env: dict | None = None) -> LocalCluster:
    """A master on this host, a 3-CPU worker on the other (``worker_env``: its own settings); returns once the worker
    registered."""
    cluster = LocalCluster(cpu_num=3, host=hosts.here, parent_pid=os.getpid())
    cluster.start(start_worker=False)
    log = open(xparl_home / f"worker-netcut-{os.getpid()}.log", "ab")  # noqa: SIM115 - closed with the process
    argv = [sys.executable, "-m", "parl_remote.server.worker", "--address", cluster.address, "--host", hosts.there,
            "--cpu-num", "3"]  # fmt: skip
    env = {**os.environ, "XPARL_TOKEN": cluster.token, **(worker_env or {})}
    hosts.popen_there(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    with ClusterClient(cluster.address, token=cluster.token, timeout_s=2.0) as client:
        wait_until(lambda: client.status()["cpus"]["total"] == 3, 20.0, message="the other host's worker")
    return cluster


def _rto_max_supported() -> bool:
    """True when this kernel caps TCP's retransmission back-off per socket (TCP_RTO_MAX_MS, Linux >= 6.15)."""
    with socket.socket() as sock:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, 44, 1000)
        except OSError:
            return False
    return True


def _actors(client: ClusterClient) -> list[dict]:
    return client.status()["actors"]


class _InFlight:
    """One call on ``actor`` from a thread (sent while the link is down): its result or error, and when."""

    def __init__(self, actor: Counter, k: int) -> None:
        self.result = self.error = self.done_at = None
        self.thread = threading.Thread(target=self._run, args=(actor, k), daemon=True)
        self.thread.start()

    def _run(self, actor: Counter, k: int) -> None:
        try:
            self.result = actor.add(k)
        except xparl.RemoteError as exc:
            self.error = exc
        self.done_at = time.monotonic()


def test_a_10_s_cut_costs_latency_not_actors(two_hosts, xparl_home, monkeypatch):
    monkeypatch.delenv("XPARL_LINK_GRACE_S", raising=False)  # the default, 60 s
    cluster = _start(two_hosts, xparl_home)
    try:
        xparl.connect(cluster.address, token=cluster.token)
        busy, idle, piped = Counter(), Counter(), FutureCounter()
        assert (busy.add(1), idle.add(2), piped.add(0).get()) == (1, 2, 0)
        ids = {a._xparl_actor.actor_id for a in (busy, idle, piped)}
        with ClusterClient(cluster.address, token=cluster.token, timeout_s=2.0) as client:
            two_hosts.cut()
            cut_at = time.monotonic()
            in_flight = _InFlight(busy, 10)  # sent into the cut
            futures = [piped.add(k) for k in range(1, 6)]  # future mode: five calls pipelined into the cut
            # the master stops hearing the worker: its actors are unreachable, not dead
            wait_until(lambda: {a["state"] for a in _actors(client)} == {"unreachable"}, 8.0,
                       message="the actors to be listed unreachable")  # fmt: skip
            status = client.status()
            assert status["workers"] == []
            summary = client.status(summary=True)  # what xparl status prints
            assert "0 workers" in cli._status_line(cluster.address, summary)
            assert "0 actors (3 more unreachable)" in cli._status_line(cluster.address, summary)
            remaining = 10.0 - (time.monotonic() - cut_at)
            assert remaining > 0
            time.sleep(remaining)  # the cut lasts 10 s: nothing can be polled across it
            assert in_flight.done_at is None, "a reply crossed a link that was down"
            two_hosts.restore()
            restored_at = time.monotonic()
            wait_until(lambda: {a["state"] for a in _actors(client)} == {"alive"}, 10.0,
                       message="the worker to rejoin")  # fmt: skip
            rejoined_s = time.monotonic() - restored_at
            in_flight.thread.join(timeout=30)
            assert in_flight.error is None, in_flight.error
            assert in_flight.result == 11  # completed, once
            # TCP's back-off capped at LINK_RETRANSMIT_MAX_MS (1 s) where the kernel can (else it doubles: ~3.4 s)
            assert in_flight.done_at - restored_at < (2.0 if _rto_max_supported() else 10.0)
            assert [f.get(timeout=30) for f in futures] == [1, 3, 6, 10, 15]  # all completed, in order, once
            idle_t0 = time.monotonic()
            assert idle.add(3) == 5  # its state intact
            idle_call_s = time.monotonic() - idle_t0
            assert busy.add(100) == 111
            actors = _actors(client)
            assert sorted(a["id"] for a in actors) == sorted(ids)  # one entry per actor
            assert [w["host"] for w in client.status()["workers"]] == [two_hosts.there]
            latencies = []
            for _ in range(50):
                t0 = time.monotonic()
                busy.add(0)
                latencies.append(time.monotonic() - t0)
        latencies.sort()
        print(f"\n10 s cut: call in flight completed {in_flight.done_at - restored_at:.2f} s after the link came back "
              f"({in_flight.done_at - cut_at:.2f} s in all); first call on the idle actor {idle_call_s * 1e3:.1f} ms; "
              f"master listed the worker again {rejoined_s:.2f} s after; calls after: median "
              f"{latencies[25] * 1e3:.2f} ms, max {latencies[-1] * 1e3:.2f} ms")  # fmt: skip
    finally:
        xparl.disconnect()
        cluster.stop()


def test_a_cut_worker_whose_last_frame_was_a_message_is_listed_unreachable_within_a_window(two_hosts, xparl_home):
    """libzmq's heartbeat TTL runs only from a PING (any message cancels its timer): a worker whose last frame before
    a cut was a message, not a PING, is not dropped by it. The master's kernel ends that connection instead: keepalive
    probes and TCP_USER_TIMEOUT = the heartbeat window on each worker's connection (``housekeeping.keepalive``; the
    sockets' own user timeout is LINK_GRACE_S, 60 s here). Made certain by a worker that sends no PING at all in the
    test (its heartbeat interval 60 s): it is kept by its messages, and listed unreachable a window or so after the
    cut (its actors unreachable, not dead)."""
    cluster = _start(two_hosts, xparl_home, worker_env={"XPARL_HEARTBEAT_INTERVAL_S": "60",
                                                        "XPARL_METRICS_INTERVAL_S": "0.5"})  # fmt: skip
    try:
        xparl.connect(cluster.address, token=cluster.token)
        counter = Counter()
        assert counter.add(1) == 1
        window_s = config.get("HEARTBEAT_INTERVAL_S") * config.get("HEARTBEAT_LIVENESS")
        with ClusterClient(cluster.address, token=cluster.token, timeout_s=2.0) as client:
            time.sleep(2 * window_s)  # no PING: its metrics messages keep it listed
            assert len(client.status()["workers"]) == 1
            two_hosts.cut()
            cut_at = time.monotonic()
            # data from the master waits unacknowledged on the cut connection (which stops keepalive probes): the
            # actor's log, which the master asks the worker for
            with ClusterClient(cluster.address, token=cluster.token, timeout_s=0.5) as reader:
                with pytest.raises(xparl.ClusterConnectionError):  # the worker did not answer
                    reader.actor_log(counter._xparl_actor.actor_id)
            wait_until(lambda: client.status()["workers"] == [], window_s + 4.0,
                       message="the cut worker listed unreachable")  # fmt: skip
            detected_s = time.monotonic() - cut_at
            assert {a["state"] for a in _actors(client)} == {"unreachable"}
            two_hosts.restore()
        print(f"\na cut worker sending no PINGs: listed unreachable {detected_s:.2f} s after the cut "
              f"(window {window_s:g} s)")
    finally:
        xparl.disconnect()
        cluster.stop()


def test_a_cut_longer_than_the_grace_ends_actors_naming_the_lost_link(two_hosts, xparl_home, monkeypatch):
    grace_s = 3.0
    monkeypatch.setenv("XPARL_LINK_GRACE_S", str(grace_s))  # every process of the cluster and this client
    monkeypatch.setenv("XPARL_TCP_KEEPALIVE_IDLE_S", "1")  # idle connections probed within the short grace too
    cluster = _start(two_hosts, xparl_home)
    try:
        xparl.connect(cluster.address, token=cluster.token)
        busy, idle = Counter(), Counter()
        assert (busy.add(1), idle.add(2)) == (1, 2)
        ids = {busy._xparl_actor.actor_id, idle._xparl_actor.actor_id}
        with ClusterClient(cluster.address, token=cluster.token, timeout_s=2.0) as client:
            two_hosts.cut()
            cut_at = time.monotonic()
            in_flight = _InFlight(busy, 10)
            in_flight.thread.join(timeout=grace_s + 20)
            assert isinstance(in_flight.error, xparl.ActorDiedError), in_flight.error
            failed_s = in_flight.done_at - cut_at
            assert grace_s <= failed_s <= grace_s + 6, failed_s
            text = str(in_flight.error)
            assert "network link to its worker" in text and f"LINK_GRACE_S={grace_s:g} s" in text, text
            assert "may have run" in text, text  # sent, no reply: says so
            assert "network link" in in_flight.error.cause
            wait_until(lambda: {a["state"] for a in _actors(client)} == {"dead"}, 5.0, message="both actors dead")
            time.sleep(max(0.0, cut_at + grace_s + 5.0 - time.monotonic()))  # the cut lasts the grace + 5 s
            two_hosts.restore()
            with pytest.raises(xparl.ActorDiedError, match="network link to its worker") as later:
                idle.add(1)
            assert "did not run" in str(later.value) or "may have run" in str(later.value)
            # the worker rejoins; its jobs ended (their client's connection timed out): every CPU free again
            wait_until(lambda: client.status()["cpus"] == {"total": 3, "used": 0, "vacant": 3}, 15.0,
                       message="the worker back with both CPUs free")  # fmt: skip
            actors = _actors(client)
            assert sorted(a["id"] for a in actors) == sorted(ids)  # one entry each, dead
            assert all(a["state"] == "dead" and "network link" in a["death_cause"] for a in actors), actors
            assert Counter().add(4) == 4  # the cluster goes on
        print(f"\ncut past LINK_GRACE_S={grace_s:g} s: the call in flight failed {failed_s:.2f} s after the cut")
    finally:
        xparl.disconnect()
        cluster.stop()


def test_a_worker_rejoining_after_the_grace_has_its_ended_actors_jobs_killed(two_hosts, xparl_home, monkeypatch):
    # the master ends the actors after the grace (3 s) while their jobs still live (their idle connections are first
    # probed after 5 s): the link returns in between; the rejoining worker lists the jobs busy, the master kills them
    grace_s = 3.0
    monkeypatch.setenv("XPARL_LINK_GRACE_S", str(grace_s))
    monkeypatch.setenv("XPARL_TCP_KEEPALIVE_IDLE_S", "5")
    cluster = _start(two_hosts, xparl_home)
    try:
        xparl.connect(cluster.address, token=cluster.token)
        actors = [Counter(), Counter()]
        assert [a.add(1) for a in actors] == [1, 1]
        ids = sorted(a._xparl_actor.actor_id for a in actors)
        with ClusterClient(cluster.address, token=cluster.token, timeout_s=2.0) as client:
            two_hosts.cut()
            wait_until(lambda: {a["state"] for a in _actors(client)} == {"dead"}, grace_s + 5, message="actors dead")
            two_hosts.restore()
            wait_until(lambda: client.status()["cpus"] == {"total": 3, "used": 0, "vacant": 3}, 15.0,
                       message="the rejoined worker's jobs of ended actors killed")  # fmt: skip
            listed = _actors(client)
            assert sorted(a["id"] for a in listed) == ids  # one entry each
            assert all(a["state"] == "dead" and "network link" in a["death_cause"] for a in listed), listed
            for actor in actors:
                with pytest.raises(xparl.ActorDiedError, match="network link to its worker"):
                    actor.add(1)
    finally:
        xparl.disconnect()
        cluster.stop()


def _start_there(hosts: TwoHosts, xparl_home) -> tuple[str, str]:
    """A master and a 3-CPU worker both on the other host; returns (the master's address, the token)."""
    from parl_remote.cluster import new_token

    token = new_token()
    env = {**os.environ, "XPARL_TOKEN": token}
    log = open(xparl_home / f"cluster-there-{os.getpid()}.log", "ab")  # noqa: SIM115 - closed with the processes
    master = hosts.popen_there([sys.executable, "-m", "parl_remote.server.master", "--host", hosts.there, "--port",
                                "0", "--parent-pid", str(os.getpid())], env=env, stdout=subprocess.PIPE,
                               stderr=log)  # fmt: skip
    line = master.stdout.readline().decode().strip()  # "XPARL_MASTER_PORT=<port>", or "" if it exited
    assert line.startswith("XPARL_MASTER_PORT="), f"the master on the other host did not start ({line!r})"
    address = f"{hosts.there}:{line.partition('=')[2]}"
    hosts.popen_there([sys.executable, "-m", "parl_remote.server.worker", "--address", address, "--host",
                       hosts.there, "--cpu-num", "3"], env=env, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    log.close()
    with ClusterClient(address, token=token, timeout_s=2.0) as client:
        wait_until(lambda: client.status()["cpus"]["total"] == 3, 20.0, message="the other host's cluster")
    return address, token


def test_a_client_cut_off_from_its_cluster_for_10_s_keeps_its_actors(two_hosts, xparl_home, monkeypatch):
    monkeypatch.delenv("XPARL_LINK_GRACE_S", raising=False)
    address, token = _start_there(two_hosts, xparl_home)
    try:
        xparl.connect(address, token=token)
        busy, idle = Counter(), Counter()
        assert (busy.add(1), idle.add(2)) == (1, 2)
        ids = sorted(a._xparl_actor.actor_id for a in (busy, idle))
        two_hosts.cut()
        in_flight = _InFlight(busy, 10)
        time.sleep(10.0)  # the cut lasts 10 s: the client hears nothing from its master nor its actors meanwhile
        assert in_flight.done_at is None
        two_hosts.restore()
        restored_at = time.monotonic()
        in_flight.thread.join(timeout=30)
        assert in_flight.error is None and in_flight.result == 11, in_flight.error
        back_s = in_flight.done_at - restored_at
        assert (idle.add(3), busy.add(100)) == (5, 111)  # state intact
        with ClusterClient(address, token=token, timeout_s=2.0) as client:
            status = client.status()
        assert sorted(a["id"] for a in status["actors"]) == ids
        assert {a["state"] for a in status["actors"]} == {"alive"}
        assert [sorted(c["actors"]) for c in status["clients"]] == [ids]  # the client is still registered
        print(f"\nclient cut off for 10 s: the call in flight completed {back_s:.2f} s after the link came back")
    finally:
        xparl.disconnect()


def test_a_client_cut_off_past_the_grace_gets_errors_naming_the_lost_link(two_hosts, xparl_home, monkeypatch):
    grace_s = 3.0
    monkeypatch.setenv("XPARL_LINK_GRACE_S", str(grace_s))
    monkeypatch.setenv("XPARL_TCP_KEEPALIVE_IDLE_S", "1")
    address, token = _start_there(two_hosts, xparl_home)
    try:
        xparl.connect(address, token=token)
        busy, idle = Counter(), Counter()
        assert (busy.add(1), idle.add(2)) == (1, 2)
        two_hosts.cut()
        cut_at = time.monotonic()
        in_flight = _InFlight(busy, 10)
        in_flight.thread.join(timeout=grace_s + 20)
        assert isinstance(in_flight.error, xparl.ActorDiedError), in_flight.error
        text = str(in_flight.error)  # the master is behind the cut too: the client's own account
        assert f"network link to it was lost for more than LINK_GRACE_S={grace_s:g} s" in text, text
        assert "may have run" in text, text
        time.sleep(max(0.0, cut_at + grace_s + 5.0 - time.monotonic()))  # the cut lasts the grace + 5 s
        two_hosts.restore()
        with pytest.raises(xparl.ActorDiedError, match="network link"):
            idle.add(1)
        with ClusterClient(address, token=token, timeout_s=2.0) as client:
            wait_until(lambda: client.status()["cpus"]["used"] == 0, 15.0, message="the jobs of the cut client ended")
            actors = client.status()["actors"]
        assert len(actors) == 2 and all(a["state"] == "dead" and "network link" in a["death_cause"] for a in actors)
        assert Counter().add(4) == 4  # the client goes on with new actors
    finally:
        xparl.disconnect()
