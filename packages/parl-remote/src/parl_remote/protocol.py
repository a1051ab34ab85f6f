"""The wire protocol: version, message types, frame layout, signing.

Every message is a zmq multipart message. On a ROUTER socket it is preceded by the peer's routing
identity frame; DEALER sockets send and receive it bare::

    frame 0  header     struct "!4sHBQ": magic b"XPRL", PROTOCOL_VERSION (u16), MsgType (u8),
                        request id (u64; 0 for notifications)
    frame 1  signature  HMAC-SHA256(token, header || for each payload frame: len (u64 BE) || bytes)
    frame 2  body       pickle protocol 5 stream of the message body (``serialization.dumps``)
    frame 3+ buffers    the body's out-of-band buffers, one zero-copy frame each

A message whose signature does not verify is dropped and logged **before anything is unpickled**.
A peer whose header carries another protocol version, or whose signature fails, gets an unsigned
notice (``AUTH_FAILED`` / ``VERSION_MISMATCH``) whose only payload is a short UTF-8 text: never any
data. Replies carry the request id of their request; several requests may be in flight on one
connection (ROUTER/DEALER), and replies are matched by id.

Which process handles which type is the handler table (a dict ``MsgType -> method``) of that
process: ``Master.handlers``, ``Worker.handlers``, ``Job.handlers``.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import logging
import struct
from dataclasses import dataclass
from typing import Any

import zmq

from parl_remote import serialization

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
MAGIC = b"XPRL"
HEADER = struct.Struct("!4sHBQ")
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


_NOTICES = (MsgType.AUTH_FAILED, MsgType.VERSION_MISMATCH)


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

    def sign(self, header: bytes, payload: list) -> bytes:
        """Returns the 32-byte signature of a header and its payload frames."""
        if len(payload) == 1:
            body = payload[0]
            return hmac.digest(self._key, header + _LEN.pack(len(body)) + bytes(body), "sha256")
        mac = hmac.new(self._key, header, hashlib.sha256)
        for frame in payload:
            view = memoryview(frame)
            mac.update(_LEN.pack(view.nbytes))
            mac.update(view)
        return mac.digest()

    def verify(self, header: bytes, signature: bytes, payload: list) -> bool:
        """True when ``signature`` is the signature of ``header`` and ``payload`` (constant time)."""
        return len(signature) == SIGNATURE_BYTES and hmac.compare_digest(self.sign(header, payload), signature)


@dataclass
class Message:
    """A verified, received message. ``body`` unpickles the payload (only verified messages exist)."""

    type: MsgType
    req_id: int
    payload: list
    identity: bytes | None = None

    def body(self) -> Any:
        """Unpickles the message body (protocol 5 stream plus out-of-band buffers)."""
        return serialization.loads(self.payload)


def encode(signer: Signer, msg_type: MsgType, req_id: int, payload: list) -> list:
    """Returns the frames [header, signature, *payload] of a message."""
    header = HEADER.pack(MAGIC, PROTOCOL_VERSION, msg_type, req_id)
    return [header, signer.sign(header, payload), *payload]


def send(
    sock: zmq.Socket,
    signer: Signer,
    msg_type: MsgType,
    req_id: int = 0,
    body: Any = None,
    identity: bytes | None = None,
    payload: list | None = None,
    flags: int = 0,
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
    """
    if payload is None:
        payload = serialization.dumps(body)
    frames = encode(signer, msg_type, req_id, payload)
    if identity is not None:
        frames.insert(0, identity)
    copy = len(payload) == 1 or all(len(memoryview(f)) < 65536 for f in payload)
    sock.send_multipart(frames, flags=flags, copy=copy)


def send_notice(sock: zmq.Socket, msg_type: MsgType, text: str, identity: bytes | None = None) -> None:
    """Sends an unsigned AUTH_FAILED / VERSION_MISMATCH notice carrying only ``text``."""
    frames = [HEADER.pack(MAGIC, PROTOCOL_VERSION, msg_type, 0), b"", text.encode()[:1000]]
    if identity is not None:
        frames.insert(0, identity)
    try:
        sock.send_multipart(frames, flags=zmq.NOBLOCK)
    except zmq.ZMQError:
        pass


class Notice(Exception):
    """Raised by ``decode`` for an unsigned AUTH_FAILED / VERSION_MISMATCH notice from a peer."""

    def __init__(self, msg_type: MsgType, text: str) -> None:
        super().__init__(text)
        self.type = msg_type
        self.text = text


class Rejected(Exception):
    """Raised by ``decode`` for a message that must be dropped; ``notice`` is what to tell the peer."""

    def __init__(self, reason: str, notice: MsgType | None) -> None:
        super().__init__(reason)
        self.notice = notice


def decode(signer: Signer, frames: list, has_identity: bool) -> Message:
    """Verifies and decodes received frames (nothing is unpickled here).

    Args:
        signer: the cluster's signer.
        frames: the frames as received (bytes or zmq.Frame).
        has_identity: True on a ROUTER socket (frame 0 is the peer identity).

    Returns:
        The verified ``Message`` (its body is unpickled lazily by ``Message.body``).

    Raises:
        Rejected: a malformed, wrongly signed or other-version message (drop it).
        Notice: an unsigned AUTH_FAILED / VERSION_MISMATCH notice from the peer.
    """
    identity = None
    if has_identity:
        identity = bytes(frames[0])
        frames = frames[1:]
    if len(frames) < 3:
        raise Rejected(f"malformed message with {len(frames)} frames", MsgType.AUTH_FAILED)
    header = bytes(frames[0])
    if len(header) != HEADER.size:
        raise Rejected("malformed header", MsgType.AUTH_FAILED)
    magic, version, raw_type, req_id = HEADER.unpack(header)
    if magic != MAGIC:
        raise Rejected("not an xparl message", MsgType.AUTH_FAILED)
    try:
        msg_type = MsgType(raw_type)
    except ValueError:
        msg_type = None
    signature = bytes(frames[1])
    if msg_type in _NOTICES and not signature:
        raise Notice(msg_type, bytes(frames[2])[:1000].decode(errors="replace"))
    if version != PROTOCOL_VERSION:
        raise Rejected(f"protocol version {version} != {PROTOCOL_VERSION}", MsgType.VERSION_MISMATCH)
    payload = frames[2:]
    if not signer.verify(header, signature, payload):
        raise Rejected("bad signature (wrong token?)", MsgType.AUTH_FAILED)
    if msg_type is None:
        raise Rejected(f"unknown message type {raw_type}", None)
    return Message(msg_type, req_id, payload, identity)


def recv(sock: zmq.Socket, signer: Signer, has_identity: bool, reply_notices: bool = True) -> Message | None:
    """Receives one message; returns None (after logging) when it had to be dropped.

    Args:
        sock: the socket to read (a message must be ready or this blocks).
        signer: the cluster's signer.
        has_identity: True for a ROUTER socket.
        reply_notices: on a ROUTER socket, answer a rejected message with an unsigned notice.

    Raises:
        Notice: the peer sent an AUTH_FAILED / VERSION_MISMATCH notice.
    """
    frames = sock.recv_multipart(copy=False)
    try:
        return decode(signer, frames, has_identity)
    except Rejected as exc:
        logger.warning("dropped a message from %r: %s", bytes(frames[0]) if has_identity else "peer", exc)
        if reply_notices and has_identity and exc.notice is not None:
            text = (
                f"this xparl cluster speaks protocol {PROTOCOL_VERSION}; upgrade parl-remote on both sides"
                if exc.notice is MsgType.VERSION_MISMATCH
                else "the cluster rejected the message signature: the token differs from the cluster's"
            )
            send_notice(sock, exc.notice, text, identity=bytes(frames[0]))
        return None
