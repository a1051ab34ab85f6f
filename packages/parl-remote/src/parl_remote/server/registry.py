"""The master's records of workers and clients, and the cluster status snapshot built from them (what
``ClusterClient.status`` returns to ``xparl status`` and the monitor)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from parl_remote import __version__
from parl_remote.wire import serialization


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

    def free_gpus(self) -> list[str]:
        """GPU ids no actor holds, in the worker's order."""
        used = {g for ids in self.gpus_used.values() for g in ids}
        return [g for g in self.gpus if g not in used]

    metrics: dict = field(default_factory=dict)
    last_seen: float = field(default_factory=time.monotonic)
    last_ack: float = 0.0  # time.monotonic() of the last heartbeat answered
    ack_interval_s: float = 0.0  # heartbeats are answered this often (a third of the worker's liveness window)
    zmtp: bool = False  # its liveness travels as ZMTP heartbeats (False: heartbeat messages, the earlier protocol)
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
