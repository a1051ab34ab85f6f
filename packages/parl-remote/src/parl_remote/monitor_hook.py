"""How ``xparl start`` runs the web monitor (package ``parl-monitor``): as a process, by its module name.

parl-remote never imports parl-monitor: the monitor is optional, and when ``parl_monitor`` is not installed
``xparl start`` says so in one line and goes on. The monitor process reads the cluster only through
``ClusterClient`` (the cluster status snapshot: ``Master.status``).
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys


def monitor_available() -> bool:
    """True when the ``parl_monitor`` package is installed (found without importing it)."""
    return importlib.util.find_spec("parl_monitor") is not None


def start_monitor(address: str, port: int, token: str, cluster_dir: pathlib.Path, master_pid: int,
                  events_file: pathlib.Path | None = None) -> int | None:
    """Starts ``python -m parl_monitor`` for a cluster in the background and records its pid in ``monitor.pid``.

    Args:
        address: ``host:port`` of the master.
        port: the monitor's HTTP port (PARL's default: master port + ``config.MONITOR_PORT_OFFSET``).
        token: the cluster token (passed through the environment, never on the command line).
        cluster_dir: the cluster's state folder (pid files, ``monitor.log``).
        master_pid: the monitor exits when this process ends.
        events_file: the cluster's event log, shown on the monitor's events page (None: no page).

    Returns:
        The monitor's pid, or None when ``parl_monitor`` is not installed.
    """
    if not monitor_available():
        return None
    cmd = [
        sys.executable, "-m", "parl_monitor", "--address", address, "--port", str(port), "--host", "127.0.0.1",
        "--parent-pid", str(master_pid), "--pid-file", os.fspath(cluster_dir / "monitor-running.pid"),
    ]  # fmt: skip
    if events_file is not None:
        cmd += ["--events-file", os.fspath(events_file)]
    env = {**os.environ, "PARL_MONITOR_TOKEN": token}
    with open(cluster_dir / "monitor.log", "ab") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, close_fds=True)  # fmt: skip
    (cluster_dir / "monitor.pid").write_text(str(proc.pid))
    return proc.pid
