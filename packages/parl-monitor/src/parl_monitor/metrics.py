"""``/metrics``: the cluster's figures in the Prometheus text format, for Prometheus, Grafana and alerting.

A custom collector (``ClusterCollector``) turns the latest status of the cluster (``MonitorState.metrics_status``: the
snapshot the pages read when a fresh one is cached, else the master's lighter metrics reply, without the client and
actor lists; a scrape every second asks the master at most once per ``CACHE_TTL_S``) into metric families at each
scrape; nothing is kept in global metrics. Each app has its own ``CollectorRegistry``
(``app.extensions["parl_monitor_metrics"]``) holding that collector and the monitor's own request-latency
histogram. Importing this module registers nothing anywhere.

``METRICS`` lists every metric served: ``(name as exposed, type, unit, labels, meaning)``; the package README's
table is checked against it.
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from parl_monitor.state import ClusterUnavailableError, MonitorState

#: the text format every Prometheus 2.x and 3.x reads (the names here are all classic ones)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
EXTENSION = "parl_monitor_metrics"  # the key of the app's ``CollectorRegistry`` in ``app.extensions``
MB = 1024 * 1024  # the master reports memory in MB (MiB); Prometheus wants bytes
#: the monitor's request-latency buckets (seconds)
REQUEST_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_WORKER = ("worker", "host")

# name (as exposed), type, unit, labels, meaning
METRICS: tuple[tuple[str, str, str, tuple[str, ...], str], ...] = (
    ("parl_master_up", "gauge", "", (), "1 when the monitor's last read of the master's status succeeded, else 0"),
    ("parl_workers", "gauge", "", (), "workers connected"),
    ("parl_workers_unreachable", "gauge", "", (),
     "workers whose connection dropped; their actors wait up to LINK_GRACE_S for them"),
    ("parl_clients", "gauge", "", (), "clients connected"),
    ("parl_cpus", "gauge", "", (), "CPUs (job slots) of the connected workers"),
    ("parl_cpus_used", "gauge", "", (), "CPUs held by actors"),
    ("parl_gpus", "gauge", "", (), "GPUs of the connected workers"),
    ("parl_gpus_used", "gauge", "", (), "GPUs held by actors"),
    ("parl_actors_alive", "gauge", "", (), "actors alive"),
    ("parl_actors_unreachable", "gauge", "", (), "actors whose worker is unreachable (within LINK_GRACE_S)"),
    ("parl_actor_grants_total", "counter", "", (), "jobs granted to new actors"),
    ("parl_actor_refusals_total", "counter", "", ("reason",),
     "actor requests answered without a job: cpu, gpu (none free: a waiting client asks again, at most every "
     "0.2 s), gpu_never, cpu_on_gpu_cluster, bad_request"),
    ("parl_actor_deaths_total", "counter", "", ("cause",),
     "actors ended, by cause: deleted, client_gone (asked for by the client), killed, exited, max_memory, "
     "worker_lost, other"),
    ("parl_actor_grant_latency_seconds", "histogram", "seconds", (),
     "from a client's first request for an actor's job to its grant (waiting for a free CPU / GPU included)"),
    ("parl_heartbeats_missed_total", "counter", "", ("peer",),
     "peers whose liveness lapsed: workers listed unreachable (connection dropped or heartbeats stopped), "
     "clients dropped for missing heartbeats"),
    ("parl_workers_joined_total", "counter", "", (), "worker registrations accepted (rejoins included)"),
    ("parl_workers_lost_total", "counter", "", (), "workers lost after LINK_GRACE_S unreachable"),
    ("parl_worker_registrations_refused_total", "counter", "", (), "worker registrations refused"),
    ("parl_master_messages_received_total", "counter", "", (), "messages the master read"),
    ("parl_master_start_time_seconds", "gauge", "seconds", (), "when the master started (unix time)"),
    ("parl_master_cpu_seconds_total", "counter", "seconds", (), "CPU time of the master process (user + system)"),
    ("parl_master_resident_memory_bytes", "gauge", "bytes", (), "resident memory of the master process"),
    ("parl_master_open_fds", "gauge", "", (), "open descriptors of the master process (counted at most every 10 s)"),
    ("parl_master_open_sockets", "gauge", "", (), "open sockets of the master process (counted at most every 10 s)"),
    ("parl_worker_cpus", "gauge", "", _WORKER, "CPUs (job slots) of a worker"),
    ("parl_worker_cpus_used", "gauge", "", _WORKER, "CPUs of a worker held by actors"),
    ("parl_worker_gpus", "gauge", "", _WORKER, "GPUs of a worker"),
    ("parl_worker_gpus_used", "gauge", "", _WORKER, "GPUs of a worker held by actors"),
    ("parl_worker_load1", "gauge", "", _WORKER, "1-minute load average of a worker's machine"),
    ("parl_worker_load5", "gauge", "", _WORKER, "5-minute load average of a worker's machine"),
    ("parl_worker_load15", "gauge", "", _WORKER, "15-minute load average of a worker's machine"),
    ("parl_worker_memory_used_bytes", "gauge", "bytes", _WORKER, "memory used on a worker's machine"),
    ("parl_worker_memory_total_bytes", "gauge", "bytes", _WORKER, "memory of a worker's machine"),
    ("parl_worker_last_seen_seconds", "gauge", "seconds", _WORKER, "seconds since the worker's last message"),
    ("parl_monitor_request_duration_seconds", "histogram", "seconds", ("endpoint",),
     "time the monitor took to answer a request, by Flask endpoint (none: no route matched)"),
)
_HELP = {name: meaning for name, _, _, _, meaning in METRICS}


def _family(kind: str, name: str, labels: tuple[str, ...] = (), value: float | None = None) -> Metric:
    """A metric family of ``METRICS`` (``name`` as exposed: a counter's without ``_total``)."""
    if kind == "counter":
        return CounterMetricFamily(name, _HELP[name + "_total"], value=value, labels=labels or None)
    return GaugeMetricFamily(name, _HELP[name], value=value, labels=labels or None)


def grafana_dashboard() -> pathlib.Path:
    """The path of the Grafana dashboard of these metrics shipped with the package (``grafana/parl-cluster.json``:
    import it in Grafana, choosing the Prometheus data source that scrapes the monitor)."""
    return pathlib.Path(__file__).parent / "grafana" / "parl-cluster.json"


class ClusterCollector:
    """Reads the latest status snapshot of ``state`` at each collection and yields the cluster's metric families.

    A master that does not answer yields ``parl_master_up 0`` only (and the scrape still succeeds); a master of an
    earlier version, whose status has no ``counters`` / ``process``, yields the rest.
    """

    def __init__(self, state: MonitorState) -> None:
        self.state = state

    def describe(self) -> list:
        """Nothing: registering the collector must not read the cluster (``CollectorRegistry.register`` calls
        ``describe``; families are only known at collection)."""
        return []

    def collect(self) -> Iterator[Metric]:
        try:
            snapshot = self.state.metrics_status()
        except ClusterUnavailableError:
            yield _family("gauge", "parl_master_up", value=0)
            return
        yield _family("gauge", "parl_master_up", value=1)
        yield from _cluster_families(snapshot)


def _number(value, default: float = 0.0) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _cluster_families(snapshot: dict) -> Iterator[Metric]:
    workers = snapshot.get("workers") or []
    actors = snapshot.get("actors") or []
    counts = snapshot.get("counts") or {}
    cpus, gpus = snapshot.get("cpus") or {}, snapshot.get("gpus") or {}
    states: dict[str, int] = {}
    for actor in actors:
        states[actor.get("state")] = states.get(actor.get("state"), 0) + 1
    if "actors" not in snapshot:  # the lighter metrics reply: the actors counted by the master
        states = {"alive": int(_number(counts.get("actors_alive"))),
                  "unreachable": int(_number(counts.get("actors_unreachable")))}
    clients = len(snapshot["clients"]) if "clients" in snapshot else _number(counts.get("clients"))
    yield _family("gauge", "parl_workers", value=len(workers))
    yield _family("gauge", "parl_workers_unreachable", value=_number(counts.get("workers_unreachable")))
    yield _family("gauge", "parl_clients", value=clients)
    yield _family("gauge", "parl_cpus", value=_number(cpus.get("total")))
    yield _family("gauge", "parl_cpus_used", value=_number(cpus.get("used")))
    yield _family("gauge", "parl_gpus",
                  value=_number(gpus.get("total"), sum(len(w.get("gpus") or []) for w in workers)))
    yield _family("gauge", "parl_gpus_used",
                  value=_number(gpus.get("used"), sum(len(w.get("gpus_used") or []) for w in workers)))
    yield _family("gauge", "parl_actors_alive", value=states.get("alive", 0))
    yield _family("gauge", "parl_actors_unreachable", value=states.get("unreachable", 0))

    counters = snapshot.get("counters")
    if isinstance(counters, dict):
        yield _family("counter", "parl_actor_grants", value=_number(counters.get("actor_grants")))
        for name, key, label in (("parl_actor_refusals", "actor_refusals", "reason"),
                                 ("parl_actor_deaths", "actor_deaths", "cause"),
                                 ("parl_heartbeats_missed", "heartbeats_missed", "peer")):
            family = _family("counter", name, (label,))
            for kind, count in sorted((counters.get(key) or {}).items()):
                family.add_metric([str(kind)], _number(count))
            yield family
        for name, key in (("parl_workers_joined", "workers_joined"), ("parl_workers_lost", "workers_lost"),
                          ("parl_worker_registrations_refused", "worker_registrations_refused")):
            yield _family("counter", name, value=_number(counters.get(key)))
        latency = counters.get("grant_latency_s") or {}
        buckets = [(("+Inf" if bound == "+Inf" else repr(float(bound))), _number(count))
                   for bound, count in latency.get("buckets") or []]
        if buckets:
            yield HistogramMetricFamily("parl_actor_grant_latency_seconds", _HELP["parl_actor_grant_latency_seconds"],
                                        buckets=buckets, sum_value=_number(latency.get("sum")))
    if "messages_received" in counts:
        yield _family("counter", "parl_master_messages_received", value=_number(counts["messages_received"]))
    master = snapshot.get("master") or {}
    if master.get("started_at") is not None:
        yield _family("gauge", "parl_master_start_time_seconds", value=_number(master["started_at"]))
    process = snapshot.get("process")
    if isinstance(process, dict):
        yield _family("counter", "parl_master_cpu_seconds", value=_number(process.get("cpu_seconds")))
        yield _family("gauge", "parl_master_resident_memory_bytes", value=_number(process.get("resident_memory_bytes")))
        for name, key in (("parl_master_open_fds", "open_fds"), ("parl_master_open_sockets", "open_sockets")):
            if process.get(key) is not None:
                yield _family("gauge", name, value=_number(process[key]))

    per_worker = {name: _family("gauge", name, _WORKER) for name in (
        "parl_worker_cpus", "parl_worker_cpus_used", "parl_worker_gpus", "parl_worker_gpus_used", "parl_worker_load1",
        "parl_worker_load5", "parl_worker_load15", "parl_worker_memory_used_bytes", "parl_worker_memory_total_bytes",
        "parl_worker_last_seen_seconds")}  # fmt: skip
    for w in workers:
        labels = [str(w.get("id")), str(w.get("host"))]
        load = list(w.get("load_avg") or []) + [0.0, 0.0, 0.0]
        values = {
            "parl_worker_cpus": _number(w.get("cpus_total")), "parl_worker_cpus_used": _number(w.get("cpus_used")),
            "parl_worker_gpus": len(w.get("gpus") or []), "parl_worker_gpus_used": len(w.get("gpus_used") or []),
            "parl_worker_load1": _number(load[0]), "parl_worker_load5": _number(load[1]),
            "parl_worker_load15": _number(load[2]),
            "parl_worker_memory_used_bytes": _number(w.get("memory_used_mb")) * MB,
            "parl_worker_memory_total_bytes": _number(w.get("memory_total_mb")) * MB,
            "parl_worker_last_seen_seconds": _number(w.get("last_seen_s_ago")),
        }  # fmt: skip
        for name, value in values.items():
            per_worker[name].add_metric(labels, value)
    yield from per_worker.values()


class Only:
    """The families of ``registry`` that serve one of ``names`` (a family's name, or one of its samples': a
    counter's ``_total``, a histogram's ``_bucket`` ...), for ``/metrics?name[]=...``: the cluster's families are
    known only once collected, which ``CollectorRegistry.restricted_registry`` does not see."""

    def __init__(self, registry: CollectorRegistry, names: list[str]) -> None:
        self.registry = registry
        self.names = set(names)

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():
            wanted = [s for s in family.samples if s.name in self.names]
            if family.name in self.names or family.name + "_total" in self.names:
                yield family
            elif wanted:
                family.samples = wanted
                yield family


class MonitorMetrics:
    """The ``CollectorRegistry`` of one app: the cluster collector and the monitor's request-latency histogram.

    Args:
        state: the app's ``MonitorState``.
    """

    def __init__(self, state: MonitorState) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(ClusterCollector(state))
        self.request_duration = Histogram("parl_monitor_request_duration_seconds",
                                          _HELP["parl_monitor_request_duration_seconds"], ["endpoint"],
                                          buckets=REQUEST_BUCKETS_S, registry=self.registry)

    def observe(self, endpoint: str | None, started: float) -> None:
        """A request to ``endpoint`` (None: unmatched) that began at ``time.perf_counter()`` ``started`` ended now."""
        self.request_duration.labels(endpoint or "none").observe(max(time.perf_counter() - started, 0.0))
