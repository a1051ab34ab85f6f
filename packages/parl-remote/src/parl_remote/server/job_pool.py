"""A worker's pool of job processes: the zygote that forks them warm, spawning, reaping and describing
their ends, memory limits, and the logs of ended actors. A mixin of ``Worker`` (``worker.py``).
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field

import psutil

from parl_remote import config
from parl_remote.server.exits import describe_exit, max_memory_cause
from parl_remote.wire import shm
from parl_remote.wire.protocol import MsgType

logger = logging.getLogger(__name__)


@dataclass
class JobProcess:
    """A job process this worker started (forked by the zygote, or a ``Popen`` as a fallback)."""

    job_id: str
    popen: subprocess.Popen | None = None
    pid: int | None = None
    returncode: int | None = None
    address: str | None = None
    actor_id: str | None = None
    client_id: str | None = None
    class_name: str = ""
    max_memory_mb: float | None = None
    base_rss_mb: float = 0.0  # its resident memory when the actor was assigned (max_memory counts from here)
    gpus: list = field(default_factory=list)  # GPU ids granted to its actor
    kill_cause: str | None = None
    started_at: float = field(default_factory=time.time)

    def poll(self) -> int | None:
        """The exit status (negative: killed by that signal), or None while running."""
        if self.popen is not None:
            return self.popen.poll()
        return self.returncode

    def alive(self) -> bool:
        """False when the job process has ended or is being killed, even if its exit was not reported yet: gone, a
        zombie, or a SIGKILL pending (``/proc/<pid>/status``: a process killed on a busy machine may not have run its
        exit yet when its worker hands it out)."""
        if self.poll() is not None:
            return False
        if not self.pid:
            return True
        try:
            with open(f"/proc/{self.pid}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
        except FileNotFoundError:
            return False
        except OSError:  # no procfs: psutil's view
            try:
                return psutil.Process(self.pid).status() != psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                return False
        pending = int(fields.get("SigPnd", "0"), 16) | int(fields.get("ShdPnd", "0"), 16)
        return fields.get("State", "").strip()[:1] not in ("Z", "X") and not pending & (1 << (signal.SIGKILL - 1))

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.popen is not None:
            self.popen.send_signal(sig)
        elif self.pid is not None and self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass


class JobPool:
    """The job half of ``Worker`` (it uses the worker's ``jobs``, ``zygote``, ``token``, ``host`` and folders)."""

    def _start_zygote(self) -> None:
        env = dict(os.environ, XPARL="True", XPARL_TOKEN=self.token)
        try:
            self.zygote = subprocess.Popen(
                [sys.executable, "-m", "parl_remote.server.zygote"], env=env, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=self.boot_log,
            )  # fmt: skip
        except OSError:
            logger.warning("cannot start the job fork server; jobs start as new interpreters", exc_info=True)
            self.zygote = None
        self.zygote_buf = b""

    def _zygote_alive(self) -> bool:
        return self.zygote is not None and self.zygote.poll() is None

    def _on_zygote_output(self) -> None:
        chunk = os.read(self.zygote.stdout.fileno(), 65536)
        if not chunk:
            return
        self.zygote_buf += chunk
        while b"\n" in self.zygote_buf:
            line, self.zygote_buf = self.zygote_buf.split(b"\n", 1)
            event = json.loads(line)
            if event["event"] == "spawned":
                job = self.jobs.get(event["job_id"])
                if job is not None:
                    job.pid = event["pid"]
            elif event["event"] == "exit":
                for job in self.jobs.values():
                    if job.pid == event["pid"] and job.popen is None:
                        job.returncode = event["returncode"]

    def _spawn_job(self) -> None:
        job_id = "j-" + uuid.uuid4().hex[:12]
        argv = [
            "--worker-address", self.job_address,
            "--job-id", job_id,
            "--host", self.host,
            "--log-dir", str(self.log_dir),
            "--cache-dir", str(self.cache_dir),
        ]  # fmt: skip
        if self._zygote_alive():
            request = {"cmd": "spawn", "job_id": job_id, "argv": [*argv, "--worker-pid", str(self.zygote.pid)]}
            try:
                self.zygote.stdin.write((json.dumps(request) + "\n").encode())
                self.zygote.stdin.flush()
                self.jobs[job_id] = JobProcess(job_id)
                return
            except OSError:
                logger.warning("the job fork server is gone; jobs start as new interpreters")
        env = dict(os.environ, XPARL="True", XPARL_TOKEN=self.token)
        cmd = [sys.executable, "-m", "parl_remote.server.job", *argv, "--worker-pid", str(os.getpid())]
        popen = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=self.boot_log, stderr=self.boot_log)
        self.jobs[job_id] = JobProcess(job_id, popen=popen, pid=popen.pid)

    def _check_jobs(self) -> None:
        if self.zygote is not None and self.zygote.poll() is not None:
            for job in self.jobs.values():  # the zygote's children died with it
                if job.popen is None and job.returncode is None:
                    job.returncode = -signal.SIGKILL
            self.zygote = None
        for job in list(self.jobs.values()):
            code = job.poll()
            if code is not None:
                del self.jobs[job.job_id]
                cause = job.kill_cause or describe_exit(code)
                if job.actor_id is None and code != 0:
                    logger.warning("idle job %s ended: %s (see %s)", job.job_id, cause, self.log_dir / "jobs.log")
                self._send_master(
                    MsgType.JOB_ENDED,
                    {"worker_id": self.worker_id, "job_id": job.job_id, "actor_id": job.actor_id, "cause": cause},
                )
                if job.actor_id is not None:
                    self.ended_logs += 1
            elif job.actor_id is not None and job.max_memory_mb:
                try:
                    rss_mb = psutil.Process(job.pid).memory_info().rss / 2**20 if job.pid else 0.0
                except psutil.Error:
                    continue
                if rss_mb > job.max_memory_mb + job.base_rss_mb:
                    job.kill_cause = max_memory_cause(job.max_memory_mb, rss_mb, job.base_rss_mb)
                    job.kill()
        while len(self.jobs) < self.cpu_num and self.running:
            self._spawn_job()

    # --------------------------------------------------------------------------------------- loop
    def _prune_logs(self) -> None:
        """Keeps the newest ``LOGS_KEPT`` actor logs of ended actors (PARL never removed any)."""
        alive = {f"{j.actor_id}.log" for j in self.jobs.values() if j.actor_id}
        logs = [p for p in self.log_dir.glob("a-*.log") if p.name not in alive]
        keep = int(config.get("LOGS_KEPT"))
        if len(logs) <= keep:
            return
        logs.sort(key=lambda p: p.stat().st_mtime)
        for path in logs[: len(logs) - keep]:
            path.unlink(missing_ok=True)

    def _stop_jobs(self) -> None:
        for job in self.jobs.values():
            if job.poll() is None:
                job.kill(signal.SIGTERM)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and any(j.poll() is None for j in self.jobs.values()):
            if self._zygote_alive() and self.zygote.stdout in select.select([self.zygote.stdout], [], [], 0.05)[0]:
                self._on_zygote_output()
            else:
                time.sleep(0.02)
        for job in self.jobs.values():
            if job.poll() is None:
                job.kill()
        if self.zygote is not None:
            self.zygote.stdin.close()
            try:
                self.zygote.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.zygote.kill()
                self.zygote.wait()
            self.zygote.stdout.close()
        for job in self.jobs.values():
            if job.popen is not None:
                job.popen.wait()
        shm.sweep()  # the shared-memory arenas of jobs that were killed before they could unlink them
