"""The wire protocol: version, message types, frame layout, signing.

Every message is a zmq multipart message. On a ROUTER socket it is preceded by the peer's routing
identity frame; DEALER sockets send and receive it bare::

    frame 0   head      HEADER (16 bytes, struct "!4sHBBQ": magic b"XPRL", PROTOCOL_VERSION u16,
                        MsgType u8, flags u8, request id u64; 0 for notifications)
                        || SIGNATURE (32 bytes)
                        || BODY (pickle protocol 5 stream of the message body, ``serialization.dumps``)
    frame 1+  buffers   the body's out-of-band buffers (large arrays), one zero-copy frame each;
                        with flag FLAG_SHM, frame 1 is a manifest naming same-host shared-memory files
                        or arena regions that replace the large buffers, and regions of the receiver's
                        arena that the sender released (``shm.py``)

    SIGNATURE = HMAC-SHA256(token, HEADER || BODY || for each later frame: len (u64 BE) || bytes)

A small message is one frame (each extra frame costs a send call: measured, 3 frames halved the call
rate). A message whose signature does not verify is dropped and logged **before anything is
unpickled**. A peer whose header carries another protocol version, or whose signature fails, gets an
unsigned notice (``AUTH_FAILED`` / ``VERSION_MISMATCH``: HEADER || 32 zero bytes || UTF-8 text), never
any data. Replies carry the request id of their request; several requests may be in flight on one
connection (ROUTER/DEALER), and replies are matched by id.

Same-host stream framing: a client and a job on one host talk over an abstract-namespace Unix stream
socket instead (``stream.py``; no zmq I/O threads on the path). The frames of a message, exactly as
above (same HEADER, same SIGNATURE, verified before anything is unpickled by the same ``decode``), are
written back to back after a *stream prefix*::

    COUNT (u32 BE, 1..MAX_STREAM_FRAMES) || COUNT frame lengths (u64 BE each) || the frames

The prefix is not signed: a wrong length only misframes the stream, which then fails verification
(``decode``), and the receiver closes the connection.

Which process handles which type is the handler table (a dict ``MsgType -> method``) of that
process: ``Master.handlers``, ``Worker.handlers``, ``Job.handlers``.
"""

from __future__ import annotations

import enum
import hmac
import logging
import struct
from dataclasses import dataclass
from typing import Any

import zmq

from parl_remote import serialization, shm

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = 2  # 2: shared-memory arena and release entries in the FLAG_SHM manifest
MAGIC = b"XPRL"
HEADER = struct.Struct("!4sHBBQ")
FLAG_SHM = 1  # frame 1 is a shared-memory manifest (``shm.py``)
_LEN = struct.Struct("!Q")
SIGNATURE_BYTES = 32


class MsgType(enum.IntEnum):
    """Message types. Requests get a reply of type REPLY (or one of the error replies)."""

    # generic replies
    REPLY = 1  # body: the result (any picklable value)
    ERROR = 2  # body: dict(type, message, traceback, exception) raised on the caller
    NO_RESOURCE = 3  # master: no free CPU now; body: dict(total, used, vacant, workers)
    AUTH_FAILED = 4  # unsigned notice; payload: text
    VERSION_MISMATCH = 5  # unsigned notice; payload: text
    NEED_FILES = 6  # job: send the files bundle first

    # worker -> master
    WORKER_REGISTER = 10  # dict(worker_id, host, pid, cpus_total, vacant_jobs, busy_jobs, python)
    WORKER_HEARTBEAT = 11  # dict(worker_id, memory/load metrics)
    JOB_READY = 12  # dict(worker_id, job_id, address, pid)
    JOB_ENDED = 13  # dict(worker_id, job_id, actor_id, cause)
    ACTOR_FAILED_CALL = 14  # dict(actor_id, type, message, traceback, time)
    REREGISTER = 15  # master -> worker/client: "I do not know you, register again"

    # master -> worker
    ASSIGN_JOB = 20  # dict(job_id, actor_id, client_id, class_name, max_memory_mb)
    KILL_JOB = 21  # dict(job_id, cause)
    READ_LOG = 22  # dict(actor_id, offset, max_bytes) -> REPLY (bytes, next_offset)

    # client -> master
    CLIENT_REGISTER = 30  # dict(client_id, host, pid, script, started_at, python, actors)
    CLIENT_HEARTBEAT = 31  # dict(client_id)
    CLIENT_BYE = 32  # dict(client_id)
    ACQUIRE_JOB = 33  # dict(client_id, class_name, max_memory_mb, n_gpu) -> REPLY grant | NO_RESOURCE
    ACTOR_INFO = 34  # dict(actor_id) -> REPLY actor record
    STATUS = 35  # -> REPLY status dict (contract B)
    ACTOR_LOG = 36  # dict(actor_id, offset, max_bytes) -> REPLY (bytes, next_offset)

    # client -> job
    INIT = 40  # dict(actor_id, class_ref, class_blob, files_hash, args, kwargs, forward_output)
    FILES = 41  # dict(files_hash, files)
    CALL = 42  # (name, args, kwargs)
    GET_ATTR = 43  # name
    SET_ATTR = 44  # (name, value)
    DELETE = 45  # no body; the job replies and exits
    # job -> client
    LOG = 46  # notification: (stream name, text)
    # both ways, future mode: several small requests (or their replies) in one message, in order
    BATCH = 47  # list of (MsgType value, request id, body stream)


MAX_STREAM_FRAMES = 1 << 16
_STREAM_COUNT = struct.Struct("!I")
_STREAM_ONE = struct.Struct("!IQ")  # the prefix of the common one-frame message

_NOTICES = (MsgType.AUTH_FAILED, MsgType.VERSION_MISMATCH)

try:  # OpenSSL's HMAC object (copy/update/digest in C); the hmac module's pure-Python wrapper otherwise
    from _hashlib import hmac_new as _hmac_new
except ImportError:  # pragma: no cover - CPython without OpenSSL
    _hmac_new = hmac.new


class Signer:
    """Signs and verifies messages with HMAC-SHA256 and the cluster token.

    Args:
        token: the cluster's shared secret (str or bytes, non-empty).

    Raises:
        ValueError: for an empty token.
    """

    def __init__(self, token: str | bytes) -> None:
        key = token.encode() if isinstance(token, str) else bytes(token)
        if not key:
            raise ValueError("the cluster token is empty; pass token=... or set XPARL_TOKEN")
        self._key = key
        # the keyed HMAC state, computed once and copied per message (half the cost of a one-shot HMAC)
        self._base = _hmac_new(key, digestmod="sha256")

    def sign(self, header: bytes, body: bytes | memoryview, buffers: list = ()) -> bytes:
        """Returns the 32-byte signature of a header, a body stream and out-of-band buffers."""
        mac = self._base.copy()
        mac.update(header)
        mac.update(body)
        if not buffers:
            return mac.digest()
        for frame in buffers:
            view = memoryview(frame)
            mac.update(_LEN.pack(view.nbytes))
            mac.update(view)
        return mac.digest()

    def verify(self, header: bytes, signature: bytes, body: bytes | memoryview, buffers: list = ()) -> bool:
        """True when ``signature`` signs ``header``, ``body`` and ``buffers`` (constant-time compare)."""
        return hmac.compare_digest(self.sign(header, body, buffers), signature)


@dataclass
class Message:
    """A verified, received message. ``body`` unpickles the payload (only verified messages exist)."""

    type: MsgType
    req_id: int
    payload: list  # [body stream, *out-of-band buffers]
    identity: bytes | None = None  # the sender's routing identity on a ROUTER socket
    stream: Any = None  # the ``stream.StreamConnection`` it came on (same-host stream peers); replies go there

    def body(self) -> Any:
        """Unpickles the message body (protocol 5 stream plus out-of-band buffers)."""
        return serialization.loads(self.payload)


def encode(
    signer: Signer, msg_type: MsgType, req_id: int, payload: list, use_shm: bool | shm.Channel | None = False
) -> list:
    """Returns the frames ``[head, *buffers]`` of a message whose payload is ``[stream, *buffers]``.

    Args:
        use_shm: the peer runs on this host: large buffers travel through shared memory (``shm.py``):
            a ``shm.Channel`` (the connection's reusable arenas, plus its pending release entries) or
            True (one-off files).
    """
    stream = payload[0]
    if len(payload) == 1 and (use_shm.__class__ is not shm.Channel or not use_shm.released):
        # the common small message: one frame, nothing to export (kept short: it is on every call's path)
        header = HEADER.pack(MAGIC, PROTOCOL_VERSION, msg_type, 0, req_id)
        mac = signer._base.copy()
        mac.update(header)
        mac.update(stream)
        return [header + mac.digest() + bytes(stream)]
    buffers = payload[1:]
    flags = 0
    if use_shm:
        exported = (
            use_shm.export(buffers) if use_shm.__class__ is shm.Channel else (shm.export(buffers) if buffers else None)
        )
        if exported is not None:
            manifest, inline = exported
            buffers = [manifest, *inline]
            flags = FLAG_SHM
    header = HEADER.pack(MAGIC, PROTOCOL_VERSION, msg_type, flags, req_id)
    return [header + signer.sign(header, stream, buffers) + bytes(stream), *buffers]


def send(
    sock: zmq.Socket,
    signer: Signer,
    msg_type: MsgType,
    req_id: int = 0,
    body: Any = None,
    identity: bytes | None = None,
    payload: list | None = None,
    flags: int = 0,
    use_shm: bool | shm.Channel | None = False,
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
    last = len(parts) - 1
    if last == 0:
        sock.send(parts[0], flags)
        return
    head = last - len(frames) + 1  # parts[head] is the signed head; the buffers after it go zero-copy when large
    queued = 0  # frames known to be queued
    try:
        while queued <= last:
            part = parts[queued]
            sock.send(part, flags | (zmq.SNDMORE if queued < last else 0), copy=queued <= head or len(part) < 65536)
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
            sock.send(parts[i], (flags & ~zmq.NOBLOCK) | (zmq.SNDMORE if i < last else 0))
            i += 1
        except KeyboardInterrupt as exc:
            deferred = exc
        except zmq.ZMQError:  # the socket is closing: nothing more to protect
            return
    if deferred is not None:
        raise deferred


def recv_frames(sock: zmq.Socket, flags: int = 0) -> list:
    """Receives a multipart message: the first frames copied (small), out-of-band buffers zero-copy.

    An exception (a Ctrl-C) after the first frame discards the rest of that message before it propagates,
    so that the next call starts at a message boundary.
    """
    frames = [sock.recv(flags)]
    try:
        while sock.getsockopt(zmq.RCVMORE):
            frames.append(sock.recv(copy=len(frames) < 2))
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
            if not sock.getsockopt(zmq.RCVMORE):
                break
            sock.recv()
        except KeyboardInterrupt as exc:
            deferred = exc
        except zmq.ZMQError:
            return
    if deferred is not None:
        raise deferred


def stream_prefix(frames: list) -> bytes:
    """Returns the stream prefix (frame count and lengths) of encoded frames (see the module docstring).

    Raises:
        ValueError: more than ``MAX_STREAM_FRAMES`` frames.
    """
    count = len(frames)
    if count == 1:
        return _STREAM_ONE.pack(1, len(frames[0]))
    if count > MAX_STREAM_FRAMES:
        raise ValueError(f"a message of {count} frames; at most {MAX_STREAM_FRAMES} travel on a stream")
    return struct.pack(f"!I{count}Q", count, *(memoryview(f).nbytes for f in frames))


def parse_stream_prefix(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, tuple] | None:
    """Parses a stream prefix at ``buf[pos:end]``.

    Returns:
        ``(prefix size in bytes, frame lengths)``, or None when ``buf[pos:end]`` does not hold all of it yet.

    Raises:
        Rejected: a frame count of 0 or above ``MAX_STREAM_FRAMES`` (the stream is corrupt).
    """
    if end - pos < 4:
        return None
    (count,) = _STREAM_COUNT.unpack_from(buf, pos)
    if count == 1:
        if end - pos < 12:
            return None
        return 12, (_STREAM_ONE.unpack_from(buf, pos)[1],)
    if count == 0 or count > MAX_STREAM_FRAMES:
        raise Rejected(f"stream prefix announces {count} frames", MsgType.AUTH_FAILED)
    size = 4 + 8 * count
    if end - pos < size:
        return None
    return size, struct.unpack_from(f"!{count}Q", buf, pos + 4)


def notice_frames(msg_type: MsgType, text: str) -> list:
    """The frames of an unsigned AUTH_FAILED / VERSION_MISMATCH notice carrying only ``text``."""
    return [HEADER.pack(MAGIC, PROTOCOL_VERSION, msg_type, 0, 0) + _NO_SIGNATURE + text.encode()[:1000]]


def notice_text(notice: MsgType) -> str:
    """What a peer is told when its message was rejected with ``notice``."""
    if notice is MsgType.VERSION_MISMATCH:
        return f"this xparl cluster speaks protocol {PROTOCOL_VERSION}; upgrade parl-remote on both sides"
    return "the cluster rejected the message signature: the token differs from the cluster's"


def send_notice(sock: zmq.Socket, msg_type: MsgType, text: str, identity: bytes | None = None) -> None:
    """Sends an unsigned AUTH_FAILED / VERSION_MISMATCH notice carrying only ``text``."""
    try:
        send_frames(sock, notice_frames(msg_type, text), identity, zmq.NOBLOCK)
    except zmq.ZMQError:
        pass


_NO_SIGNATURE = bytes(SIGNATURE_BYTES)


class Notice(Exception):
    """Raised by ``decode`` for an unsigned AUTH_FAILED / VERSION_MISMATCH notice from a peer."""

    def __init__(self, msg_type: MsgType, text: str) -> None:
        super().__init__(text)
        self.type = msg_type
        self.text = text


class Unreadable(Exception):
    """Raised by ``decode`` for an authentic (correctly signed) message whose shared-memory buffers cannot
    be read: unlike a ``Rejected`` one, its request can be answered with an error, and the connection's
    framing is intact.

    Attributes:
        type: the message's type. req_id: its request id (0: a notification, nothing to answer).
        identity: the sender's routing identity (ROUTER sockets), else None.
    """

    def __init__(self, reason: str, msg_type: MsgType, req_id: int, identity: bytes | None) -> None:
        super().__init__(reason)
        self.type = msg_type
        self.req_id = req_id
        self.identity = identity


class Rejected(Exception):
    """Raised by ``decode`` for a message that must be dropped; ``notice`` is what to tell the peer."""

    def __init__(self, reason: str, notice: MsgType | None) -> None:
        super().__init__(reason)
        self.notice = notice


_MIN_HEAD = HEADER.size + SIGNATURE_BYTES


def decode(signer: Signer, frames: list, has_identity: bool, channel: shm.Channel | None = None) -> Message:
    """Verifies and decodes received frames (nothing is unpickled here).

    Args:
        signer: the cluster's signer.
        frames: the frames as received (bytes or zmq.Frame).
        has_identity: True on a ROUTER socket (frame 0 is the peer identity).
        channel: the connection's shared-memory arenas (same-host peers), or None.

    Returns:
        The verified ``Message`` (its body is unpickled lazily by ``Message.body``).

    Raises:
        Rejected: a malformed, wrongly signed or other-version message (drop it).
        Notice: an unsigned AUTH_FAILED / VERSION_MISMATCH notice from the peer.
        Unreadable: a correctly signed message whose shared-memory buffers are gone (answer it).
    """
    identity = None
    if has_identity:
        identity = bytes(frames[0])
        frames = frames[1:]
    if not frames:
        raise Rejected("empty message", MsgType.AUTH_FAILED)
    head = frames[0]
    if len(head) < _MIN_HEAD:
        raise Rejected("malformed message", MsgType.AUTH_FAILED)
    magic, version, raw_type, msg_flags, req_id = HEADER.unpack_from(head)
    if magic != MAGIC:
        raise Rejected("not an xparl message", MsgType.AUTH_FAILED)
    view = memoryview(head)
    body = view[_MIN_HEAD:]
    if raw_type in _NOTICE_VALUES and view[HEADER.size : _MIN_HEAD] == _NO_SIGNATURE:
        raise Notice(MsgType(raw_type), bytes(body[:1000]).decode(errors="replace"))
    if version != PROTOCOL_VERSION:
        raise Rejected(f"protocol version {version} != {PROTOCOL_VERSION}", MsgType.VERSION_MISMATCH)
    buffers = frames[1:]
    mac = signer._base.copy()
    mac.update(view[: HEADER.size])
    mac.update(body)
    for frame in buffers:
        frame_view = memoryview(frame)
        mac.update(_LEN.pack(frame_view.nbytes))
        mac.update(frame_view)
    if not hmac.compare_digest(mac.digest(), view[HEADER.size : _MIN_HEAD]):
        raise Rejected("bad signature (wrong token?)", MsgType.AUTH_FAILED)
    msg_type = _TYPES.get(raw_type)
    if msg_type is None:
        raise Rejected(f"unknown message type {raw_type}", None)
    if msg_flags & FLAG_SHM and buffers:
        try:
            buffers = shm.restore(buffers[0], buffers[1:], channel)
        except (OSError, ValueError, StopIteration) as exc:
            raise Unreadable(f"its shared-memory buffers are unavailable ({exc})", msg_type, req_id, identity) from None
    return Message(msg_type, req_id, [body, *buffers], identity)


_TYPES = {int(t): t for t in MsgType}
_NOTICE_VALUES = {int(t) for t in _NOTICES}


def recv(
    sock: zmq.Socket,
    signer: Signer,
    has_identity: bool,
    reply_notices: bool = True,
    flags: int = 0,
    channel: shm.Channel | None = None,
) -> Message | None:
    """Receives one message; returns None (after logging) when it had to be dropped.

    Args:
        sock: the socket to read (a message must be ready or this blocks, unless ``flags`` say otherwise).
        signer: the cluster's signer.
        has_identity: True for a ROUTER socket.
        reply_notices: on a ROUTER socket, answer a rejected message with an unsigned notice.
        flags: zmq receive flags (``zmq.NOBLOCK`` raises ``zmq.Again`` when nothing is there).
        channel: the connection's shared-memory arenas (same-host peers), or None.

    Raises:
        Notice: the peer sent an AUTH_FAILED / VERSION_MISMATCH notice.
    """
    frames = recv_frames(sock, flags)
    try:
        return decode(signer, frames, has_identity, channel)
    except Rejected as exc:
        logger.warning("dropped a message from %r: %s", bytes(frames[0]) if has_identity else "peer", exc)
        if reply_notices and has_identity and exc.notice is not None:
            send_notice(sock, exc.notice, notice_text(exc.notice), identity=bytes(frames[0]))
        return None
