"""The client's end of one actor: a ``Connection`` (``transport/base.py``) straight to the actor's job.

Blocking actors (``wait=True``) are driven by the calling thread: it sends the request and reads the
connection until the reply with its request id arrives (one call at a time per actor, like PARL; a lock
serialises threads). Future-mode actors (``wait=False``) hand their connection to the client's
``Reactor`` thread (``reactor.py``) after ``__init__``: callers queue requests and get ``RemoteFuture``
objects at once, many calls can be in flight, and replies (executed in order by the job) complete them.

Transports: the connection starts on zmq over TCP; on the same host, right after ``INIT``, it moves to
the job's Unix stream socket (``transport/unix.py``: a blocking call is then one ``sendmsg`` and one
blocking ``recv_into`` in the calling thread), or with ``XPARL_UNIX_STREAM=0`` (or where the stream is
unavailable) to the job's ``ipc://`` zmq endpoint. This module only chooses; it never branches on the
transport afterwards.

Liveness: when the connection reports itself lost (``ConnectionLost``: a stream's end at once, a zmq
connection down past its grace period; a network cut shorter than ``LINK_GRACE_S`` loses nothing, TCP
delivers the calls in flight once the link is back), the master is asked why, and every pending and later
call raises ``ActorDiedError`` with that cause and whether the call was sent (then the method may have run)
or not (it did not run).
"""

from __future__ import annotations

import itertools
import logging
import sys
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import zmq

from parl_remote.errors import (
    SHM_LOSS_HINT,
    ActorDiedError,
    RemoteError,
    SerializationError,
    TransferError,
    error_body,
    make_remote_exception,
)
from parl_remote.transport import sigint, unix
from parl_remote.transport.base import Connection, ConnectionLost
from parl_remote.transport.stream_io import StreamConnection
from parl_remote.transport.zmq_peer import ZmqPeer
from parl_remote.wire import protocol, serialization, shm_arena
from parl_remote.wire.protocol import Message, MsgType
from parl_remote.wire.signing import Signer

if TYPE_CHECKING:
    from parl_remote.client.future import RemoteFuture

logger = logging.getLogger(__name__)

_SENT_NO_REPLY = "this call was sent but no reply came back: the method may have run"
_NOT_SENT = "this call was not sent: the method did not run"
_CTRL_C_LATENCY_S = 0.1  # a Ctrl-C during a blocking call on a stream is delivered within this (stream_io.py)


def close_actors(actors: Iterable[Any]) -> None:
    """Closes each actor handle of a client (``ActorConnection``, or the Ray engine's ``RayActor``) in ``actors``,
    read as a copy (closing one removes it from its client's set); one that fails to close is logged (debug) and
    the others still close."""
    for actor in list(actors):
        try:
            actor.close()
        except Exception:
            logger.debug("closing actor %s failed", getattr(actor, "actor_id", actor), exc_info=True)


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
        ctx: the client's zmq context.
        signer: the cluster's signer.
        death_cause: ``(actor_id, wait_s) -> cause or None``: asks the master why an actor ended.
        grant: the master's grant: ``actor_id``, ``address``, ``pid``, ``worker_id``.
        class_name: the actor's class name (for messages and output prefixes).
        forward_output: print the actor's output on this process's console.
    """

    def __init__(
        self,
        ctx: zmq.Context,
        signer: Signer,
        death_cause: Callable[[str, float], str | None],
        grant: dict,
        class_name: str,
        forward_output: bool,
    ) -> None:
        self.ctx = ctx
        self.signer = signer
        self.death_cause = death_cause
        self.actor_id: str = grant["actor_id"]
        self.address: str = grant["address"]
        self.pid: int = grant["pid"]
        self.class_name = class_name
        self.forward_output = forward_output
        self.where = f"actor {class_name} {self.actor_id}, pid {self.pid} at {self.address}"  # for messages
        self.conn: Connection = ZmqPeer(ctx, f"tcp://{self.address}", signer)
        self._zmq: ZmqPeer = self.conn  # the last zmq connection (introspection: ``sock``)
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.dead: ActorDiedError | None = None
        self.closed = False
        self.shadowed: frozenset = frozenset()  # method names the remote instance has attributes of (INIT reply)
        self.shm_channel: shm_arena.Channel | None = None  # this connection's /dev/shm arenas (same host)
        self.stream_name: str | None = None  # the job's Unix stream socket, once moved there
        self.reactor: Any = None  # the client's ``reactor.Reactor`` once this actor is handed over (future mode)
        self._partial: dict[str, str] = {}
        sigint.guard_sigint()  # a Ctrl-C must not cut a message in two (main thread only; see sigint.py)

    # ------------------------------------------------------------------------------- transports
    def use_shared_memory(self, channel: shm_arena.Channel) -> None:
        """Large buffers of later messages travel through ``channel``'s /dev/shm arenas (the job is on this host)."""
        self.shm_channel = self.conn.channel = channel

    def use_endpoint(self, endpoint: str) -> None:
        """Moves this connection to another zmq endpoint of the same job (its same-host ``ipc://`` socket).

        Called by ``Client.create_actor`` right after ``INIT``, before any other request; a failure keeps the
        TCP connection.
        """
        with self.lock:
            try:
                conn = ZmqPeer(self.ctx, endpoint, self.signer, self.shm_channel, self.conn.ever_connected)
            except zmq.ZMQError as exc:
                logger.debug("staying on TCP for %s: %s", self.where, exc)
                return
            self.conn.close(linger_ms=0)
            self.conn = self._zmq = conn

    def use_stream(self, name: str) -> bool:
        """Moves this connection to the job's Unix stream socket ``name`` (same host; ``transport/unix.py``).

        Called by ``Client.create_actor`` right after ``INIT``, before any other request. The listener must be
        the granted job's process, run by this user (``SO_PEERCRED``); otherwise, or when the connection
        fails, the connection stays on zmq and False is returned.
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
            io = StreamConnection(sock)
            if sigint.guard_sigint():  # a Ctrl-C must not cut the stream's framing (main thread only)
                io.set_read_slice(_CTRL_C_LATENCY_S)
            self.conn.close(linger_ms=0)
            self.conn = unix.UnixPeer(io, self.signer, self.shm_channel)
            self.stream_name = name
            return True

    @property
    def stream(self) -> StreamConnection | None:
        """The Unix stream under this connection, or None on zmq (introspection)."""
        return getattr(self.conn, "io", None)

    @property
    def sock(self) -> zmq.Socket:
        """The zmq socket this connection used last (closed once it moved to a stream; introspection)."""
        return self._zmq.sock

    @property
    def same_host(self) -> bool:
        """True when the job runs on this host (large buffers then travel through /dev/shm)."""
        return self.shm_channel is not None

    @property
    def ever_connected(self) -> bool:
        return self.conn.ever_connected

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
                raise self.died_again()
            if self.closed:
                raise RemoteError(f"{self.where} was deleted")
            rid = next(self.ids)
            conn = self.conn
            sent = False
            try:
                conn.send(msg_type, rid, payload)
                sent = True
                while True:
                    msg = self.receive(None)
                    if msg.req_id == rid:
                        return msg
            except ConnectionLost as exc:
                self.mark_dead(exc.cause, exc.wait_s)
                raise self.died_again(sent) from None

    def receive(self, timeout_s: float | None) -> Message | None:
        """The next reply (None: nothing within ``timeout_s``); drops (and logs) rejected messages, prints LOG
        notifications.

        Raises:
            ConnectionLost: the connection ended.
        """
        while True:
            try:
                msg = self.conn.recv(timeout_s)
            except (protocol.Rejected, protocol.Notice) as exc:
                logger.warning("dropped a message from %s: %s", self.where, exc)
                continue
            except protocol.Unreadable as exc:  # a reply whose result is gone from /dev/shm: fail that call
                logger.warning("a %s from %s could not be read: %s", exc.type.name, self.where, exc)
                if not exc.req_id or exc.type not in (MsgType.REPLY, MsgType.ERROR):
                    continue
                error = TransferError(
                    f"the result of this call on {self.where} could not be read from shared memory (the method "
                    f"did run): {exc}. {SHM_LOSS_HINT}"
                )
                return Message(MsgType.ERROR, exc.req_id, serialization.dumps(error_body(error, "")))
            if msg is None or msg.type is not MsgType.LOG:
                return msg
            self.print_output(msg.body())

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
            from parl_remote.client.future import RemoteFuture

            future = RemoteFuture()
            try:
                future.set_result(self.call(name, args, kwargs))
            except BaseException as exc:  # noqa: BLE001
                future.set_exception(exc)
            return future
        return self.reactor.submit(self, MsgType.CALL, payload)

    # -------------------------------------------------------------------------------- liveness
    def check_liveness(self) -> None:
        """Raises ActorDiedError when the job's connection is lost."""
        if self.dead is not None:
            raise self.died_again()
        try:
            self.conn.check_alive()
        except ConnectionLost as exc:
            raise self.mark_dead(exc.cause, exc.wait_s) from None

    def mark_dead(self, cause: str | None = None, wait_s: float = 1.0) -> ActorDiedError:
        """Records that the actor is dead (asking the master why, for up to ``wait_s``) and returns the error."""
        if self.dead is None:
            cause = cause or self.death_cause(self.actor_id, wait_s) or self.conn.lost_text
            self.dead = ActorDiedError(f"{self.where} died: {cause}", cause=cause)
            self._close_connection(linger_ms=0)
        return self.dead

    def died_again(self, sent: bool = False) -> ActorDiedError:
        """A fresh ``ActorDiedError`` like the recorded one (one per failed call), saying whether the call ran:
        ``sent``: it was sent and no reply came back (it may have run), else it was never sent (it did not run)."""
        ran = _SENT_NO_REPLY if sent else _NOT_SENT
        return ActorDiedError(f"{self.dead}; {ran}", cause=self.dead.cause)

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
        """Tells the job to end (without waiting) and closes the connection."""
        if send_delete and self.dead is None:
            self.conn.send_best_effort(MsgType.DELETE, 0, serialization.dumps(None))
        self._close_connection(linger_ms=1000)

    def _close_connection(self, linger_ms: int) -> None:
        if self.shm_channel is not None:
            self.shm_channel.close()
        self.conn.close(linger_ms)
