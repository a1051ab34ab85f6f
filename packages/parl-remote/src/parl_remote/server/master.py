"""The master process: the cluster's registry. It never carries user data.

It keeps the workers (their CPUs, idle job processes, metrics), the clients and their actors; grants
an idle job to a client that asks for one (``ACQUIRE_JOB``); records why actors end; answers
``STATUS`` (the cluster status snapshot, ``Master.status``, used by ``xparl status`` and the monitor) and forwards
``ACTOR_LOG`` reads to the worker that holds the log.

Liveness: workers keep their connection alive with ZMTP heartbeats handled in libzmq (``zmq_io.set_zmtp_heartbeat``:
PINGs every ``HEARTBEAT_INTERVAL_S`` carrying a TTL of ``HEARTBEAT_INTERVAL_S`` x ``HEARTBEAT_LIVENESS``), so an
idle cluster sends the master's Python no message per heartbeat; their metrics come as a message every
``METRICS_INTERVAL_S``. The master's libzmq drops the connection of a worker silent for the TTL (killed, stopped);
a cut link is ended by the kernel (keepalive probes and ``TCP_USER_TIMEOUT`` = the window on each worker's
connection: libzmq's TTL runs only from a PING, and any message cancels it); a worker silent for
``SILENCE_METRICS_INTERVALS`` metrics intervals with its connection up (stopped before its first PING, or hung) is
dropped too. A socket monitor reports a drop (``EVENT_DISCONNECTED``, naming the connection's file descriptor, which
the worker's registration message gave: ``SRCFD``; checked against the connection's remote address, as a reused fd
would carry another), and the worker gets no new
actors and its actors are listed ``unreachable``: a network cut shorter than ``LINK_GRACE_S`` costs no actor (the
worker reconnects and registers again with its actors, which are then ``alive``, one entry each); after
``LINK_GRACE_S`` without a sign of life (its last message or the TTL's last PING) they end, the cause naming the
lost link. Workers of the earlier protocol (a heartbeat message every interval, answered every third of their
window) are still served: they are dropped after their window without a message. After a restart on the same port,
the master knows nobody: its workers reconnect and register at once, and it answers messages of unknown peers with
``REREGISTER``.
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import signal
import socket
import sys
import time
from typing import Any

import zmq

from parl_remote import __version__, config
from parl_remote.server.counters import Counters
from parl_remote.server.events import ASKED_ENDS, EventLog
from parl_remote.server.registry import ClientInfo, WorkerInfo, status_metrics, status_snapshot, status_summary
from parl_remote.server.scheduling import Scheduling, VacancyIndex, assignment
from parl_remote.transport import zmq_io
from parl_remote.wire import protocol, serialization, shm
from parl_remote.wire.protocol import Message, MsgType

logger = logging.getLogger(__name__)

# A ZMTP worker silent (no message: its metrics come every METRICS_INTERVAL_S) for this many metrics intervals while
# its connection is up is dropped: its process is stopped or hung (libzmq's thread may still answer PINGs)
SILENCE_METRICS_INTERVALS = 3
# how long a drop reported on a file descriptor that still carries the worker's connection waits for the close
SUSPECT_RECHECK_S = 0.5
# the most CPUs (job slots) one worker may offer: a registration above it is refused (the largest machines have
# under 1,000 hardware threads)
MAX_WORKER_CPUS = 16_384


class Master(Scheduling):
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
        # dropped connections (a worker silent past its ZMTP heartbeat TTL, or closed), by file descriptor; read
        # without a limit on waiting events (when every worker goes at once, none may be lost)
        monitor_address = f"inproc://xparl-master-monitor-{id(self):x}"
        self.sock.monitor(monitor_address, zmq.EVENT_DISCONNECTED)
        self.monitor = self.ctx.socket(zmq.PAIR)
        self.monitor.setsockopt(zmq.RCVHWM, 0)
        self.monitor.setsockopt(zmq.LINGER, 0)
        self.monitor.connect(monitor_address)
        self.host = host
        self.monitor_port = monitor_port
        self.gpu_cluster = gpu_cluster
        self.started_at = time.time()
        self.workers: dict[str, WorkerInfo] = {}
        self.worker_by_identity: dict[bytes, WorkerInfo] = {}  # a heartbeat is known by its routing identity alone
        self.worker_by_fd: dict[int, WorkerInfo] = {}  # the file descriptor of each worker's connection (SRCFD)
        self.polled: dict[str, WorkerInfo] = {}  # workers of the earlier protocol (heartbeat messages): expired by age
        self.unreachable: dict[str, WorkerInfo] = {}  # silent workers whose actors wait out LINK_GRACE_S
        # workers whose connection's fd was reported dropped while it still reached them: checked again shortly
        # (the report of an earlier connection on that fd, or a close still under way), worker id -> since
        self.suspects: dict[str, float] = {}
        self.next_silence_check = 0.0  # time.monotonic() of the next check of ZMTP workers' silence (``_expire``)
        self.clients: dict[str, ClientInfo] = {}
        self.actors: dict[str, dict] = {}
        self.dead_actors: collections.OrderedDict[str, dict] = collections.OrderedDict()
        self.pending_logs: dict[int, tuple[bytes, int]] = {}  # forwarded req id -> (requester, its req id)
        self.next_forward_id = 1
        self.next_shm_sweep = 0.0  # time.monotonic() of the next sweep of dead processes' /dev/shm files
        self.worker_lost_at = -1e9  # time.monotonic() when a worker was last dropped (sweeps follow it closely)
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
        # the reply to a heartbeat (request id 0, no body) is always the same message: encoded and signed once
        self._heartbeat_ack = protocol.encode(self.signer, MsgType.REPLY, 0, serialization.dumps(None))
        self._debug = logger.isEnabledFor(logging.DEBUG)
        # a worker that hears nothing from the master for HEARTBEAT_INTERVAL_S x HEARTBEAT_LIVENESS (its heartbeat
        # window, sent in its registration) reconnects: three acknowledgements per window (with the defaults, every
        # second heartbeat); this default serves workers that do not send theirs
        self.ack_interval_s = 0.3 * config.get("HEARTBEAT_INTERVAL_S") * config.get("HEARTBEAT_LIVENESS")
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
        info = WorkerInfo(wid, self.sender, body["host"], body["pid"], body["cpus_total"])
        info.metrics = {k: body[k] for k in ("memory_total_mb", "memory_used_mb", "load_avg")}
        info.gpus = [str(g) for g in body.get("gpus", [])]
        info.gpu_only = bool(body.get("gpu_only")) and bool(info.gpus)
        info.zmtp = body.get("liveness") == "zmtp"
        every_s = body.get("metrics_interval_s")  # (its own setting, which may differ from the master's)
        info.metrics_interval_s = float(every_s) if isinstance(every_s, (int, float)) and 0 < every_s < 1e6 else 0.0
        window = body.get("heartbeat_window_s")
        info.ack_interval_s = (0.3 * window) if isinstance(window, (int, float)) and window > 0 else self.ack_interval_s
        # jobs granted to an actor whose ASSIGN_JOB this worker never heard (it reconnected meanwhile): sent again
        granted = {self.actors[a]["job_id"]: a for a in (old.busy if old else ()) if a in self.actors}
        for job in body.get("vacant_jobs", []):
            actor_id = granted.get(job["job_id"])
            if actor_id is not None and self.actors[actor_id]["worker_id"] == wid:
                info.busy.add(actor_id)
                if self.actors[actor_id]["gpus"]:
                    info.gpus_used[actor_id] = list(self.actors[actor_id]["gpus"])
                self._send(self.sender, MsgType.ASSIGN_JOB, assignment(self.actors[actor_id]))
                continue
            info.vacant[job["job_id"]] = job
        for job in body.get("busy_jobs", []):
            ended = self.dead_actors.get(job["actor_id"])
            if ended is not None:  # ended while the worker was unreachable (past the grace): its client was told
                logger.info("worker %s rejoined with the job of ended actor %s; killing it", wid, job["actor_id"])
                self._send(self.sender, MsgType.KILL_JOB, {"job_id": job["job_id"], "cause": ended["death_cause"]})
                continue
            info.busy.add(job["actor_id"])
            if job.get("gpus"):
                info.gpus_used[job["actor_id"]] = list(job["gpus"])
            actor = self.actors.get(job["actor_id"])
            if actor is None:  # a restarted master learns the actor from its worker
                actor = self._new_actor(job["actor_id"], job.get("class_name", ""), job["client_id"], info, job)
                actor["created_at"] = job.get("created_at", time.time())
            actor.update(state="alive", worker_id=wid, host=info.host)  # back from "unreachable"
            client = self.clients.get(job["client_id"])
            if client is not None:
                client.actors.add(job["actor_id"])
        self.workers[wid] = info
        if old is not None:
            self.worker_by_identity.pop(old.identity, None)
            if self.worker_by_fd.get(old.fd) is old:
                del self.worker_by_fd[old.fd]
        self.worker_by_identity[info.identity] = info
        info.fd = self.sender_fd
        self.suspects.pop(wid, None)
        if info.fd >= 0:  # (a worker of either protocol: a closed connection is seen at once)
            prev = self.worker_by_fd.get(info.fd)
            if prev is not None and prev.worker_id != wid and self.workers.get(prev.worker_id) is prev:
                self._lose_connection(prev)  # its connection had this fd: it closed, its drop not yet reported
            self.worker_by_fd[info.fd] = info
            info.peer = _peer_of(info.fd)
            if info.zmtp:
                _keepalive(info.fd)
        if info.zmtp and info.fd >= 0:
            self.polled.pop(wid, None)
        else:  # heartbeat messages, or no file descriptor to learn of a drop by: expired by its silence
            self.polled[wid] = info
        self._changed(info)
        logger.info(
            "worker %s %s (%s, %d CPUs, GPUs %s)",
            wid,
            "re-registered" if old else "joined",
            info.host,
            info.cpus_total,
            ",".join(info.gpus) or "none",
        )
        self.counters.workers_joined += 1
        self._event("worker_joined", worker_id=wid, host=info.host, pid=info.pid, cpus=info.cpus_total,
                    gpus=info.gpus, rejoined=old is not None or bool(body.get("busy_jobs")), actors=sorted(info.busy))
        self._reply(msg, {"master_pid": os.getpid(), "liveness": "zmtp"})  # (a worker sends heartbeat messages
        # to a master whose answer lacks it)

    def _known(self, msg: Message, info: Any) -> bool:
        """True when a worker's or client's record exists (it was seen now); otherwise tells the sender to register
        again."""
        if info is None:
            self._reply(msg, None, MsgType.REREGISTER)
            return False
        info.last_seen = time.monotonic()
        return True

    def on_worker_heartbeat(self, msg: Message) -> None:
        """A worker's metrics (every ``METRICS_INTERVAL_S``; its liveness travels as ZMTP heartbeats, which never
        reach this loop). A worker of the earlier protocol sends one every heartbeat interval (1,000 workers: 2,000 a
        second) and needs an answer: it is found by its routing identity, its metrics are kept unread until a
        status needs them, and it is answered (with a message signed once) only every third of its liveness window,
        which is all its master-loss detection needs."""
        info = self.worker_by_identity.get(self.sender)
        if not self._known(msg, info):
            return
        info.metrics_payload = msg.payload
        if msg.req_id:
            self._reply(msg, None)
        elif not info.zmtp and info.last_seen - info.last_ack >= info.ack_interval_s:
            info.last_ack = info.last_seen
            try:
                zmq_io.send_frames(self.sock, self._heartbeat_ack, self.sender, zmq.NOBLOCK)
            except zmq.Again:
                pass

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

    def _new_actor(self, actor_id: str, class_name: str, client_id: str, worker: WorkerInfo, job: dict) -> dict:
        actor = {
            "id": actor_id,
            "class_name": class_name,
            "client_id": client_id,
            "worker_id": worker.worker_id,
            "host": worker.host,
            "pid": job.get("pid"),
            "state": "alive",
            "created_at": time.time(),
            "ended_at": None,
            "death_cause": None,
            "last_error": None,
            "job_id": job["job_id"],
            "gpus": list(job.get("gpus") or ()),
            "max_memory_mb": job.get("max_memory_mb"),
        }
        self.actors[actor_id] = actor
        return actor

    def _end_actor(self, actor_id: str, cause: str) -> None:
        actor = self.actors.pop(actor_id, None)
        if actor is None:
            return
        actor.update(state="dead", ended_at=time.time(), death_cause=cause)
        kind = self.counters.died(cause)
        self._event("actor_ended" if kind in ASKED_ENDS else "actor_died", actor_id=actor_id,
                    class_name=actor["class_name"], client_id=actor["client_id"], worker_id=actor["worker_id"],
                    cause=cause, cause_kind=kind)
        self.dead_actors[actor_id] = actor
        while len(self.dead_actors) > config.get("DEAD_ACTORS_KEPT"):
            self.dead_actors.popitem(last=False)
        client = self.clients.get(actor["client_id"])
        if client is not None:
            client.actors.discard(actor_id)
        worker = self.workers.get(actor["worker_id"])
        if worker is not None:
            worker.busy.discard(actor_id)
            worker.gpus_used.pop(actor_id, None)
        self._changed(worker)

    # ----------------------------------------------------------------------------------- clients
    def on_client_register(self, msg: Message) -> None:
        body = msg.body()
        if tuple(body.get("python", ())) != tuple(sys.version_info[:2]):
            text = (
                f"the cluster runs Python {sys.version_info[0]}.{sys.version_info[1]} and this client Python "
                f"{'.'.join(map(str, body.get('python', ())))}; classes and functions only travel between equal "
                "Python versions: use the same Python on both sides"
            )
            self._reply(msg, {"kind": "version", "message": text}, MsgType.ERROR)
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

    def _drop_client(self, client_id: str, cause: str) -> None:
        info = self.clients.pop(client_id, None)
        if info is None:
            return
        self._event("client_gone", client_id=client_id, reason=cause)
        self._changed()
        for actor_id in list(info.actors):
            actor = self.actors.get(actor_id)
            worker = self.workers.get(actor["worker_id"]) if actor else None
            if worker is not None:
                self._send(worker.identity, MsgType.KILL_JOB, {"job_id": actor["job_id"], "cause": cause})

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
            self._reply(
                msg, {"error": f"unknown actor id {body['actor_id']!r}", "kind": "unknown_actor"}, MsgType.ERROR
            )
            return
        worker = self.workers.get(actor["worker_id"])
        if worker is None:
            self._reply(
                msg, {"error": f"the worker of actor {body['actor_id']} is gone", "kind": "gone"}, MsgType.ERROR
            )
            return
        forward_id = self.next_forward_id
        self.next_forward_id += 1
        self.pending_logs[forward_id] = (self.sender, msg.req_id)
        self._send(worker.identity, MsgType.READ_LOG, body, req_id=forward_id)

    # -------------------------------------------------------------------------------------- loop
    def _lose(self, info: WorkerInfo, now: float, reason: str) -> None:
        """Lists a worker unreachable: no new actors; its actors ``unreachable`` until it registers again or
        ``LINK_GRACE_S`` passes. ``reason``: why, for the event log."""
        self.counters.heartbeats_missed["worker"] += 1
        self._event("worker_unreachable", worker_id=info.worker_id, host=info.host, reason=reason,
                    actors=sorted(info.busy))
        del self.workers[info.worker_id]
        self.worker_by_identity.pop(info.identity, None)
        self.polled.pop(info.worker_id, None)
        self.suspects.pop(info.worker_id, None)
        if self.worker_by_fd.get(info.fd) is info:
            del self.worker_by_fd[info.fd]
        self.unreachable[info.worker_id] = info
        self._changed(gone=info.worker_id)
        self.next_shm_sweep, self.worker_lost_at = 0.0, now  # if its jobs died with it: sweep their files
        for actor_id in info.busy:
            if actor_id in self.actors:
                self.actors[actor_id]["state"] = "unreachable"

    def _read_monitor(self) -> None:
        """Handles the socket monitor's waiting events: a dropped connection of a worker (its ZMTP heartbeats stopped
        for their TTL, it closed, or the kernel's keepalive probes or user timeout ended it) lists the worker
        unreachable. A report naming a file descriptor that still carries the worker's connection (the same remote
        address: an earlier connection's drop reported late, after the fd was reused by this one, or a close still
        under way) is checked again by ``_expire`` before anything is done."""
        for event, fd in zmq_io.monitor_events(self.monitor):
            if event != zmq.EVENT_DISCONNECTED:
                continue
            info = self.worker_by_fd.get(fd)
            if info is None or self.workers.get(info.worker_id) is not info:
                continue
            if info.peer is not None and _peer_of(fd) == info.peer:
                self.suspects.setdefault(info.worker_id, time.monotonic())
                continue
            self._lose_connection(info)

    def _lose_connection(self, info: WorkerInfo) -> None:
        now = time.monotonic()
        window_s = config.get("HEARTBEAT_INTERVAL_S") * config.get("HEARTBEAT_LIVENESS")
        logger.warning("worker %s unreachable (its connection dropped: closed, or no heartbeat for %g s); its %d "
                       "actor(s) wait for it", info.worker_id, window_s, len(info.busy))  # fmt: skip
        # LINK_GRACE_S runs from its last sign of life: a drop by the TTL comes a window after its last PING
        info.last_seen = max(info.last_seen, now - window_s)
        self._lose(info, now, "its connection dropped (closed, or no heartbeat for the liveness window)")

    def _check_connections(self, now: float) -> None:
        """The checks of ZMTP workers' liveness that libzmq does not make: a drop reported on an fd that still
        reached the worker (``suspects``: lost if the fd now carries another connection or none; a report of an
        earlier connection when it still carries this one after ``SUSPECT_RECHECK_S``), and, every second, a worker
        whose connection is up but that sent no message (its metrics come every ``METRICS_INTERVAL_S``, its own
        setting as its registration said) for ``SILENCE_METRICS_INTERVALS`` of them: its process is stopped or hung
        while the kernel keeps its TCP
        connection (libzmq's TTL runs only from a PING, so a worker stopped before its first PING, or right after
        a message of its own, is never dropped by it)."""
        for wid, since in list(self.suspects.items()):
            info = self.workers.get(wid)
            if info is None:
                del self.suspects[wid]
            elif _peer_of(info.fd) != info.peer:
                del self.suspects[wid]
                self._lose_connection(info)
            elif now - since > SUSPECT_RECHECK_S:
                del self.suspects[wid]  # the fd still carries its connection: the report was an earlier one's
        if now < self.next_silence_check:
            return
        self.next_silence_check = now + 1.0
        own_s = config.get("METRICS_INTERVAL_S")
        for wid, info in list(self.workers.items()):
            silence_s = SILENCE_METRICS_INTERVALS * (info.metrics_interval_s or own_s)
            if info.zmtp and wid not in self.polled and now - info.last_seen > silence_s:
                logger.warning("worker %s unreachable (no message for %.0f s, %d x METRICS_INTERVAL_S, while its "
                               "connection is up: its process is stopped or hung); its %d actor(s) wait for it",
                               wid, now - info.last_seen, SILENCE_METRICS_INTERVALS, len(info.busy))  # fmt: skip
                self._lose(info, now, f"no message for {now - info.last_seen:.0f} s while its connection is up")

    def _expire(self) -> None:
        now = time.monotonic()
        worker_timeout = config.get("HEARTBEAT_INTERVAL_S") * config.get("HEARTBEAT_LIVENESS")
        for wid, info in list(self.polled.items()):  # workers of the earlier protocol: silent for their window
            if now - info.last_seen > worker_timeout:
                logger.warning("worker %s unreachable (no heartbeat for %.1f s); its %d actor(s) wait for it",
                               wid, now - info.last_seen, len(info.busy))  # fmt: skip
                self._lose(info, now, f"no heartbeat for {now - info.last_seen:.1f} s")
        self._check_connections(now)
        grace_s = config.link_grace_s()
        for wid, info in list(self.unreachable.items()):
            if now - info.last_seen > grace_s:
                logger.warning("worker %s lost (unreachable for %.1f s)", wid, now - info.last_seen)
                del self.unreachable[wid]
                self._changed()
                cause = (f"the network link to its worker {wid} on {info.host} was lost: no heartbeat for more than "
                         f"LINK_GRACE_S={grace_s:g} s (or that host or worker ended)")  # fmt: skip
                self.counters.workers_lost += 1
                self._event("worker_lost", worker_id=wid, host=info.host,
                            reason=f"unreachable for more than LINK_GRACE_S={grace_s:g} s")
                for actor_id in list(info.busy):
                    self._end_actor(actor_id, cause)
        client_timeout = max(config.get("CLIENT_TIMEOUT_S"), config.link_grace_s())  # a cut client keeps its actors
        for cid, info in list(self.clients.items()):
            if now - info.last_seen > client_timeout:
                logger.warning("client %s lost (no heartbeat for %.1f s)", cid, now - info.last_seen)
                self.counters.heartbeats_missed["client"] += 1
                self._drop_client(cid, f"its client {cid} was lost (no heartbeat for {client_timeout:.0f} s)")
        if len(self.pending_logs) > 1000:
            self.pending_logs.clear()
        if now >= self.next_shm_sweep:  # files of a killed worker's jobs, when no worker of this host sweeps
            # every second for 10 s after a worker was lost (its jobs may take a moment to die and be reaped)
            soon = now - self.worker_lost_at < 10.0
            self.next_shm_sweep = now + (1.0 if soon else config.get("SHM_SWEEP_S"))
            removed = shm.sweep()
            if removed:
                logger.info("removed %d /dev/shm files of ended processes", removed)

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
            if time.monotonic() >= next_expire:
                next_expire = time.monotonic() + poll_ms / 1000
                self._expire()
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


def registration_problem(body: Any) -> str | None:
    """What is wrong with a ``WORKER_REGISTER`` body (signed, so from a token holder, but maybe malformed or
    made up), or None: the fields the master reads, their types, ``MAX_WORKER_CPUS``, and the Python version (a
    pickled message must mean the same on both sides)."""
    if not isinstance(body, dict):
        return f"its body is a {type(body).__name__}, not a dict"
    for key, kind in (("worker_id", str), ("host", str), ("pid", int), ("cpus_total", int), ("vacant_jobs", list),
                      ("busy_jobs", list)):  # fmt: skip
        value = body.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"{key} must be a {kind.__name__}, not {type(value).__name__}"
    if not 0 < len(body["worker_id"]) <= 128:
        return "worker_id must have 1-128 characters"
    cpus = body["cpus_total"]
    if not 1 <= cpus <= MAX_WORKER_CPUS:
        return f"a worker offers 1-{MAX_WORKER_CPUS:,} CPUs (job slots), not {cpus:,}"
    jobs = body["vacant_jobs"] + body["busy_jobs"]
    if len(jobs) > cpus:
        return f"{len(jobs)} jobs listed for {cpus} CPUs"
    for job in body["vacant_jobs"]:
        if not (isinstance(job, dict) and isinstance(job.get("job_id"), str) and isinstance(job.get("address"), str)):
            return "each vacant job must be a dict with a job_id and an address (str)"
    busy_keys = ("job_id", "actor_id", "client_id")
    for job in body["busy_jobs"]:
        if not (isinstance(job, dict) and all(isinstance(job.get(k), str) for k in busy_keys)):
            return "each busy job must be a dict with a job_id, an actor_id and a client_id (str)"
    gpus = body.get("gpus", [])
    if not isinstance(gpus, list) or len(gpus) > MAX_WORKER_CPUS:
        return f"gpus must be a list of at most {MAX_WORKER_CPUS:,} GPU ids"
    if not all(isinstance(body.get(k), (int, float)) for k in ("memory_total_mb", "memory_used_mb")):
        return "memory_total_mb and memory_used_mb must be numbers"
    if "load_avg" not in body:
        return "load_avg is missing"
    if tuple(body.get("python", ())) != tuple(sys.version_info[:2]):
        return f"the worker runs Python {body.get('python')}, the master {sys.version_info[:2]}"
    return None


def _keepalive(fd: int) -> None:
    """Kernel TCP keepalive probes on a worker's connection (1 s idle, 1 s apart) and ``TCP_USER_TIMEOUT`` = the
    heartbeat window (instead of the sockets' ``LINK_GRACE_S``, ``config.apply_tcp_options``): a cut link is ended
    after about a window, whether or not data waits unacknowledged (which stops keepalive probes). libzmq's TTL alone
    does not end it when the worker's last frame before the cut was a message, not a PING (any message cancels the
    TTL's timer; only a PING starts it). On that connection only: a client's survives a cut up to ``LINK_GRACE_S``."""
    window_s = config.get("HEARTBEAT_INTERVAL_S") * config.get("HEARTBEAT_LIVENESS")
    try:
        with _socket_of(fd) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, max(1, round(window_s)))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, max(1, int(window_s * 1000)))
    except (OSError, AttributeError) as exc:  # (not a TCP socket, or a system without these options)
        logger.debug("no keepalive on fd %d: %s", fd, exc)


def _peer_of(fd: int) -> tuple | None:
    """The remote address of the connection on file descriptor ``fd`` (``getpeername``), or None when ``fd`` is closed
    or carries no connected socket."""
    if fd < 0:
        return None
    try:
        with _socket_of(fd) as sock:
            return tuple(sock.getpeername())
    except OSError:
        return None


def _socket_of(fd: int) -> socket.socket:
    """A Python socket on a duplicate of zmq's descriptor ``fd`` (its own family; closing it leaves zmq's open).

    Raises:
        OSError: ``fd`` is closed or not a socket.
    """
    return socket.socket(fileno=os.dup(fd))


def raise_fd_limit() -> tuple[int, int]:
    """Raises this process's soft limit of open files (``RLIMIT_NOFILE``) to its hard limit: the master holds one
    TCP connection per worker and per client, and many systems start processes at a soft limit of 1,024, which a
    cluster of 1,000 workers would exceed. Returns the ``(soft, hard)`` limits now in force."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:  # (e.g. a container that forbids it): keep going, say so
            logger.warning("cannot raise the open-file limit from %d to %d (%s): the master can hold about %d "
                           "workers and clients; raise `ulimit -n` before `xparl start`", soft, target, exc, soft - 64)
    return soft, hard


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
        import threading

        import psutil

        def watch() -> None:
            while master.running:
                if not psutil.pid_exists(args.parent_pid):
                    os.kill(os.getpid(), signal.SIGTERM)
                    return
                time.sleep(0.5)

        threading.Thread(target=watch, daemon=True, name="xparl-parent-watch").start()
    master.run()


if __name__ == "__main__":
    main()
