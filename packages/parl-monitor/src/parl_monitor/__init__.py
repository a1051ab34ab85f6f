"""parl_monitor: the web monitor of an xparl cluster (Flask).

Public API:
    create_app(config=None) -> flask.Flask        the application factory
    MonitorState                                   what ``app.extensions["parl_monitor"]`` holds
    start_monitor_process(address, port, host, token, ...) -> subprocess.Popen
    wait_monitor_ready(host, port, timeout_s, proc)
    stop_monitor_process(popen_or_pid, timeout_s) -> bool
    stop_monitor_from_pid_file(pid_file, timeout_s) -> bool
    default_monitor_port(address) -> int           master port + 100
"""

from parl_monitor.app import create_app
from parl_monitor.process import (
    default_monitor_port,
    start_monitor_process,
    stop_monitor_from_pid_file,
    stop_monitor_process,
    wait_monitor_ready,
)
from parl_monitor.state import ClusterUnavailableError, MonitorState

__version__ = "3.0.0"

__all__ = [
    "ClusterUnavailableError",
    "MonitorState",
    "create_app",
    "default_monitor_port",
    "start_monitor_process",
    "stop_monitor_from_pid_file",
    "stop_monitor_process",
    "wait_monitor_ready",
]
