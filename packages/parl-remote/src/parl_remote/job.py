"""The job process: hosts one actor and serves its client's calls directly (point to point).

A worker pre-spawns jobs (``python -m parl_remote.job ...``). A job binds a ROUTER socket, tells its
worker it is ready, and waits. The client that was granted the job connects, sends ``INIT`` (the
class, its arguments and the hash of the shipped files), then ``CALL`` / ``GET_ATTR`` / ``SET_ATTR``
requests, which run **in order in the main thread**; replies carry the request ids. ``DELETE`` ends
the job.

Transports: the ROUTER listens on TCP (any client) and, on Linux, on an abstract ``ipc://`` endpoint;
the job also listens on an abstract Unix stream socket (``stream.py``). A same-host client is told
both names in the ``INIT`` reply and moves its whole connection to the stream (or, with
``XPARL_UNIX_STREAM=0``, to the ``ipc://`` endpoint). The main loop waits on all of them at once
with one ``poll``; a stream peer must run as this job's user (``SO_PEERCRED``) and sign every message.

Liveness needs no Python thread: the connection is watched by TCP keepalive in the kernel (no GIL),
so a CPU-bound method never makes the actor look dead. The job exits when its client's connection
stays closed for ``CLIENT_GONE_GRACE_S`` (client died; at once when the client's stream connection
ends, which cannot reconnect), or when its worker disappears
(``PR_SET_PDEATHSIG`` on Linux, and a parent-pid check while idle).

Output: fd 1 and 2 are redirected to the actor's log file ``<log dir>/<actor id>.log``; what Python
code prints is also forwarded to the client (``LOG`` notifications) unless the client turned it off.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import logging
import os
import secrets
import select
import signal
import sys
import threading
import time
import traceback
from typing import Any

import cloudpickle
import zmq
import zmq.utils.monitor

from parl_remote import config, files
from parl_remote.errors import SHM_LOSS_HINT, SerializationError, TransferError, error_body
from parl_remote.transport import stream_io, unix, zmq_io
from parl_remote.wire import protocol, serialization, shm
from parl_remote.wire.protocol import Message, MsgType

logger = logging.getLogger(__name__)

# the main loop's longest wait: everything else is an event (messages, connections, the client's end,
# background output); only the worker-gone check (a backup to PR_SET_PDEATHSIG) runs this rarely
_IDLE_POLL_MS = 1000
_OUTPUT_BATCH_S = 0.05  # while a method runs, its output reaches the client this often at most (one message)
# exit codes, described by the worker (``worker.describe_exit``)
EXIT_DELETED = 0
EXIT_CLIENT_GONE = 3
EXIT_WORKER_GONE = 4


class _Tee:
    """A text stream writing to the actor's log file and queueing text for the client.

    Text queued when the queue was empty calls ``wake`` (``Job._wake``): while a method runs, the output
    thread forwards it within ``_OUTPUT_BATCH_S``; otherwise the main loop does (or the next reply).
    """

    def __init__(self, log_file: Any, stream: str, pending: list | None, wake: Any = None) -> None:
        self._file = log_file
        self._stream = stream
        self._pending = pending
        self._wake = wake

    def write(self, text: str) -> int:
        self._file.write(text)
        pending = self._pending
        if pending is not None and text:
            was_empty = not pending
            pending.append((self._stream, text))
            if was_empty and self._wake is not None:
                self._wake()
        return len(text)

    def flush(self) -> None:
        self._file.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._file.fileno()

    @property
    def encoding(self) -> str:
        return "utf-8"


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


class Job:
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
        # same-host clients move their whole connection to this Unix stream socket (stream.py)
        self.listener = None
        self.stream_name: str | None = None
        if unix.enabled():
            try:
                self.listener, self.stream_name = unix.listen()
            except OSError:
                logger.debug("no unix stream socket for job %s", job_id)
        self.streams: dict[int, stream_io.StreamConnection] = {}
        self.client_stream: stream_io.StreamConnection | None = None  # where output is forwarded
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
        self.peer_same_host = False
        self.shm_channel: shm.Channel | None = None  # the client's /dev/shm arenas and ours (same host)
        self.peers = 0
        self.alone_since: float | None = None
        self.running = True
        self.exit_code = EXIT_DELETED
        self.handlers = {
            MsgType.INIT: self.on_init,
            MsgType.FILES: self.on_files,
            MsgType.CALL: self.on_call,
            MsgType.GET_ATTR: self.on_get_attr,
            MsgType.SET_ATTR: self.on_set_attr,
            MsgType.DELETE: self.on_delete,
            MsgType.BATCH: self.on_batch,
        }
        self.batch_out: list | None = None
        self.reply_conn: stream_io.StreamConnection | None = None  # the stream the message being handled came on

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

    def _wake(self) -> None:
        """Output was queued: have it forwarded soon (``_Tee``)."""
        if self.in_user_code:
            self.output_ready.set()
            return
        if threading.get_ident() == self.main_ident:
            return  # the main loop's own output: forwarded with the next reply or idle turn
        try:
            os.write(self.wake_w, b"x")
        except OSError:  # full: a wake-up is pending anyway
            pass

    def _output_loop(self) -> None:
        """The output thread: forwards what a running method prints (e.g. training progress) while it runs,
        not only with its reply."""
        while True:
            self.output_ready.wait()
            self.output_ready.clear()
            time.sleep(_OUTPUT_BATCH_S)  # one message for a burst of prints
            with self.io_lock:
                if self.in_user_code:
                    self._flush_output(background=True)

    def _leave_user_code(self) -> None:
        with self.io_lock:  # waits for a forwarding in progress: the sockets are the main thread's again
            self.in_user_code = False

    def _serve_router(self) -> None:
        """Handles the messages waiting on the ROUTER socket."""
        handlers = self.handlers
        while self.running:
            try:
                msg = zmq_io.recv(self.router, self.signer, True, flags=zmq.NOBLOCK, channel=self.shm_channel)
            except zmq.Again:
                break
            except protocol.Notice:
                continue
            except protocol.Unreadable as exc:
                self.reply_conn = None
                self._answer_unreadable(exc)
                continue
            if msg is None:
                continue
            if self.client is not None and msg.identity != self.client:
                self.client = msg.identity  # the client moved to the ipc endpoint: forward output there
            self.reply_conn = None
            handler = handlers.get(msg.type)
            if handler is None:
                logger.warning("job %s: unexpected message %s", self.job_id, msg.type.name)
            else:
                handler(msg)
        if self.pending_output:
            self._flush_output()

    def _accept(self) -> None:
        """Accepts same-user peers on the Unix stream socket."""
        while True:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                logger.warning("job %s: accept failed: %s", self.job_id, exc)
                return
            refused = unix.check_peer(sock)
            if refused is not None:
                logger.warning("job %s: refused a unix stream peer: %s", self.job_id, refused)
                sock.close()
                continue
            conn = stream_io.StreamConnection(sock)
            self.streams[conn.fd] = conn
            self.poller.register(conn.fd, select.POLLIN)
            self.alone_since = None

    def _serve_stream(self, conn: stream_io.StreamConnection, mask: int) -> None:
        """Reads a stream peer's messages and runs them in order."""
        try:
            if mask & select.POLLOUT:
                conn.flush()
            alive = conn.read_available() if mask & (select.POLLIN | select.POLLHUP | select.POLLERR) else True
        except stream_io.StreamClosed:
            alive = False
        except protocol.Rejected as exc:
            logger.warning("job %s: closed a unix stream peer: %s", self.job_id, exc)
            alive = False
        handlers = self.handlers
        inbox = conn.inbox
        while inbox and self.running and not conn.closed:
            frames = inbox.popleft()
            try:
                msg = protocol.decode(self.signer, frames, False, self.shm_channel)
            except protocol.Notice:
                continue
            except protocol.Unreadable as exc:
                self.client_stream = self.reply_conn = conn
                self._answer_unreadable(exc)
                continue
            except protocol.Rejected as exc:
                logger.warning("job %s: dropped a message from a unix stream peer and closed it: %s", self.job_id, exc)
                if exc.notice is not None:
                    try:
                        conn.send(protocol.notice_frames(exc.notice, protocol.notice_text(exc.notice)), block=False)
                    except stream_io.StreamClosed:
                        pass
                alive = False
                break
            self.client_stream = self.reply_conn = conn
            handler = handlers.get(msg.type)
            if handler is None:
                logger.warning("job %s: unexpected message %s", self.job_id, msg.type.name)
            else:
                handler(msg)
        if not alive or conn.closed or conn.eof:
            self._drop_stream(conn)
            return
        if self.pending_output:
            self._flush_output()
        want = select.POLLIN | select.POLLOUT if conn.sending else select.POLLIN
        if want != conn.poll_mask:  # wait for room to send queued output
            conn.poll_mask = want
            self.poller.modify(conn.fd, want)

    def _drop_stream(self, conn: stream_io.StreamConnection) -> None:
        """Forgets a closed stream peer; when it was the client's connection, the client is gone."""
        if self.streams.pop(conn.fd, None) is not None:
            try:
                self.poller.unregister(conn.fd)
            except KeyError:
                pass
        conn.close()
        if conn is not self.client_stream:
            return
        self.client_stream = None
        if not self.running:
            return
        self._on_monitor()
        if self.peers == 0:
            # a stream cannot reconnect: its end means the client process is gone (or it dropped the actor)
            print(f"[xparl] the client of actor {self.actor_id} disconnected; the actor ends", file=sys.stderr)
            self.running = False
            self.exit_code = EXIT_CLIENT_GONE

    def _on_monitor(self) -> None:
        while self.monitor.poll(0):
            event = zmq.utils.monitor.recv_monitor_message(self.monitor)
            if event["event"] == zmq.EVENT_ACCEPTED:
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

    def _flush_output(self, background: bool = False) -> None:
        pending = self.pending_output
        if not pending or (self.client is None and self.client_stream is None):
            return
        items = pending[:]
        del pending[: len(items)]
        self._send(MsgType.LOG, 0, serialization.dumps(items), self.client, self.client_stream, notification=True,
                   background=background)  # fmt: skip

    def _send(
        self,
        msg_type: MsgType,
        req_id: int,
        payload: list,
        identity: bytes | None,
        conn: stream_io.StreamConnection | None,
        notification: bool = False,
        background: bool = False,
    ) -> None:
        """Sends a message to a peer: on its stream connection, else through the ROUTER to ``identity``.

        A notification never blocks (it is dropped when the peer does not read) and carries no
        shared-memory release entries (those must not be lost with it). ``background``: sent by the output
        thread, which leaves a closed connection to the main loop.
        """
        if conn is not None:
            use_shm = False if notification else self.shm_channel
            frames = protocol.encode(self.signer, msg_type, req_id, payload, use_shm)
            try:
                conn.send(frames, block=not notification, notification=notification)
            except stream_io.StreamClosed:
                if not background:
                    self._drop_stream(conn)
            return
        try:
            zmq_io.send(
                self.router, self.signer, msg_type, req_id, identity=identity, payload=payload,
                flags=zmq.NOBLOCK if notification else 0, use_shm=False if notification else self.shm_channel,
            )  # fmt: skip
        except zmq.ZMQError as exc:
            if not notification:
                logger.warning("job %s: cannot reply: %s", self.job_id, exc)

    def _reply(self, msg: Message, body: Any = None, msg_type: MsgType = MsgType.REPLY, what: str = "") -> None:
        """Answers ``msg`` with ``body``; ``what`` names the value for the error sent when it cannot be pickled
        (e.g. ``"the return value of Foo.bar()"``)."""
        self._flush_output()
        try:
            payload = serialization.dumps(body)
        except Exception as exc:  # an unpicklable return value
            msg_type = MsgType.ERROR
            if what:
                cause = exc.__cause__ if exc.__cause__ is not None else exc
                exc = SerializationError(
                    f"cannot send {what} back ({type(body).__name__}): {cause}. Return a picklable value "
                    "(plain data, numpy arrays, module-level functions)"
                )
            payload = serialization.dumps(error_body(exc, traceback.format_exc()))
        if self.batch_out is not None:
            if len(payload) == 1:
                self.batch_out.append((int(msg_type), msg.req_id, bytes(payload[0])))
                return
            self._flush_batch(msg)  # keep the replies in order
        self._send(msg_type, msg.req_id, payload, msg.identity, self.reply_conn)

    def _answer_unreadable(self, exc: protocol.Unreadable) -> None:
        """Answers a request whose arguments could not be read from shared memory with a ``TransferError``
        (its method does not run; the connection stays up)."""
        logger.warning("job %s: a %s request could not be read: %s", self.job_id, exc.type.name, exc)
        if not exc.req_id:
            return  # a notification: nobody waits for an answer
        error = TransferError(
            f"actor {self.actor_id}: the arguments of this call could not be read from shared memory, so it did "
            f"not run: {exc}. {SHM_LOSS_HINT}"
        )
        self._reply(Message(exc.type, exc.req_id, [b""], exc.identity), error_body(error, ""), MsgType.ERROR)

    def _reply_error(self, msg: Message, exc: BaseException) -> None:
        tb_text = traceback.format_exc()
        body = error_body(exc, tb_text)
        self._reply(msg, body, MsgType.ERROR)
        if self.actor_id is not None:
            report = {k: body[k] for k in ("type", "message", "traceback")}
            report.update(actor_id=self.actor_id, time=time.time())
            try:
                zmq_io.send(self.worker, self.signer, MsgType.ACTOR_FAILED_CALL, 0, report, flags=zmq.NOBLOCK)
            except zmq.ZMQError:
                pass

    # ------------------------------------------------------------------------------------- handlers
    def on_files(self, msg: Message) -> None:
        body = msg.body()
        try:
            files.extract(self._cache_root(), body["files_hash"], body["files"])
        except Exception as exc:
            self._reply_error(msg, exc)
            return
        self._reply(msg, True)

    def _cache_root(self) -> Any:
        import pathlib

        return pathlib.Path(self.cache_dir)

    def on_init(self, msg: Message) -> None:
        if self.obj is not None:
            self._reply_error(msg, RuntimeError("this job already hosts an actor"))
            return
        body = msg.body()
        files_hash = body.get("files_hash")
        if files_hash:
            folder = files.cached_dir(self._cache_root(), files_hash)
            if folder is None:
                self._reply(msg, files_hash, MsgType.NEED_FILES)
                return
            sys.path.insert(0, str(folder))
            os.chdir(folder)
        self.client = msg.identity
        self.actor_id = body["actor_id"]
        self.peer_same_host = shm.available() and body.get("host_id") == shm.host_id()
        if self.peer_same_host and self.shm_channel is None:
            self.shm_channel = shm.Channel()
        self._open_log(body.get("forward_output", True))
        try:
            cls = self._load_class(body)
            self.class_name = cls.__name__
            args, kwargs = serialization.loads(body["args"])
            self.in_user_code = True
            try:
                self.obj = cls(*args, **kwargs)
            finally:
                self._leave_user_code()
        except BaseException as exc:  # noqa: BLE001 - reported to the client
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._reply_error(msg, exc)
            return
        info = {"pid": os.getpid(), "host_id": shm.host_id() if shm.available() else ""}
        if self.peer_same_host and self.ipc_address:
            info["ipc"] = self.ipc_address
        if self.peer_same_host and self.stream_name:
            info["unix"] = self.stream_name
        self._reply(msg, info)

    def _load_class(self, body: dict) -> type:
        ref = body.get("class_ref")
        if ref is not None:
            module_name, qualname = ref
            try:
                obj: Any = importlib.import_module(module_name)
                for part in qualname.split("."):
                    obj = getattr(obj, part)
                original = getattr(obj, "_original", obj)
                if isinstance(original, type):
                    return original
            except Exception:
                if body.get("class_blob") is None:
                    raise ImportError(
                        f"cannot import {module_name}.{qualname} on the worker; ship its file with "
                        "connect(distributed_files=[...]) or install it on the worker"
                    ) from None
        return cloudpickle.loads(body["class_blob"])

    def _open_log(self, forward: bool) -> None:
        os.makedirs(self.log_dir, exist_ok=True)
        path = os.path.join(self.log_dir, f"{self.actor_id}.log")
        log_file = open(path, "a", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(log_file.fileno(), 1)
        os.dup2(log_file.fileno(), 2)
        self.pending_output = [] if forward else None
        sys.stdout = _Tee(log_file, "stdout", self.pending_output, self._wake)
        sys.stderr = _Tee(log_file, "stderr", self.pending_output, self._wake)
        if forward:
            threading.Thread(target=self._output_loop, name="xparl-output", daemon=True).start()

    def on_call(self, msg: Message) -> None:
        try:
            name, args, kwargs = msg.body()
            self.in_user_code = True
            try:
                result = getattr(self.obj, name)(*args, **kwargs)
            finally:
                self._leave_user_code()
        except BaseException as exc:  # noqa: BLE001 - the actor stays alive; the caller gets the error
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._reply_error(msg, exc)
            return
        self._reply(msg, result, what=f"the return value of {self.class_name}.{name}()")

    def on_get_attr(self, msg: Message) -> None:
        try:
            name = msg.body()
            self.in_user_code = True
            try:
                value = getattr(self.obj, name)
            finally:
                self._leave_user_code()
        except BaseException as exc:  # noqa: BLE001
            self._reply_error(msg, exc)
            return
        self._reply(msg, value, what=f"attribute {name!r} of {self.class_name}")

    def on_set_attr(self, msg: Message) -> None:
        try:
            name, value = msg.body()
            self.in_user_code = True
            try:
                setattr(self.obj, name, value)
            finally:
                self._leave_user_code()
        except BaseException as exc:  # noqa: BLE001
            self._reply_error(msg, exc)
            return
        self._reply(msg, None)

    def on_batch(self, msg: Message) -> None:
        """Runs several requests in order and answers them with one BATCH message."""
        self.batch_out = []
        try:
            for raw_type, rid, body in msg.body():
                msg_type = MsgType(raw_type)
                handler = self.handlers.get(msg_type)
                if handler is None or msg_type is MsgType.BATCH:
                    continue
                handler(Message(msg_type, rid, [body], msg.identity))
                if not self.running:
                    break
        finally:
            self._flush_batch(msg)
            self.batch_out = None

    def _flush_batch(self, msg: Message) -> None:
        items, self.batch_out = self.batch_out, []
        if not items:
            return
        if len(items) == 1:
            raw_type, rid, body = items[0]
            frames, msg_type = [body], MsgType(raw_type)
        else:
            rid, frames, msg_type = 0, serialization.dumps(items), MsgType.BATCH
        self._send(msg_type, rid, frames, msg.identity, self.reply_conn)

    def on_delete(self, msg: Message) -> None:
        self.running = False  # first: a client that closed its stream right after DELETE is not "gone"
        self._reply(msg, None)

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
            except stream_io.StreamClosed:
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
        sys.exit(1)
    token = os.environ.pop("XPARL_TOKEN", "")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s job %(process)d %(levelname)s %(message)s")
    job = Job(args.worker_address, args.job_id, args.host, args.log_dir, args.cache_dir, token, args.worker_pid)
    job.run()
    os._exit(job.exit_code)


if __name__ == "__main__":
    main()
