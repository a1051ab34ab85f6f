"""Running the monitor as its own process, for ``xparl start`` / ``xparl stop`` and for users.

``xparl start`` calls :func:`start_monitor_process` beside the master (passing the master's pid as
``parent_pid`` so the monitor exits with its cluster, even after a ``kill -9`` of the master), and ``xparl stop``
calls :func:`stop_monitor_process` with the pid it recorded. Processes are found by pid only, never by name.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from parl_remote.config import MONITOR_PORT_OFFSET, parse_address

logger = logging.getLogger(__name__)

def default_monitor_port(address: str) -> int:
    """The monitor's default port: the master's port + 100, as in PARL (``xparl start --port 8010`` -> 8110).

    Raises:
        ValueError: a malformed address, or a master port above 65435.
    """
    _, port = parse_address(address)
    if port + MONITOR_PORT_OFFSET > 65535:
        raise ValueError(f"master port {port} + {MONITOR_PORT_OFFSET} is not a valid port; pass the monitor port")
    return port + MONITOR_PORT_OFFSET


def start_monitor_process(
    address: str,
    port: int | None = None,
    host: str = "127.0.0.1",
    token: str | None = None,
    *,
    parent_pid: int | None = None,
    log_file: str | os.PathLike | None = None,
    pid_file: str | os.PathLike | None = None,
    refresh_s: float | None = None,
    python: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.Popen:
    """Start ``python -m parl_monitor`` in the background (its own session) and return the process.

    Args:
        address: ``"host:port"`` of the cluster's master.
        port: the monitor's port (default: master port + 100).
        host: the address to bind (default loopback; any other address requires ``token``).
        token: the cluster token (passed through the environment, never on the command line).
        parent_pid: exit when this process ends (``xparl start`` passes the master's pid).
        log_file: where the monitor's output goes (appended; default: discarded).
        pid_file: the monitor writes its pid there while it runs, and removes it on a clean exit.
        refresh_s: seconds between two page refreshes in the browser.
        python: the interpreter (default: this one).
        env: extra environment variables.

    Returns:
        The ``subprocess.Popen`` of the monitor. Use :func:`wait_monitor_ready` to know it serves.

    Raises:
        ValueError: a malformed address or port, or a non-loopback ``host`` without a ``token``.
    """
    from parl_monitor.app import is_loopback

    parse_address(address)
    port = default_monitor_port(address) if port is None else int(port)
    if not 0 < port < 65536:
        raise ValueError(f"monitor port must be in 1..65535, got {port}")
    if not is_loopback(host) and not token:
        raise ValueError(f"a monitor bound to {host} requires the cluster token (token=...), or bind 127.0.0.1")
    cmd = [python or sys.executable, "-m", "parl_monitor", "--address", address, "--port", str(port), "--host", host]
    if parent_pid is not None:
        cmd += ["--parent-pid", str(int(parent_pid))]
    if pid_file is not None:
        cmd += ["--pid-file", os.fspath(pid_file)]
    if refresh_s is not None:
        cmd += ["--refresh-s", str(float(refresh_s))]
    child_env = dict(os.environ)
    child_env.update(env or {})
    if token:
        child_env["PARL_MONITOR_TOKEN"] = token
    out = open(log_file, "ab") if log_file is not None else subprocess.DEVNULL  # noqa: SIM115
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=child_env,
                                start_new_session=True, close_fds=True)
    finally:
        if log_file is not None:
            out.close()
    logger.info("started the monitor (pid %s) on %s:%s for cluster %s", proc.pid, host, port, address)
    return proc


def wait_monitor_ready(host: str, port: int, timeout_s: float = 15.0, proc: subprocess.Popen | None = None) -> None:
    """Poll ``http://host:port/healthz`` until the monitor answers.

    Raises:
        RuntimeError: ``proc`` exited first (its exit code is in the message; see its log file).
        TimeoutError: no answer within ``timeout_s`` seconds.
    """
    connect_host = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host == "::" else host)
    if ":" in connect_host and not connect_host.startswith("["):
        connect_host = f"[{connect_host}]"
    url = f"http://{connect_host}:{port}/healthz"
    deadline = time.monotonic() + timeout_s
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the monitor exited with code {proc.returncode} before serving {url}; see its log "
                               "(e.g. the port is taken: pass another --monitor-port)")
        try:
            with urllib.request.urlopen(url, timeout=1.0) as resp:
                if json.loads(resp.read()).get("ok"):
                    return
        except (urllib.error.URLError, OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"the monitor did not answer at {url} within {timeout_s} s")
        time.sleep(0.1)


def is_monitor_process(pid: int) -> bool:
    """True when ``pid`` is a running ``python -m parl_monitor`` process (guards against a reused pid)."""
    import psutil

    try:
        cmdline = psutil.Process(int(pid)).cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False
    return "parl_monitor" in cmdline or any(part.endswith("parl_monitor/__main__.py") for part in cmdline)


def _terminate(proc: Any, timeout_s: float, timeout_error: type[Exception]) -> None:
    """SIGTERM, then SIGKILL after ``timeout_s`` (a ``subprocess.Popen`` or a ``psutil.Process``)."""
    proc.terminate()
    try:
        proc.wait(timeout_s)
    except timeout_error:
        proc.kill()
        proc.wait(timeout_s)


def stop_monitor_process(target: subprocess.Popen | int, timeout_s: float = 5.0) -> bool:
    """Stop a monitor started by :func:`start_monitor_process`: SIGTERM, then SIGKILL after ``timeout_s``.

    Args:
        target: the ``Popen`` returned by :func:`start_monitor_process`, or the monitor's pid (e.g. from a pid
            file). A pid that is not a running parl monitor is left alone.

    Returns:
        True when a monitor was stopped; False when there was none to stop (already gone, or the pid belongs to
        another program).
    """
    import psutil

    if isinstance(target, subprocess.Popen):
        if target.poll() is not None:
            return False
        _terminate(target, timeout_s, subprocess.TimeoutExpired)
        return True
    pid = int(target)
    if not is_monitor_process(pid):
        return False
    try:
        _terminate(psutil.Process(pid), timeout_s, psutil.TimeoutExpired)
    except psutil.NoSuchProcess:
        pass
    return True


def stop_monitor_from_pid_file(pid_file: str | os.PathLike, timeout_s: float = 5.0) -> bool:
    """Stop the monitor whose pid is in ``pid_file`` (written by ``--pid-file``) and remove the file.

    Returns:
        True when a monitor was stopped; False when the file is missing or its pid is not a running monitor.
    """
    try:
        with open(pid_file) as f:
            pid = int(f.read().strip())
    except (FileNotFoundError, ValueError):
        return False
    stopped = stop_monitor_process(pid, timeout_s)
    try:
        os.remove(pid_file)
    except FileNotFoundError:
        pass
    return stopped
