"""A real local Ray cluster for tests: ``ray start --head --block`` in a temporary folder, on free ports.

The head runs in a session of its own as our child (``--block`` keeps the ``ray start`` process as the parent
of every Ray process); ``stop()`` ends exactly that process tree, by the pids psutil lists under our child —
never by process name (``ray stop`` kills every Ray process of the machine). Token authentication is on, with
a token made for the test session and passed through ``RAY_AUTH_TOKEN`` (``~/.ray`` is left alone).
"""

from __future__ import annotations

import os
import pathlib
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import psutil


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RayHead:
    """One Ray head node. ``env`` holds the variables a driver needs (auth); ``client_address`` is Ray Client's
    ``ray://127.0.0.1:PORT``; ``gcs_address`` is what ``RAY_ADDRESS`` takes."""

    def __init__(self, num_cpus: int = 3, num_gpus: int = 0, ready_timeout_s: float = 90.0) -> None:
        self.num_cpus, self.num_gpus, self.ready_timeout_s = num_cpus, num_gpus, ready_timeout_s
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="parl-ray-"))
        self.gcs_port, self.client_port = free_port(), free_port()
        # the process's own token when it has one (Ray reads it once, at import), else a new one
        token = os.environ.get("RAY_AUTH_TOKEN") or secrets.token_hex(16)
        self.env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, "RAY_USAGE_STATS_ENABLED": "0"}
        self.proc: subprocess.Popen | None = None
        self.pids: list[int] = []

    @property
    def client_address(self) -> str:
        return f"ray://127.0.0.1:{self.client_port}"

    @property
    def gcs_address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    def start(self) -> RayHead:
        ray_cli = pathlib.Path(sys.executable).parent / "ray"
        self.log = open(self.tmp / "head.log", "wb")
        self.proc = subprocess.Popen(
            [str(ray_cli), "start", "--head", "--block", f"--port={self.gcs_port}",
             f"--ray-client-server-port={self.client_port}", f"--num-cpus={self.num_cpus}",
             f"--num-gpus={self.num_gpus}", f"--temp-dir={self.tmp}", "--include-dashboard=false",
             "--node-ip-address=127.0.0.1", "--disable-usage-stats"],
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **self.env}, start_new_session=True,
        )
        deadline = time.monotonic() + self.ready_timeout_s
        while True:  # ready when Ray Client's port accepts connections (it starts last)
            if self.proc.poll() is not None:
                raise RuntimeError(f"ray start exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.client_port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    tail = self.log_tail()
                    self.stop()
                    raise RuntimeError(f"the Ray head did not start within {self.ready_timeout_s} s: {tail}") from None
                time.sleep(0.1)
        return self

    def log_tail(self) -> str:
        return (self.tmp / "head.log").read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        """Ends the head and every process under it (our child's tree, by pid), and removes its folder."""
        if self.proc is None:
            return
        try:
            tree = [psutil.Process(self.proc.pid), *psutil.Process(self.proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            tree = []
        self.proc.send_signal(signal.SIGTERM)  # --block: ray start ends its children, then itself
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            pass
        gone, alive = psutil.wait_procs(tree, timeout=10)
        for p in alive:
            p.kill()
        psutil.wait_procs(alive, timeout=5)
        self.proc = None
        self.log.close()
        if not os.environ.get("PARL_TEST_KEEP_RAY_LOGS"):
            shutil.rmtree(self.tmp, ignore_errors=True)
