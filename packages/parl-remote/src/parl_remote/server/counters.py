"""The master's running counts of cluster events (grants, refusals, deaths by cause, heartbeats missed, grant
latency) and its own process figures, reported in its status reply (``"counters"`` and ``"process"``) for the
monitor's ``/metrics`` (Prometheus) and ``xparl status --json``.

Every count moves on an event the master handles anyway (a grant, a refusal, an actor's end, a peer's liveness
expiring): nothing is added to the handling of a heartbeat or a metrics message, and the figures are copied out
only when a status is built (at most once per change of the cluster or ``STATUS_CACHE_S``).
"""

from __future__ import annotations

import bisect
import math
import os
import time

#: upper bounds (seconds) of the grant-latency histogram's buckets (a last ``+Inf`` bucket is implied)
GRANT_LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

#: the kinds an actor's death is counted under (the ``cause`` label of ``parl_actor_deaths_total``)
DEATH_KINDS = ("deleted", "client_gone", "worker_lost", "max_memory", "killed", "exited", "other")
#: the kinds of refused grants (``NO_RESOURCE`` and malformed requests: the ``reason`` label)
REFUSAL_KINDS = ("cpu", "gpu", "gpu_never", "cpu_on_gpu_cluster", "bad_request")
#: the peers whose liveness the master checks (the ``peer`` label of ``parl_heartbeats_missed_total``)
PEERS = ("worker", "client")


def death_kind(cause: str | None) -> str:
    """The kind (one of ``DEATH_KINDS``) of an actor's ``death_cause`` text, as the worker and master word it
    (``server.exits``, ``Master._expire``, ``Master._drop_client``)."""
    text = (cause or "").lower()
    if text.startswith("deleted by its client"):
        return "deleted"
    if "its client" in text:  # "its connection to its client closed", "its client c-.. was lost / disconnected"
        return "client_gone"
    if "its worker" in text:  # "its worker process ended", "the network link to its worker ... was lost"
        return "worker_lost"
    if text.startswith("exceeded max_memory"):
        return "max_memory"
    if text.startswith("killed by signal"):
        return "killed"
    if text.startswith("exited with code") or "ended while idle" in text:
        return "exited"
    return "other"


class Counters:
    """Monotonic counts since the master started (a restarted master starts from zero, which Prometheus' ``rate``
    and ``increase`` handle as a counter reset)."""

    def __init__(self) -> None:
        self.grants = 0
        self.refusals = dict.fromkeys(REFUSAL_KINDS, 0)
        self.deaths = dict.fromkeys(DEATH_KINDS, 0)
        self.heartbeats_missed = dict.fromkeys(PEERS, 0)
        self.workers_joined = 0
        self.workers_lost = 0
        self.registrations_refused = 0
        self.latency_counts = [0] * (len(GRANT_LATENCY_BUCKETS_S) + 1)  # per bucket, not cumulative; last: +Inf
        self.latency_sum_s = 0.0

    def granted(self, waited_s: float) -> None:
        """A job was granted to a client that asked first ``waited_s`` seconds ago (0 when not known)."""
        self.grants += 1
        self.latency_counts[bisect.bisect_left(GRANT_LATENCY_BUCKETS_S, waited_s)] += 1
        self.latency_sum_s += waited_s

    def refused(self, kind: str) -> None:
        """An ``ACQUIRE_JOB`` was answered without a job (``kind`` as in ``REFUSAL_KINDS``)."""
        self.refusals[kind if kind in self.refusals else "bad_request"] += 1

    def died(self, cause: str | None) -> str:
        """An actor ended with ``cause``; returns its kind (``death_kind``)."""
        kind = death_kind(cause)
        self.deaths[kind] += 1
        return kind

    def snapshot(self) -> dict:
        """The counts as the status reply carries them (JSON-serialisable; the histogram's buckets cumulative, as
        Prometheus' are: ``[[upper bound s, count <= bound], ..., ["+Inf", total]]``)."""
        cumulative, running = [], 0
        for bound, count in zip((*GRANT_LATENCY_BUCKETS_S, "+Inf"), self.latency_counts, strict=True):
            running += count
            cumulative.append([bound, running])
        return {
            "actor_grants": self.grants,
            "actor_refusals": dict(self.refusals),
            "actor_deaths": dict(self.deaths),
            "heartbeats_missed": dict(self.heartbeats_missed),
            "workers_joined": self.workers_joined,
            "workers_lost": self.workers_lost,
            "worker_registrations_refused": self.registrations_refused,
            "grant_latency_s": {"buckets": cumulative, "sum": self.latency_sum_s, "count": running},
        }


def waited_s(body: dict) -> float:
    """The ``waited_s`` of an ``ACQUIRE_JOB`` body (seconds since the client first asked for this actor's job;
    clients of earlier versions send none: 0)."""
    value = body.get("waited_s", 0.0)
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) and value > 0 else 0.0


#: seconds the counts of the process's open descriptors and sockets are reused by :func:`process_figures`
#: (counting lists ``/proc/self/fd`` and reads one link per descriptor: ~5 ms for a master with 1,000 workers,
#: which a scrape every second would pay each time)
FDS_RECOUNT_S = 10.0
_fds_counted: dict = {"at": None, "fds": None, "sockets": None}  # the last counts and their time.monotonic()


def _count_fds() -> tuple[int, int] | None:
    """(open descriptors, of which sockets) from ``/proc/self/fd``; None where there is none."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    sockets = 0
    for fd in fds:
        try:
            sockets += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:  # closed since it was listed
            continue
    return len(fds), sockets


def process_figures(recount_s: float = FDS_RECOUNT_S) -> dict:
    """This process's CPU time (seconds, user + system), resident memory (bytes), open file descriptors and open
    sockets (those of its descriptors that are sockets, read from ``/proc/self/fd`` where there is one; else
    psutil's count of its inet and unix connections).

    Args:
        recount_s: the descriptor and socket counts are reused for this many seconds (0: counted afresh):
            counting costs one ``readlink`` per open descriptor, where the rest costs a few system calls.
    """
    import psutil

    proc = psutil.Process()
    times = proc.cpu_times()
    figures = {"cpu_seconds": float(times.user + times.system), "resident_memory_bytes": int(proc.memory_info().rss),
               "open_fds": None, "open_sockets": None, "time": time.time()}
    now, last = time.monotonic(), _fds_counted["at"]
    if last is None or now - last >= recount_s or now < last:
        fds, sockets = _count_fds() or (None, None)
        _fds_counted.update(at=now, fds=fds, sockets=sockets)
    if _fds_counted["fds"] is not None:
        figures.update(open_fds=_fds_counted["fds"], open_sockets=_fds_counted["sockets"])
    else:
        try:
            figures.update(open_fds=proc.num_fds(), open_sockets=len(proc.net_connections(kind="all")))
        except (AttributeError, psutil.Error):
            pass
    return figures
