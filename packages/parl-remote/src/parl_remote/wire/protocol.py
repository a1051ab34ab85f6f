"""The wire format: version, message types, frame layout, signing, encode / decode. No sockets here.

A message is a list of frames (``encode``); a transport moves the frames (``transport/``), a receiver
verifies and decodes them (``decode``)::

    frame 0   head      HEADER (16 bytes, struct "!4sHBBQ": magic b"XPRL", PROTOCOL_VERSION u16,
                        MsgType u8, flags u8, request id u64; 0 for notifications)
                        || SIGNATURE (32 bytes)
                        || BODY (pickle protocol 5 stream of the message body, ``serialization.dumps``)
    frame 1+  buffers   the body's out-of-band buffers (large arrays), one zero-copy frame each;
                        with flag FLAG_SHM, frame 1 is a manifest naming same-host shared-memory files
                        or arena regions that replace the large buffers, and regions of the receiver's
                        arena that the sender released (``shm.py``)

    SIGNATURE = HMAC-SHA256(token, HEADER || BODY || for each later frame: len (u64 BE) || bytes)

The transports add their own framing around these frames, and strip it before ``decode``: a zmq ROUTER
socket's routing identity frame (``transport/zmq_io.recv_routed``), a Unix stream's length prefix
(``framing.py``). A decoded ``Message`` knows nothing of either.

A small message is one frame (each extra frame costs a send call: measured, 3 frames halved the call
rate). A message whose signature does not verify is dropped and logged **before anything is
unpickled**. A peer whose header carries another protocol version, or whose signature fails, gets an
unsigned notice (``AUTH_FAILED`` / ``VERSION_MISMATCH``: HEADER || 32 zero bytes || UTF-8 text), never
any data. Replies carry the request id of their request; several requests may be in flight on one
connection, and replies are matched by id.

Which process handles which type is the handler table (a dict ``MsgType -> method``) of that
process: ``Master.handlers``, ``Worker.handlers``, ``Job.handlers``.
"""

from __future__ import annotations

import enum
import hmac
import struct
from dataclasses import dataclass
from typing import Any

from parl_remote.wire import serialization, shm, shm_arena
from parl_remote.wire.signing import LEN, Signer

PROTOCOL_VERSION = 2  # 2: shared-memory arena and release entries in the FLAG_SHM manifest
MAGIC = b"XPRL"
HEADER = struct.Struct("!4sHBBQ")
FLAG_SHM = 1  # frame 1 is a shared-memory manifest (``shm.py``)
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
    MASTER_STOPPED = 23  # dict(address): the master was stopped (SIGTERM: xparl stop); its workers exit, as PARL's

    # client -> master
    CLIENT_REGISTER = 30  # dict(client_id, host, pid, script, started_at, python, actors)
    CLIENT_HEARTBEAT = 31  # dict(client_id)
    CLIENT_BYE = 32  # dict(client_id)
    ACQUIRE_JOB = 33  # dict(client_id, class_name, max_memory_mb, n_gpu) -> REPLY grant | NO_RESOURCE
    ACTOR_INFO = 34  # dict(actor_id) -> REPLY actor record
    STATUS = 35  # -> REPLY the status snapshot (``Master.status``)
    ACTOR_LOG = 36  # dict(actor_id, offset, max_bytes) -> REPLY (bytes, next_offset)

    # client -> job
    INIT = 40  # dict(actor_id, class_ref, class_blob, files_hash, args, kwargs, forward_output, host_id, shm_proof)
    FILES = 41  # dict(files_hash, files)
    CALL = 42  # (name, args, kwargs)
    GET_ATTR = 43  # name
    SET_ATTR = 44  # (name, value)
    DELETE = 45  # no body; the job replies and exits
    # job -> client
    LOG = 46  # notification: (stream name, text)
    # both ways, future mode: several small requests (or their replies) in one message, in order
    BATCH = 47  # list of (MsgType value, request id, body stream)


_NOTICES = (MsgType.AUTH_FAILED, MsgType.VERSION_MISMATCH)


@dataclass
class Message:
    """A verified, received message. ``body`` unpickles the payload (only verified messages exist)."""

    type: MsgType
    req_id: int
    payload: list  # [body stream, *out-of-band buffers]

    def body(self) -> Any:
        """Unpickles the message body (protocol 5 stream plus out-of-band buffers)."""
        return serialization.loads(self.payload)


def encode(
    signer: Signer, msg_type: MsgType, req_id: int, payload: list, use_shm: bool | shm_arena.Channel | None = False
) -> list:
    """Returns the frames ``[head, *buffers]`` of a message whose payload is ``[stream, *buffers]``.

    Args:
        use_shm: the peer runs on this host: large buffers travel through shared memory (``shm.py``):
            a ``shm_arena.Channel`` (the connection's reusable arenas, plus its pending release entries) or
            True (one-off files).
    """
    stream = payload[0]
    if len(payload) == 1 and (use_shm.__class__ is not shm_arena.Channel or not use_shm.released):
        # the common small message: one frame, nothing to export (kept short: it is on every call's path)
        header = HEADER.pack(MAGIC, PROTOCOL_VERSION, msg_type, 0, req_id)
        mac = signer._base.copy()
        mac.update(header)
        mac.update(stream)
        return [header + mac.digest() + bytes(stream)]
    buffers = payload[1:]
    flags = 0
    if use_shm:
        if use_shm.__class__ is shm_arena.Channel:
            exported = use_shm.export(buffers)
        else:
            exported = shm.export(buffers) if buffers else None
        if exported is not None:
            manifest, inline = exported
            buffers = [manifest, *inline]
            flags = FLAG_SHM
    header = HEADER.pack(MAGIC, PROTOCOL_VERSION, msg_type, flags, req_id)
    return [header + signer.sign(header, stream, buffers) + bytes(stream), *buffers]


def notice_frames(msg_type: MsgType, text: str) -> list:
    """The frames of an unsigned AUTH_FAILED / VERSION_MISMATCH notice carrying only ``text``."""
    return [HEADER.pack(MAGIC, PROTOCOL_VERSION, msg_type, 0, 0) + _NO_SIGNATURE + text.encode()[:1000]]


def notice_text(notice: MsgType) -> str:
    """What a peer is told when its message was rejected with ``notice``."""
    if notice is MsgType.VERSION_MISMATCH:
        return f"this xparl cluster speaks protocol {PROTOCOL_VERSION}; upgrade parl-remote on both sides"
    return "the cluster rejected the message signature: the token differs from the cluster's"


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
        peer: who sent it, filled in by the transport that received it where one socket serves several
            peers (a zmq ROUTER's routing identity); None otherwise.
    """

    peer: bytes | None = None

    def __init__(self, reason: str, msg_type: MsgType, req_id: int) -> None:
        super().__init__(reason)
        self.type = msg_type
        self.req_id = req_id


class Rejected(Exception):
    """Raised by ``decode`` for a message that must be dropped; ``notice`` is what to tell the peer."""

    def __init__(self, reason: str, notice: MsgType | None) -> None:
        super().__init__(reason)
        self.notice = notice


_MIN_HEAD = HEADER.size + SIGNATURE_BYTES


def decode(signer: Signer, frames: list, channel: shm_arena.Channel | None = None) -> Message:
    """Verifies and decodes received frames (nothing is unpickled here).

    Args:
        signer: the cluster's signer.
        frames: the message's frames (bytes or zmq.Frame), without any transport framing or routing frame.
        channel: the connection's shared-memory arenas (same-host peers), or None.

    Returns:
        The verified ``Message`` (its body is unpickled lazily by ``Message.body``).

    Raises:
        Rejected: a malformed, wrongly signed or other-version message (drop it).
        Notice: an unsigned AUTH_FAILED / VERSION_MISMATCH notice from the peer.
        Unreadable: a correctly signed message whose shared-memory buffers are gone (answer it).
    """
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
        mac.update(LEN.pack(frame_view.nbytes))
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
            raise Unreadable(f"its shared-memory buffers are unavailable ({exc})", msg_type, req_id) from None
    return Message(msg_type, req_id, [body, *buffers])


_TYPES = {int(t): t for t in MsgType}
_NOTICE_VALUES = {int(t) for t in _NOTICES}
