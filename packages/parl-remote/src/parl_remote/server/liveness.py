"""The liveness of the master's peers (a mixin of ``master.Master``): who is reachable, who is lost, and when
their actors end.

Workers keep their connection alive with ZMTP heartbeats handled in libzmq (``zmq_io.set_zmtp_heartbeat``: PINGs
every ``HEARTBEAT_INTERVAL_S`` carrying a TTL of ``HEARTBEAT_INTERVAL_S`` x ``HEARTBEAT_LIVENESS``), so an idle
cluster sends the master's Python no message per heartbeat; their metrics come as a message every
``METRICS_INTERVAL_S``. The master's libzmq drops the connection of a worker silent for the TTL (killed, stopped); a
cut link is ended by the kernel (keepalive probes and ``TCP_USER_TIMEOUT`` = the window on each worker's connection,
``housekeeping.keepalive``: libzmq's TTL runs only from a PING, and any message cancels it); a worker silent for
``SILENCE_METRICS_INTERVALS`` metrics intervals with its connection up (stopped before its first PING, or hung) is
dropped too (the silence check). A socket monitor reports a drop (``EVENT_DISCONNECTED``, naming the connection's
file descriptor, which the worker's registration message gave: ``SRCFD``; checked against the connection's remote
address, as a reused fd would carry another), and the worker gets no new actors and its actors are listed
``unreachable``: a network cut shorter than ``LINK_GRACE_S`` costs no actor (the worker reconnects and registers
again with its actors, which are then ``alive``, one entry each); after ``LINK_GRACE_S`` without a sign of life (its
last message or the TTL's last PING) they end, the cause naming the lost link (the link grace).

Clients send a heartbeat message every ``CLIENT_HEARTBEAT_INTERVAL_S``; a client silent for ``CLIENT_TIMEOUT_S`` (at
least ``LINK_GRACE_S``: a cut client keeps its actors) is dropped and its actors are killed.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import zmq

from parl_remote import config
from parl_remote.server.housekeeping import keepalive, peer_of
from parl_remote.server.registry import WorkerInfo
from parl_remote.transport import zmq_io
from parl_remote.wire.protocol import Message, MsgType

logger = logging.getLogger(__name__)

# A worker silent (no message: its metrics come every METRICS_INTERVAL_S) for this many metrics intervals while
# its connection is up is dropped: its process is stopped or hung (libzmq's thread may still answer PINGs)
SILENCE_METRICS_INTERVALS = 3
# how long a drop reported on a file descriptor that still carries the worker's connection waits for the close
SUSPECT_RECHECK_S = 0.5


class Liveness:
    """See the module docstring. Uses the ``Master``'s ``ctx``, ``sock``, ``workers``, ``worker_by_identity``,
    ``clients``, ``actors``, ``counters``, ``shm_sweeps``, ``sender_fd`` and its ``_reply``, ``_event``,
    ``_changed``, ``_end_actor``, ``_drop_client``."""

    def _watch_drops(self) -> None:
        """Sets up the liveness records and the socket monitor of ``self.sock`` (once it is bound)."""
        # dropped connections (a worker silent past its ZMTP heartbeat TTL, or closed), by file descriptor; read
        # without a limit on waiting events (when every worker goes at once, none may be lost)
        monitor_address = f"inproc://xparl-master-monitor-{id(self):x}"
        self.sock.monitor(monitor_address, zmq.EVENT_DISCONNECTED)
        self.monitor = self.ctx.socket(zmq.PAIR)
        self.monitor.setsockopt(zmq.RCVHWM, 0)
        self.monitor.setsockopt(zmq.LINGER, 0)
        self.monitor.connect(monitor_address)
        self.worker_by_fd: dict[int, WorkerInfo] = {}  # the file descriptor of each worker's connection (SRCFD)
        self.unreachable: dict[str, WorkerInfo] = {}  # silent workers whose actors wait out LINK_GRACE_S
        # workers whose connection's fd was reported dropped while it still reached them: checked again shortly
        # (the report of an earlier connection on that fd, or a close still under way), worker id -> since
        self.suspects: dict[str, float] = {}
        self.next_silence_check = 0.0  # time.monotonic() of the next check of workers' silence (``_expire``)

    def _track_connection(self, info: WorkerInfo, old: WorkerInfo | None) -> None:
        """At a worker's registration: the connection it came on (``sender_fd``) is the one whose drop the monitor
        reports; its remote address tells that drop from a reused fd's, and it gets the kernel's keepalive probes."""
        if old is not None and self.worker_by_fd.get(old.fd) is old:
            del self.worker_by_fd[old.fd]
        info.fd = self.sender_fd
        self.suspects.pop(info.worker_id, None)
        if info.fd >= 0:  # (a closed connection is seen at once)
            prev = self.worker_by_fd.get(info.fd)
            if prev is not None and prev.worker_id != info.worker_id and self.workers.get(prev.worker_id) is prev:
                self._lose_connection(prev)  # its connection had this fd: it closed, its drop not yet reported
            self.worker_by_fd[info.fd] = info
            info.peer = peer_of(info.fd)
            keepalive(info.fd)

    def _known(self, msg: Message, info: Any) -> bool:
        """True when a worker's or client's record exists (a sign of life: it was seen now); otherwise tells the
        sender to register again (a restarted master knows nobody, a lost worker is listed unreachable)."""
        if info is None:
            self._reply(msg, None, MsgType.REREGISTER)
            return False
        info.last_seen = time.monotonic()
        return True

    def _lose(self, info: WorkerInfo, now: float, reason: str) -> None:
        """Lists a worker unreachable: no new actors; its actors ``unreachable`` until it registers again or
        ``LINK_GRACE_S`` passes. ``reason``: why, for the event log."""
        self.counters.heartbeats_missed["worker"] += 1
        self._event("worker_unreachable", worker_id=info.worker_id, host=info.host, reason=reason,
                    actors=sorted(info.busy))
        del self.workers[info.worker_id]
        self.worker_by_identity.pop(info.identity, None)
        self.suspects.pop(info.worker_id, None)
        if self.worker_by_fd.get(info.fd) is info:
            del self.worker_by_fd[info.fd]
        self.unreachable[info.worker_id] = info
        self._changed(gone=info.worker_id)
        self.shm_sweeps.worker_lost(now)  # if its jobs died with it: sweep their files
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
            if info.peer is not None and peer_of(fd) == info.peer:
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
        """The checks of workers' liveness that libzmq does not make: a drop reported on an fd that still reached the
        worker (``suspects``: lost if the fd now carries another connection or none; a report of an earlier
        connection when it still carries this one after ``SUSPECT_RECHECK_S``), and, every second, a worker whose
        connection is up but that sent no message (its metrics come every ``METRICS_INTERVAL_S``, its own setting as
        its registration said) for ``SILENCE_METRICS_INTERVALS`` of them: its process is stopped or hung while the
        kernel keeps its TCP connection (libzmq's TTL runs only from a PING, so a worker stopped before its first
        PING, or right after a message of its own, is never dropped by it)."""
        for wid, since in list(self.suspects.items()):
            info = self.workers.get(wid)
            if info is None:
                del self.suspects[wid]
            elif peer_of(info.fd) != info.peer:
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
            if now - info.last_seen > silence_s:
                logger.warning("worker %s unreachable (no message for %.0f s, %d x METRICS_INTERVAL_S, while its "
                               "connection is up: its process is stopped or hung); its %d actor(s) wait for it",
                               wid, now - info.last_seen, SILENCE_METRICS_INTERVALS, len(info.busy))  # fmt: skip
                self._lose(info, now, f"no message for {now - info.last_seen:.0f} s while its connection is up")

    def _expire(self, now: float) -> None:
        """The periodic checks (every half heartbeat interval): the workers' connections and silence, the link grace
        of unreachable workers (their actors end after ``LINK_GRACE_S``), and the clients' heartbeats."""
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
