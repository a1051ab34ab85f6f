"""The monitor's view of a cluster: a short-lived status cache and a bounded history of worker samples.

The monitor reads the cluster only through the status-client interface (``StatusClient``, implemented by
``parl_remote.ClusterClient``):
``status() -> dict`` and ``actor_log(actor_id, offset, max_bytes) -> (bytes, next_offset)``. Everything a page
shows is derived from one ``status()`` snapshot, cached for at most ``cache_ttl_s`` seconds so that a killed
actor, job or worker shows its new state as soon as the master reports it.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

logger = logging.getLogger(__name__)


EXTENSION = "parl_monitor"  # the key of the app's ``MonitorState`` in ``app.extensions``


def current_state() -> MonitorState:
    """The ``MonitorState`` of the current Flask app (inside a request)."""
    from flask import current_app

    return current_app.extensions[EXTENSION]


class StatusClient(Protocol):
    """What the monitor needs from a cluster: the status-client interface (``parl_remote.ClusterClient``
    implements it)."""

    def status(self) -> dict:
        """Return the cluster status snapshot (see the package README for its keys)."""

    def actor_log(self, actor_id: str, offset: int = 0, max_bytes: int = 65536) -> tuple[bytes, int]:
        """Return ``(data, next_offset)`` of an actor's log, reading at most ``max_bytes`` from ``offset``."""


def _metrics_read(client: StatusClient) -> object:
    """``client.status(metrics=True)`` where its ``status`` takes that option (``parl_remote.ClusterClient``), else
    ``client.status()``."""
    try:
        takes = "metrics" in inspect.signature(client.status).parameters
    except (TypeError, ValueError):  # a callable without a signature
        takes = False
    return client.status(metrics=True) if takes else client.status()


class ClusterUnavailableError(RuntimeError):
    """The cluster could not be asked for its status (master unreachable, wrong token, timeout)."""


class MonitorState:
    """Everything the monitor app keeps between requests; stored in ``app.extensions["parl_monitor"]``.

    Args:
        client: the status client (a ``StatusClient``), or None to create ``parl_remote.ClusterClient`` lazily from
            ``address`` and ``token`` on first use.
        address: ``"host:port"`` of the cluster's master; used only when ``client`` is None.
        token: the cluster token passed to ``ClusterClient`` (None lets parl_remote find the local one).
        cache_ttl_s: seconds a status snapshot is reused (0 asks the cluster on every request).
        history_size: samples kept per worker (the oldest are dropped).
        history_interval_s: the least seconds between two samples of one worker.
        client_timeout_s: the status client's timeout in seconds.

    Raises:
        ValueError: no client and no address, or a negative interval / non-positive history size.
    """

    def __init__(
        self,
        client: StatusClient | None = None,
        *,
        address: str | None = None,
        token: str | None = None,
        cache_ttl_s: float = 1.0,
        history_size: int = 360,
        history_interval_s: float = 2.0,
        client_timeout_s: float = 2.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if client is None and not address:
            raise ValueError("parl-monitor needs a cluster: pass address='host:port' (PARL_MONITOR_ADDRESS / "
                             "--address) or a status client (config CLIENT)")
        if cache_ttl_s < 0 or history_interval_s < 0:
            raise ValueError(f"cache_ttl_s ({cache_ttl_s}) and history_interval_s ({history_interval_s}) must be "
                             ">= 0 seconds")
        if int(history_size) < 1:
            raise ValueError(f"history_size must be a positive number of samples, got {history_size}")
        self._client = client
        self.address = address
        self._token = token
        self.cache_ttl_s = float(cache_ttl_s)
        self.history_size = int(history_size)
        self.history_interval_s = float(history_interval_s)
        self.client_timeout_s = float(client_timeout_s)
        self._clock = clock
        # One lock around every use of the client: a zmq socket must not be used from two threads at once.
        self._lock = threading.RLock()
        self._cache: dict[str, tuple[dict, float]] = {}  # "status" / "metrics": (answer, time read)
        self._error: ClusterUnavailableError | None = None
        self._error_time = float("-inf")
        self._owns_client = client is None
        self._history: dict[str, deque] = {}
        self._last_sample: dict[str, float] = {}
        self._poller: threading.Thread | None = None
        self._stop = threading.Event()

    # -- the client -------------------------------------------------------------------------------------------
    @property
    def client(self) -> StatusClient:
        """The status client; created from ``address`` on first use when none was given."""
        if self._client is None:
            from parl_remote import ClusterClient  # lazy: creating the app never touches the network

            self._client = ClusterClient(self.address, token=self._token, timeout_s=self.client_timeout_s)
        return self._client

    @client.setter
    def client(self, client: StatusClient) -> None:
        with self._lock:
            self._client = client
            self._owns_client = False
            self._error = None
            self._cache.clear()

    # -- status -----------------------------------------------------------------------------------------------
    def status(self, max_age_s: float | None = None) -> dict:
        """Return a status snapshot no older than ``max_age_s`` (default ``cache_ttl_s``) seconds.

        Raises:
            ClusterUnavailableError: the cluster did not answer (the message says why and where).
        """
        return self._read("status", max_age_s, lambda client: client.status())

    def metrics_status(self) -> dict:
        """What ``/metrics`` reads, no older than ``cache_ttl_s``: the snapshot of :meth:`status` when a fresh one is
        at hand (a page read it), else the client's lighter ``status(metrics=True)`` (totals, counts, workers,
        process; no client or actor lists: a fraction of the master's cost with many actors). A status client
        without that option is asked for its whole snapshot.

        Raises:
            ClusterUnavailableError: the cluster did not answer (the message says why and where).
        """
        with self._lock:
            cached = self._cache.get("status")
            if cached is not None and self._clock() - cached[1] <= self.cache_ttl_s:
                return cached[0]
            return self._read("metrics", None, _metrics_read)

    def _read(self, kind: str, max_age_s: float | None, ask: Callable[[StatusClient], object]) -> dict:
        """``ask(client)``'s answer, reused while no older than ``max_age_s`` (default ``cache_ttl_s``); a failure
        is one ``ClusterUnavailableError``, raised again without asking until ``max_age_s`` passes."""
        max_age = self.cache_ttl_s if max_age_s is None else max_age_s
        with self._lock:
            now = self._clock()
            cached = self._cache.get(kind)
            if cached is not None and now - cached[1] <= max_age:
                return cached[0]
            if self._error is not None and now - self._error_time <= max_age:
                raise self._error  # a down cluster is asked once per interval, not once per request
            try:
                snapshot = ask(self.client)
            except Exception as exc:  # any transport failure becomes one clear error for the pages
                self._error = ClusterUnavailableError(
                    f"cannot read the status of the cluster at {self.address or 'the given client'}: "
                    f"{type(exc).__name__}: {exc}. Check that the master runs (`xparl status`) and the token "
                    "matches (--token / PARL_MONITOR_TOKEN)")
                self._error.__cause__ = exc
                self._error_time = now
                self._drop_client()
                raise self._error from exc
            self._error = None
            if not isinstance(snapshot, dict):
                raise ClusterUnavailableError(f"the cluster's status() returned {type(snapshot).__name__}, "
                                              "expected a dict (see ``StatusClient.status``)")
            self._cache[kind] = (snapshot, now)
            self._record(snapshot, now)
            return snapshot

    def _drop_client(self) -> None:
        """Forget a client this object created after a failure, so the next read reconnects afresh."""
        if self._owns_client and self._client is not None:
            close = getattr(self._client, "close", None)
            try:
                if callable(close):
                    close()
            except Exception:  # noqa: BLE001 - closing a broken connection must not hide the first error
                logger.debug("closing the status client failed", exc_info=True)
            self._client = None

    def _record(self, snapshot: dict, now: float) -> None:
        live = set()
        for worker in snapshot.get("workers", []):
            wid = str(worker.get("id"))
            live.add(wid)
            if now - self._last_sample.get(wid, float("-inf")) < self.history_interval_s:
                continue
            load = worker.get("load_avg") or [None]
            self._history.setdefault(wid, deque(maxlen=self.history_size)).append({
                "time": now,
                "cpus_used": worker.get("cpus_used"),
                "cpus_total": worker.get("cpus_total"),
                "memory_used_mb": worker.get("memory_used_mb"),
                "memory_total_mb": worker.get("memory_total_mb"),
                "load_1m": load[0] if load else None,
            })
            self._last_sample[wid] = now
        # Forget workers that left long ago, keeping the history bounded in the number of workers too.
        for wid in list(self._history):
            if wid not in live and len(self._history) > 64:
                del self._history[wid]
                self._last_sample.pop(wid, None)

    def history(self, worker_id: str) -> list[dict]:
        """Return the samples of one worker, oldest first: ``[{time, cpus_used, cpus_total, memory_used_mb,
        memory_total_mb, load_1m}]`` (time in unix seconds, memory in MB, load the 1-minute load average)."""
        with self._lock:
            return list(self._history.get(worker_id, ()))

    def actor_log(self, actor_id: str, offset: int, max_bytes: int) -> tuple[bytes, int]:
        """Read an actor's log through the client (the caller has checked that ``actor_id`` is a known actor).

        Returns:
            ``(data, next_offset)``: at most ``max_bytes`` bytes of the log from byte ``offset``.
        """
        with self._lock:
            return self.client.actor_log(actor_id, offset=offset, max_bytes=max_bytes)

    # -- background sampling ----------------------------------------------------------------------------------
    def start_poller(self, interval_s: float | None = None) -> None:
        """Poll the cluster every ``interval_s`` seconds in a daemon thread so the load charts fill in even
        when nobody is looking; idempotent. Errors are logged and polling goes on."""
        if self._poller is not None and self._poller.is_alive():
            return
        interval = self.history_interval_s if interval_s is None else float(interval_s)
        if interval <= 0:
            raise ValueError(f"poll interval must be > 0 seconds, got {interval}")
        self._stop.clear()

        def loop() -> None:
            while not self._stop.is_set():
                try:
                    self.status(max_age_s=interval / 2)
                except ClusterUnavailableError as exc:
                    logger.warning("monitor poll failed: %s", exc)
                self._stop.wait(interval)

        self._poller = threading.Thread(target=loop, name="parl-monitor-poller", daemon=True)
        self._poller.start()

    def stop_poller(self) -> None:
        """Stop the background poller (if any) and wait briefly for it."""
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=5)
            self._poller = None

    def close(self) -> None:
        """Stop polling and close the client if it has a ``close()``."""
        self.stop_poller()
        close = getattr(self._client, "close", None)
        if callable(close):
            close()


def summarize(snapshot: dict) -> dict[str, Any]:
    """Derive the overview figures from a status snapshot.

    Returns:
        ``{"cpus": {total, used, vacant}, "memory": {total_mb, used_mb, vacant_mb}, "counts": {workers,
        clients, actors, actors_alive, actors_dead, errors}}`` (memory in MB, summed over workers).
    """
    workers = snapshot.get("workers", [])
    actors = snapshot.get("actors", [])
    total_mb = sum(float(w.get("memory_total_mb") or 0.0) for w in workers)
    used_mb = sum(float(w.get("memory_used_mb") or 0.0) for w in workers)
    cpus = snapshot.get("cpus") or {}
    alive = sum(1 for a in actors if a.get("state") == "alive")
    return {
        "cpus": {"total": int(cpus.get("total", 0)), "used": int(cpus.get("used", 0)),
                 "vacant": int(cpus.get("vacant", 0))},
        "memory": {"total_mb": round(total_mb, 1), "used_mb": round(used_mb, 1),
                   "vacant_mb": round(max(total_mb - used_mb, 0.0), 1)},
        "counts": {"workers": len(workers), "clients": len(snapshot.get("clients", [])), "actors": len(actors),
                   "actors_alive": alive, "actors_dead": len(actors) - alive,
                   "errors": sum(1 for a in actors if a.get("last_error"))},
    }
