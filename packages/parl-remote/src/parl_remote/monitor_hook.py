"""The hook through which ``xparl start`` / ``xparl stop`` run the web monitor (package ``parl-monitor``).

The monitor is optional: when ``parl_monitor`` is not installed, ``xparl start`` says so and goes on.
"""

from __future__ import annotations

import importlib.util
import logging
import pathlib

logger = logging.getLogger(__name__)

MONITOR_PORT_OFFSET = 100


def monitor_available() -> bool:
    """True when the ``parl_monitor`` package can be imported."""
    return importlib.util.find_spec("parl_monitor") is not None


def start_monitor(address: str, port: int, token: str, cluster_dir: pathlib.Path, master_pid: int) -> int | None:
    """Starts the monitor of a cluster in the background and records its pid in ``monitor.pid``.

    Args:
        address: ``host:port`` of the master.
        port: the monitor's HTTP port (PARL's default: master port + 100).
        token: the cluster token (passed through the environment).
        cluster_dir: the cluster's state folder (pid file, log file).
        master_pid: the monitor exits when this process ends.

    Returns:
        The monitor's pid, or None when ``parl_monitor`` is not installed or failed to start.
    """
    if not monitor_available():
        return None
    try:
        from parl_monitor.process import start_monitor_process
    except ImportError:
        logger.warning("parl_monitor is installed but has no start_monitor_process; the monitor is not started")
        return None
    proc = start_monitor_process(
        address,
        port,
        token=token,
        parent_pid=master_pid,
        log_file=cluster_dir / "monitor.log",
        pid_file=cluster_dir / "monitor-running.pid",
    )
    (cluster_dir / "monitor.pid").write_text(str(proc.pid))
    return proc.pid
