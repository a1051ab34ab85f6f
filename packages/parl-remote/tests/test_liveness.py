"""Worker liveness through ZMTP heartbeats (issue #24, S1): the workers' PINGs are handled in libzmq on both sides,
so an idle cluster sends the master's Python no message per heartbeat; a worker that stops answering (its process
stopped: still connected, silent) loses its connection after HEARTBEAT_INTERVAL_S x HEARTBEAT_LIVENESS, which the
master learns of from its socket monitor (the unreachable path); once it runs again it reconnects and registers at
once. A registration of the earlier protocol (heartbeat messages instead of ZMTP heartbeats) is refused
(``test_scale.py``). Network cuts (the worker's connection ended by kernel keepalive probes, then the same path):
``test_network_cut.py``; master restarts: ``test_master_restart.py``, ``test_scale.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import wait_until

from parl_remote import ClusterClient, config
from parl_remote.cluster import LocalCluster, new_token
from parl_remote.testing.sim import ClientGroup, WorkerGroup

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def master(xparl_home, monkeypatch):
    monkeypatch.setenv("XPARL_METRICS_INTERVAL_S", "60")  # no metrics message within a test's idle window
    cluster = LocalCluster(port=0, token=new_token())
    cluster.start(start_worker=False)
    yield cluster
    cluster.stop()


def _summary(client: ClusterClient) -> dict:
    return client.status(summary=True)


def test_idle_workers_send_the_master_no_message_per_heartbeat(master):
    workers = WorkerGroup(master.address, master.token, 6, 2)
    try:
        with ClusterClient(master.address, token=master.token, timeout_s=5.0) as client:
            wait_until(lambda: _summary(client)["counts"]["workers"] == 6, 20.0, message="6 workers")
            before = _summary(client)["master"]["messages_received"]
            window_s = config.get("HEARTBEAT_INTERVAL_S") * config.get("HEARTBEAT_LIVENESS")
            time.sleep(2 * window_s)  # 6 workers x 10 intervals: 60 heartbeat messages in the earlier protocol
            after = _summary(client)
            # the one message counted is the second status request itself
            assert after["master"]["messages_received"] - before == 1, (before, after["master"])
            assert after["counts"]["workers"] == 6  # kept alive by the PINGs alone, twice their TTL
        stats = workers.call("stats")
        assert stats.get("disconnects", 0) == 0 and stats.get("reconnects", 0) == 0, stats
        assert stats["registrations"] == 6, stats
    finally:
        workers.close()


def test_a_stopped_worker_is_detected_by_its_heartbeat_ttl_and_rejoins_when_continued(master):
    """SIGSTOP leaves the workers' connections open (no FIN): only the missing PINGs tell the master."""
    workers = WorkerGroup(master.address, master.token, 3, 2)
    others = WorkerGroup(master.address, master.token, 2, 2, seed=1)
    clients = None
    try:
        with ClusterClient(master.address, token=master.token, timeout_s=5.0) as client:
            wait_until(lambda: _summary(client)["counts"]["workers"] == 5, 20.0, message="5 workers")
            clients = ClientGroup(master.address, master.token, 1)
            assert clients.call("acquire", 10, None, 2, 30.0)["granted"] == 10  # every CPU
            window_s = config.get("HEARTBEAT_INTERVAL_S") * config.get("HEARTBEAT_LIVENESS")
            # libzmq arms a connection's TTL on a received PING and disarms it on any other frame: a worker stopped
            # right after a message of its own is found only by the master's silence check (minutes here:
            # METRICS_INTERVAL_S is 60). Not a readiness wait: two heartbeat intervals after the grants' messages,
            # so that every worker's last frame before the stop is a PING, the case this test measures
            time.sleep(2 * config.get("HEARTBEAT_INTERVAL_S"))
            os.kill(workers.process.pid, signal.SIGSTOP)
            stopped_at = time.monotonic()
            try:
                wait_until(lambda: _summary(client)["counts"]["workers"] == 2, window_s + 3.0,
                           message="the stopped workers listed unreachable")  # fmt: skip
                detected_s = time.monotonic() - stopped_at
                counts = _summary(client)["counts"]
                assert counts["workers_unreachable"] == 3 and counts["actors_unreachable"] == 6, counts
                assert counts["actors_alive"] == 4, counts  # the others' actors: untouched
                # HEARTBEAT_INTERVAL_S x HEARTBEAT_LIVENESS after the last PING (sent up to an interval before the stop)
                interval_s = config.get("HEARTBEAT_INTERVAL_S")
                assert window_s - interval_s - 0.05 <= detected_s <= window_s + 1.0, detected_s
            finally:
                os.kill(workers.process.pid, signal.SIGCONT)
            continued_at = time.monotonic()
            wait_until(lambda: _summary(client)["counts"]["actors_alive"] == 10, 5.0,
                       message="the continued workers back with their actors")  # fmt: skip
            rejoined_s = time.monotonic() - continued_at
            counts = _summary(client)["counts"]
            assert counts["workers"] == 5 and counts["workers_unreachable"] == 0, counts
            assert rejoined_s < 3.0, rejoined_s
        stats = workers.call("stats")
        assert stats["reconnects"] >= 3 and stats["busy"] == 6, stats
        assert others.call("stats").get("reconnects", 0) == 0
    finally:
        if clients is not None:
            clients.close()
        workers.close()
        others.close()


def _real_worker(cluster: LocalCluster, **settings: str) -> subprocess.Popen:
    """A 1-CPU worker process (``xparl connect``'s) joining ``cluster``, with ``settings`` (``XPARL_*``) of its own."""
    env = {**os.environ, "XPARL_TOKEN": cluster.token, **settings}
    return subprocess.Popen([sys.executable, "-m", "parl_remote.server.worker", "--address", cluster.address,
                             "--cpu-num", "1", "--parent-pid", str(os.getpid())], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def test_a_real_worker_stopped_then_continued(master, monkeypatch):
    """The same with a real worker process (``xparl connect``'s): its libzmq I/O thread stops with it."""
    proc = _real_worker(master)
    try:
        with ClusterClient(master.address, token=master.token, timeout_s=5.0) as client:
            wait_until(lambda: _summary(client)["counts"]["workers"] == 1, 30.0, message="the worker")
            window_s = config.get("HEARTBEAT_INTERVAL_S") * config.get("HEARTBEAT_LIVENESS")
            # its first PING (an interval after it connected) arms the TTL (a worker stopped before that is dropped by
            # its silence instead, after 3 metrics intervals: the next test)
            time.sleep(2 * config.get("HEARTBEAT_INTERVAL_S"))
            proc.send_signal(signal.SIGSTOP)
            stopped_at = time.monotonic()
            try:
                wait_until(lambda: _summary(client)["counts"]["workers"] == 0, window_s + 3.0,
                           message="the stopped worker listed unreachable")  # fmt: skip
                assert time.monotonic() - stopped_at >= window_s - config.get("HEARTBEAT_INTERVAL_S") - 0.05
            finally:
                proc.send_signal(signal.SIGCONT)
            wait_until(lambda: _summary(client)["counts"]["workers"] == 1, 5.0, message="the worker back")
            assert _summary(client)["counts"]["workers_unreachable"] == 0
            proc.kill()  # its connection closes with it: listed unreachable at once, not after the TTL
            killed_at = time.monotonic()
            wait_until(lambda: _summary(client)["counts"]["workers"] == 0, window_s + 2.0, message="the killed one")
            assert time.monotonic() - killed_at < window_s, time.monotonic() - killed_at
    finally:
        proc.kill()
        proc.wait(10)


def test_a_worker_silent_with_its_connection_up_is_dropped_after_three_metrics_intervals(xparl_home, monkeypatch):
    """libzmq's TTL runs only from a PING, and any message cancels it: a worker stopped before its first PING, or
    right after a message of its own, keeps an open, silent connection the TTL never ends (the kernel answers
    keepalive probes for a stopped process). The master drops a worker that sent no message for
    ``SILENCE_METRICS_INTERVALS`` (3) of its metrics intervals. Made certain here by workers that send no PING in the
    test (their heartbeat interval 60 s); their metrics (every 1 s; the second worker's own setting 5 s, which its
    registration tells the master) keep them listed while they run."""
    from parl_remote.server import liveness

    monkeypatch.setenv("XPARL_METRICS_INTERVAL_S", "1")
    cluster = LocalCluster(port=0, token=new_token())
    cluster.start(start_worker=False)
    proc = _real_worker(cluster, XPARL_HEARTBEAT_INTERVAL_S="60")
    slow = _real_worker(cluster, XPARL_HEARTBEAT_INTERVAL_S="60", XPARL_METRICS_INTERVAL_S="5")
    try:
        with ClusterClient(cluster.address, token=cluster.token, timeout_s=5.0) as client:
            wait_until(lambda: _summary(client)["counts"]["workers"] == 2, 30.0, message="the workers")
            silence_s = liveness.SILENCE_METRICS_INTERVALS * 1.0
            time.sleep(silence_s + 1.5)  # no PING: their metrics messages keep them listed
            assert _summary(client)["counts"]["workers"] == 2  # the slow one too: 3 of its own intervals is 15 s
            proc.send_signal(signal.SIGSTOP)
            stopped_at = time.monotonic()
            try:
                wait_until(lambda: _summary(client)["counts"]["workers"] == 1, silence_s + 4.0,
                           message="the stopped, silent worker listed unreachable")  # fmt: skip
                detected_s = time.monotonic() - stopped_at
                # its last message came up to an interval before the stop; checked every second
                assert silence_s - 1.0 - 0.05 <= detected_s <= silence_s + 2.5, detected_s
            finally:
                proc.send_signal(signal.SIGCONT)
            # its next metrics message is answered REREGISTER: it registers again
            wait_until(lambda: _summary(client)["counts"]["workers"] == 2, 10.0, message="the worker back")
            assert _summary(client)["counts"]["workers_unreachable"] == 0
    finally:
        for p in (proc, slow):
            p.kill()
            p.wait(10)
        cluster.stop()
