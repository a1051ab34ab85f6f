"""The client's end of one actor: a DEALER socket connected straight to the actor's job process.

Blocking actors (``wait=True``) are driven by the calling thread: it sends the request and reads the
socket until the reply with its request id arrives (one call at a time per actor, like PARL; a lock
serialises threads). Future-mode actors (``wait=False``) hand their socket to the client's
``Reactor`` thread after ``__init__``: callers queue requests and get ``RemoteFuture`` objects at
once, many calls can be in flight, and replies (executed in order by the job) complete the futures.

Same host: right after ``INIT`` the connection moves to the job's Unix stream socket (``stream.py``):
the same signed messages without zmq's I/O threads; a blocking call is one ``sendmsg`` and one
blocking ``recv_into`` in the calling thread, and the reactor polls the socket's fd. With
``XPARL_UNIX_STREAM=0`` (or where the stream is unavailable) it moves to the job's ``ipc://`` zmq
endpoint instead. Between hosts: zmq over TCP.

Liveness: on a stream, the end of the connection (EOF, ``ECONNRESET``) is the job's death, reported by
the kernel at once; the master is asked why, and every pending and later call raises
``ActorDiedError`` with that cause. On zmq: TCP keepalive (run by the kernel, so no GIL) on every
connection; a socket monitor reports when the connection to the job closes (at once for a killed
process on a reachable host). A connection that stays closed for ``ACTOR_RECONNECT_GRACE_S`` means
the job is gone, with the same consequences.
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

import zmq
import zmq.utils.monitor

from parl_remote import config
from parl_remote.errors import (
    SHM_LOSS_HINT,
    ActorDiedError,
    RemoteError,
    SerializationError,
    TransferError,
    error_body,
    make_remote_exception,
)
from parl_remote.future import RemoteFuture
from parl_remote.transport import sigint, stream_io, unix, zmq_io
from parl_remote.wire import protocol, serialization, shm
from parl_remote.wire.protocol import Message, MsgType

if TYPE_CHECKING:
    from parl_remote.client import Client

logger = logging.getLogger(__name__)

_POLL_MS = 100
_IDLE_POLL_MS = 1000  # the reactor's wait when all its actors are on streams (nothing to check periodically)
_STREAM_DEATH_CAUSE_WAIT_S = 2.0  # after a stream ends, how long to wait for the master to learn why
_CONNECT_TIMEOUT_S = 3.0  # a granted job that never accepts the connection is gone
_CTRL_C_LATENCY_S = 0.1  # a Ctrl-C during a blocking call on a stream is delivered within this (stream.py)
_MONITOR_EVENTS = zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED


def call_payload(name: str, args: tuple, kwargs: dict) -> list:
    """Serialises a CALL body ``(name, args, kwargs)``; names the culprit if an argument won't pickle."""
    try:
        return serialization.dumps((name, args, kwargs))
    except SerializationError:
        serialization.check_arguments(name, args, kwargs)
        raise


class ActorConnection:
    """The connection to one actor's job. Created by ``Client.create_actor``.

    Args:
        client: the owning client.
        grant: the master's grant: ``actor_id``, ``address``, ``pid``, ``worker_id``.
        class_name: the actor's class name (for messages and output prefixes).
        forward_output: print the actor's output on this process's console.
    """

    def __init__(self, client: Client, grant: dict, class_name: str, forward_output: bool) -> None:
        self.client = client
        self.actor_id: str = grant["actor_id"]
        self.address: str = grant["address"]
        self.pid: int = grant["pid"]
        self.class_name = class_name
        self.forward_output = forward_output
        self.signer = client.signer
        self.sock, self.monitor = self._open_socket(f"tcp://{self.address}")
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.connected = False
        self.ever_connected = False
        self.down_since: float | None = time.monotonic()
        self.dead: ActorDiedError | None = None
        self.closed = False
        self.same_host = False  # set after INIT: large buffers then travel through /dev/shm
        self.shm_channel: shm.Channel | None = None  # this connection's /dev/shm arenas (same host)
        self.stream: stream_io.StreamConnection | None = None  # the same-host Unix stream, after use_stream
        self.stream_name: str | None = None
        self.reactor: Reactor | None = None
        self._partial: dict[str, str] = {}
        sigint.guard_sigint()  # a Ctrl-C must not cut a message in two (main thread only; see stream.py)

    def _open_socket(self, endpoint: str) -> tuple[zmq.Socket, zmq.Socket]:
        sock = self.client.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 1000)
        config.set_keepalive(sock)
        sock.setsockopt(zmq.RECONNECT_IVL, 100)
        sock.setsockopt(zmq.RCVTIMEO, _POLL_MS)
        monitor = sock.get_monitor_socket(_MONITOR_EVENTS)
        sock.connect(endpoint)
        return sock, monitor

    def use_endpoint(self, endpoint: str) -> None:
        """Moves this connection to another endpoint of the same job (its same-host ``ipc://`` socket).

        Called by ``Client.create_actor`` right after ``INIT``, before any other request; a failure
        keeps the TCP connection.
        """
        with self.lock:
            try:
                sock, monitor = self._open_socket(endpoint)
            except zmq.ZMQError as exc:
                logger.debug("staying on TCP for %s: %s", self.where, exc)
                return
            old_sock, old_monitor = self.sock, self.monitor
            self.sock, self.monitor = sock, monitor
            self.connected = False
            self.down_since = time.monotonic()
            try:
                old_sock.disable_monitor()
            except zmq.ZMQError:
                pass
            old_monitor.close(linger=0)
            old_sock.close(linger=0)

    def use_stream(self, name: str) -> bool:
        """Moves this connection to the job's Unix stream socket ``name`` (same host; ``stream.py``).

        Called by ``Client.create_actor`` right after ``INIT``, before any other request. The listener
        must be the granted job's process, run by this user (``SO_PEERCRED``); otherwise, or when the
        connection fails, the connection stays on zmq and False is returned.
        """
        with self.lock:
            try:
                sock = unix.connect(name)
            except OSError as exc:
                logger.debug("staying on zmq for %s: %s", self.where, exc)
                return False
            refused = unix.check_peer(sock, pid=self.pid)
            if refused is not None:
                logger.warning("not using the unix stream of %s: %s", self.where, refused)
                sock.close()
                return False
            self.stream = stream_io.StreamConnection(sock)
            self.stream_name = name
            if sigint.guard_sigint():  # a Ctrl-C must not cut the stream's framing (main thread only)
                self.stream.set_read_slice(_CTRL_C_LATENCY_S)
            self.connected = self.ever_connected = True
            self.down_since = None
            self._close_zmq(linger=0)
            return True

    @property
    def poll_key(self) -> Any:
        """What the reactor's poller watches: the stream's fd, or the zmq socket."""
        return self.stream.fd if self.stream is not None else self.sock

    @property
    def where(self) -> str:
        return f"actor {self.class_name} {self.actor_id}, pid {self.pid} at {self.address}"

    # ------------------------------------------------------------------------------ blocking calls
    def request(self, msg_type: MsgType, payload: list) -> Message:
        """Sends a request and waits for its reply (blocking mode and ``__init__``).

        Raises:
            ActorDiedError: the actor's process ended before or during the call.
        """
        if self.reactor is not None:
            return self.reactor.submit(self, msg_type, payload, raw=True).result()
        with self.lock:
            if self.dead is not None:
                raise self._died_again()
            if self.closed:
                raise RemoteError(f"{self.where} was deleted")
            rid = next(self.ids)
            if self.stream is not None:
                return self._request_stream(msg_type, payload, rid)
            self._send_request_zmq(msg_type, rid, payload)
            while True:
                try:
                    msg = self._recv()  # blocks for at most _POLL_MS (RCVTIMEO)
                except zmq.Again:
                    self.check_liveness()
                    continue
                if msg is not None and msg.req_id == rid:
                    return msg

    def _request_stream(self, msg_type: MsgType, payload: list, rid: int) -> Message:
        """``request`` on the Unix stream: send, then read in this thread until the reply arrives."""
        conn = self.stream
        try:
            self._encode_and_send(conn, msg_type, rid, payload)
            while True:
                msg = self.decode_stream(conn.recv())
                if msg is not None and msg.req_id == rid:
                    return msg
        except stream_io.StreamClosed:
            raise self.mark_dead(wait_s=_STREAM_DEATH_CAUSE_WAIT_S) from None
        except protocol.Rejected as exc:  # corrupt framing: the connection was closed
            raise self.mark_dead(f"its connection broke ({exc})") from None

    @sigint.defer_ctrl_c_in
    def _encode_and_send(self, conn: stream_io.StreamConnection, msg_type: MsgType, rid: int, payload: list) -> None:
        """Encodes a request and hands it to the stream as one step that a Ctrl-C does not split (it is
        deferred until the message is queued, ``sigint.guard_sigint``): encoding takes shared-memory arena
        regions and the pending release entries, which a message never sent would leak."""
        conn.send(protocol.encode(self.signer, msg_type, rid, payload, self.shm_channel))

    def decode_stream(self, frames: list) -> Message | None:
        """Verifies a message received on the stream; prints LOG notifications; returns replies."""
        return self._accept(lambda: protocol.decode(self.signer, frames, False, self.shm_channel))

    @sigint.defer_ctrl_c_in
    def _send_request_zmq(self, msg_type: MsgType, rid: int, payload: list) -> None:
        """Encodes and queues a request on the zmq socket as one step that a Ctrl-C does not split (see
        ``_encode_and_send``; besides, a ``KeyboardInterrupt`` inside pyzmq's zero-copy machinery breaks its
        garbage-collector thread, which then leaks a thread and sockets on every later large send)."""
        frames = protocol.encode(self.signer, msg_type, rid, payload, self.shm_channel)
        while True:
            try:
                zmq_io.send_frames(self.sock, frames, flags=zmq.NOBLOCK)
                return
            except zmq.Again:  # not connected (yet / any more): a Ctrl-C that waits is delivered now
                if sigint._Sigint.pending:
                    sigint.fire_pending()
                time.sleep(0.01)
                self.check_liveness()

    @sigint.defer_ctrl_c_in
    def _recv(self) -> Message | None:
        """Reads one message from the zmq socket (a Ctrl-C meanwhile waits for the whole message, at most
        ``_POLL_MS``); prints LOG notifications; returns replies."""
        return self._accept(
            lambda: protocol.decode(self.signer, zmq_io.recv_frames(self.sock), False, self.shm_channel))

    def _accept(self, decode: Any) -> Message | None:
        """Runs ``decode``; drops (and logs) a rejected message, prints a LOG notification, returns a reply."""
        try:
            msg = decode()
        except (protocol.Rejected, protocol.Notice) as exc:
            logger.warning("dropped a message from %s: %s", self.where, exc)
            return None
        except protocol.Unreadable as exc:  # a reply whose result is gone from /dev/shm: fail that call
            logger.warning("a %s from %s could not be read: %s", exc.type.name, self.where, exc)
            if not exc.req_id or exc.type not in (MsgType.REPLY, MsgType.ERROR):
                return None
            error = TransferError(
                f"the result of this call on {self.where} could not be read from shared memory (the method did "
                f"run): {exc}. {SHM_LOSS_HINT}"
            )
            return Message(MsgType.ERROR, exc.req_id, serialization.dumps(error_body(error, "")))
        if msg.type is MsgType.LOG:
            self.print_output(msg.body())
            return None
        return msg

    def send_frames(self, frames: list) -> None:
        """Sends encoded frames without blocking (reactor): a stream queues what the kernel does not take.

        Raises:
            stream_io.StreamClosed / zmq.ZMQError: the connection is gone.
        """
        if self.stream is not None:
            self.stream.send(frames, block=False)
        else:
            zmq_io.send_frames(self.sock, frames)

    def result_of(self, msg: Message) -> Any:
        """The value of a reply, or raises the remote exception it carries."""
        if msg.type is MsgType.REPLY:
            return msg.body()
        if msg.type is MsgType.ERROR:
            raise self.exception_from(msg.body())
        raise RemoteError(f"unexpected reply {msg.type.name} from {self.where}")

    def exception_from(self, body: dict) -> BaseException:
        """Rebuilds the exception of an ERROR reply (an instance of RemoteError and the original type)."""
        original = None
        if body.get("exception") is not None:
            try:
                original = serialization.loads([body["exception"]])
            except SerializationError:
                original = None
            if not isinstance(original, BaseException):
                original = None
        return make_remote_exception(original, body["type"], body["message"], body["traceback"], self.where)

    def call(self, name: str, args: tuple, kwargs: dict) -> Any:
        """Calls a method and returns its result (blocking mode)."""
        return self.result_of(self.request(MsgType.CALL, call_payload(name, args, kwargs)))

    def get_attr(self, name: str) -> Any:
        """Reads an attribute of the remote object."""
        return self.result_of(self.request(MsgType.GET_ATTR, serialization.dumps(name)))

    def set_attr(self, name: str, value: Any) -> None:
        """Sets an attribute of the remote object."""
        try:
            payload = serialization.dumps((name, value))
        except SerializationError as exc:
            raise SerializationError(f"cannot send the value of attribute {name!r}: {exc}") from exc
        self.result_of(self.request(MsgType.SET_ATTR, payload))

    def submit(self, name: str, args: tuple, kwargs: dict) -> RemoteFuture:
        """Queues a method call and returns its future (future mode)."""
        payload = call_payload(name, args, kwargs)
        if self.reactor is None:  # not handed over (should not happen after __init__)
            future = RemoteFuture()
            try:
                future.set_result(self.call(name, args, kwargs))
            except BaseException as exc:  # noqa: BLE001
                future.set_exception(exc)
            return future
        return self.reactor.submit(self, MsgType.CALL, payload)

    # -------------------------------------------------------------------------------- liveness
    def process_monitor(self) -> None:
        """Reads pending socket-monitor events (connection up / down)."""
        while self.monitor.poll(0):
            try:
                event = zmq.utils.monitor.recv_monitor_message(self.monitor, flags=zmq.NOBLOCK)
            except zmq.Again:
                return
            if event["event"] == zmq.EVENT_CONNECTED:
                self.connected = self.ever_connected = True
                self.down_since = None
            elif event["event"] == zmq.EVENT_DISCONNECTED:
                self.connected = False
                self.down_since = time.monotonic()

    def check_liveness(self) -> None:
        """Raises ActorDiedError when the job's connection has been down for too long."""
        if self.dead is not None:
            raise self._died_again()
        if self.stream is not None:  # a stream's end is an event (see mark_dead), nothing to watch
            return
        self.process_monitor()
        if self.connected or self.down_since is None:
            return
        grace = config.get("ACTOR_RECONNECT_GRACE_S") if self.ever_connected else _CONNECT_TIMEOUT_S
        if time.monotonic() - self.down_since > grace:
            raise self.mark_dead()

    def mark_dead(self, cause: str | None = None, wait_s: float = 1.0) -> ActorDiedError:
        """Records that the actor is dead (asking the master why, for up to ``wait_s``) and returns the error."""
        if self.dead is None:
            cause = (
                cause
                or self.client.death_cause(self.actor_id, wait_s)
                or (
                    "its process closed the connection (the cluster did not say why)"
                    if self.stream is not None
                    else "the connection to its process was lost "
                    f"(no answer for {config.get('ACTOR_RECONNECT_GRACE_S')} s)"
                )
            )
            self.dead = ActorDiedError(f"{self.where} died: {cause}", cause=cause)
            self._close_sockets(linger=0)
        return self.dead

    def _died_again(self) -> ActorDiedError:
        return ActorDiedError(str(self.dead), cause=self.dead.cause)

    # ----------------------------------------------------------------------------------- output
    def print_output(self, items: list) -> None:
        """Prints forwarded actor output, each line prefixed with the actor's name and pid."""
        if not self.forward_output:
            return
        prefix = f"[{self.class_name} pid={self.pid}] "
        for stream_name, text in items:
            text = self._partial.pop(stream_name, "") + text
            lines = text.split("\n")
            if lines[-1]:
                self._partial[stream_name] = lines[-1]
            out = sys.stderr if stream_name == "stderr" else sys.stdout
            body = "".join(prefix + line + "\n" for line in lines[:-1])
            if body:
                try:
                    out.write(body)
                    out.flush()
                except (ValueError, OSError):  # closed console at shutdown
                    pass

    # ---------------------------------------------------------------------------------- closing
    def close(self) -> None:
        """Deletes the remote object (its job exits, its CPU returns to the pool). Idempotent."""
        if self.closed:
            return
        self.closed = True
        if self.reactor is not None:
            self.reactor.close_actor(self)
            return
        with self.lock:
            self.send_delete_and_close()

    def send_delete_and_close(self, send_delete: bool = True) -> None:
        if self.stream is not None:
            if send_delete and self.dead is None and not self.stream.closed:
                try:  # what the kernel took is delivered after the close as well
                    frames = protocol.encode(self.signer, MsgType.DELETE, 0, serialization.dumps(None))
                    self.stream.send(frames, block=False)
                except stream_io.StreamClosed:
                    pass
            self._close_sockets(linger=0)
            return
        if send_delete and self.dead is None and not self.sock.closed:
            try:
                zmq_io.send(self.sock, self.signer, MsgType.DELETE, 0, None, flags=zmq.NOBLOCK)
            except zmq.ZMQError:
                pass
        self._close_sockets(linger=1000)

    def _close_sockets(self, linger: int) -> None:
        if self.shm_channel is not None:
            self.shm_channel.close()
        if self.stream is not None:
            self.stream.close()
        self._close_zmq(linger)

    def _close_zmq(self, linger: int) -> None:
        if not self.sock.closed:
            try:
                self.sock.disable_monitor()
            except zmq.ZMQError:
                pass
            self.monitor.close(linger=0)
            self.sock.close(linger=linger)


class Reactor(threading.Thread):
    """The client's I/O thread for future-mode actors: sends queued calls, completes futures."""

    def __init__(self) -> None:
        super().__init__(name="xparl-reactor", daemon=True)
        self.commands: collections.deque = collections.deque()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)
        self.stopping = False
        self.sleeping = False  # set by the reactor before it blocks; submitters wake it only then
        self.actors: dict[Any, ActorConnection] = {}  # by poll key: zmq socket, or stream fd
        self.pending: dict[ActorConnection, dict[int, tuple[RemoteFuture, bool]]] = {}

    def _wake(self) -> None:
        if not self.sleeping:  # the reactor checks the queue again after setting `sleeping`
            return
        try:
            os.write(self.wake_w, b"x")
        except (BlockingIOError, OSError):
            pass

    def adopt(self, actor: ActorConnection) -> None:
        """Hands an actor's socket over to this thread (after its ``__init__`` succeeded)."""
        actor.reactor = self
        self.commands.append(("adopt", actor))
        self._wake()

    def submit(self, actor: ActorConnection, msg_type: MsgType, payload: list, raw: bool = False) -> RemoteFuture:
        """Queues a request; the future gets the result (or the raw reply message when ``raw``)."""
        future = RemoteFuture()
        if actor.dead is not None:
            future.set_exception(actor._died_again())
            return future
        if self.stopping or actor.closed:
            future.set_exception(RemoteError(f"{actor.where} was deleted or its client disconnected"))
            return future
        self.commands.append(("send", actor, msg_type, payload, future, raw))
        self._wake()
        return future

    def close_actor(self, actor: ActorConnection) -> None:
        self.commands.append(("close", actor))
        self._wake()

    def stop(self) -> None:
        self.stopping = True
        self.commands.append(("stop",))
        self._wake()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=5)

    # ------------------------------------------------------------------------------------- loop
    def run(self) -> None:
        poller = self.poller = zmq.Poller()
        poller.register(self.wake_r, zmq.POLLIN)
        running = True
        last_check = time.monotonic()
        while running:
            self.sleeping = True
            wait_ms = _POLL_MS if any(a.stream is None for a in self.actors.values()) else _IDLE_POLL_MS
            ready = dict(poller.poll(0 if self.commands else wait_ms))
            self.sleeping = False
            if self.wake_r in ready:
                try:
                    os.read(self.wake_r, 65536)
                except BlockingIOError:
                    pass
            batches: dict[ActorConnection, list] = {}
            while self.commands:
                command = self.commands.popleft()
                kind = command[0]
                if kind == "send":
                    actor, payload = command[1], command[3]
                    if len(payload) == 1:  # small: coalesced with the other queued calls of this actor
                        batches.setdefault(actor, []).append(command[1:])
                        continue
                    self._flush(actor, batches.pop(actor, []))
                    self._send(*command[1:])
                    continue
                for actor, items in batches.items():
                    self._flush(actor, items)
                batches.clear()
                if kind == "adopt":
                    actor = command[1]
                    self.actors[actor.poll_key] = actor
                    self.pending[actor] = {}
                    poller.register(actor.poll_key, zmq.POLLIN)
                elif kind == "close":
                    self._close(command[1], poller)
                elif kind == "stop":
                    running = False
            for actor, items in batches.items():
                self._flush(actor, items)
            for key, actor in list(self.actors.items()):
                events = ready.get(key)
                if events:
                    if events & zmq.POLLOUT:
                        self._send_queued(actor)
                    if events & ~zmq.POLLOUT:
                        self._read(actor)
                if actor.stream is not None and not actor.stream.closed:
                    self._watch_output(actor)
            if time.monotonic() - last_check > _POLL_MS / 1000:
                last_check = time.monotonic()
                self._check_all(poller)
        for actor in list(self.actors.values()):
            self._close(actor, poller)
        os.close(self.wake_r)
        os.close(self.wake_w)

    def _watch_output(self, actor: ActorConnection) -> None:
        """Waits for room on a stream that has bytes queued (POLLOUT), and stops waiting when it has none."""
        conn = actor.stream
        want = zmq.POLLIN | zmq.POLLOUT if conn.sending else zmq.POLLIN
        if want != conn.poll_mask and actor.poll_key in self.actors:
            conn.poll_mask = want
            self.poller.modify(actor.poll_key, want)

    def _send_queued(self, actor: ActorConnection) -> None:
        try:
            actor.stream.flush()
        except stream_io.StreamClosed:
            self._lost(actor)

    def _lost(self, actor: ActorConnection, cause: str | None = None) -> None:
        """A stream actor's connection ended: the job is gone; fail its calls with the master's cause."""
        actor.mark_dead(cause)  # (the master is asked for 1 s at most: other actors' futures wait meanwhile)
        self._fail_pending(actor)
        self._forget(actor, self.poller)

    def _is_gone(self, actor: ActorConnection) -> bool:
        return actor.stream.closed if actor.stream is not None else actor.sock.closed

    def _send(self, actor: ActorConnection, msg_type: MsgType, payload: list, future: RemoteFuture, raw: bool) -> None:
        if actor.dead is not None or self._is_gone(actor):
            future.set_exception(actor._died_again() if actor.dead else RemoteError(f"{actor.where} was deleted"))
            return
        if not future.set_running_or_notify_cancel():
            return
        rid = next(actor.ids)
        self.pending[actor][rid] = (future, raw)
        frames = protocol.encode(actor.signer, msg_type, rid, payload, actor.shm_channel)
        try:
            actor.send_frames(frames)
        except stream_io.StreamClosed:
            self._lost(actor)
        except zmq.ZMQError as exc:
            self.pending[actor].pop(rid, None)
            future.set_exception(RemoteError(f"cannot send to {actor.where}: {exc}"))

    def _flush(self, actor: ActorConnection, items: list) -> None:
        """Sends queued small calls of one actor: one message, or one BATCH message for several."""
        if len(items) <= 1:
            for item in items:
                self._send(*item)
            return
        if actor.dead is not None or self._is_gone(actor):
            for item in items:
                self._send(*item)  # fails each future with the right error
            return
        entries = []
        futures = []
        for _, msg_type, payload, future, raw in items:
            if not future.set_running_or_notify_cancel():
                continue
            rid = next(actor.ids)
            self.pending[actor][rid] = (future, raw)
            entries.append((int(msg_type), rid, bytes(payload[0])))
            futures.append((rid, future))
        frames = protocol.encode(actor.signer, MsgType.BATCH, 0, serialization.dumps(entries), actor.shm_channel)
        try:
            actor.send_frames(frames)
        except stream_io.StreamClosed:
            self._lost(actor)
        except zmq.ZMQError as exc:
            for rid, future in futures:
                self.pending[actor].pop(rid, None)
                future.set_exception(RemoteError(f"cannot send to {actor.where}: {exc}"))

    def _read(self, actor: ActorConnection) -> None:
        if actor.stream is not None:
            self._read_stream(actor)
            return
        while not actor.sock.closed and actor.sock.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            self._dispatch(actor, actor._recv())

    def _read_stream(self, actor: ActorConnection) -> None:
        conn = actor.stream
        try:
            alive = conn.read_available()
        except protocol.Rejected as exc:  # corrupt framing: the connection was closed
            self._lost(actor, f"its connection broke ({exc})")
            return
        inbox = conn.inbox
        while inbox and not conn.closed:
            self._dispatch(actor, actor.decode_stream(inbox.popleft()))
        if not alive and actor.dead is None and not conn.closed:
            self._lost(actor)

    def _dispatch(self, actor: ActorConnection, msg: Message | None) -> None:
        if msg is None:
            return
        if msg.type is MsgType.BATCH:
            for raw_type, rid, body in msg.body():
                self._resolve(actor, Message(MsgType(raw_type), rid, [body]))
        else:
            self._resolve(actor, msg)

    def _resolve(self, actor: ActorConnection, msg: Message) -> None:
        pending = self.pending.get(actor, {})
        entry = pending.pop(msg.req_id, None)
        if entry is None:
            return
        future, raw = entry
        if actor.closed and not pending:
            self._forget(actor, self.poller)
            actor.send_delete_and_close(send_delete=False)
        if future is None:
            return
        if raw:
            future.set_result(msg)
            return
        try:
            value = actor.result_of(msg)
        except BaseException as exc:  # noqa: BLE001
            future.set_exception(exc)
        else:
            future.set_result(value)

    def _check_all(self, poller: zmq.Poller) -> None:
        for actor in list(self.actors.values()):
            try:
                actor.check_liveness()
            except ActorDiedError:
                self._fail_pending(actor)
                self._forget(actor, poller)

    def _fail_pending(self, actor: ActorConnection) -> None:
        for future, _ in self.pending.get(actor, {}).values():
            if future is not None and not future.done():
                future.set_exception(actor._died_again())
        self.pending.pop(actor, None)

    def _forget(self, actor: ActorConnection, poller: zmq.Poller) -> None:
        self.actors = {s: a for s, a in self.actors.items() if a is not actor}
        for key in (actor.sock, actor.stream.fd) if actor.stream is not None else (actor.sock,):
            try:
                poller.unregister(key)
            except KeyError:
                pass

    def _close(self, actor: ActorConnection, poller: zmq.Poller) -> None:
        if self.pending.get(actor) and actor.dead is None and not self.stopping:
            # calls still in flight: the job runs them before the DELETE; close when their replies are in
            rid = next(actor.ids)
            self.pending[actor][rid] = (None, False)
            try:
                actor.send_frames(protocol.encode(actor.signer, MsgType.DELETE, rid, serialization.dumps(None)))
                return
            except (zmq.ZMQError, stream_io.StreamClosed):
                pass
        if actor in self.pending:
            for future, _ in self.pending[actor].values():
                if future is not None and not future.done():
                    future.set_exception(RemoteError(f"{actor.where} was deleted before the call finished"))
            self.pending.pop(actor, None)
        if any(a is actor for a in self.actors.values()):
            self._forget(actor, poller)
        actor.send_delete_and_close()
