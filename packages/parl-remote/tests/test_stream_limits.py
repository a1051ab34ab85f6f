"""The Unix stream reader reserves memory as bytes arrive, not as a peer declares (issue #16: a 12-byte prefix
used to make a job reserve 256 MiB), and still receives a large frame intact."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from parl_remote.transport.stream_io import MAX_FRAME_BYTES, StreamConnection
from parl_remote.wire import framing, protocol


def test_a_declared_frame_size_reserves_nothing_until_bytes_arrive():
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    conn = StreamConnection(ours)
    try:
        theirs.sendall((1).to_bytes(4, "big") + (256 << 20).to_bytes(8, "big") + b"abc")  # one frame of 256 MiB
        conn.read_available()
        assert conn._big is not None and len(conn._big) <= 4 << 20  # not 256 MiB
    finally:
        conn.close()
        theirs.close()


def test_a_large_frame_arrives_intact_while_its_buffer_grows():
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    conn = StreamConnection(ours)
    payload = os.urandom(9 << 20) + b"end"
    frames = [b"head", payload]
    sender = threading.Thread(target=lambda: theirs.sendall(framing.stream_prefix(frames) + b"".join(frames)))
    sender.start()
    try:
        got = conn.recv(10.0)
        assert [bytes(f) for f in got] == frames
    finally:
        sender.join()
        conn.close()
        theirs.close()


def test_an_absurd_declared_size_is_a_corrupt_stream():
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    conn = StreamConnection(ours)
    try:
        theirs.sendall((1).to_bytes(4, "big") + (MAX_FRAME_BYTES + 1).to_bytes(8, "big") + b"x" * 100)
        with pytest.raises(protocol.Rejected, match="stream frame"):
            conn.read_available()
        assert conn.closed
    finally:
        theirs.close()
