"""The master's records of workers and clients, the check of a worker's registration (``registration_problem``),
and the cluster status snapshot built from the records (what ``ClusterClient.status`` returns to ``xparl status``
and the monitor)."""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from parl_remote import __version__, config
from parl_remote.server.events import ASKED_ENDS
from parl_remote.server.scheduling import assignment
from parl_remote.wire import serialization
from parl_remote.wire.protocol import MsgType

logger = logging.getLogger(__name__)

# the most CPUs (job slots) one worker may offer: a registration above it is refused (the largest machines have
# under 1,000 hardware threads)
MAX_WORKER_CPUS = 16_384


@dataclass
class WorkerInfo:
    worker_id: str
    identity: bytes
    host: str
    pid: int
    cpus_total: int
    vacant: dict = field(default_factory=dict)  # job_id -> {address, pid}
    busy: set = field(default_factory=set)  # actor ids
    gpus: list = field(default_factory=list)  # the GPU ids it offers ("0", "1", ...)
    gpus_used: dict = field(default_factory=dict)  # actor id -> the GPU ids granted to it
    gpu_only: bool = False  # its jobs take GPU actors only (a worker of `xparl start/connect` in a GPU cluster)

    @classmethod
    def registered(cls, body: dict, identity: bytes) -> WorkerInfo:
        """The record of a worker from its ``WORKER_REGISTER`` body (checked by ``registration_problem``) and the
        routing identity of its connection; its jobs are added by ``Records._rejoin_jobs``."""
        info = cls(body["worker_id"], identity, body["host"], body["pid"], body["cpus_total"])
        info.metrics = {k: body[k] for k in ("memory_total_mb", "memory_used_mb", "load_avg")}
        info.gpus = [str(g) for g in body.get("gpus", [])]
        info.gpu_only = bool(body.get("gpu_only")) and bool(info.gpus)
        every_s = body.get("metrics_interval_s")  # (its own setting, which may differ from the master's)
        info.metrics_interval_s = float(every_s) if isinstance(every_s, (int, float)) and 0 < every_s < 1e6 else 0.0
        return info

    def free_gpus(self) -> list[str]:
        """GPU ids no actor holds, in the worker's order."""
        used = {g for ids in self.gpus_used.values() for g in ids}
        return [g for g in self.gpus if g not in used]

    metrics: dict = field(default_factory=dict)
    last_seen: float = field(default_factory=time.monotonic)
    fd: int = -1  # the file descriptor of its connection to the master (zmq's SRCFD), -1 unknown
    peer: tuple | None = None  # that connection's remote address (host, port): tells its drop from a reused fd's
    metrics_interval_s: float = 0.0  # how often it sends its metrics (its registration; 0: the master's setting)
    metrics_payload: list | None = None  # the last metrics message's body, read by ``read_metrics`` when needed

    def read_metrics(self) -> dict:
        """The worker's latest metrics (memory_total_mb, memory_used_mb, load_avg), from its last metrics message."""
        if self.metrics_payload is not None:
            body = serialization.loads(self.metrics_payload)
            self.metrics_payload = None
            if isinstance(body, dict):
                keys = ("memory_total_mb", "memory_used_mb", "load_avg")
                self.metrics.update({k: body[k] for k in keys if k in body})
        return self.metrics


@dataclass
class ClientInfo:
    client_id: str
    identity: bytes
    host: str
    pid: int
    script: str
    started_at: float
    actors: set = field(default_factory=set)
    last_seen: float = field(default_factory=time.monotonic)


def registration_problem(body: Any) -> str | None:
    """What is wrong with a ``WORKER_REGISTER`` body (signed, so from a token holder, but maybe malformed or
    made up), or None: the fields the master reads, their types, ``MAX_WORKER_CPUS``, the liveness protocol (ZMTP
    heartbeats) and the Python version (a pickled message must mean the same on both sides)."""
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
    if body.get("liveness") != "zmtp":
        return ("the worker keeps its connection alive with heartbeat messages (an earlier parl-remote), which this "
                "master no longer serves: run the same parl-remote on the workers as on the master")
    if tuple(body.get("python", ())) != tuple(sys.version_info[:2]):
        return f"the worker runs Python {body.get('python')}, the master {sys.version_info[:2]}"
    return None


def client_version_problem(body: dict) -> str | None:
    """Why a ``CLIENT_REGISTER`` body cannot be served (its client runs another Python version), or None."""
    if tuple(body.get("python", ())) == tuple(sys.version_info[:2]):
        return None
    return (f"the cluster runs Python {sys.version_info[0]}.{sys.version_info[1]} and this client Python "
            f"{'.'.join(map(str, body.get('python', ())))}; classes and functions only travel between equal "
            "Python versions: use the same Python on both sides")  # fmt: skip


class Records:
    """The master's records of actors (a mixin of ``master.Master``: uses its ``actors``, ``dead_actors``,
    ``workers``, ``clients``, ``counters``, ``sender`` and its ``_send``, ``_event``, ``_changed``)."""

    def _rejoin_jobs(self, info: WorkerInfo, old: WorkerInfo | None, body: dict) -> None:
        """The jobs a registering worker lists (``old``: its previous record, if any): vacant ones join ``info``; a
        job granted to an actor whose ``ASSIGN_JOB`` the worker never heard (it reconnected meanwhile) is assigned
        again; busy ones bring their actors back to ``alive`` (a restarted master learns them from the worker), or
        are killed when their actor ended meanwhile (past the link grace: its client was told)."""
        granted = {self.actors[a]["job_id"]: a for a in (old.busy if old else ()) if a in self.actors}
        for job in body.get("vacant_jobs", []):
            actor_id = granted.get(job["job_id"])
            if actor_id is not None and self.actors[actor_id]["worker_id"] == info.worker_id:
                info.busy.add(actor_id)
                if self.actors[actor_id]["gpus"]:
                    info.gpus_used[actor_id] = list(self.actors[actor_id]["gpus"])
                self._send(self.sender, MsgType.ASSIGN_JOB, assignment(self.actors[actor_id]))
                continue
            info.vacant[job["job_id"]] = job
        for job in body.get("busy_jobs", []):
            ended = self.dead_actors.get(job["actor_id"])
            if ended is not None:  # ended while the worker was unreachable (past the grace): its client was told
                logger.info("worker %s rejoined with the job of ended actor %s; killing it", info.worker_id,
                            job["actor_id"])
                self._send(self.sender, MsgType.KILL_JOB, {"job_id": job["job_id"], "cause": ended["death_cause"]})
                continue
            info.busy.add(job["actor_id"])
            if job.get("gpus"):
                info.gpus_used[job["actor_id"]] = list(job["gpus"])
            actor = self.actors.get(job["actor_id"])
            if actor is None:  # a restarted master learns the actor from its worker
                actor = self._new_actor(job["actor_id"], job.get("class_name", ""), job["client_id"], info, job)
                actor["created_at"] = job.get("created_at", time.time())
            actor.update(state="alive", worker_id=info.worker_id, host=info.host)  # back from "unreachable"
            client = self.clients.get(job["client_id"])
            if client is not None:
                client.actors.add(job["actor_id"])

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


_NO_LOAD = (0.0, 0.0, 0.0)


def _worker_row(w: WorkerInfo, now: float) -> dict:
    """One worker's entry of the status lists (``read_metrics`` must have been called). Built for every worker at
    each status: kept to plain lookups (the ``/metrics`` scrape of a 1,000-worker cluster builds 1,000 a second)."""
    metrics = w.metrics
    return {
        "id": w.worker_id, "host": w.host, "pid": w.pid, "cpus_total": w.cpus_total, "cpus_used": len(w.busy),
        "gpus": list(w.gpus),
        "gpus_used": sorted(g for ids in w.gpus_used.values() for g in ids) if w.gpus_used else [],
        "gpu_only": w.gpu_only,
        "memory_total_mb": float(metrics.get("memory_total_mb", 0.0)),
        "memory_used_mb": float(metrics.get("memory_used_mb", 0.0)),
        "load_avg": list(map(float, metrics.get("load_avg", _NO_LOAD))),
        "last_seen_s_ago": round(now - w.last_seen, 3),
    }  # fmt: skip


def status_snapshot(master: Any) -> dict:
    """The cluster status snapshot of ``master`` (a ``Master``; JSON-serialisable; the monitor reads its keys).

    Besides the lists: ``counters`` (``server.counters.Counters.snapshot``: grants, refusals and deaths by kind,
    heartbeats missed, grant latency histogram), ``process`` (the master's CPU seconds, resident memory bytes, open
    descriptors and sockets: ``counters.process_figures``) and ``counts`` (``workers_unreachable``,
    ``messages_received``)."""
    from parl_remote.server.counters import process_figures

    now = time.monotonic()
    cap = master.capacity()
    for w in master.workers.values():
        w.read_metrics()
    public = ("id", "class_name", "client_id", "worker_id", "host", "pid", "state", "created_at", "ended_at",
              "death_cause", "last_error", "gpus")  # fmt: skip
    return {
        "master": {"address": master.address, "version": __version__, "pid": os.getpid(),
                   "started_at": master.started_at, "monitor_port": master.monitor_port,
                   "gpu_cluster": master.gpu_cluster},
        "cpus": {"total": cap["total"], "used": cap["used"], "vacant": cap["vacant"]},
        "gpus": {"total": cap["gpus_total"], "used": cap["gpus_used"], "vacant": cap["gpus_total"] - cap["gpus_used"]},
        "workers": [_worker_row(w, now) for w in master.workers.values()],
        "clients": [
            {"id": c.client_id, "host": c.host, "pid": c.pid, "script": c.script, "started_at": c.started_at,
             "actors": sorted(c.actors)}
            for c in master.clients.values()
        ],
        "actors": [{k: a[k] for k in public} for a in [*master.actors.values(), *master.dead_actors.values()]],
        "counts": {"workers_unreachable": len(master.unreachable), "messages_received": master.messages_received},
        "counters": master.counters.snapshot(),
        "process": process_figures(),
    }  # fmt: skip


def status_summary(master: Any) -> dict:
    """The totals and counts of ``master``'s status, without its lists (O(actors) to count, nothing to pickle but a
    few numbers): what ``xparl status`` prints, at any cluster size."""
    cap = master.capacity()
    states: dict[str, int] = {}
    for actor in master.actors.values():
        states[actor["state"]] = states.get(actor["state"], 0) + 1
    return {
        "master": {"address": master.address, "version": __version__, "pid": os.getpid(),
                   "started_at": master.started_at, "monitor_port": master.monitor_port,
                   "gpu_cluster": master.gpu_cluster, "messages_received": master.messages_received},
        "cpus": {"total": cap["total"], "used": cap["used"], "vacant": cap["vacant"], "ready": cap["ready"]},
        "gpus": {"total": cap["gpus_total"], "used": cap["gpus_used"], "vacant": cap["gpus_total"] - cap["gpus_used"]},
        "counts": {"workers": len(master.workers), "workers_unreachable": len(master.unreachable),
                   "clients": len(master.clients), "actors_alive": states.get("alive", 0),
                   "actors_unreachable": states.get("unreachable", 0), "actors_dead_kept": len(master.dead_actors)},
        "counters": master.counters.snapshot(),
        "gpu_workers": [{"id": w.worker_id, "host": w.host, "gpus": list(w.gpus),
                         "gpus_used": sorted(g for ids in w.gpus_used.values() for g in ids)}
                        for w in master.workers.values() if w.gpus],
    }  # fmt: skip


def status_metrics(master: Any) -> dict:
    """What the monitor's ``/metrics`` reads, at a fraction of the snapshot's cost: :func:`status_summary` (with
    ``counts["messages_received"]``), ``process`` and the ``workers`` list of :func:`status_snapshot`, without the
    client and actor lists (the actors are counted by state in ``counts``)."""
    from parl_remote.server.counters import process_figures

    now = time.monotonic()
    for w in master.workers.values():
        w.read_metrics()
    out = status_summary(master)
    out["counts"]["messages_received"] = master.messages_received
    out["process"] = process_figures()
    out["workers"] = [_worker_row(w, now) for w in master.workers.values()]
    return out
