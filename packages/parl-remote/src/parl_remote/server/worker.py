"""The worker process: one per machine; keeps a warm pool of job processes for its CPUs.

A worker with ``cpu_num`` CPUs keeps ``cpu_num`` job processes: idle ones wait (already started,
imports done) so creating an actor costs milliseconds; a busy one hosts an actor. When a job ends,
the worker tells the master why (exit code or signal, memory limit, kill request) and starts a fresh
one. It checks the resident memory of busy jobs against their ``max_memory`` with psutil, serves the
actors' log files to the master, and keeps its connection to the master alive with ZMTP heartbeats handled in
libzmq (no message per heartbeat: ``zmq_io.set_zmtp_heartbeat``), sending its metrics every ``METRICS_INTERVAL_S``.
When the master is lost (its connection closed, or silent past the heartbeat window) it keeps its jobs running;
libzmq reconnects (with back-off) and, the moment a master answers on the same address again, the worker registers
again with its jobs (a socket monitor reports the new connection).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import time
import uuid

import psutil
import zmq

from parl_remote import __version__, config, gpus
from parl_remote.server.housekeeping import exit_with_parent
from parl_remote.server.job_pool import JobPool, JobProcess
from parl_remote.transport import zmq_io
from parl_remote.wire import protocol, shm
from parl_remote.wire.protocol import Message, MsgType

logger = logging.getLogger(__name__)
LOG_PRUNE_INTERVAL_S = 10.0  # how often ended actors' logs beyond LOGS_KEPT are deleted (also every 50 ended)


class Worker(JobPool):
    """See the module docstring. Built and run by ``main``.

    Args:
        master_address: ``host:port`` of the master.
        cpu_num: number of job slots (default: the number of cores).
        host: the address jobs bind and advertise to clients (loopback by default).
        token: the cluster token.
        gpus: the GPU ids it offers to ``n_gpu`` actors (see ``parl_remote.gpus``); each granted actor also
            takes one of the ``cpu_num`` job slots (``xparl start --gpu_cluster`` sets ``cpu_num`` to the number
            of GPUs, PARL's rule: ``parl_remote.gpus.local_job_slots``).
        gpu_only: its jobs take GPU actors only (PARL's GPU cluster: ``xparl start --gpu_cluster``, or
            ``xparl connect --gpu`` to such a cluster); ignored without GPUs.
    """

    def __init__(self, master_address: str, cpu_num: int | None, host: str, token: str,
                 gpus: list[str] | None = None, gpu_only: bool = False) -> None:
        self.master_address = master_address
        self.cpu_num = int(cpu_num or os.cpu_count() or 1)
        self.gpus = list(gpus or [])
        self.gpu_only = bool(gpu_only and self.gpus)
        self.host = host
        self.token = token
        self.worker_id = "w-" + uuid.uuid4().hex[:10]
        self.signer = protocol.Signer(token)
        self.ctx = zmq.Context()
        self.job_sock = self.ctx.socket(zmq.ROUTER)
        self.job_sock.setsockopt(zmq.LINGER, 0)
        port = self.job_sock.bind_to_random_port("tcp://127.0.0.1")
        self.job_address = f"127.0.0.1:{port}"
        self.master: zmq.Socket | None = None
        self.jobs: dict[str, JobProcess] = {}
        home = config.state_dir()
        self.log_dir = home / "logs" / self.worker_id
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.cache_dir = home / "cache" / "files"
        self.boot_log = open(self.log_dir / "jobs.log", "ab")  # noqa: SIM115 - job start-up output
        self.registered = False
        self.master_monitor: zmq.Socket | None = None  # the master connection's events (connected, dropped)
        self.master_connected = self.master_ever_connected = False
        self.next_metrics = 0.0
        self.next_sweep = 0.0  # the first sweep, at start, removes the /dev/shm files of a killed worker's jobs
        self.next_prune = 0.0
        self.ended_logs = 0
        self.running = True
        self.refused: str | None = None  # the master's refusal (a wrong token, another protocol version)
        self.master_stopped = False  # the master said it was stopped (MASTER_STOPPED)
        self.ignored_notices = 0  # unsigned notices received on the job port (never acted upon)
        self.zygote: subprocess.Popen | None = None
        self.zygote_buf = b""
        self.handlers = {
            MsgType.REPLY: self.on_master_reply,
            MsgType.REREGISTER: self.on_reregister,
            MsgType.ASSIGN_JOB: self.on_assign,
            MsgType.KILL_JOB: self.on_kill,
            MsgType.READ_LOG: self.on_read_log,
            MsgType.MASTER_STOPPED: self.on_master_stopped,
            MsgType.ERROR: self.on_master_error,
        }
        self.job_handlers = {
            MsgType.JOB_READY: self.on_job_ready,
            MsgType.ACTOR_FAILED_CALL: self.on_actor_failed_call,
        }

    # ------------------------------------------------------------------------------------- master
    def _connect_master(self) -> None:
        """Connects to the master and queues the registration (the first message on the connection); it is sent
        again at every reconnection (a restarted master, a link back after a cut: ``_on_master_events``)."""
        interval_s = config.get("HEARTBEAT_INTERVAL_S")
        self.master = self.ctx.socket(zmq.DEALER)
        self.master.setsockopt(zmq.LINGER, 0)
        self.master.setsockopt(zmq.IDENTITY, self.worker_id.encode() + b"-" + uuid.uuid4().hex[:6].encode())
        zmq_io.set_zmtp_heartbeat(self.master, interval_s, interval_s * config.get("HEARTBEAT_LIVENESS"),
                                  config.get("RECONNECT_MAX_INTERVAL_S"))  # fmt: skip
        self.master_monitor = self.master.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED)
        self.master.connect(f"tcp://{self.master_address}")
        self.registered = False
        self._register()
        self.master_connected = False  # the first connection carries the registration queued above

    def _on_master_events(self) -> None:
        """A connection to the master is up: register (again: a restarted master knows nobody; one that lost this
        worker lists its actors unreachable until then). A connection dropped: libzmq reconnects."""
        for event, _ in zmq_io.monitor_events(self.master_monitor):
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                if self.master_ever_connected:
                    logger.info("reconnected to master %s; registering again", self.master_address)
                    self.registered = False
                    self._register()
                self.master_connected = self.master_ever_connected = True
            elif event == zmq.EVENT_DISCONNECTED and self.master_connected:
                self.master_connected = False
                logger.warning("master %s lost; reconnecting", self.master_address)

    def _register(self) -> None:
        vacant = [
            {"job_id": j.job_id, "address": j.address, "pid": j.pid}
            for j in self.jobs.values()
            if j.address and j.actor_id is None
        ]
        busy = [
            {
                "job_id": j.job_id,
                "address": j.address,
                "pid": j.pid,
                "actor_id": j.actor_id,
                "client_id": j.client_id,
                "class_name": j.class_name,
                "created_at": j.started_at,
                "gpus": j.gpus,
            }
            for j in self.jobs.values()
            if j.actor_id is not None
        ]
        body = {
            "worker_id": self.worker_id,
            "host": self.host,
            "pid": os.getpid(),
            "cpus_total": self.cpu_num,
            "gpus": self.gpus,
            "gpu_only": self.gpu_only,
            "vacant_jobs": vacant,
            "busy_jobs": busy,
            "python": list(sys.version_info[:2]),
            "version": __version__,
            # its liveness travels as ZMTP heartbeats (no heartbeat messages to answer; the master learns of a
            # dropped connection from its socket monitor); the window is that of the heartbeats' TTL
            "liveness": "zmtp",
            "heartbeat_window_s": config.get("HEARTBEAT_INTERVAL_S") * config.get("HEARTBEAT_LIVENESS"),
            # it sends its metrics this often: the master drops it after 3 such intervals without a message
            "metrics_interval_s": config.get("METRICS_INTERVAL_S"),
            **self._metrics(),
        }
        self._send_master(MsgType.WORKER_REGISTER, body)

    def _metrics(self) -> dict:
        mem = psutil.virtual_memory()
        return {
            "memory_total_mb": mem.total / 2**20,
            "memory_used_mb": (mem.total - mem.available) / 2**20,
            "load_avg": list(os.getloadavg()) if hasattr(os, "getloadavg") else [0.0, 0.0, 0.0],
        }

    def _send_master(self, msg_type: MsgType, body: object, req_id: int = 0) -> None:
        if self.master is None:
            return
        try:
            zmq_io.send(self.master, self.signer, msg_type, req_id, body, flags=zmq.NOBLOCK)
        except zmq.Again:
            pass

    def on_master_reply(self, msg: Message) -> None:
        self.registered = True

    def on_master_error(self, msg: Message) -> None:
        """The master refused this worker's registration (another Python version, a field it cannot accept): the
        worker stops, and ``main`` exits with the reason."""
        body = msg.body()
        reason = body.get("error") if isinstance(body, dict) else None
        self.refused = str(reason or body)
        logger.error("master refused worker %s: %s", self.worker_id, self.refused)
        self.running = False

    def on_reregister(self, msg: Message) -> None:
        if not self.registered:  # its registration is on the way (messages queued during a drop went first)
            return
        logger.info("master asked worker %s to register again", self.worker_id)
        self.registered = False
        self._register()

    def on_assign(self, msg: Message) -> None:
        body = msg.body()
        job = self.jobs.get(body["job_id"])
        if job is None or not job.alive():  # killed while idle, before this worker told the master
            self._send_master(
                MsgType.JOB_ENDED,
                {
                    "worker_id": self.worker_id,
                    "job_id": body["job_id"],
                    "actor_id": body["actor_id"],
                    "cause": "the job had ended while idle, before it was assigned",
                    "never_assigned": True,  # the client asks for another job (client/session.py)
                },
            )
            return
        job.actor_id = body["actor_id"]
        job.client_id = body["client_id"]
        job.class_name = body.get("class_name", "")
        job.max_memory_mb = body.get("max_memory_mb")
        if job.max_memory_mb:  # PARL's rule: max_memory bounds the growth above the job's memory at this point
            try:
                job.base_rss_mb = psutil.Process(job.pid).memory_info().rss / 2**20 if job.pid else 0.0
            except psutil.Error:
                job.base_rss_mb = 0.0
        job.gpus = list(body.get("gpus") or [])
        job.started_at = time.time()

    def on_master_stopped(self, msg: Message) -> None:
        """The master was stopped (``xparl stop``), signed on its own socket: stop with the jobs, as PARL's
        workers do (a master that crashed sends nothing, and is rejoined when it is restarted)."""
        logger.warning("the master at %s was stopped (xparl stop): this worker stops with its jobs; add it again "
                       "with `xparl connect --address %s` once a master runs", self.master_address, self.master_address)
        self.master_stopped = True
        self.running = False

    def on_kill(self, msg: Message) -> None:
        body = msg.body()
        job = self.jobs.get(body["job_id"])
        if job is not None and job.poll() is None:
            job.kill_cause = body.get("cause", "killed by the master")
            job.kill()

    def on_read_log(self, msg: Message) -> None:
        body = msg.body()
        actor_id = str(body["actor_id"])
        if not actor_id.replace("-", "").isalnum():
            result = {"error": f"invalid actor id {actor_id!r}"}
        else:
            path = self.log_dir / f"{actor_id}.log"
            try:
                offset = int(body.get("offset", 0))
                with open(path, "rb") as fh:
                    if offset < 0:  # the last -offset bytes (tail -c)
                        offset = max(0, fh.seek(0, os.SEEK_END) + offset)
                    fh.seek(offset)
                    data = fh.read(max(0, min(int(body.get("max_bytes", 65536)), 16 * 2**20)))
                    result = {"data": data, "next_offset": fh.tell()}
            except FileNotFoundError:
                result = {"data": b"", "next_offset": max(0, int(body.get("offset", 0)))}
        self._send_master(MsgType.REPLY, result, req_id=msg.req_id)

    def on_job_ready(self, msg: Message) -> None:
        body = msg.body()
        job = self.jobs.get(body["job_id"])
        if job is None:
            return
        job.address = body["address"]
        self._send_master(MsgType.JOB_READY, {"worker_id": self.worker_id, **body})

    def on_actor_failed_call(self, msg: Message) -> None:
        self._send_master(MsgType.ACTOR_FAILED_CALL, msg.body())

    def run(self) -> None:
        """Serves until SIGTERM; then stops its jobs."""
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "running", False))
        wake_r = self._signal_wakeup()
        self._start_zygote()
        self._connect_master()
        self._check_jobs()
        poll_ms = int(config.get("WORKER_POLL_S") * 1000)
        metrics_s = config.get("METRICS_INTERVAL_S")
        while self.running:
            poller = zmq.Poller()
            poller.register(self.job_sock, zmq.POLLIN)
            poller.register(self.master, zmq.POLLIN)
            poller.register(self.master_monitor, zmq.POLLIN)
            zygote_fd = self.zygote.stdout.fileno() if self.zygote is not None else None
            if zygote_fd is not None:
                poller.register(zygote_fd, zmq.POLLIN)
            wait_ms = poll_ms
            if wake_r is not None:
                poller.register(wake_r, zmq.POLLIN)
                if not self._needs_polling():  # job ends arrive from the zygote: wake only for heartbeats
                    wake = min(self.next_metrics, self.next_sweep, self.next_prune)
                    wait_ms = max(1, int((wake - time.monotonic()) * 1000))
            try:
                ready = dict(poller.poll(wait_ms))
            except zmq.ZMQError:
                if not self.running:
                    break
                raise
            if wake_r is not None and wake_r in ready:
                try:
                    os.read(wake_r, 4096)
                except BlockingIOError:
                    pass
            if zygote_fd is not None and zygote_fd in ready:
                self._on_zygote_output()
            if self.job_sock in ready:
                self._drain(self.job_sock, self.job_handlers, routed=True)
            if self.master_monitor in ready:
                self._on_master_events()
            if self.master in ready:
                self._drain(self.master, self.handlers, routed=False)
            self._check_jobs()
            now = time.monotonic()
            if now >= self.next_sweep:
                self.next_sweep = now + config.get("SHM_SWEEP_S")
                shm.sweep()
            if now >= self.next_prune or self.ended_logs >= 50:
                self.next_prune = now + LOG_PRUNE_INTERVAL_S
                self.ended_logs = 0
                self._prune_logs()
            if now >= self.next_metrics:
                self.next_metrics = now + metrics_s
                if self.registered:  # (a registration carries them too)
                    self._send_master(MsgType.WORKER_HEARTBEAT, {"worker_id": self.worker_id, **self._metrics()})
        self._stop_jobs()
        if self.master is not None:
            self.master.disable_monitor()
        for sock in (self.master_monitor, self.master, self.job_sock):
            if sock is not None:
                sock.close(linger=0)
        self.ctx.term()

    def _signal_wakeup(self) -> int | None:
        """A pipe that SIGTERM writes to (``signal.set_wakeup_fd``), so a long wait ends at once (None: no pipe)."""
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        try:
            signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        except ValueError:  # not the main thread
            os.close(wake_r)
            os.close(wake_w)
            return None
        return wake_r

    def _needs_polling(self) -> bool:
        """True while something can only be noticed by polling: a job started without the zygote, or a
        memory limit to enforce."""
        if self.zygote is None:
            return True
        return any(job.popen is not None or (job.actor_id and job.max_memory_mb) for job in self.jobs.values())

    def _drain(self, sock: zmq.Socket, handlers: dict, routed: bool) -> None:
        while sock.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            try:
                if routed:  # the jobs' ROUTER: who sent it is in the message body (job_id)
                    received = zmq_io.recv_routed(sock, self.signer)
                    msg = None if received is None else received[1]
                else:
                    msg = zmq_io.recv(sock, self.signer)
            except protocol.Notice as notice:
                if routed:  # unsigned text from anyone who can reach the job port: information, never a command
                    self.ignored_notices += 1
                    if self.ignored_notices in (1, 10, 100, 1000) or self.ignored_notices % 10_000 == 0:
                        logger.warning("ignored %d unsigned notice(s) on the job port (the last: %.200s)",
                                       self.ignored_notices, notice.text)  # fmt: skip
                    continue
                logger.error("master refused worker %s: %s", self.worker_id, notice.text)
                self.refused = notice.text
                self.running = False
                return
            if msg is None:
                continue
            logger.debug("%s (request %d) from the %s", msg.type.name, msg.req_id, "jobs" if routed else "master")
            handler = handlers.get(msg.type)
            if handler is None:
                logger.warning("worker: unexpected message %s", msg.type.name)
            else:
                handler(msg)

def main(argv: list[str] | None = None) -> None:
    """Entry point of a worker process (started by ``xparl start`` / ``xparl connect`` / ``connect()``)."""
    parser = argparse.ArgumentParser(description="xparl worker process (internal; use `xparl connect`)")
    parser.add_argument("--address", required=True, help="host:port of the master")
    parser.add_argument("--cpu-num", type=int, default=None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--parent-pid", type=int, default=None, help="exit when this process ends")
    parser.add_argument("--gpu", default=None, help="GPU ids offered, e.g. 0,1 ('' for none; default: detect)")
    parser.add_argument("--gpu-only", action="store_true", help="take GPU actors only (a GPU cluster's worker)")
    args = parser.parse_args(argv)
    token = os.environ.pop("XPARL_TOKEN", "")
    log_format = "%(asctime)s worker %(process)d %(levelname)s %(message)s"
    logging.basicConfig(level=config.log_level("INFO"), format=log_format)
    try:
        gpu_ids, warning = gpus.resolve(args.gpu)
    except ValueError as exc:
        parser.error(str(exc))
    if warning:
        logger.warning("%s", warning)
    worker = Worker(args.address, args.cpu_num, args.host, token, gpus=gpu_ids, gpu_only=args.gpu_only)
    if args.parent_pid:  # (reparented too: its parent is the process that started it)
        exit_with_parent(worker, args.parent_pid, reparented=True)
    worker.run()
    if worker.refused is not None:  # a wrong token or another protocol version: not a clean stop
        sys.exit(f"xparl worker: the master at {args.address} refused this worker: {worker.refused}")
    if worker.master_stopped:
        print(f"xparl worker: the master at {args.address} was stopped (xparl stop); this worker exits",
              file=sys.stderr)


if __name__ == "__main__":
    main()

