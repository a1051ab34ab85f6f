"""Two hosts on one machine for tests: a network namespace joined to this one by a veth pair.

``TwoHosts`` creates the namespace ``xpnc<pid>``, the pair (``xpa<pid>`` here, ``xpb<pid>`` in the namespace)
and the addresses ``10.213.<n>.1`` (this host) and ``10.213.<n>.2`` (the other host); ``cut()`` / ``restore()``
take this side's end of the link down and up. Processes started with ``popen_there`` also get their own UTS
namespace and hostname, so the cluster sees a different machine (no same-host shortcuts through /dev/shm or
abstract Unix sockets). ``close()`` deletes everything created, also after a failure half-way.
"""

from __future__ import annotations

import os
import shutil
import subprocess


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=10)


def unavailable_reason() -> str | None:
    """Why namespaces cannot be used here (a skip reason), or None when they can."""
    if not shutil.which("ip") or not shutil.which("unshare"):
        return "needs the `ip` (iproute2) and `unshare` (util-linux) commands"
    if os.geteuid() != 0:
        return "needs root to create network namespaces (ip netns add)"
    probe = f"xpprobe{os.getpid()}"
    result = _ip("netns", "add", probe, check=False)
    if result.returncode != 0:
        return f"the kernel refused a network namespace: {result.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def _free_subnet(first: int) -> int:
    """The first n from ``first`` (wrapping in 10..249) whose ``10.213.n.0/24`` no interface here uses."""
    used = _ip("-o", "-4", "addr", "show").stdout
    for k in range(240):
        n = 10 + (first - 10 + k) % 240
        if f" 10.213.{n}." not in used:
            return n
    raise RuntimeError("every 10.213.n.0/24 (n in 10..249) is in use here; delete stale test interfaces (ip link)")


class TwoHosts:
    """See the module docstring. Use as a context manager."""

    def __init__(self) -> None:
        pid = os.getpid()
        self.ns = f"xpnc{pid}"
        self.here_dev = f"xpa{pid}"[:15]
        self.there_dev = f"xpb{pid}"[:15]
        subnet = _free_subnet(10 + pid % 240)
        self.here = f"10.213.{subnet}.1"
        self.there = f"10.213.{subnet}.2"
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> TwoHosts:
        try:
            _ip("netns", "add", self.ns)
            _ip("link", "add", self.here_dev, "type", "veth", "peer", "name", self.there_dev, "netns", self.ns)
            _ip("addr", "add", f"{self.here}/24", "dev", self.here_dev)
            _ip("link", "set", self.here_dev, "up")
            _ip("netns", "exec", self.ns, "ip", "addr", "add", f"{self.there}/24", "dev", self.there_dev)
            _ip("netns", "exec", self.ns, "ip", "link", "set", self.there_dev, "up")
            _ip("netns", "exec", self.ns, "ip", "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def popen_there(self, argv: list[str], env: dict, **kwargs) -> subprocess.Popen:
        """Starts ``argv`` on the other host (its network namespace and a hostname of its own)."""
        script = 'hostname "$0" && exec "$@"'
        cmd = ["ip", "netns", "exec", self.ns, "unshare", "--uts", "sh", "-c", script, f"hostb-{os.getpid()}", *argv]
        proc = subprocess.Popen(cmd, env=env, **kwargs)
        self.procs.append(proc)
        return proc

    def cut(self) -> None:
        """Takes the link down (this host's end)."""
        _ip("link", "set", self.here_dev, "down")

    def restore(self) -> None:
        """Brings the link back up."""
        _ip("link", "set", self.here_dev, "up")

    def close(self) -> None:
        """Stops the processes started there, deletes the veth pair and the namespace. Idempotent."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.procs.clear()
        _ip("link", "del", self.here_dev, check=False)  # deletes both ends
        _ip("netns", "del", self.ns, check=False)  # kills nothing: processes left inside keep it alive
