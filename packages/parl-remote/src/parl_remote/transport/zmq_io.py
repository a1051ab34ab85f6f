"""zmq multipart I/O of wire-format messages: whole messages in and out, even when a Ctrl-C lands.

On a ROUTER socket a message is preceded by the peer's routing identity frame; DEALER sockets send and
receive it bare. Out-of-band buffers (large arrays) travel as zero-copy frames.
"""

from __future__ import annotations

import logging
import struct
import time
from typing import Any

import zmq

from parl_remote.wire import serialization, shm_arena
from parl_remote.wire.protocol import Message, MsgType, Rejected, Unreadable, decode, encode, notice_frames, notice_text
from parl_remote.wire.signing import Signer

logger = logging.getLogger(__name__)

# zmq's flags as plain ints: or-ing its IntFlag members goes through enum.Flag.__or__, which cost 9 % of the master's
# time per message at 1,000 workers (benchmarks/scale/bench_scale.py)
_SNDMORE = int(zmq.SNDMORE)
_NOBLOCK = int(zmq.NOBLOCK)
_RCVMORE = int(zmq.RCVMORE)
_EVENT = struct.Struct("=Hi")  # a socket monitor's event frame: event number, value


def send(
    sock: zmq.Socket,
    signer: Signer,
    msg_type: MsgType,
    req_id: int = 0,
    body: Any = None,
    identity: bytes | None = None,
    payload: list | None = None,
    flags: int = 0,
    use_shm: bool | shm_arena.Channel | None = False,
) -> None:
    """Signs and sends a message.

    Args:
        sock: a DEALER (``identity`` None) or ROUTER (``identity`` = the peer) socket.
        signer: the cluster's signer.
        msg_type: the message type.
        req_id: request id (the request's id in a reply; 0 for notifications).
        body: any value picklable with pickle protocol 5; ignored when ``payload`` is given.
        identity: the routing identity for a ROUTER socket.
        payload: already serialised payload frames (``serialization.dumps``).
        flags: zmq send flags (e.g. ``zmq.NOBLOCK``).
        use_shm: the peer runs on this host (large buffers through shared memory; see ``encode``).
    """
    if payload is None:
        payload = serialization.dumps(body)
    frames = encode(signer, msg_type, req_id, payload, use_shm)
    send_frames(sock, frames, identity, flags)


def send_frames(sock: zmq.Socket, frames: list, identity: bytes | None = None, flags: int = 0) -> None:
    """Sends encoded frames (small ones copied, out-of-band buffers zero-copy).

    A multipart message goes out whole: when an exception (``KeyboardInterrupt``: a Ctrl-C) cuts it after a
    frame may have been queued, the remaining frames are sent before the exception propagates. A
    half-sent message would otherwise swallow the next one (the peer would drop both, and the caller
    would wait for a reply that never comes). A frame whose fate the interruption hides is sent again:
    the peer then rejects that one message (its signature covers every frame) and the stream goes on.

    Raises:
        zmq.Again: with ``zmq.NOBLOCK``, when the message cannot be queued now (nothing was sent).
    """
    parts = frames if identity is None else [identity, *frames]
    flags = int(flags)
    last = len(parts) - 1
    if last == 0:
        sock.send(parts[0], flags)
        return
    head = last - len(frames) + 1  # parts[head] is the signed head; the buffers after it go zero-copy when large
    queued = 0  # frames known to be queued
    try:
        while queued <= last:
            part = parts[queued]
            sock.send(part, flags | (_SNDMORE if queued < last else 0), copy=queued <= head or len(part) < 65536)
            queued += 1
    except zmq.Again:
        if queued == 0:
            raise
        _finish_multipart(sock, parts, queued, flags)  # (zmq queues the rest of an accepted message)
    except BaseException:
        _finish_multipart(sock, parts, queued, flags)
        raise


def _finish_multipart(sock: zmq.Socket, parts: list, start: int, flags: int) -> None:
    """Sends ``parts[start:]`` to end a multipart message (blocking; a second Ctrl-C meanwhile waits)."""
    deferred = None
    i, last = start, len(parts) - 1
    while i <= last:
        try:
            sock.send(parts[i], (flags & ~_NOBLOCK) | (_SNDMORE if i < last else 0))
            i += 1
        except KeyboardInterrupt as exc:
            deferred = exc
        except zmq.ZMQError:  # the socket is closing: nothing more to protect
            return
    if deferred is not None:
        raise deferred


def set_zmtp_heartbeat(sock: zmq.Socket, interval_s: float, window_s: float, reconnect_max_s: float) -> None:
    """Keeps a connecting socket's link alive in libzmq, with no message reaching either side's Python: ZMTP PINGs
    every ``interval_s`` (answered with PONGs by the peer's I/O thread), ``ZMQ_HEARTBEAT_TTL`` = ``window_s`` asks
    the peer to drop this connection after that long without a frame from it (a killed, stopped or cut-off
    process), and ``ZMQ_HEARTBEAT_TIMEOUT`` = ``window_s`` drops it here when the peer answers nothing for that
    long. A dropped connection is reconnected by libzmq (every ``interval_s``, backing off to
    ``reconnect_max_s``; a connect attempt is given up after ``window_s``, so a link that comes back is used within
    about ``reconnect_max_s``). Call before ``connect``. Watch the socket's monitor
    (``get_monitor_socket``) to learn of the drops and reconnections (``monitor_events``)."""
    sock.setsockopt(zmq.HEARTBEAT_IVL, max(1, int(interval_s * 1000)))
    sock.setsockopt(zmq.HEARTBEAT_TTL, max(100, int(window_s * 1000)))  # (sent in deciseconds: at least 0.1 s)
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, max(1, int(window_s * 1000)))
    sock.setsockopt(zmq.RECONNECT_IVL, max(1, int(interval_s * 1000)))
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, max(1, int(reconnect_max_s * 1000)))
    sock.setsockopt(zmq.CONNECT_TIMEOUT, max(1, int(window_s * 1000)))


def monitor_events(mon: zmq.Socket) -> list[tuple[int, int]]:
    """Every event waiting on a socket monitor (``Socket.get_monitor_socket``), as ``(event, value)`` ints (the
    value of ``EVENT_ACCEPTED`` / ``EVENT_DISCONNECTED`` is the connection's file descriptor, what ``SRCFD`` gives
    for its messages: ``recv_routed(..., with_fd=True)``). Does not block."""
    events = []
    while True:
        try:
            frames = mon.recv_multipart(_NOBLOCK)
        except zmq.Again:
            return events
        if frames and len(frames[0]) >= 6:
            events.append(_EVENT.unpack_from(frames[0]))  # (libzmq packs them in native byte order)


def recv_frames(sock: zmq.Socket, flags: int = 0, routed: bool = False, fd_out: list | None = None) -> list:
    """Receives a multipart message: the head (and, on a ROUTER socket, the routing identity before it) as
    bytes, the later frames (out-of-band buffers: large arrays) as writable ``bytearray``s, so that arrays
    received from a call can be updated in place as PARL code does (one copy out of zmq's receive buffer;
    same-host arrays of ``SHM_MIN_BYTES`` or more travel through shared memory instead).

    An exception (a Ctrl-C) after the first frame discards the rest of that message before it propagates,
    so that the next call starts at a message boundary. With ``fd_out`` (a list), the file descriptor of the
    connection the message came in on (zmq's ``SRCFD``) is appended to it.
    """
    if fd_out is None:
        frames = [sock.recv(flags)]
    else:
        first = sock.recv(flags, copy=False)
        fd_out.append(first.get(zmq.SRCFD))
        frames = [first.bytes]
    heads = 2 if routed else 1  # frames received as plain bytes (copied by zmq: small)
    try:
        while sock.getsockopt(_RCVMORE):
            if len(frames) < heads:
                frames.append(sock.recv())
            else:
                frames.append(bytearray(sock.recv(copy=False)))  # a zmq.Frame exports its buffer
    except zmq.ZMQError:
        raise
    except BaseException:
        _discard_rest(sock)
        raise
    return frames


def _discard_rest(sock: zmq.Socket) -> None:
    """Receives and drops the remaining frames of the message being received (a second Ctrl-C waits)."""
    deferred = None
    while True:
        try:
            if not sock.getsockopt(_RCVMORE):
                break
            sock.recv()
        except KeyboardInterrupt as exc:
            deferred = exc
        except zmq.ZMQError:
            return
    if deferred is not None:
        raise deferred


class DropLog:
    """Logs dropped messages without letting their senders grow the log: the first drop at once, then at most
    one line per ``interval_s`` with how many were dropped since (any local process can send messages to a
    ROUTER port, so one line per message would let it write megabytes per second)."""

    def __init__(self, interval_s: float = 10.0) -> None:
        self.interval_s = interval_s
        self.next_at = 0.0
        self.suppressed = 0

    def __call__(self, peer: object, reason: object) -> None:
        now = time.monotonic()
        if now < self.next_at:
            self.suppressed += 1
            return
        more = f" (and {self.suppressed} more since the last report)" if self.suppressed else ""
        logger.warning("dropped a message from %r: %s%s", peer, reason, more)
        self.next_at, self.suppressed = now + self.interval_s, 0


#: the process's rate-limited log of dropped messages (``recv`` / ``recv_routed``)
log_drop = DropLog()


def send_notice(sock: zmq.Socket, msg_type: MsgType, text: str, identity: bytes | None = None) -> None:
    """Sends an unsigned AUTH_FAILED / VERSION_MISMATCH notice carrying only ``text``."""
    try:
        send_frames(sock, notice_frames(msg_type, text), identity, zmq.NOBLOCK)
    except zmq.ZMQError:
        pass


def recv(sock: zmq.Socket, signer: Signer, flags: int = 0, channel: shm_arena.Channel | None = None) -> Message | None:
    """Receives one message on a socket with one peer (DEALER); returns None (after logging) when it had to
    be dropped.

    Args:
        sock: the socket to read (a message must be ready or this blocks, unless ``flags`` say otherwise).
        signer: the cluster's signer.
        flags: zmq receive flags (``zmq.NOBLOCK`` raises ``zmq.Again`` when nothing is there).
        channel: the connection's shared-memory arenas (same-host peers), or None.

    Raises:
        Notice: the peer sent an AUTH_FAILED / VERSION_MISMATCH notice.
        Unreadable: a correctly signed message whose shared-memory buffers are gone (answer it).
    """
    frames = recv_frames(sock, flags)
    try:
        return decode(signer, frames, channel)
    except Rejected as exc:
        log_drop("the peer", exc)
        return None


def recv_routed(
    sock: zmq.Socket,
    signer: Signer,
    reply_notices: bool = True,
    flags: int = 0,
    channel: shm_arena.Channel | None = None,
    fd_out: list | None = None,
) -> tuple[bytes, Message] | None:
    """Receives one message on a ROUTER socket: ``(peer, message)``, where ``peer`` is the sender's routing
    identity (what ``send`` takes to answer it); returns None (after logging) when it had to be dropped.

    Args:
        sock: the ROUTER socket to read (a message must be ready or this blocks, unless ``flags`` say
            otherwise).
        signer: the cluster's signer.
        reply_notices: answer a rejected message with an unsigned notice.
        flags: zmq receive flags (``zmq.NOBLOCK`` raises ``zmq.Again`` when nothing is there).
        channel: the connection's shared-memory arenas (same-host peers), or None.
        fd_out: a list to which the file descriptor of the sender's connection is appended (zmq's ``SRCFD``;
            what the socket monitor's ``EVENT_DISCONNECTED`` names), or None.

    Raises:
        Notice: the peer sent an AUTH_FAILED / VERSION_MISMATCH notice.
        Unreadable: as ``recv``; its ``peer`` is set.
    """
    frames = recv_frames(sock, flags, routed=True, fd_out=fd_out)
    peer = bytes(frames[0])
    try:
        return peer, decode(signer, frames[1:], channel)
    except Rejected as exc:
        log_drop(peer, exc)
        if reply_notices and exc.notice is not None:
            send_notice(sock, exc.notice, notice_text(exc.notice), identity=peer)
        return None
    except Unreadable as exc:
        exc.peer = peer
        raise
