"""Housekeeping of the server processes, apart from their message loops.

- ``ShmSweeps``: when the master removes the ``/dev/shm`` files of ended processes (``wire.shm.sweep``): every
  ``SHM_SWEEP_S``, and every second for a while after a worker was lost (its jobs may take a moment to die and be
  reaped; a killed worker's jobs leave files that no worker of that host sweeps).
- The file descriptors of the master's worker connections (zmq's ``SRCFD``): ``keepalive`` (kernel keepalive
  probes and ``TCP_USER_TIMEOUT`` on one connection), ``peer_of`` (its remote address), ``socket_of``.
- ``raise_fd_limit``: the master's soft limit of open files raised to the hard limit.
- ``exit_with_parent``: the parent watch of the master and the worker processes (``--parent-pid``: an embedded
  cluster ends with the process that started it).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from typing import Any

from parl_remote import config
from parl_remote.wire import shm

logger = logging.getLogger(__name__)

# after a worker was lost, the master sweeps /dev/shm every second for this long
SWEEP_AFTER_LOSS_S = 10.0


class ShmSweeps:
    """When the master sweeps ``/dev/shm`` (``run`` at every expiry tick; ``worker_lost`` when a worker is dropped)."""

    def __init__(self) -> None:
        self.next_at = 0.0  # time.monotonic() of the next sweep of dead processes' /dev/shm files
        self.lost_at = -1e9  # time.monotonic() when a worker was last dropped (sweeps follow it closely)

    def worker_lost(self, now: float) -> None:
        """A worker was dropped: if its jobs died with it, their files are swept at the next tick."""
        self.next_at, self.lost_at = 0.0, now

    def run(self, now: float) -> int:
        """Sweeps when one is due; returns how many files were removed."""
        if now < self.next_at:
            return 0
        soon = now - self.lost_at < SWEEP_AFTER_LOSS_S
        self.next_at = now + (1.0 if soon else config.get("SHM_SWEEP_S"))
        removed = shm.sweep()
        if removed:
            logger.info("removed %d /dev/shm files of ended processes", removed)
        return removed


def keepalive(fd: int) -> None:
    """Kernel TCP keepalive probes on a worker's connection (1 s idle, 1 s apart) and ``TCP_USER_TIMEOUT`` = the
    heartbeat window (instead of the sockets' ``LINK_GRACE_S``, ``config.apply_tcp_options``): a cut link is ended
    after about a window, whether or not data waits unacknowledged (which stops keepalive probes). libzmq's TTL alone
    does not end it when the worker's last frame before the cut was a message, not a PING (any message cancels the
    TTL's timer; only a PING starts it). On that connection only: a client's survives a cut up to ``LINK_GRACE_S``."""
    window_s = config.get("HEARTBEAT_INTERVAL_S") * config.get("HEARTBEAT_LIVENESS")
    try:
        with socket_of(fd) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, max(1, round(window_s)))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, max(1, int(window_s * 1000)))
    except (OSError, AttributeError) as exc:  # (not a TCP socket, or a system without these options)
        logger.debug("no keepalive on fd %d: %s", fd, exc)


def peer_of(fd: int) -> tuple | None:
    """The remote address of the connection on file descriptor ``fd`` (``getpeername``), or None when ``fd`` is closed
    or carries no connected socket."""
    if fd < 0:
        return None
    try:
        with socket_of(fd) as sock:
            return tuple(sock.getpeername())
    except OSError:
        return None


def socket_of(fd: int) -> socket.socket:
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


def exit_with_parent(owner: Any, parent_pid: int, reparented: bool = False) -> threading.Thread:
    """Starts a daemon thread that checks every 0.5 s, while ``owner.running``, that process ``parent_pid`` still
    runs; once it has ended (or, with ``reparented``, once this process's parent is another one), it sets
    ``owner.running`` False and sends this process SIGTERM, so that its loop stops as at ``xparl stop``.

    The worker passes ``reparented``: its parent is the process that started it. The master does not: it may be
    started through another program (``ip netns exec`` in the tests) with the pid of the process to outlive."""
    import psutil

    def watch() -> None:
        while owner.running:
            if not psutil.pid_exists(parent_pid) or (reparented and os.getppid() != parent_pid):
                owner.running = False
                os.kill(os.getpid(), signal.SIGTERM)
                return
            time.sleep(0.5)

    thread = threading.Thread(target=watch, daemon=True, name="xparl-parent-watch")
    thread.start()
    return thread
