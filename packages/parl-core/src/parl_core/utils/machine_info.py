"""Machine queries (PARL's ``machine_info``): free TCP ports, the local IP address, GPU count.

Nothing runs at import; each function does its work when called.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess

__all__ = ["get_free_tcp_port", "get_gpu_count", "get_ip_address", "get_port_from_range", "is_gpu_available",
           "is_port_available", "is_xpu_available"]


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


def is_xpu_available() -> bool:
    """True when a Kunlun XPU is selected (``FLAGS_selected_xpus`` set) and paddle was built with XPU support.

    Only paddle runs on XPUs; without paddle installed this is ``False``.
    """
    if int(os.environ.get("FLAGS_selected_xpus", "-1").split(",")[0] or -1) < 0:
        return False
    try:
        import paddle
    except ImportError:
        return False
    return bool(paddle.is_compiled_with_xpu())


def get_port_from_range(start: int, end: int, host: str = "127.0.0.1", max_tries: int = 1000) -> int:
    """A free TCP port in ``[start, end]`` (both included), tried in random order.

    Raises:
        ValueError: ``start > end``.
        RuntimeError: no port of the range is free (after ``max_tries`` tries); widen the range.
    """
    if start > end:
        raise ValueError(f"get_port_from_range: start ({start}) must be <= end ({end})")
    candidates = list(range(int(start), int(end) + 1))
    random.shuffle(candidates)
    for port in candidates[:max_tries]:
        if is_port_available(port, host):
            return port
    raise RuntimeError(f"no free TCP port in [{start}, {end}] on {host}; widen the range or free a port")
