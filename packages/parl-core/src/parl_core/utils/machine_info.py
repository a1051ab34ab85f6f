"""Machine queries (PARL's ``machine_info``): free TCP ports, the local IP address, GPU count.

Nothing runs at import; each function does its work when called.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess

__all__ = ["get_free_tcp_port", "get_gpu_count", "get_ip_address", "is_gpu_available", "is_port_available"]


def get_free_tcp_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that is free on ``host`` now (the OS picks it; another process may take it later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def is_port_available(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on ``host:port`` and it can be bound.

    (PARL returned the raw ``connect_ex`` code; this returns a plain bool.)
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, int(port)))
        except OSError:
            return False
    return True


def get_ip_address() -> str:
    """The address other machines would reach this one at, without sending any packet.

    Uses the source address the OS would choose for an outgoing UDP socket (no data is sent); falls back
    to ``127.0.0.1`` when the machine has no route.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("10.255.255.255", 1))
            return str(sock.getsockname()[0])
        except OSError:
            return "127.0.0.1"


def get_gpu_count() -> int:
    """Number of visible NVIDIA GPUs: from ``CUDA_VISIBLE_DEVICES`` when set, else ``nvidia-smi -L``; 0 if none."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def is_gpu_available() -> bool:
    """True when at least one NVIDIA GPU is visible (see :func:`get_gpu_count`)."""
    return get_gpu_count() > 0
