"""The master process: the cluster's registry. It never carries user data.

It keeps the workers (their CPUs, idle job processes, metrics), the clients and their actors; grants
an idle job to a client that asks for one (``ACQUIRE_JOB``); records why actors end; answers
``STATUS`` (the cluster status snapshot, ``Master.status``, used by ``xparl status`` and the monitor) and forwards
``ACTOR_LOG`` reads to the worker that holds the log.

Liveness (``liveness.py``): workers keep their connection alive with ZMTP heartbeats handled in libzmq, and the
master learns of a dropped one from a socket monitor; a worker silent for a few metrics intervals is dropped too; its
actors are listed ``unreachable`` and end after ``LINK_GRACE_S`` unless it registers again. Housekeeping
(``housekeeping.py``): ``/dev/shm`` sweeps, the file descriptors of worker connections, the open-file limit, the
parent watch. After a restart on the same port, the master knows nobody: its workers reconnect and register at once,
and it answers messages of unknown peers with ``REREGISTER``.
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import signal
import time

import zmq

from parl_remote import __version__, config
from parl_remote.server.counters import Counters
from parl_remote.server.events import EventLog
from parl_remote.server.housekeeping import ShmSweeps, exit_with_parent, raise_fd_limit
from parl_remote.server.liveness import Liveness
from parl_remote.server.registry import (
    ClientInfo,
    Records,
    WorkerInfo,
    client_version_problem,
    registration_problem,
    status_metrics,
    status_snapshot,
    status_summary,
)
from parl_remote.server.scheduling import Scheduling, VacancyIndex
from parl_remote.transport import zmq_io
from parl_remote.wire import protocol, serialization
from parl_remote.wire.protocol import Message, MsgType

logger = logging.getLogger(__name__)


class Master(Liveness, Records, Scheduling):
    """See the module docstring.

    Args:
        host: interface to bind (``127.0.0.1`` for a local cluster, ``0.0.0.0`` for all).
        port: TCP port; 0 picks a free one (see ``self.port``).
        token: the cluster token.
        monitor_port: stored for the monitor; reported in ``status()``.
        gpu_cluster: started by ``xparl start --gpu_cluster`` (reported in ``status()``: ``xparl connect --gpu``
            then adds a GPU-only worker, PARL's rule).
        events_file: where the cluster's event log goes (``server.events``: one JSON line per event, rotated by
            size); None writes none. A file that cannot be opened is reported in the master's log and the master
            runs without one.
    """

    def __init__(self, host: str, port: int, token: str, monitor_port: int | None = None,
                 gpu_cluster: bool = False, events_file: str | os.PathLike | None = None) -> None:
        self.signer = protocol.Signer(token)
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.ROUTER_HANDOVER, 1)
        # (no PINGs of the master's own: on a client's connection, which sends none, they ended it during a network
        # cut shorter than LINK_GRACE_S, test_network_cut.py; every window they also cost 2.4x its I/O thread)
        if port:
            self.sock.bind(f"tcp://{host}:{port}")
            self.port = port
        else:
            self.port = self.sock.bind_to_random_port(f"tcp://{host}")
        self.host = host
        self.monitor_port = monitor_port
        self.gpu_cluster = gpu_cluster
        self.started_at = time.time()
        self.workers: dict[str, WorkerInfo] = {}
        self.worker_by_identity: dict[bytes, WorkerInfo] = {}  # a heartbeat is known by its routing identity alone
        self._watch_drops()  # the socket monitor and the liveness records (liveness.py)
        self.clients: dict[str, ClientInfo] = {}
        self.actors: dict[str, dict] = {}
        self.dead_actors: collections.OrderedDict[str, dict] = collections.OrderedDict()
        self.pending_logs: dict[int, tuple[bytes, int]] = {}  # forwarded req id -> (requester, its req id)
        self.next_forward_id = 1
        self.shm_sweeps = ShmSweeps()
        self.running = True
        self.sender = b""  # the routing identity of the message being handled (what _reply answers)
        self.sender_fd = -1  # the file descriptor of its connection
        self.messages_received = 0  # every message read (status: an idle cluster adds none per heartbeat)
        self.refused_registrations = 0  # worker registrations answered with an ERROR (``registration_problem``)
        # grants, refusals, deaths by cause, heartbeats missed, grant latency: moved by events, never by a heartbeat
        self.counters = Counters()
        self.events = None
        if events_file:
            try:
                self.events = EventLog(events_file)
            except OSError as exc:  # a cluster runs without its event log rather than not at all
                logger.warning("no event log: cannot open %s (%s); check that folder's permissions and space",
                               events_file, exc)
        self.vacancy = VacancyIndex()  # workers with a vacant job (scheduling.py)
        self._capacity: dict | None = None  # capacity(), summed once per change
        self.generation = 0  # counts changes of workers, jobs, clients and actors (``_changed``)
        # STATUS replies by kind ("full", "metrics"): (generation, built at, payload)
        self._status_cache: dict[str, tuple[int, float, list]] = {}
        self._debug = logger.isEnabledFor(logging.DEBUG)
        self.handlers = {
            MsgType.WORKER_REGISTER: self.on_worker_register,
            MsgType.WORKER_HEARTBEAT: self.on_worker_heartbeat,
            MsgType.JOB_READY: self.on_job_ready,
            MsgType.JOB_ENDED: self.on_job_ended,
            MsgType.ACTOR_FAILED_CALL: self.on_actor_failed_call,
            MsgType.CLIENT_REGISTER: self.on_client_register,
            MsgType.CLIENT_HEARTBEAT: self.on_client_heartbeat,
            MsgType.CLIENT_BYE: self.on_client_bye,
            MsgType.ACQUIRE_JOB: self.on_acquire,
            MsgType.ACTOR_INFO: self.on_actor_info,
            MsgType.STATUS: self.on_status,
            MsgType.ACTOR_LOG: self.on_actor_log,
            MsgType.REPLY: self.on_worker_reply,
        }

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def _reply(self, msg: Message, body: object = None, msg_type: MsgType = MsgType.REPLY) -> None:
        zmq_io.send(self.sock, self.signer, msg_type, msg.req_id, body, identity=self.sender, flags=zmq.NOBLOCK)

    def _send(self, identity: bytes, msg_type: MsgType, body: object, req_id: int = 0) -> None:
        try:
            zmq_io.send(self.sock, self.signer, msg_type, req_id, body, identity=identity, flags=zmq.NOBLOCK)
        except zmq.ZMQError as exc:
            logger.warning("cannot send %s: %s", msg_type.name, exc)

    def _event(self, kind: str, **fields) -> None:
        """One line of the event log (``server.events``), when there is one."""
        if self.events is not None:
            self.events.write(kind, **fields)

    # ----------------------------------------------------------------------------------- workers
    def on_worker_register(self, msg: Message) -> None:
        # a dropped connection's file descriptor may be this one's now: its DISCONNECTED (queued before this
        # connection was accepted) is handled first, so that it cannot be taken for this connection's later
        self._read_monitor()
        body = msg.body()
        problem = registration_problem(body)
        live = self.workers.get(body["worker_id"]) if problem is None else None
        if live is not None and (live.host, live.pid) != (body["host"], body["pid"]):
            problem = (f"worker id {body['worker_id']} is registered already, by pid {live.pid} on {live.host}, "
                       f"which is connected: a worker id belongs to one process")  # fmt: skip
        if problem is not None:
            self.refused_registrations += 1
            self.counters.registrations_refused += 1
            self._event("worker_refused", reason=problem)
            if self.refused_registrations in (1, 10, 100, 1000) or self.refused_registrations % 10_000 == 0:
                logger.warning("refused %d worker registration(s) (the last: %s)", self.refused_registrations, problem)
            self._reply(msg, {"error": f"registration refused: {problem}"}, MsgType.ERROR)
            return
        wid = body["worker_id"]
        old = self.workers.get(wid) or self.unreachable.pop(wid, None)
        info = WorkerInfo.registered(body, self.sender)
        self._rejoin_jobs(info, old, body)  # registry.py
        self.workers[wid] = info
        if old is not None:
            self.worker_by_identity.pop(old.identity, None)
        self.worker_by_identity[info.identity] = info
        self._track_connection(info, old)
        self._changed(info)
        logger.info("worker %s %s (%s, %d CPUs, GPUs %s)", wid, "re-registered" if old else "joined", info.host,
                    info.cpus_total, ",".join(info.gpus) or "none")  # fmt: skip
        self.counters.workers_joined += 1
        self._event("worker_joined", worker_id=wid, host=info.host, pid=info.pid, cpus=info.cpus_total,
                    gpus=info.gpus, rejoined=old is not None or bool(body.get("busy_jobs")), actors=sorted(info.busy))
        # ("liveness": a worker of an earlier parl-remote sends heartbeat messages to a master whose answer lacks it)
        self._reply(msg, {"master_pid": os.getpid(), "liveness": "zmtp"})

    def on_worker_heartbeat(self, msg: Message) -> None:
        """A worker's metrics (every ``METRICS_INTERVAL_S``; its liveness travels as ZMTP heartbeats, which never
        reach this loop): the worker is found by its routing identity, and its metrics are kept unread until a
        status needs them. Answered only when it asks (a request id)."""
        info = self.worker_by_identity.get(self.sender)
        if not self._known(msg, info):
            return
        info.metrics_payload = msg.payload
        if msg.req_id:
            self._reply(msg, None)

    def on_job_ready(self, msg: Message) -> None:
        body = msg.body()
        info = self.workers.get(body["worker_id"])
        if not self._known(msg, info):
            return
        info.vacant[body["job_id"]] = {"job_id": body["job_id"], "address": body["address"], "pid": body["pid"]}
        self._changed(info)

    def on_job_ended(self, msg: Message) -> None:
        body = msg.body()
        info = self.workers.get(body["worker_id"])
        if info is not None:
            info.vacant.pop(body["job_id"], None)
            info.busy.discard(body.get("actor_id"))
            self._changed(info)
        if body.get("actor_id"):
            self._end_actor(body["actor_id"], body["cause"])
            if body.get("never_assigned") and body["actor_id"] in self.dead_actors:  # ACTOR_INFO tells the client
                self.dead_actors[body["actor_id"]]["never_assigned"] = True

    def on_actor_failed_call(self, msg: Message) -> None:
        body = msg.body()
        actor = self.actors.get(body.get("actor_id"))
        if actor is not None:
            actor["last_error"] = {k: body[k] for k in ("type", "message", "traceback", "time")}

    def on_worker_reply(self, msg: Message) -> None:
        target = self.pending_logs.pop(msg.req_id, None)
        if target is not None:
            identity, req_id = target
            self._send(identity, MsgType.REPLY, msg.body(), req_id=req_id)

    # ----------------------------------------------------------------------------------- clients
    def on_client_register(self, msg: Message) -> None:
        body = msg.body()
        problem = client_version_problem(body)
        if problem is not None:
            self._reply(msg, {"kind": "version", "message": problem}, MsgType.ERROR)
            return
        cid = body["client_id"]
        self._event("client_connected", client_id=cid, host=body["host"], pid=body["pid"], script=body["script"],
                    reconnected=cid in self.clients or bool(body.get("actors")))
        info = ClientInfo(cid, self.sender, body["host"], body["pid"], body["script"], body["started_at"])
        info.actors = {a for a in body.get("actors", []) if a in self.actors}
        self.clients[cid] = info
        self._changed()
        self._reply(msg, {"master_pid": os.getpid(), "version": __version__, "address": self.address,
                          "monitor_port": self.monitor_port})  # fmt: skip

    def on_client_heartbeat(self, msg: Message) -> None:
        body = msg.body()
        info = self.clients.get(body["client_id"])
        if not self._known(msg, info):
            return
        info.identity = self.sender if body.get("from_requests") else info.identity
        self._reply(msg, None)

    def on_client_bye(self, msg: Message) -> None:
        self._drop_client(msg.body()["client_id"], "its client disconnected")
        self._reply(msg, None)

    def on_actor_info(self, msg: Message) -> None:
        actor_id = msg.body()["actor_id"]
        self._reply(msg, self.actors.get(actor_id) or self.dead_actors.get(actor_id))

    # ------------------------------------------------------------------------------------ status
    def status(self) -> dict:
        """The cluster status snapshot read by ``ClusterClient.status`` (JSON-serialisable; the monitor reads
        its keys)."""
        return status_snapshot(self)

    def on_status(self, msg: Message) -> None:
        """``STATUS``: the snapshot (built at most once per change of the cluster, and reused for up to
        ``STATUS_CACHE_S`` seconds while only heartbeat metrics change), or with body ``{"summary": True}`` only
        its totals and counts (what ``xparl status`` prints; no list, whatever the cluster's size), or with body
        ``{"metrics": True}`` those and the workers list (what the monitor's ``/metrics`` reads; cached as the
        snapshot is)."""
        body = msg.body()
        if isinstance(body, dict) and body.get("summary"):
            self._reply(msg, status_summary(self))
            return
        kind = "metrics" if isinstance(body, dict) and body.get("metrics") else "full"
        now = time.monotonic()
        cached = self._status_cache.get(kind)
        if cached is None or cached[0] != self.generation or now - cached[1] > config.get("STATUS_CACHE_S"):
            snapshot = status_metrics(self) if kind == "metrics" else self.status()
            cached = self._status_cache[kind] = (self.generation, now, serialization.dumps(snapshot))
        zmq_io.send(self.sock, self.signer, MsgType.REPLY, msg.req_id, payload=cached[2], identity=self.sender,
                    flags=zmq.NOBLOCK)  # fmt: skip

    def on_actor_log(self, msg: Message) -> None:
        body = msg.body()
        actor = self.actors.get(body["actor_id"]) or self.dead_actors.get(body["actor_id"])
        if actor is None:
            self._reply(msg, {"error": f"unknown actor id {body['actor_id']!r}", "kind": "unknown_actor"},
                        MsgType.ERROR)  # fmt: skip
            return
        worker = self.workers.get(actor["worker_id"])
        if worker is None:
            self._reply(msg, {"error": f"the worker of actor {body['actor_id']} is gone", "kind": "gone"},
                        MsgType.ERROR)  # fmt: skip
            return
        forward_id = self.next_forward_id
        self.next_forward_id += 1
        self.pending_logs[forward_id] = (self.sender, msg.req_id)
        self._send(worker.identity, MsgType.READ_LOG, body, req_id=forward_id)

    # -------------------------------------------------------------------------------------- loop
    def run(self) -> None:
        """Serves until SIGTERM / SIGINT."""
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "running", False))
        if self.events is not None:
            self._event("master_started", address=self.address, restarted=self.events.had_events)
        poll_ms = int(config.get("HEARTBEAT_INTERVAL_S") * 1000 / 2)
        next_expire = time.monotonic()
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        poller.register(self.monitor, zmq.POLLIN)
        # (Tried for the idle CPU of 1,000 workers and measured no better: one persistent zmq.Poller with bursts
        # ended by ZMQ_EVENTS, and waiting 1-3 ms after a burst of heartbeats alone so that the next are read
        # together. The cost is per heartbeat, not per wakeup; the wait also cut grants/s by a fifth.)
        while self.running:
            try:
                ready = dict(poller.poll(poll_ms))
                if self.monitor in ready:
                    self._read_monitor()
                if self.sock in ready:
                    for _ in range(10000):  # a bounded burst, so that expiry runs under any load
                        if not self._handle_one():
                            break
            except zmq.ZMQError:
                if not self.running:
                    break
                raise
            now = time.monotonic()
            if now >= next_expire:
                next_expire = now + poll_ms / 1000
                self._expire(now)  # liveness.py
                if len(self.pending_logs) > 1000:
                    self.pending_logs.clear()
                self.shm_sweeps.run(now)  # files of a killed worker's jobs, when no worker of this host sweeps
        # a stop (xparl stop, SIGTERM), not a crash: the workers, on other machines too, exit as PARL documents
        # (a master killed otherwise sends nothing, so that its workers rejoin it when it is restarted)
        for worker in self.workers.values():
            self._send(worker.identity, MsgType.MASTER_STOPPED, {"address": self.address})
        self._event("master_stopped", address=self.address)
        if self.events is not None:
            self.events.close()
        self.sock.disable_monitor()
        self.monitor.close(linger=0)
        self.sock.close(linger=1000 if self.workers else 0)
        self.ctx.term()

    def _handle_one(self) -> bool:
        """Handles one waiting message; False when none was waiting."""
        fds: list = []
        try:
            received = zmq_io.recv_routed(self.sock, self.signer, flags=zmq.NOBLOCK, fd_out=fds)
        except zmq.Again:
            return False
        except protocol.Notice:
            return True
        self.messages_received += 1
        if received is None:
            return True
        self.sender, msg = received
        self.sender_fd = fds[0] if fds else -1
        if self._debug:  # xparl start --debug
            logger.debug("%s (request %d) from %r", msg.type.name, msg.req_id, self.sender)
        handler = self.handlers.get(msg.type)
        if handler is None:
            logger.warning("master: unexpected message %s", msg.type.name)
            return True
        try:
            handler(msg)
        except Exception:
            logger.exception("master: handler of %s failed", msg.type.name)
        return True


def main(argv: list[str] | None = None) -> None:
    """Entry point of the master process (started by ``xparl start`` or ``connect()``)."""
    parser = argparse.ArgumentParser(description="xparl master process (internal; use `xparl start`)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--monitor-port", type=int, default=None)
    parser.add_argument("--gpu-cluster", action="store_true", help="a GPU cluster (xparl start --gpu_cluster)")
    parser.add_argument("--parent-pid", type=int, default=None, help="exit when this process ends")
    parser.add_argument("--events-file", default=None, help="the cluster's event log (JSON lines, rotated by size)")
    args = parser.parse_args(argv)
    token = os.environ.pop("XPARL_TOKEN", "")
    log_format = "%(asctime)s master %(process)d %(levelname)s %(message)s"
    logging.basicConfig(level=config.log_level("INFO"), format=log_format)
    raise_fd_limit()
    master = Master(args.host, args.port, token, args.monitor_port, gpu_cluster=args.gpu_cluster,
                    events_file=args.events_file)
    print(f"XPARL_MASTER_PORT={master.port}", flush=True)
    if args.parent_pid:
        exit_with_parent(master, args.parent_pid)
    master.run()


if __name__ == "__main__":
    main()
