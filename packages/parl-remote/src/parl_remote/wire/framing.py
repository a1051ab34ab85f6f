"""The stream framing: how a message's frames travel on a byte stream (the same-host Unix stream).

The frames of a message, exactly as ``protocol.encode`` makes them (same HEADER, same SIGNATURE,
verified before anything is unpickled by the same ``protocol.decode``), are written back to back after
a *stream prefix*::

    COUNT (u32 BE, 1..MAX_STREAM_FRAMES) || COUNT frame lengths (u64 BE each) || the frames

The prefix is not signed: a wrong length only misframes the stream, which then fails verification
(``protocol.decode``), and the receiver closes the connection.
"""

from __future__ import annotations

import struct

from parl_remote.wire.protocol import MsgType, Rejected

MAX_STREAM_FRAMES = 1 << 16
_STREAM_COUNT = struct.Struct("!I")
_STREAM_ONE = struct.Struct("!IQ")  # the prefix of the common one-frame message


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

