"""Starting and stopping the processes of a cluster on this machine (embedded clusters and ``xparl``).

``LocalCluster`` starts a master and a worker as child processes (``python -m parl_remote.server.master`` /
``parl_remote.server.worker``), each in a session of its own, so that a Ctrl-C meant for the client never
reaches them. Embedded clusters (``connect()`` without an address) watch their parent and end with it.
``xparl start`` starts them detached and records their pids in the
cluster's state folder (``<state dir>/clusters/<port>/``): ``master.pid``, ``worker.pid``, ``token``
(mode 0600) and ``info.json``; ``xparl stop`` signals exactly those pids.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import secrets
import signal
import subprocess
import sys
import time

from parl_remote import config
from parl_remote.server.events import events_file

logger = logging.getLogger(__name__)


def new_token() -> str:
    """A fresh random cluster token (32 bytes, URL-safe text)."""
    return secrets.token_urlsafe(32)


def write_private(path: pathlib.Path, text: str) -> None:
    """Writes ``text`` to a file readable by its owner only (mode 0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(path, 0o600)


class LocalCluster:
    """A master plus one worker on this machine.

    Args:
        cpu_num: CPUs of the worker (default: number of cores).
        host: interface the master binds and the jobs advertise (loopback by default).
        port: master port; 0 picks a free port (embedded clusters).
        token: cluster token (default: a new random one).
        parent_pid: the processes exit when this process ends (embedded clusters); None: detached.
        monitor_port: stored for the monitor.
        log_dir: where master.log / worker.log and the event log (``events-<port>.jsonl``: ``server.events``) go
            (default ``<state dir>/logs``).
        gpus: GPU ids the worker offers (``"0,1"``; ``""`` none); None: the worker detects them
            (``parl_remote.gpus.detect``).
        gpu_cluster: PARL's GPU cluster (``xparl start --gpu_cluster``): the master says so in its status and the
            worker takes GPU actors only (give it one job slot per GPU: ``parl_remote.gpus.local_job_slots``).
    """

    def __init__(
        self,
        cpu_num: int | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        parent_pid: int | None = None,
        monitor_port: int | None = None,
        log_dir: pathlib.Path | None = None,
        gpus: str | None = None,
        gpu_cluster: bool = False,
    ) -> None:
        if cpu_num is not None and int(cpu_num) < 1:
            raise ValueError(f"cpu_num must be >= 1, got {cpu_num}")
        self.cpu_num = int(cpu_num) if cpu_num else (os.cpu_count() or 1)
        self.host = host
        self.port = int(port)
        self.token = token or new_token()
        self.parent_pid = parent_pid
        self.monitor_port = monitor_port
        self.log_dir = log_dir or (config.state_dir() / "logs")
        self.gpus = gpus
        self.gpu_cluster = gpu_cluster
        self.master: subprocess.Popen | None = None
        self.worker: subprocess.Popen | None = None
        self.events_file: pathlib.Path | None = None  # the event log, once started

    @property
    def address(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"{host}:{self.port}"

    def _env(self) -> dict:
        return dict(os.environ, XPARL_TOKEN=self.token, XPARL="True")

    def start(self, timeout_s: float = 20.0, start_worker: bool = True) -> None:
        """Starts the master, waits for its port, then starts the worker (unless ``start_worker`` is False: a
        master restarted for a worker that survived its crash and rejoins by itself).

        Raises:
            RuntimeError: the master did not come up (its log file is named).
        """
        self.log_dir.mkdir(parents=True, exist_ok=True)
        tag = f"{self.port}" if self.port else f"embedded-{os.getpid()}"
        master_log = self.log_dir / f"master-{tag}.log"
        self.events_file = events_file(self.log_dir, tag)
        cmd = [sys.executable, "-m", "parl_remote.server.master", "--host", self.host, "--port", str(self.port),
               "--events-file", os.fspath(self.events_file)]  # fmt: skip
        if self.monitor_port:
            cmd += ["--monitor-port", str(self.monitor_port)]
        if self.parent_pid:
            cmd += ["--parent-pid", str(self.parent_pid)]
        if self.gpu_cluster:
            cmd += ["--gpu-cluster"]
        # Always a session of their own, embedded clusters too: a Ctrl-C in the terminal (or a notebook's
        # interrupt, which signals the kernel's process group) is meant for the client's current call, not
        # for the master, worker and actors (an embedded cluster still ends with its process: --parent-pid).
        with open(master_log, "ab") as log:
            self.master = subprocess.Popen(
                cmd, env=self._env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                start_new_session=True,
            )  # fmt: skip
        line = self._read_port_line(timeout_s)
        if not line:
            self.stop()
            raise RuntimeError(f"the xparl master did not start; see {master_log}")
        self.port = int(line.split("=", 1)[1])
        if start_worker:
            self._start_worker(tag)

    def _start_worker(self, tag: str) -> None:
        wcmd = [
            sys.executable,
            "-m",
            "parl_remote.server.worker",
            "--address",
            self.address,
            "--cpu-num",
            str(self.cpu_num),
            "--host",
            "127.0.0.1" if self.host in ("127.0.0.1", "localhost") else self._advertised_host(),
        ]
        if self.parent_pid:
            wcmd += ["--parent-pid", str(self.parent_pid)]
        if self.gpus is not None:
            wcmd += ["--gpu", self.gpus]
        if self.gpu_cluster:
            wcmd += ["--gpu-only"]
        with open(self.log_dir / f"worker-{tag}.log", "ab") as log:
            self.worker = subprocess.Popen(
                wcmd, env=self._env(), stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
            )

    def _advertised_host(self) -> str:
        if self.host in ("0.0.0.0", ""):
            import socket

            try:
                return socket.gethostbyname(socket.gethostname())
            except OSError:
                return "127.0.0.1"
        return self.host

    def _read_port_line(self, timeout_s: float) -> str:
        import selectors

        assert self.master is not None and self.master.stdout is not None  # noqa: S101 - internal invariant
        sel = selectors.DefaultSelector()
        sel.register(self.master.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout_s
        buf = b""
        while time.monotonic() < deadline and b"\n" not in buf:
            if self.master.poll() is not None:
                break
            if sel.select(timeout=0.1):
                chunk = os.read(self.master.stdout.fileno(), 4096)
                if not chunk:
                    break
                buf += chunk
        sel.close()
        text = buf.decode(errors="replace").strip()
        return text if text.startswith("XPARL_MASTER_PORT=") else ""

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stops the worker (which stops its jobs) and the master."""
        for proc in (self.worker, self.master):
            if proc is not None and proc.poll() is None:
                try:
                    proc.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + timeout_s
        for proc in (self.worker, self.master):
            if proc is None:
                continue
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()

    def pids(self) -> list[int]:
        return [p.pid for p in (self.master, self.worker) if p is not None]


# ------------------------------------------------------------------------------- pid-file state
def record(cluster: LocalCluster, cluster_dir: pathlib.Path, worker_pid: int | None = None) -> None:
    """Writes the pid files, the token (0600) and ``info.json`` of a started cluster (``worker_pid``: the local
    worker that survived a master restart, when ``cluster`` started none)."""
    worker_pid = cluster.worker.pid if cluster.worker is not None else worker_pid
    (cluster_dir / "master.pid").write_text(str(cluster.master.pid))
    (cluster_dir / "worker.pid").write_text(str(worker_pid))
    write_private(cluster_dir / "token", cluster.token)
    info = {"address": cluster.address, "port": cluster.port, "host": cluster.host, "cpu_num": cluster.cpu_num,
            "monitor_port": cluster.monitor_port, "started_at": time.time(),
            "pids": {"master": cluster.master.pid, "worker": worker_pid}}  # fmt: skip
    (cluster_dir / "info.json").write_text(json.dumps(info, indent=1))


def previous_run(cluster_dir: pathlib.Path) -> tuple[str | None, int | None]:
    """What a crashed cluster left in its folder: its token (None: none recorded) and the pid of its local worker
    if that still runs (it rejoins a master restarted on the same port with the same token)."""
    try:
        token = (cluster_dir / "token").read_text().strip() or None
    except OSError:
        token = None
    worker = cluster_dir / "worker.pid"
    return token, (_read_pid(worker) if _pid_file_alive(worker) else None)


def recorded_clusters() -> list[dict]:
    """The clusters recorded under the state folder whose master process still runs."""
    root = config.state_dir() / "clusters"
    found = []
    if not root.exists():
        return found
    for sub in sorted(root.iterdir()):
        info_path = sub / "info.json"
        if not info_path.exists():
            continue
        try:
            info = json.loads(info_path.read_text())
        except (OSError, ValueError):
            continue
        info["dir"] = str(sub)
        info["alive"] = _pid_file_alive(sub / "master.pid")
        found.append(info)
    return found


def _read_pid(path: pathlib.Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _pid_file_alive(path: pathlib.Path) -> bool:
    import psutil  # (imported on use: `xparl status` starts faster)
    pid = _read_pid(path)
    if pid is None:
        return False
    try:
        proc = psutil.Process(pid)
        cmdline = " ".join(proc.cmdline())
        return proc.status() != psutil.STATUS_ZOMBIE and ("parl_remote" in cmdline or "parl_monitor" in cmdline)
    except psutil.Error:
        return False


def reported_local_workers(cluster_dir: pathlib.Path) -> list[int]:
    """The pids of the workers that the cluster's master lists and that run on this machine as this cluster's
    workers (a worker that rejoined after a master restart may have no pid file here); [] if the master does
    not answer."""
    import psutil  # (imported on use: `xparl status` starts faster)

    from parl_remote.client.cluster_client import ClusterClient

    port = cluster_dir.name
    try:
        token = (cluster_dir / "token").read_text().strip()
        with ClusterClient(f"127.0.0.1:{port}", token=token, timeout_s=2.0) as client:
            workers = client.status()["workers"]
    except Exception:  # noqa: BLE001 - no master, no token, another version: nothing reported
        return []
    pids = []
    for worker in workers:
        try:
            cmdline = psutil.Process(worker["pid"]).cmdline()
        except psutil.Error:
            continue
        if "parl_remote.server.worker" in cmdline and any(arg.endswith(f":{port}") for arg in cmdline):
            pids.append(worker["pid"])
    return pids


def stop_recorded(cluster_dir: pathlib.Path, timeout_s: float = 5.0, extra_pids: list[int] = ()) -> list[int]:
    """Stops the processes named by the pid files of one cluster folder, and ``extra_pids`` (workers the master
    reported, ``reported_local_workers``); returns the pids signalled.

    Only a pid whose command line is an xparl process is signalled (a recycled pid is left alone).
    Workers are handled before the master.
    """
    import psutil  # (imported on use: `xparl status` starts faster)
    pid_files = (
        sorted(cluster_dir.glob("worker*.pid"))
        + sorted(cluster_dir.glob("monitor*.pid"))
        + [cluster_dir / "master.pid"]
    )
    procs = []
    for pid in extra_pids:
        try:
            proc = psutil.Process(pid)
            if "parl_remote" in " ".join(proc.cmdline()):
                proc.terminate()
                procs.append(proc)
        except psutil.Error:
            pass
    for path in pid_files:
        if not path.exists():
            continue
        if _pid_file_alive(path) and _read_pid(path) not in [p.pid for p in procs]:
            proc = psutil.Process(_read_pid(path))
            try:
                proc.terminate()
                procs.append(proc)
            except psutil.Error:
                pass
        path.unlink(missing_ok=True)
    _, alive = psutil.wait_procs(procs, timeout=timeout_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    (cluster_dir / "info.json").unlink(missing_ok=True)
    return [p.pid for p in procs]
