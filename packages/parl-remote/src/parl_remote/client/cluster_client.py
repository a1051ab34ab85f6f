"""``ClusterClient``: read a cluster's status and its actors' logs (used by ``xparl status`` and the monitor)."""

from __future__ import annotations

import zmq

from parl_remote.client.master_link import MasterConnection, parse_address, resolve_token, token_source
from parl_remote.errors import ClusterConnectionError, RemoteError, UnknownActorError
from parl_remote.wire import protocol
from parl_remote.wire.protocol import MsgType


class ClusterClient:
    """A lightweight, read-only connection to a cluster's master (no actors, no registration).

    Args:
        address: ``"host:port"`` of the master.
        token: the cluster token (default: ``$XPARL_TOKEN`` or the local token file of that port).
        timeout_s: seconds to wait for each answer.

    Raises:
        ValueError: malformed address.
        AuthenticationError: no token found.
    """

    def __init__(self, address: str, token: str | None = None, timeout_s: float = 5.0) -> None:
        parse_address(address)
        self.address = address
        self.timeout_s = float(timeout_s)
        # the process's shared zmq context: a private one that a caller forgets to close could be collected in a
        # garbage cycle after its socket's weak reference is cleared, and its term() would then wait forever
        self._ctx = zmq.Context.instance()
        self._closed = False
        signer = protocol.Signer(resolve_token(address, token))
        self._conn = MasterConnection(self._ctx, address, signer, token_source(address, token))

    def status(self, summary: bool = False, metrics: bool = False) -> dict:
        """The cluster's status, JSON-serialisable.

        Args:
            summary: only the totals and counts, without the lists (cheap at any cluster size): ``{"master", "cpus":
                {total, used, vacant, ready}, "gpus", "counts": {workers, workers_unreachable, clients, actors_alive,
                actors_unreachable, actors_dead_kept}, "gpu_workers": [{id, host, gpus, gpus_used}]}`` (``ready``:
                vacant CPUs whose job process is up).
            metrics: the summary's keys, and ``"process"`` (the master's CPU seconds, memory, descriptors) and the
                ``"workers"`` list as below, without the clients and actors lists: what the monitor's ``/metrics``
                reads (a fraction of the full snapshot's cost to the master with many actors).

        Returns:
            ``{"master": {address, version, pid, started_at, monitor_port, gpu_cluster}, "cpus": {total, used,
            vacant}, "workers": [{id, host, pid, cpus_total, cpus_used, gpus, gpus_used, gpu_only, memory_total_mb,
            memory_used_mb, load_avg, last_seen_s_ago}], "clients": [{id, host, pid, script, started_at,
            actors}], "actors": [{id, class_name, client_id, worker_id, host, pid, state, created_at, ended_at,
            death_cause, last_error}]}``. Ended actors stay listed (the last ``DEAD_ACTORS_KEPT``).

        Raises:
            ClusterConnectionError: the master did not answer within ``timeout_s``.
            AuthenticationError: the master refused the token.
        """
        request = {"summary": True} if summary else {"metrics": True} if metrics else None
        kind, body = self._conn.request(MsgType.STATUS, request, timeout_s=self.timeout_s)
        if kind is not MsgType.REPLY:
            raise RemoteError(f"unexpected answer {kind.name} to STATUS")
        return body

    def actor_info(self, actor_id: str) -> dict | None:
        """The master's record of one actor (alive, unreachable or ended; the keys of ``status()["actors"]``), or
        None when the master knows no such actor (never granted, or ended longer ago than ``DEAD_ACTORS_KEPT``
        actors).

        Raises:
            ClusterConnectionError: the master did not answer within ``timeout_s``.
        """
        kind, body = self._conn.request(MsgType.ACTOR_INFO, {"actor_id": str(actor_id)}, timeout_s=self.timeout_s)
        if kind is not MsgType.REPLY:
            raise RemoteError(f"unexpected answer {kind.name} to ACTOR_INFO")
        return body

    def actor_log(self, actor_id: str, offset: int = 0, max_bytes: int = 65536) -> tuple[bytes, int]:
        """Reads an actor's log file (its stdout and stderr), alive or ended.

        Args:
            actor_id: the actor's id (``status()["actors"][i]["id"]``).
            offset: byte offset to read from (0: the start; pass the returned offset to follow the log);
                negative: start that many bytes before the current end (``-65536``: the last 64 KiB).
            max_bytes: at most this many bytes (capped at 16 MiB).

        Returns:
            ``(data, next_offset)``; ``next_offset`` is absolute (the byte after ``data``).

        Raises:
            UnknownActorError: the master knows no such actor (also a ``KeyError``).
            ClusterConnectionError: the master or the actor's worker did not answer.
        """
        body = {"actor_id": str(actor_id), "offset": int(offset), "max_bytes": int(max_bytes)}
        kind, reply = self._conn.request(MsgType.ACTOR_LOG, body, timeout_s=self.timeout_s)
        if kind is MsgType.ERROR:
            if reply.get("kind") == "unknown_actor":
                raise UnknownActorError(reply["error"])
            raise ClusterConnectionError(reply.get("error", str(reply)))
        if "error" in reply:
            raise RemoteError(reply["error"])
        return reply["data"], reply["next_offset"]

    def close(self) -> None:
        """Closes the connection. Idempotent."""
        if not self._closed:
            self._closed = True
            self._conn.close()

    def __enter__(self) -> ClusterClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
