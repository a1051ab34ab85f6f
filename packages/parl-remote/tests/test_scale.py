"""The master at scale (issue #24): one test body, run against simulated workers (``parl_remote.testing.sim``, what
``benchmarks/scale/bench_scale.py`` drives up to 1,000 workers) and against a real cluster of the same shape (every
worker, zygote and job a real process, real actors answering calls), so that the simulation is checked against
reality at the largest size this machine holds in a test: 8 workers x 4 CPUs, 24 actors.

The body: every worker registers; the grants spread the actors evenly (the scheduling rule: the most vacant worker
first); a worker that vanishes has its actors reported not alive within HEARTBEAT_INTERVAL_S x HEARTBEAT_LIVENESS
+ 1 s while every other actor stays alive; after a kill -9 of the master and a restart on its port, every worker and
every actor is back within 10 s.
"""

from __future__ import annotations

import collections
import concurrent.futures
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from conftest import wait_until

import parl_remote as xparl
from parl_remote import ClusterClient, config
from parl_remote.cluster import LocalCluster, new_token
from parl_remote.testing.sim import ClientGroup, WorkerGroup

pytestmark = pytest.mark.timeout(240)

WORKERS, CPUS, ACTORS = 8, 4, 24


@xparl.remote_class
class Pinger:
    def ping(self, x):
        return x


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SimCluster:
    """Simulated workers and clients against a real master."""

    def __init__(self, address: str, token: str) -> None:
        self.address, self.token = address, token
        self.workers = WorkerGroup(address, token, WORKERS, CPUS)
        self.clients = None

    def create_actors(self, n: int) -> list[str]:
        self.clients = ClientGroup(self.address, self.token, 4)
        result = self.clients.call("acquire", n // 4, None, 2, 60.0)
        assert result["granted"] == n, result
        return self.clients.call("actors")

    def kill_worker(self, worker_id: str) -> None:
        killed = self.workers.call("kill", [worker_id])
        assert killed["killed"] == [worker_id]

    def alive_calls(self, actors: list[str]) -> None:
        pass  # simulated jobs run no code

    def dead_calls(self, actors: list[str]) -> None:
        pass  # (no connection to a simulated job: the master's report above is what its clients ask)

    def close(self) -> None:
        if self.clients is not None:
            self.clients.close()
        self.workers.close()


class RealCluster:
    """Real worker processes (``python -m parl_remote.server.worker``, as ``xparl connect`` starts them) and a real
    client with real actors."""

    def __init__(self, address: str, token: str) -> None:
        self.address, self.token = address, token
        env = {**os.environ, "XPARL_TOKEN": token}
        self.procs = [
            subprocess.Popen([sys.executable, "-m", "parl_remote.server.worker", "--address", address,
                              "--cpu-num", str(CPUS), "--gpu", ""], env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            for _ in range(WORKERS)
        ]  # fmt: skip
        self.actors: dict[str, Pinger] = {}

    def create_actors(self, n: int) -> list[str]:
        with ClusterClient(self.address, token=self.token, timeout_s=10.0) as client:  # every job process up
            wait_until(lambda: client.status(summary=True)["cpus"]["ready"] == WORKERS * CPUS, 120.0,
                       message="every job process of the real workers")  # fmt: skip
        xparl.connect(self.address, token=self.token)
        created = [Pinger() for _ in range(n)]
        assert [a.ping(i) for i, a in enumerate(created)] == list(range(n))
        self.actors = {a.__dict__["_xparl_actor"].actor_id: a for a in created}
        return list(self.actors)

    def kill_worker(self, worker_id: str) -> None:
        with ClusterClient(self.address, token=self.token, timeout_s=10.0) as client:
            pid = next(w["pid"] for w in client.status()["workers"] if w["id"] == worker_id)
        os.killpg(pid, signal.SIGKILL)  # the worker and its jobs (its session), as when its machine goes away

    def alive_calls(self, actors: list[str]) -> None:
        assert [self.actors[a].ping(a) for a in actors] == actors

    def dead_calls(self, actors: list[str]) -> None:
        """A call to each actor of the vanished worker, from threads at once (as their clients would), raises
        ActorDiedError."""

        def call(a):
            try:
                self.actors[a].ping(a)
            except xparl.ActorDiedError as exc:
                return exc
            return None

        with concurrent.futures.ThreadPoolExecutor(len(actors)) as pool:
            errors = list(pool.map(call, actors))
        assert all(isinstance(e, xparl.ActorDiedError) for e in errors), errors

    def close(self) -> None:
        xparl.disconnect()
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(10)


@pytest.mark.parametrize("kind", ["sim", "real"])
def test_master_at_scale_body(kind, xparl_home):
    token = new_token()
    port = _free_port()
    master = LocalCluster(port=port, token=token)
    master.start(start_worker=False)
    cluster = (SimCluster if kind == "sim" else RealCluster)(master.address, token)
    status = ClusterClient(master.address, token=token, timeout_s=10.0)
    try:
        # every worker registers, with all of its CPUs
        wait_until(lambda: status.status(summary=True)["counts"]["workers"] == WORKERS, 120.0, message="workers")
        assert status.status(summary=True)["cpus"]["total"] == WORKERS * CPUS
        # the grants spread the actors evenly: the most vacant worker first
        actors = cluster.create_actors(ACTORS)
        assert len(set(actors)) == ACTORS
        snap = status.status()
        on_worker = collections.Counter(a["worker_id"] for a in snap["actors"] if a["state"] == "alive")
        assert sorted(on_worker.values()) == [ACTORS // WORKERS] * WORKERS, on_worker
        assert {w["id"]: w["cpus_used"] for w in snap["workers"]} == dict(on_worker)
        # a worker vanishes: its actors are reported within HEARTBEAT_INTERVAL_S x HEARTBEAT_LIVENESS + 1 s, nobody
        # else is affected
        victim = snap["workers"][0]["id"]
        victims = sorted(a for a in actors if next(x for x in snap["actors"] if x["id"] == a)["worker_id"] == victim)
        others = sorted(set(actors) - set(victims))
        limit = config.get("HEARTBEAT_INTERVAL_S") * config.get("HEARTBEAT_LIVENESS") + 1.0
        start = time.monotonic()
        cluster.kill_worker(victim)
        cluster.dead_calls(victims)  # their clients: ActorDiedError (their connections close with the jobs)
        # (the client waits ACTOR_RECONNECT_GRACE_S for the connection, then up to 1 s for the master's cause)
        assert time.monotonic() - start <= max(limit, config.get("ACTOR_RECONNECT_GRACE_S") + 1.5)
        wait_until(lambda: all(status.actor_info(a)["state"] != "alive" for a in victims), limit + 1.0,
                   interval_s=0.02, message="the vanished worker's actors to be reported")  # fmt: skip
        assert time.monotonic() - start <= limit
        assert all(status.actor_info(a)["state"] == "alive" for a in others)
        cluster.alive_calls(others)
        # kill -9 of the master, restarted on its port: every worker and actor back within 10 s
        os.kill(master.master.pid, signal.SIGKILL)
        master.master.wait(10)
        status.close()
        master = LocalCluster(port=port, token=token)
        master.start(start_worker=False)
        status = ClusterClient(master.address, token=token, timeout_s=10.0)
        start = time.monotonic()

        def back():
            s = status.status(summary=True)["counts"]
            return s["workers"] == WORKERS - 1 and s["actors_alive"] == len(others)

        wait_until(back, 10.0, interval_s=0.1, message="every worker and actor after the master's restart")
        assert {a["id"] for a in status.status()["actors"] if a["state"] == "alive"} == set(others)
        cluster.alive_calls(others)
    finally:
        status.close()
        cluster.close()
        master.stop()


def test_the_master_raises_its_open_file_limit(xparl_home):
    """A master started at a soft limit of 256 open files (many systems start processes at 1,024) raises it to the
    hard limit, so that a cluster of thousands of workers does not run out of file descriptors."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip(f"this machine's hard limit of open files is {hard}")
    code = ("import resource, subprocess, sys, time; resource.setrlimit(resource.RLIMIT_NOFILE, (256, "
            f"{hard if hard != resource.RLIM_INFINITY else 'resource.RLIM_INFINITY'}));"
            "from parl_remote.cluster import LocalCluster; c = LocalCluster(port=0, token='t' * 32);"
            "c.start(start_worker=False); print(c.master.pid, flush=True); time.sleep(30)")  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    master_pid = None
    try:
        master_pid = int(proc.stdout.readline())
        import psutil

        limits = psutil.Process(master_pid).rlimit(psutil.RLIMIT_NOFILE)
        assert limits[0] == limits[1] and limits[0] > 256, limits
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the script; the master runs in a session of its own
        if master_pid is not None:
            os.kill(master_pid, signal.SIGKILL)
        proc.wait(10)


def _registration(worker_id: str, pid: int = 4242, **fields) -> dict:
    """A well-formed WORKER_REGISTER body (what a simulated worker sends), with ``fields`` replaced."""
    from parl_remote import __version__

    body = {"worker_id": worker_id, "host": "bad-input", "pid": pid, "cpus_total": 4, "gpus": [],
            "vacant_jobs": [], "busy_jobs": [], "python": list(sys.version_info[:2]), "version": __version__,
            "heartbeat_window_s": 3.0, "metrics_interval_s": 10.0, "liveness": "zmtp",
            "memory_total_mb": 1024.0, "memory_used_mb": 512.0, "load_avg": [0.0, 0.0, 0.0]}  # fmt: skip
    body.update(fields)
    return body


def test_bad_worker_registrations_are_refused_naming_the_problem(xparl_home):
    """Issue #24's bad input: a signed registration the master cannot accept (0 or a million CPUs, a field of the
    wrong type, more jobs than CPUs, a worker id that another connected process holds) is answered with an ERROR
    that names the problem, and a flood of them leaves the master serving everyone else: simulated workers register
    and ``status`` answers meanwhile, and every bad registration is answered."""
    import zmq

    from parl_remote.server.registry import MAX_WORKER_CPUS
    from parl_remote.transport import zmq_io
    from parl_remote.wire import protocol
    from parl_remote.wire.protocol import MsgType

    master = LocalCluster(port=0, token=new_token())
    master.start(start_worker=False)
    signer = protocol.Signer(master.token)
    ctx = zmq.Context.instance()
    socks = []

    def peer() -> zmq.Socket:
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.RCVTIMEO, 10_000)
        sock.connect(f"tcp://{master.address}")
        socks.append(sock)
        return sock

    def register(sock: zmq.Socket, body: object) -> protocol.Message:
        zmq_io.send(sock, signer, MsgType.WORKER_REGISTER, 1, body)
        return zmq_io.recv(sock, signer)

    group = None
    try:
        sock = peer()
        vacant = [{"job_id": f"j{i}", "address": "127.0.0.1:1", "pid": 1} for i in range(5)]
        cases = [
            (_registration("w-zero", cpus_total=0), f"1-{MAX_WORKER_CPUS:,} CPUs (job slots), not 0"),
            (_registration("w-million", cpus_total=1_000_000), "not 1,000,000"),
            (_registration("w-str", cpus_total="4"), "cpus_total must be a int, not str"),
            (_registration("w-jobs", vacant_jobs=vacant), "5 jobs listed for 4 CPUs"),
            (_registration("", cpus_total=4), "worker_id must have 1-128 characters"),
            ([1, 2], "its body is a list, not a dict"),
            (_registration("w-py", python=[2, 7]), "runs Python [2, 7]"),
            (_registration("w-old", liveness=None), "heartbeat messages (an earlier parl-remote)"),
        ]
        for body, expected in cases:
            reply = register(sock, body)
            assert reply.type == MsgType.ERROR, (body, reply.type)
            assert "registration refused" in reply.body()["error"] and expected in reply.body()["error"], reply.body()
        # registering twice: the same process again is a re-registration; another process with its id is refused
        first, impostor = peer(), peer()
        assert register(first, _registration("w-dup", pid=1)).type == MsgType.REPLY
        refused = register(impostor, _registration("w-dup", pid=2)).body()["error"]
        assert "w-dup is registered already, by pid 1 on bad-input, which is connected" in refused, refused
        assert register(first, _registration("w-dup", pid=1)).type == MsgType.REPLY
        with ClusterClient(master.address, token=master.token, timeout_s=10.0) as client:
            assert [w["id"] for w in client.status()["workers"]] == ["w-dup"]  # nothing refused was listed
            # a flood of bad registrations (batches of 100, every answer read) from another thread while 5
            # simulated workers register and status is asked
            flood, stop, counts = peer(), threading.Event(), {"sent": 0, "errors": 0}

            def flood_master() -> None:
                bad = _registration("w-flood", cpus_total=0)
                while not stop.is_set():
                    for _ in range(100):
                        zmq_io.send(flood, signer, MsgType.WORKER_REGISTER, 1, bad)
                    counts["sent"] += 100
                    counts["errors"] += sum(zmq_io.recv(flood, signer).type == MsgType.ERROR for _ in range(100))

            flooder = threading.Thread(target=flood_master, daemon=True)
            flooder.start()
            wait_until(lambda: counts["errors"] >= 500, 20.0, message="the flood under way")
            group = WorkerGroup(master.address, master.token, 5, 2)
            started = time.monotonic()
            wait_until(lambda: client.status(summary=True)["counts"]["workers"] == 6, 20.0,
                       message="the simulated workers registered during the flood")  # fmt: skip
            registered_s = time.monotonic() - started
            status_s = []
            for _ in range(5):
                t0 = time.monotonic()
                client.status()
                status_s.append(time.monotonic() - t0)
            stop.set()
            flooder.join(30)
            assert not flooder.is_alive()
            assert counts["errors"] == counts["sent"] >= 500, counts  # every bad registration answered
            assert max(status_s) < 1.0, status_s
            print(f"\n{counts['sent']} bad registrations refused; meanwhile 5 workers registered in "
                  f"{registered_s:.2f} s, status answered in at most {max(status_s) * 1e3:.0f} ms")
    finally:
        if group is not None:
            group.close()
        for sock in socks:
            sock.close(linger=0)
        master.stop()


def test_a_refused_worker_stops_with_the_masters_reason():
    """The worker's side of a refusal (``Worker.on_master_error``): it stops, keeping the reason, which its
    ``main`` prints as it exits with an error (as for a wrong token)."""
    import types

    from parl_remote.server.worker import Worker
    from parl_remote.wire import serialization
    from parl_remote.wire.protocol import Message, MsgType

    worker = types.SimpleNamespace(worker_id="w-1", refused=None, running=True)
    reason = "registration refused: a worker offers 1-16,384 CPUs (job slots), not 0"
    Worker.on_master_error(worker, Message(MsgType.ERROR, 1, serialization.dumps({"error": reason})))
    assert worker.refused == reason and worker.running is False
