"""Simulated workers and clients that speak the real xparl protocol to a real master, to measure the master at
a scale one machine cannot hold as real processes (``benchmarks/scale/bench_scale.py``).

A simulated worker is one zmq DEALER socket with its own routing identity, as a real worker's
(``server/worker.py``): it registers with its CPUs as vacant jobs, keeps its connection alive with ZMTP
heartbeats (``zmq_io.set_zmtp_heartbeat``, the same options as a real worker's), sends its metrics every
``METRICS_INTERVAL_S``, registers again the moment its connection is back (a socket monitor per worker) and when
told ``REREGISTER`` (listing its busy jobs), takes ``ASSIGN_JOB`` at once (a fake job endpoint; no process runs),
and answers ``KILL_JOB`` with ``JOB_ENDED`` and a new vacant job (``JOB_READY``). A simulated client
registers, heartbeats every ``CLIENT_HEARTBEAT_INTERVAL_S`` and asks for actors with ``ACQUIRE_JOB``,
several requests in flight on one connection, as real clients that create actors from several threads do.
Nothing runs user code; every message is signed and verified as in a real cluster.

Each group runs in a process of its own (``WorkerGroup`` / ``ClientGroup``, driven through a pipe), many
simulated peers per process, so that a 2-core machine holds 1,000 workers of 32 CPUs.
"""

from __future__ import annotations

import collections
import multiprocessing as mp
import os
import random
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import zmq

from parl_remote import __version__, config
from parl_remote.transport import zmq_io
from parl_remote.wire import protocol
from parl_remote.wire.protocol import MsgType

TICK_S = 0.01  # a simulated worker group sends the heartbeats due and reads its sockets once per tick
MONITOR_TICKS = 10  # and reads its sockets' monitors (connection up / dropped) once per this many ticks
_METRICS = {"memory_total_mb": 131072.0, "memory_used_mb": 8192.0, "load_avg": [1.0, 1.0, 1.0]}


def _context() -> zmq.Context:
    ctx = zmq.Context()
    ctx.set(zmq.MAX_SOCKETS, 65536)  # one DEALER per simulated peer (zmq's default allows 1,023)
    return ctx


@dataclass
class _SimWorker:
    worker_id: str
    cpus: int
    sock: Any = None
    monitor: Any = None  # its socket's monitor: connection up / dropped
    connected: bool = False  # a connection to the master was up at least once
    vacant: dict = field(default_factory=dict)  # job_id -> job dict
    busy: dict = field(default_factory=dict)  # actor_id -> job dict (with actor_id, client_id, ...)
    next_heartbeat: float = 0.0  # (its next metrics message)
    registrations: int = 0
    dead: bool = False


class _WorkerLoop:
    """The body of a ``WorkerGroup`` process (see the module docstring)."""

    def __init__(self, address: str, token: str, n_workers: int, cpus: int, conn: Any, seed: int) -> None:
        self.address = address
        self.signer = protocol.Signer(token)
        self.ctx = _context()
        self.conn = conn
        self.interval_s = config.get("HEARTBEAT_INTERVAL_S")
        self.liveness = config.get("HEARTBEAT_LIVENESS")
        self.rng = random.Random(seed)
        self.workers = [_SimWorker(f"w-sim{seed:03d}-{i:05d}-{uuid.uuid4().hex[:4]}", cpus) for i in range(n_workers)]
        self.by_sock: dict[zmq.Socket, _SimWorker] = {}
        self.by_monitor: dict[zmq.Socket, _SimWorker] = {}
        self.monitors = zmq.Poller()  # polled every MONITOR_TICKS ticks: a poll of 500 more sockets per tick cost 20 %
        self.poller = zmq.Poller()
        self.pid = os.getpid()
        self.counts = collections.Counter()

    def _new_job(self, w: _SimWorker) -> dict:
        job_id = "j-" + uuid.uuid4().hex[:10]
        job = {"job_id": job_id, "address": "127.0.0.1:9", "pid": self.pid}  # a fake job endpoint
        w.vacant[job_id] = job
        return job

    def _close(self, w: _SimWorker) -> None:
        if w.monitor is not None:
            self.monitors.unregister(w.monitor)
            self.by_monitor.pop(w.monitor, None)
            w.sock.disable_monitor()
            w.monitor.close(linger=0)
            w.monitor = None
        if w.sock is not None:
            self.poller.unregister(w.sock)
            self.by_sock.pop(w.sock, None)
            w.sock.close(linger=0)
            w.sock = None

    def _connect(self, w: _SimWorker) -> None:
        self._close(w)
        sock = self.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.IDENTITY, w.worker_id.encode() + b"-" + uuid.uuid4().hex[:6].encode())
        zmq_io.set_zmtp_heartbeat(sock, self.interval_s, self.interval_s * self.liveness,
                                  config.get("RECONNECT_MAX_INTERVAL_S"))  # fmt: skip
        w.monitor = sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED)
        self.by_monitor[w.monitor] = w
        self.monitors.register(w.monitor, zmq.POLLIN)
        sock.connect(f"tcp://{self.address}")
        w.sock = sock
        self.by_sock[sock] = w
        self.poller.register(sock, zmq.POLLIN)
        self._register(w)

    def _on_events(self, w: _SimWorker) -> None:
        """Its connection is back (after a master restart or a drop): registers again at once, as a real worker."""
        for event, _ in zmq_io.monitor_events(w.monitor):
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                if w.connected:
                    self.counts["reconnects"] += 1
                    self._register(w)
                w.connected = True
            elif event == zmq.EVENT_DISCONNECTED:
                self.counts["disconnects"] += 1

    def _send(self, w: _SimWorker, msg_type: MsgType, body: object) -> None:
        try:
            zmq_io.send(w.sock, self.signer, msg_type, 0, body, flags=zmq.NOBLOCK)
            self.counts["sent"] += 1
        except zmq.Again:
            self.counts["send_again"] += 1

    def _register(self, w: _SimWorker) -> None:
        w.registrations += 1
        busy = [{**job, "created_at": job.get("created_at", time.time()), "gpus": []} for job in w.busy.values()]
        self._send(w, MsgType.WORKER_REGISTER, {
            "worker_id": w.worker_id, "host": "sim-" + w.worker_id, "pid": self.pid, "cpus_total": w.cpus, "gpus": [],
            "vacant_jobs": list(w.vacant.values()), "busy_jobs": busy, "python": list(sys.version_info[:2]),
            "version": __version__, "heartbeat_window_s": self.interval_s * self.liveness,
            "metrics_interval_s": config.get("METRICS_INTERVAL_S"), "liveness": "zmtp", **_METRICS,
        })  # fmt: skip

    def _handle(self, w: _SimWorker, msg: protocol.Message) -> None:
        if msg.type is MsgType.REPLY:
            self.counts["replies"] += 1
        elif msg.type is MsgType.REREGISTER:
            self.counts["reregister"] += 1
            self._register(w)
        elif msg.type is MsgType.ASSIGN_JOB:
            body = msg.body()
            job = w.vacant.pop(body["job_id"], None)
            if job is None:
                self._send(
                    w,
                    MsgType.JOB_ENDED,
                    {
                        "worker_id": w.worker_id,
                        "job_id": body["job_id"],
                        "actor_id": body["actor_id"],
                        "never_assigned": True,
                        "cause": "the job had ended while idle, before it was assigned",
                    },
                )
                return
            job.update(actor_id=body["actor_id"], client_id=body["client_id"], class_name=body.get("class_name", ""),
                       created_at=time.time())  # fmt: skip
            w.busy[body["actor_id"]] = job
            self.counts["assigned"] += 1
        elif msg.type is MsgType.KILL_JOB:
            body = msg.body()
            for actor_id, job in list(w.busy.items()):
                if job["job_id"] == body["job_id"]:
                    del w.busy[actor_id]
                    self._send(
                        w,
                        MsgType.JOB_ENDED,
                        {
                            "worker_id": w.worker_id,
                            "job_id": job["job_id"],
                            "actor_id": actor_id,
                            "cause": body.get("cause", "killed"),
                        },
                    )
                    new = self._new_job(w)
                    self._send(w, MsgType.JOB_READY, {"worker_id": w.worker_id, **new})
                    self.counts["killed"] += 1
        elif msg.type is MsgType.MASTER_STOPPED:
            w.dead = True
        elif msg.type is MsgType.ERROR:  # a refused registration
            self.counts["refused"] += 1

    def _command(self, cmd: tuple) -> object:
        name = cmd[0]
        if name == "stats":
            alive = [w for w in self.workers if not w.dead]
            return {"workers": len(alive), "busy": sum(len(w.busy) for w in alive),
                    "vacant": sum(len(w.vacant) for w in alive),
                    "registrations": sum(w.registrations for w in alive), **self.counts}  # fmt: skip
        if name == "kill":  # the workers (and, with them, their jobs) vanish without a word, as with kill -9
            alive = [w for w in self.workers if not w.dead]
            victims = alive[: cmd[1]] if isinstance(cmd[1], int) else [w for w in alive if w.worker_id in cmd[1]]
            for w in victims:
                w.dead = True
                self._close(w)
            return {"killed": [w.worker_id for w in victims], "actors": [a for w in victims for a in w.busy]}
        if name == "reset_counts":
            self.counts.clear()
            return None
        raise ValueError(f"unknown command {name!r}")

    def run(self) -> None:
        now = time.monotonic()
        every_s = config.get("METRICS_INTERVAL_S")  # metrics messages only: the ZMTP heartbeats are libzmq's
        for i, w in enumerate(self.workers):
            for _ in range(w.cpus):
                self._new_job(w)
            w.next_heartbeat = now + every_s * (i + 1) / len(self.workers)  # spread, as workers started apart
            self._connect(w)
        # workers send their metrics in a fixed rotation: each tick sends those due, the earliest first
        order = collections.deque(sorted(self.workers, key=lambda w: w.next_heartbeat))
        self.conn.send(("ready", len(self.workers)))
        running = True
        ticks = 0
        while running:
            now = time.monotonic()
            while order and order[0].next_heartbeat <= now:
                w = order.popleft()
                if w.dead:
                    continue
                w.next_heartbeat = max(w.next_heartbeat + every_s, now)
                order.append(w)
                self._send(w, MsgType.WORKER_HEARTBEAT, {"worker_id": w.worker_id, **_METRICS})
            # one poll of every socket per tick, then sleep: a zmq poll of 500 sockets costs about half a millisecond,
            # and polling at each message's arrival took 80 % of a core per 500 workers, starving the master measured
            ticks += 1
            if ticks % MONITOR_TICKS == 0:
                for mon, _ in self.monitors.poll(0):
                    w = self.by_monitor.get(mon)
                    if w is not None and not w.dead:
                        self._on_events(w)
            for sock, _ in self.poller.poll(0):
                w = self.by_sock.get(sock)
                while w is not None and not w.dead:
                    try:
                        msg = zmq_io.recv(sock, self.signer, flags=zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    if msg is not None:
                        self._handle(w, msg)
            while self.conn.poll():
                cmd = self.conn.recv()
                if cmd[0] == "stop":
                    running = False
                    break
                try:
                    self.conn.send(("ok", self._command(cmd)))
                except Exception as exc:  # reported to the driver, which raises it
                    self.conn.send(("error", repr(exc)))
            time.sleep(max(0.0, now + TICK_S - time.monotonic()))
        for w in self.workers:
            self._close(w)
        self.ctx.term()


class _ClientLoop:
    """The body of a ``ClientGroup`` process (see the module docstring)."""

    def __init__(self, address: str, token: str, n_clients: int, conn: Any, seed: int) -> None:
        self.address = address
        self.signer = protocol.Signer(token)
        self.ctx = _context()
        self.conn = conn
        self.ids = [f"c-sim{seed:03d}-{i:04d}-{uuid.uuid4().hex[:4]}" for i in range(n_clients)]
        self.socks = []
        self.next_req = 1
        self.pending: dict[int, tuple[int, float, str]] = {}  # req id -> (client index, sent at, kind)
        self.actors: list[list[str]] = [[] for _ in range(n_clients)]
        self.poller = zmq.Poller()
        self.sock_index: dict[zmq.Socket, int] = {}

    def _send(self, i: int, msg_type: MsgType, body: object, kind: str) -> int:
        rid = self.next_req
        self.next_req += 1
        zmq_io.send(self.socks[i], self.signer, msg_type, rid, body)
        self.pending[rid] = (i, time.perf_counter(), kind)
        return rid

    def _registration(self, i: int) -> dict:
        return {
            "client_id": self.ids[i],
            "host": "sim-client",
            "pid": os.getpid(),
            "script": "sim.py",
            "started_at": time.time(),
            "python": list(sys.version_info[:2]),
            "actors": list(self.actors[i]),
        }

    def _drain(self, timeout_ms: int, on_reply) -> None:
        for sock, _ in self.poller.poll(timeout_ms):
            i = self.sock_index[sock]
            while True:
                try:
                    msg = zmq_io.recv(sock, self.signer, flags=zmq.NOBLOCK)
                except zmq.Again:
                    break
                if msg is None:
                    continue
                entry = self.pending.pop(msg.req_id, None)
                if entry is None:
                    continue
                if msg.type is MsgType.REREGISTER:
                    self._send(i, MsgType.CLIENT_REGISTER, self._registration(i), "register")
                    if entry[2] == "acquire":  # asked again once registered, as client/acquire.py does
                        self.retry.append(i)
                    continue
                on_reply(entry, msg, time.perf_counter())

    def _heartbeats(self, now: float) -> None:
        if now >= self.next_heartbeat:
            self.next_heartbeat = now + config.get("CLIENT_HEARTBEAT_INTERVAL_S")
            for i, cid in enumerate(self.ids):
                self._send(i, MsgType.CLIENT_HEARTBEAT, {"client_id": cid}, "heartbeat")

    def acquire(self, per_client: int, rate: float | None, in_flight: int, timeout_s: float) -> dict:
        """Asks for ``per_client`` actors on every client. ``rate`` None: closed loop, ``in_flight`` requests
        outstanding per client (the most the master can grant); else an open loop at ``rate`` requests per
        second over all clients (latency at that load). Returns latencies (s) and counts."""
        latencies: list[float] = []
        refused = collections.Counter()
        wanted = [per_client] * len(self.ids)
        outstanding = [0] * len(self.ids)
        self.retry: list[int] = []

        def ask(i: int) -> None:
            wanted[i] -= 1
            outstanding[i] += 1
            self._send(
                i,
                MsgType.ACQUIRE_JOB,
                {"client_id": self.ids[i], "class_name": "SimActor", "max_memory_mb": None, "n_gpu": 0},
                "acquire",
            )

        def on_reply(entry, msg, t) -> None:
            i, sent, kind = entry
            if kind != "acquire":
                return
            outstanding[i] -= 1
            if msg.type is MsgType.REPLY:
                latencies.append(t - sent)
                self.actors[i].append(msg.body()["actor_id"])
            else:
                refused[msg.type.name] += 1

        start = time.perf_counter()
        deadline = start + timeout_s
        total = per_client * len(self.ids)
        sent_total = 0
        while (sum(wanted) > 0 or sum(outstanding) > 0) and time.perf_counter() < deadline:
            now = time.perf_counter()
            for i in self.retry:
                outstanding[i] -= 1
                wanted[i] += 1
            self.retry.clear()
            if rate is None:
                for i in range(len(self.ids)):
                    while wanted[i] > 0 and outstanding[i] < in_flight:
                        ask(i)
            else:
                due = min(total, int((now - start) * rate) + 1)
                while sent_total < due:
                    i = sent_total % len(self.ids)
                    if wanted[i] > 0:
                        ask(i)
                    sent_total += 1
            self._heartbeats(time.monotonic())
            self._drain(
                1 if rate is None else max(0, min(5, int(((sent_total / rate) - (now - start)) * 1000))), on_reply
            )
        elapsed = time.perf_counter() - start
        return {
            "granted": len(latencies),
            "asked": total,
            "refused": dict(refused),
            "elapsed_s": elapsed,
            "latencies_s": latencies,
        }

    def run(self) -> None:
        for i in range(len(self.ids)):
            sock = self.ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(f"tcp://{self.address}")
            self.socks.append(sock)
            self.sock_index[sock] = i
            self.poller.register(sock, zmq.POLLIN)
            self._send(i, MsgType.CLIENT_REGISTER, self._registration(i), "register")
        self.next_heartbeat = time.monotonic() + config.get("CLIENT_HEARTBEAT_INTERVAL_S")
        self.retry = []
        self._drain_until_registered()
        self.conn.send(("ready", len(self.ids)))
        while True:
            if self.conn.poll(0):
                cmd = self.conn.recv()
                if cmd[0] == "stop":
                    break
                try:
                    if cmd[0] == "acquire":
                        result = self.acquire(*cmd[1:])
                    elif cmd[0] == "actors":
                        result = [a for lst in self.actors for a in lst]
                    else:
                        raise ValueError(f"unknown command {cmd[0]!r}")
                    self.conn.send(("ok", result))
                except Exception as exc:
                    self.conn.send(("error", repr(exc)))
            self._heartbeats(time.monotonic())
            self._drain(20, lambda *a: None)
        for sock in self.socks:
            sock.close(linger=0)
        self.ctx.term()

    def _drain_until_registered(self) -> None:
        deadline = time.monotonic() + 30.0
        while any(kind == "register" for _, _, kind in self.pending.values()) and time.monotonic() < deadline:
            self._drain(50, lambda *a: None)


def _worker_main(address, token, n_workers, cpus, conn, seed, env) -> None:
    os.environ.update(env)
    _WorkerLoop(address, token, n_workers, cpus, conn, seed).run()


def _client_main(address, token, n_clients, conn, seed, env) -> None:
    os.environ.update(env)
    _ClientLoop(address, token, n_clients, conn, seed).run()


class _Group:
    """A process of simulated peers driven through a pipe."""

    def __init__(self, target, args: tuple, ready_timeout_s: float) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        env = {k: v for k, v in os.environ.items() if k.startswith("XPARL_")}
        self.process = ctx.Process(target=target, args=(*args[:-1], child, args[-1], env), daemon=True)
        self.process.start()
        if not self.conn.poll(ready_timeout_s):
            self.close()
            raise TimeoutError(f"the simulated group did not start within {ready_timeout_s:g} s")
        self.size = self.conn.recv()[1]

    def call(self, *cmd, timeout_s: float = 120.0) -> Any:
        """Sends a command and returns its result.

        Raises:
            TimeoutError: no answer within ``timeout_s``. RuntimeError: the command failed in the group.
        """
        self.conn.send(cmd)
        if not self.conn.poll(timeout_s):
            raise TimeoutError(f"the simulated group did not answer {cmd[0]!r} within {timeout_s:g} s")
        status, result = self.conn.recv()
        if status != "ok":
            raise RuntimeError(f"{cmd[0]!r} failed in the simulated group: {result}")
        return result

    def close(self) -> None:
        """Stops the group's process (by its own pid, through the pipe first)."""
        if self.process.is_alive():
            try:
                self.conn.send(("stop",))
            except OSError:
                pass
            self.process.join(10.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5.0)


class WorkerGroup(_Group):
    """``n_workers`` simulated workers of ``cpus`` CPUs each, in one process, registered with the master at
    ``address`` (``host:port``) with ``token``. ``call("stats")`` counts workers, busy / vacant jobs and messages;
    ``call("kill", k)`` makes ``k`` workers (or those of a list of worker ids) vanish without a word (their actors
    with them). Their liveness travels as ZMTP heartbeats, their metrics every ``METRICS_INTERVAL_S``, as a real
    worker's.

    Raises:
        TimeoutError: the process did not start within ``ready_timeout_s``.
    """

    def __init__(
        self, address: str, token: str, n_workers: int, cpus: int = 32, seed: int = 0, ready_timeout_s: float = 60.0
    ) -> None:
        super().__init__(_worker_main, (address, token, n_workers, cpus, seed), ready_timeout_s)


class ClientGroup(_Group):
    """``n_clients`` simulated clients in one process, registered with the master at ``address``.
    ``call("acquire", per_client, rate, in_flight, timeout_s)`` asks for actors (see ``_ClientLoop.acquire``);
    ``call("actors")`` lists the actor ids granted.

    Raises:
        TimeoutError: the process did not start within ``ready_timeout_s``.
    """

    def __init__(self, address: str, token: str, n_clients: int, seed: int = 0, ready_timeout_s: float = 60.0) -> None:
        super().__init__(_client_main, (address, token, n_clients, seed), ready_timeout_s)
