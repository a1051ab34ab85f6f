"""Tunable intervals, timeouts and on-disk locations of the remote runtime.

Every value can be overridden through an environment variable of the same name prefixed with
``XPARL_`` (for example ``XPARL_HEARTBEAT_INTERVAL_S=0.2``); the variables are read when a value is
needed, never at import. Units are in the names (``_s`` seconds, ``_ms`` milliseconds, ``_mb`` MiB).
"""

from __future__ import annotations

import math
import os
import pathlib

# name -> default; read through ``get``.
DEFAULTS: dict[str, float] = {
    # worker <-> master liveness: ZMTP heartbeats (PINGs) every HEARTBEAT_INTERVAL_S, handled inside libzmq on both
    # sides; a side silent for HEARTBEAT_INTERVAL_S x HEARTBEAT_LIVENESS loses its connection (the master then lists
    # the worker's actors "unreachable"; the worker reconnects and registers again)
    "HEARTBEAT_INTERVAL_S": 0.5,
    "HEARTBEAT_LIVENESS": 6,
    # how often a worker sends the master its metrics (memory, load; what xparl status and the monitor show) as a
    # message; liveness does not depend on it. Each costs the master about 0.25 ms (1,000 workers: 2.5 % of a core)
    "METRICS_INTERVAL_S": 10.0,
    # the master reuses a built status snapshot (xparl status --json, the monitor) for at most this long while only
    # heartbeat metrics change; any change of workers, jobs, clients or actors rebuilds it at the next request
    "STATUS_CACHE_S": 1.0,
    # client -> master heartbeats; a client silent for CLIENT_TIMEOUT_S (and LINK_GRACE_S) loses its actors.
    # Generous, because a client's main thread may hold the GIL inside one long C call; a client that dies is
    # detected much sooner by its jobs (their TCP connection closes).
    "CLIENT_HEARTBEAT_INTERVAL_S": 1.0,
    "CLIENT_TIMEOUT_S": 60.0,
    # network cuts: a link between hosts that is down for less than this costs latency, not actors. The
    # client <-> job TCP connections outlive such a cut (unacknowledged data and keepalive probes are given
    # up only after it: TCP_USER_TIMEOUT), and the master keeps the actors of a worker it cannot hear
    # from (listed "unreachable") until it has been silent this long; then they end with ActorDiedError.
    "LINK_GRACE_S": 60.0,
    # the longest wait between TCP retransmissions on client <-> job connections (Linux >= 6.15, whose floor
    # is 1000): what was sent during a cut goes out at most this long after the link is back (the kernel's
    # default back-off doubles up to 120 s)
    "LINK_RETRANSMIT_MAX_MS": 1000,
    # client <-> job connections: TCP keepalive probes, run by the kernel, so a CPU-bound actor holding
    # the GIL is never declared dead; the first probe after IDLE quiet seconds, then one per INTERVAL, and
    # a host that answers none is lost once LINK_GRACE_S has passed (at least COUNT probes).
    # (ZMTP heartbeats, ZMQ_HEARTBEAT_IVL, halved the call rate in measurements, so they are not used.)
    "TCP_KEEPALIVE_IDLE_S": 5,
    "TCP_KEEPALIVE_INTERVAL_S": 1,
    "TCP_KEEPALIVE_COUNT": 3,
    # a connection to a job that stays down this long means the job is gone
    "ACTOR_RECONNECT_GRACE_S": 0.8,
    # a job whose client stays disconnected this long exits and frees its CPU
    "CLIENT_GONE_GRACE_S": 1.0,
    # how long a client waits for a free CPU before ResourceError
    "RESOURCE_WAIT_S": 30.0,
    # how long a request to the master may take before the master is declared unreachable
    "MASTER_TIMEOUT_S": 5.0,
    # how often the worker checks its jobs (exit, memory)
    "WORKER_POLL_S": 0.1,
    # the niceness a job process adds to its own (0-19), as Ray's workers do (15): where actors and the
    # client share CPUs, the client (an RL learner, typically) runs first; actors among themselves are equal.
    # On 2 cores, IMPALA's learner with 2 actors consumed 0.74-0.93x the frames/s of the same loop on plain Ray
    # actors with jobs at 0, as much or more at 15 (benchmarks/remote/bench_engines.py --impala-only)
    "JOB_NICENESS": 15,
    # master restart: a worker that lost its master retries with back-off up to this interval
    "RECONNECT_MAX_INTERVAL_S": 2.0,
    # same-host buffers at least this large travel through /dev/shm instead of TCP (wire/shm.py)
    "SHM_MIN_BYTES": 1 << 20,
    # per connection and side: the most bytes of reusable, pre-faulted shared-memory arenas (shm_arena.Channel);
    # beyond it large buffers travel through one-off /dev/shm files (slower: fresh pages each time)
    "SHM_ARENA_MAX_BYTES": 1 << 30,
    # seconds between two sweeps of /dev/shm files whose process ended (a killed job's arenas), by every worker
    # and by the master; a worker also sweeps when it starts, the master when it loses a worker
    "SHM_SWEEP_S": 10.0,
    # same-host client <-> job traffic over an abstract Unix stream socket instead of zmq (transport/unix.py);
    # 0 keeps it on the job's zmq ipc:// endpoint
    "UNIX_STREAM": 1,
    # how many log files of ended actors a worker keeps (older ones are deleted)
    "LOGS_KEPT": 200,
    # how many ended actors the master keeps listed in status()
    "DEAD_ACTORS_KEPT": 100,
}


def get(name: str) -> float:
    """Returns the value of a runtime setting, honouring ``XPARL_<name>`` in the environment.

    Args:
        name: a key of ``DEFAULTS`` (e.g. ``"HEARTBEAT_INTERVAL_S"``).

    Returns:
        The setting as a float.

    Raises:
        KeyError: for an unknown name.
        ValueError: when the environment variable is not a number.
    """
    default = DEFAULTS[name]
    raw = os.environ.get("XPARL_" + name)
    if raw is None or raw == "":
        return float(default)
    try:
        return float(raw)
    except ValueError as exc:
        raise ValueError(f"XPARL_{name}={raw!r} is not a number; unset it or give a value such as {default}") from exc


def link_grace_s() -> float:
    """``LINK_GRACE_S``, the longest network cut that costs no actor (seconds, > 0).

    Raises:
        ValueError: ``XPARL_LINK_GRACE_S`` is not a positive number.
    """
    grace = get("LINK_GRACE_S")
    if not grace > 0:
        raise ValueError(f"XPARL_LINK_GRACE_S must be a positive number of seconds (e.g. 60), got {grace}")
    return grace


def set_keepalive(sock: object) -> None:
    """Sets a zmq TCP socket's liveness options before it connects/binds: keepalive probes (``TCP_KEEPALIVE_*``)
    that go on until ``LINK_GRACE_S``, and ``TCP_USER_TIMEOUT`` (``ZMQ_TCP_MAXRT``) = ``LINK_GRACE_S``, so
    neither an idle connection nor one with data in flight is given up during a shorter network cut."""
    import zmq

    grace_s = link_grace_s()
    idle_s = max(1, int(get("TCP_KEEPALIVE_IDLE_S")))
    interval_s = max(1, int(get("TCP_KEEPALIVE_INTERVAL_S")))
    # Linux caps the count at 127; past the grace TCP_USER_TIMEOUT ends the connection anyway
    count = min(127, max(1, int(get("TCP_KEEPALIVE_COUNT")), math.ceil((grace_s - idle_s) / interval_s) + 1))
    sock.setsockopt(zmq.TCP_KEEPALIVE, 1)
    sock.setsockopt(zmq.TCP_KEEPALIVE_IDLE, idle_s)
    sock.setsockopt(zmq.TCP_KEEPALIVE_INTVL, interval_s)
    sock.setsockopt(zmq.TCP_KEEPALIVE_CNT, count)
    sock.setsockopt(zmq.TCP_MAXRT, max(1, int(grace_s * 1000)))


def state_dir() -> pathlib.Path:
    """The per-user directory for pid files, tokens, logs and the file cache.

    ``$XPARL_HOME`` if set (tests point it at a temporary directory), else ``~/.parl``.
    The directory is created with mode 0700.
    """
    root = os.environ.get("XPARL_HOME")
    path = pathlib.Path(root) if root else pathlib.Path.home() / ".parl"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def cluster_dir(port: int) -> pathlib.Path:
    """The state directory of the cluster whose master listens on ``port`` (pid files, token)."""
    path = state_dir() / "clusters" / str(int(port))
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


MONITOR_PORT_OFFSET = 100  # the web monitor's default HTTP port is the master's port + this (as in PARL)


def parse_address(address: str) -> tuple[str, int]:
    """Splits ``"host:port"`` (``"[::1]:8010"`` too; an empty host is ``127.0.0.1``).

    Raises:
        ValueError: not of the form ``host:port`` with a port in 1..65535.
    """
    host, sep, port = address.rpartition(":") if isinstance(address, str) else ("", "", "")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"address must be 'host:port' (e.g. 'localhost:8010'), got {address!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def address_towards(host: str, port: int) -> str:
    """This machine's address on the route to ``host``: the source address the kernel picks to reach it (a UDP
    socket's ``connect`` sends nothing). ``127.0.0.1`` for a master on loopback, the LAN address for one on another
    machine; ``127.0.0.1`` too when no route is found (the name does not resolve, no network)."""
    import socket

    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            sock.connect((host, port))
            return sock.getsockname()[0]
    except OSError:
        return "127.0.0.1"


def log_level(default: str) -> str:
    """The log level of the cluster's processes: ``DEBUG`` when ``XPARL_DEBUG`` is set (``xparl start --debug``,
    PARL's flag), else ``default`` (``"INFO"`` / ``"WARNING"``)."""
    return "DEBUG" if os.environ.get("XPARL_DEBUG") else default
