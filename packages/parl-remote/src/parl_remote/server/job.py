"""The job process: hosts one actor and serves its client's calls directly (point to point).

A worker pre-spawns jobs (``python -m parl_remote.server.job ...``). A job binds a ROUTER socket, tells its
worker it is ready, and waits. The client that was granted the job connects, sends ``INIT`` (the
class, its arguments and the hash of the shipped files), then ``CALL`` / ``GET_ATTR`` / ``SET_ATTR``
requests, which run **in order in the main thread**; replies carry the request ids. ``DELETE`` ends
the job.

Transports: the ROUTER listens on TCP (any client) and, on Linux, on an abstract ``ipc://`` endpoint;
the job also listens on an abstract Unix stream socket (``transport/unix.py``). A same-host client is told
both names in the ``INIT`` reply and moves its whole connection to the stream (or, with
``XPARL_UNIX_STREAM=0``, to the ``ipc://`` endpoint). The main loop waits on all of them at once
with one ``poll``; a stream peer must run as this job's user (``SO_PEERCRED``) and sign every message.
Replies and output go out through the ``Connection`` interface (``transport/base.py``): a stream peer is a
``UnixPeer``, a ROUTER peer a ``RouterRoute``.

Liveness needs no Python thread: the connection is watched by TCP keepalive in the kernel (no GIL),
so a CPU-bound method never makes the actor look dead. The job exits when its client's connection
stays closed for ``CLIENT_GONE_GRACE_S`` (client died; at once when the client's stream connection
ends, which cannot reconnect), or when its worker disappears
(``PR_SET_PDEATHSIG`` on Linux, and a parent-pid check while idle).

The job is four modules: this one runs the loop (the ROUTER, liveness, shutdown), ``job_streams.py`` serves
the Unix stream peers, ``job_handlers.py`` runs the requests, ``job_output.py`` captures and forwards the
actor's output.
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import os
import secrets
import select
import signal
import sys
import threading
import time
from typing import Any

import zmq
import zmq.utils.monitor

from parl_remote import config
from parl_remote.server.exits import EXIT_CLIENT_GONE, EXIT_DELETED, EXIT_NOT_STARTED, EXIT_WORKER_GONE
from parl_remote.server.job_handlers import HANDLERS, Handlers
from parl_remote.server.job_output import OutputCapture
from parl_remote.server.job_streams import StreamServing
from parl_remote.transport import unix, zmq_io
from parl_remote.transport.base import ConnectionLost, SendFailed
from parl_remote.transport.unix import UnixPeer
from parl_remote.transport.zmq_peer import RouterRoute, bound_backoff
from parl_remote.wire import protocol, shm_arena
from parl_remote.wire.protocol import MsgType

logger = logging.getLogger(__name__)

# the main loop's longest wait: everything else is an event (messages, connections, the client's end,
# background output); only the worker-gone check (a backup to PR_SET_PDEATHSIG) runs this rarely
_IDLE_POLL_MS = 1000


def _set_parent_death_signal() -> None:
    """Asks Linux to SIGKILL this process when its parent (the worker) dies."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):
        logger.debug("prctl(PR_SET_PDEATHSIG) unavailable")


class Job(StreamServing, OutputCapture, Handlers):
    """One job process (see the module docstring). Built and run by ``main``."""

    def __init__(
        self, worker_address: str, job_id: str, host: str, log_dir: str, cache_dir: str, token: str, worker_pid: int
    ) -> None:
        self.job_id = job_id
        self.worker_pid = worker_pid
        self.log_dir = log_dir
        self.cache_dir = cache_dir
        self.signer = protocol.Signer(token)
        self.ctx = zmq.Context()
        self.router = self.ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 2000)
        config.set_keepalive(self.router)
        self.router.setsockopt(zmq.ROUTER_HANDOVER, 1)
        port = self.router.bind_to_random_port(f"tcp://{host}")
        self.address = f"{host}:{port}"
        # same-host clients switch to a Unix socket after INIT (fewer kernel hops than TCP loopback); an
        # abstract-namespace name leaves no file behind, and every message is signed as on TCP
        self.ipc_address: str | None = None
        if sys.platform.startswith("linux"):
            try:
                endpoint = f"ipc://@xparl-{os.getpid()}-{secrets.token_hex(8)}"
                self.router.bind(endpoint)
                self.ipc_address = endpoint
            except zmq.ZMQError:
                logger.debug("no ipc endpoint for job %s", job_id)
        self.monitor = self.router.get_monitor_socket(zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED)
        # same-host clients move their whole connection to this Unix stream socket (transport/unix.py)
        self.listener = None
        self.stream_name: str | None = None
        if unix.enabled():
            try:
                self.listener, self.stream_name = unix.listen()
            except OSError:
                logger.debug("no unix stream socket for job %s", job_id)
        self.streams: dict[int, UnixPeer] = {}  # stream peers by file descriptor
        self.stream_masks: dict[int, int] = {}  # the poll events each stream peer is registered for
        self.client_stream: UnixPeer | None = None  # the client's stream: output is forwarded there
        self.routes: dict[bytes, RouterRoute] = {}  # the ROUTER's peers, by routing identity
        self.poller = select.poll()
        self.wake_r, self.wake_w = os.pipe()  # background threads' output wakes the main loop
        # while user code runs in the main thread, the output thread forwards its output (under io_lock,
        # and only then: the sockets belong to the main thread otherwise)
        self.in_user_code = False
        self.main_ident = threading.main_thread().ident
        self.io_lock = threading.Lock()
        self.output_ready = threading.Event()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.worker = self.ctx.socket(zmq.DEALER)
        self.worker.setsockopt(zmq.LINGER, 500)
        self.worker.setsockopt(zmq.IDENTITY, job_id.encode())
        self.worker.connect(f"tcp://{worker_address}")
        self.obj: Any = None
        self.actor_id: str | None = None
        self.class_name = ""
        self.pending_output: list | None = None
        self.client: bytes | None = None
        self.sender: bytes | None = None  # routing identity of the request being handled (None: a stream's)
        self.peer_same_host = False
        self.shm_channel: shm_arena.Channel | None = None  # the client's /dev/shm arenas and ours (same host)
        self.peers = 0
        self.alone_since: float | None = None
        self.running = True
        self.exit_code = EXIT_DELETED
        self.handlers = {msg_type: getattr(self, name) for msg_type, name in HANDLERS.items()}
        self.batch_out: list | None = None
        self.reply_route: Any = None  # the connection the message being handled came on (a ``Connection``)

    # ----------------------------------------------------------------------------------------- loop
    def run(self) -> None:
        """Announces the job to its worker and serves until deleted or orphaned."""
        zmq_io.send(
            self.worker,
            self.signer,
            MsgType.JOB_READY,
            0,
            {"job_id": self.job_id, "address": self.address, "pid": os.getpid()},
        )
        router, poller = self.router, self.poller
        router_fd = router.getsockopt(zmq.FD)
        monitor_fd = self.monitor.getsockopt(zmq.FD)
        listener_fd = self.listener.fileno() if self.listener is not None else -1
        poller.register(router_fd, select.POLLIN)
        poller.register(monitor_fd, select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        if self.listener is not None:
            poller.register(listener_fd, select.POLLIN)
        streams = self.streams
        while self.running:
            # zmq's FD is edge-triggered: look at the socket's own state before each wait
            if router.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                self._serve_router()
                continue
            timeout_ms = _IDLE_POLL_MS
            if self.alone_since is not None:  # wake up when the client's grace period ends
                grace_end = self.alone_since + config.get("CLIENT_GONE_GRACE_S")
                timeout_ms = min(timeout_ms, max(10, int((grace_end - time.monotonic()) * 1000) + 10))
            events = poller.poll(timeout_ms)
            if not events:  # idle
                self._on_monitor()
                self._idle_checks()
                self._flush_output()
                continue
            for fd, mask in events:
                conn = streams.get(fd)
                if conn is not None:
                    self._serve_stream(conn, mask)
                elif fd == listener_fd:
                    self._accept()
                elif fd == monitor_fd:
                    self._on_monitor()
                elif fd == self.wake_r:
                    try:
                        os.read(self.wake_r, 4096)
                    except BlockingIOError:
                        pass
                    self._flush_output()
                if not self.running:
                    break
            if self.alone_since is not None and self.running:
                self._idle_checks()
        self._shutdown()

    def _serve_router(self) -> None:
        """Handles the messages waiting on the ROUTER socket."""
        while self.running:
            try:
                received = zmq_io.recv_routed(self.router, self.signer, flags=zmq.NOBLOCK, channel=self.shm_channel)
            except zmq.Again:
                break
            except protocol.Notice:
                continue
            except protocol.Unreadable as exc:
                self.sender = exc.peer
                self.reply_route = self.route(exc.peer)
                self._answer_unreadable(exc)
                continue
            if received is None:
                continue
            self.sender, msg = received
            if self.client is not None and self.sender != self.client:
                self.client = self.sender  # the client moved to the ipc endpoint: forward output there
            self.reply_route = self.route(self.sender)
            self._dispatch(msg)
        if self.pending_output:
            self._flush_output()

    def route(self, identity: bytes) -> RouterRoute:
        """The connection (sending half) to the ROUTER's peer ``identity``."""
        route = self.routes.get(identity)
        if route is None:
            route = self.routes[identity] = RouterRoute(self.router, identity, self.signer, self.shm_channel)
        return route

    def use_shared_memory(self, channel: shm_arena.Channel) -> None:
        """The client runs on this host: large buffers of later messages travel through ``channel``."""
        self.shm_channel = channel
        for conn in (*self.routes.values(), *self.streams.values()):
            conn.channel = channel

    def _on_monitor(self) -> None:
        while self.monitor.poll(0):
            event = zmq.utils.monitor.recv_monitor_message(self.monitor)
            if event["event"] == zmq.EVENT_ACCEPTED:
                bound_backoff(event["value"])  # replies sent during a network cut go out soon after it
                self.peers += 1
                self.alone_since = None
            elif event["event"] == zmq.EVENT_DISCONNECTED:
                self.peers = max(0, self.peers - 1)
                if self.peers == 0 and not self.streams:
                    self.alone_since = time.monotonic()

    def _idle_checks(self) -> None:
        if os.getppid() != self.worker_pid:
            logger.warning("job %s: worker %d is gone, exiting", self.job_id, self.worker_pid)
            self.running = False
            self.exit_code = EXIT_WORKER_GONE
        elif (
            self.client is not None
            and not self.streams
            and self.alone_since is not None
            and time.monotonic() - self.alone_since > config.get("CLIENT_GONE_GRACE_S")
        ):
            print(f"[xparl] the client of actor {self.actor_id} disconnected; the actor ends", file=sys.stderr)
            self.running = False
            self.exit_code = EXIT_CLIENT_GONE

    def _send(
        self,
        msg_type: MsgType,
        req_id: int,
        payload: list,
        conn: Any,
        notification: bool = False,
        background: bool = False,
    ) -> None:
        """Sends a message on a connection (``transport/base.py``): a stream peer, or a ROUTER peer's route.

        A notification never blocks (it is dropped when the peer does not read) and carries no
        shared-memory release entries (those must not be lost with it). ``background``: sent by the output
        thread, which leaves a closed connection to the main loop.
        """
        if notification:
            conn.send_best_effort(msg_type, req_id, payload)
            return
        try:
            conn.send(msg_type, req_id, payload)
        except ConnectionLost:
            if not background:
                self._drop_stream(conn)
        except SendFailed as exc:
            logger.warning("job %s: cannot reply: %s", self.job_id, exc)

    def _shutdown(self) -> None:
        self._flush_output()
        for out in (sys.stdout, sys.stderr):
            try:
                out.flush()
            except Exception:
                pass
        for conn in list(self.streams.values()):
            try:
                conn.flush()  # the kernel delivers what it took after the close too
            except ConnectionLost:
                pass
            conn.close()
        if self.listener is not None:
            self.listener.close()
        if self.shm_channel is not None:
            self.shm_channel.close()
        self.monitor.close(linger=0)
        self.router.close()
        self.worker.close()
        self.ctx.term()


def _lower_priority() -> None:
    """Adds ``JOB_NICENESS`` to this process's niceness (see config.py); a value out of 0-19 is refused."""
    niceness = config.get("JOB_NICENESS")
    if niceness != int(niceness) or not 0 <= niceness <= 19:
        raise SystemExit(f"XPARL_JOB_NICENESS must be an integer from 0 to 19, got {niceness!r}")
    if niceness:
        try:
            os.nice(int(niceness))
        except OSError as exc:  # e.g. a sandbox that forbids it: the job runs at the worker's priority
            logging.getLogger(__name__).warning("cannot lower the job's priority: %s", exc)


def main(argv: list[str] | None = None) -> None:
    """Entry point of a job process (started by a worker, not by users)."""
    parser = argparse.ArgumentParser(description="xparl job process (internal)")
    parser.add_argument("--worker-address", required=True)
    parser.add_argument("--job-id", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--log-dir", required=True)
    parser.add_argument("--cache-dir", required=True)
    parser.add_argument("--worker-pid", type=int, required=True)
    args = parser.parse_args(argv)
    _set_parent_death_signal()
    if os.getppid() != args.worker_pid:
        sys.exit(EXIT_NOT_STARTED)
    _lower_priority()
    token = os.environ.pop("XPARL_TOKEN", "")
    log_format = "%(asctime)s job %(process)d %(levelname)s %(message)s"
    logging.basicConfig(level=config.log_level("WARNING"), format=log_format)
    job = Job(args.worker_address, args.job_id, args.host, args.log_dir, args.cache_dir, token, args.worker_pid)
    job.run()
    os._exit(job.exit_code)


if __name__ == "__main__":
    main()
