"""A framed message stream over a connected Unix stream socket: the bytes of the same-host transport.

zmq moves every message through its I/O threads (an eventfd wake-up and a thread hand-off on each
side of each message); between two processes of one host that is most of the cost of a small call.
A ``StreamConnection`` writes a message's frames behind a stream prefix (``wire/framing.py``) with
``sendmsg`` and reads them back with ``recv_into``: a blocking call costs the calling thread one
``sendmsg`` and one blocking ``recv_into``; the job one ``poll``, one ``recv_into`` and one ``sendmsg``.
A closed connection (EOF, ``ECONNRESET``) means the peer process is gone: the kernel reports it at
once, with no heartbeat.

Ctrl-C (``sigint.py``): the few lines that move bytes and record them are critical code, so a Ctrl-C
landing there waits until the stream operation returns. A blocking read waits inside those lines (one
``recv_into``: a ``poll`` first would cost ~10 us a call), so the client gives its connections a read
slice (``SO_RCVTIMEO``, ``set_read_slice``): a Ctrl-C during a long call is delivered when the slice
ends, within 0.1 s.
"""

from __future__ import annotations

import collections
import errno
import select
import socket
import struct

from parl_remote.transport.sigint import _Sigint, fire_pending, register_critical, register_interruptible
from parl_remote.wire import framing, protocol

_BUF_BYTES = 256 << 10  # receive buffer; frames at least _DIRECT_BYTES are received into their own buffer
MAX_FRAME_BYTES = 1 << 40  # a larger declared frame is a corrupt stream
_BIG_FIRST = 4 << 20  # the first allocation for a large frame; it then doubles as bytes arrive
_DIRECT_BYTES = 64 << 10
_MAX_IOV = 512  # buffers per sendmsg call (IOV_MAX is 1024 on Linux)
_NOTIFY_LIMIT_BYTES = 8 << 20  # notifications (output) are dropped while this much is waiting to be sent
_POLLIN = select.POLLIN | select.POLLHUP | select.POLLERR
_DONTWAIT = socket.MSG_DONTWAIT if hasattr(socket, "MSG_DONTWAIT") else 0

class StreamClosed(ConnectionError):
    """The peer closed the connection or its process ended."""



class StreamConnection:
    """One end of a framed, signed message stream over a connected Unix socket (see the module docstring).

    Used by one thread at a time (the blocking caller under its actor's lock, the client's reactor
    thread, or the job's main thread). Receiving is incremental: complete messages wait in ``inbox``, a
    partial one in the receive buffer, so a wait interrupted by ``KeyboardInterrupt`` loses nothing (and
    ``guard_sigint`` keeps a Ctrl-C out of the lines that move bytes and record them). Unsent bytes wait
    in an outbox that every later send or ``flush`` continues first, so a message is never cut.

    Args:
        sock: a connected ``AF_UNIX`` ``SOCK_STREAM`` socket (this object owns it).
    """

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(True)
        self.sock = sock
        self.fd = sock.fileno()
        self.inbox: collections.deque = collections.deque()  # complete messages: lists of frames
        self._buf = bytearray(_BUF_BYTES)
        self._view = memoryview(self._buf)
        self._start = 0
        self._end = 0
        self._lengths: tuple | None = None  # frame lengths of the message being received
        self._frames: list = []
        self._big: bytearray | None = None  # a large frame being received into its own buffer (grown as it fills)
        self._big_filled = 0
        self._big_len = 0  # the large frame's declared length
        self._outbox: collections.deque = collections.deque()  # memoryviews not sent yet
        self._out_bytes = 0
        self.closed = False
        self.eof = False
        self.poll_mask = select.POLLIN  # the events its owner's poller waits for (owner's bookkeeping)
        self._poller = select.poll()  # recv's wait with a timeout (not select.select: any fd number)
        self._poller.register(self.fd, _POLLIN)

    # -------------------------------------------------------------------------------- sending
    @property
    def sending(self) -> bool:
        """True while bytes wait in the outbox (the owner should wait for the socket to be writable)."""
        return bool(self._outbox)

    def send(self, frames: list, block: bool = True, notification: bool = False) -> bool:
        """Sends a message's frames (``protocol.encode``), prefixed for the stream.

        Args:
            frames: the encoded frames.
            block: wait until everything is handed to the kernel (reading incoming messages into
                ``inbox`` meanwhile, so two peers sending at once never deadlock). False: queue what the
                kernel does not take now; ``flush`` sends it.
            notification: drop the message (return False) when much is waiting to be sent already.

        Returns:
            False when a notification was dropped, else True.

        Raises:
            StreamClosed: the peer is gone.
        """
        try:
            return self._send(frames, block, notification)
        finally:
            if _Sigint.pending:
                fire_pending()

    def _send(self, frames: list, block: bool, notification: bool) -> bool:
        if self.closed:
            raise StreamClosed("the connection is closed")
        if notification and self._out_bytes > _NOTIFY_LIMIT_BYTES:
            return False
        parts = [framing.stream_prefix(frames), *frames]
        if not self._outbox:
            if len(parts) == 2 and len(parts[1]) < _DIRECT_BYTES:  # the common small message: one write
                data = parts[0] + parts[1]
                try:
                    sent = self.sock.send(data, _DONTWAIT)
                except BlockingIOError:
                    sent = 0
                except OSError as exc:
                    raise self._broken(exc) from None
                if sent == len(data):
                    return True
                parts = [memoryview(data)[sent:]]
            for part in parts:
                view = memoryview(part).cast("B")
                if view.nbytes:
                    self._outbox.append(view)
                    self._out_bytes += view.nbytes
            self._flush(block=False)
        else:
            for part in parts:
                view = memoryview(part).cast("B")
                if view.nbytes:
                    self._outbox.append(view)
                    self._out_bytes += view.nbytes
        if block:
            self._flush(block=True)
        return True

    def flush(self, block: bool = False) -> None:
        """Sends queued bytes: what the kernel takes now, or (``block``) all of them.

        Raises:
            StreamClosed: the peer is gone.
        """
        try:
            self._flush(block)
        finally:
            if _Sigint.pending:
                fire_pending()

    def _flush(self, block: bool) -> None:
        outbox = self._outbox
        while outbox:
            chunk = [outbox[i] for i in range(min(len(outbox), _MAX_IOV))]
            try:
                sent = self.sock.sendmsg(chunk, (), _DONTWAIT)
            except BlockingIOError:
                if not block:
                    return
                self._wait_writable()
                continue
            except InterruptedError:
                continue
            except OSError as exc:
                raise self._broken(exc) from None
            self._out_bytes -= sent
            while sent:
                head = outbox[0]
                if sent >= head.nbytes:
                    sent -= head.nbytes
                    outbox.popleft()
                else:
                    outbox[0] = head[sent:]
                    sent = 0

    def _wait_writable(self) -> None:
        if _Sigint.pending:  # a Ctrl-C deferred while bytes were handed over and recorded: delivered before waiting
            fire_pending()  # (nothing is half recorded here; the unsent bytes stay queued)
        poller = select.poll()
        poller.register(self.fd, select.POLLOUT | _POLLIN)
        for _, events in poller.poll():
            if events & select.POLLIN and not self.eof:
                self.read_available()  # keep the peer's messages flowing while we wait
            if self.eof:
                raise self._broken(ConnectionResetError(errno.ECONNRESET, "peer closed the connection"))
            if events & (select.POLLHUP | select.POLLERR) and not events & select.POLLOUT:
                raise self._broken(ConnectionResetError(errno.ECONNRESET, "peer hung up"))

    # ------------------------------------------------------------------------------ receiving
    def recv(self, timeout_s: float | None = None) -> list | None:
        """Returns the next message's frames, waiting for it.

        Args:
            timeout_s: seconds to wait at most; None waits without limit.

        Returns:
            The frames, or None when nothing complete arrived within ``timeout_s``.

        Raises:
            StreamClosed: the peer closed the connection (or its process ended).
            protocol.Rejected: the stream is corrupt (the connection is closed).
        """
        inbox = self.inbox
        while not inbox:
            if self.eof or self.closed:
                raise StreamClosed("the peer closed the connection")
            if timeout_s is not None and not self._poller.poll(max(0, int(timeout_s * 1000))):
                return None
            self._read(blocking=timeout_s is None)  # (a read slice, set_read_slice, ends with EAGAIN)
            if _Sigint.pending:
                fire_pending()
        return inbox.popleft()

    def set_read_slice(self, seconds: float) -> None:
        """Makes a blocking read return after at most ``seconds`` without data (``SO_RCVTIMEO``), so that a
        Ctrl-C deferred by ``guard_sigint`` while the read waits is delivered within ``seconds``.

        Raises:
            OSError: the socket is closed.
        """
        whole = int(seconds)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                             struct.pack("ll", whole, int((seconds - whole) * 1_000_000)))

    def read_available(self) -> bool:
        """Reads what has arrived without blocking; complete messages go to ``inbox``.

        Returns:
            False when the peer has closed the connection (messages before the end are in ``inbox``). The
            end may also be seen by a later call (the socket then polls readable again).

        Raises:
            protocol.Rejected: the stream is corrupt (the connection is closed).
        """
        while not self.eof and not self.closed:
            if not self._read(blocking=False):
                break
        if _Sigint.pending:
            fire_pending()
        return not self.eof

    def _read(self, blocking: bool) -> bool:
        """One read from the socket; returns True when it filled the space offered (more may be waiting).

        A short read leaves the rest to the next poll (level-triggered): one ``recv_into`` per message
        rather than a second one that would only say ``EAGAIN``. A blocking read waits here, inside
        ``_CRITICAL`` code: a Ctrl-C meanwhile is deferred until the read returns (data, or the end of the
        read slice).
        """
        flags = 0 if blocking else _DONTWAIT
        try:
            if self._big is not None:
                if self._big_filled == len(self._big):  # grow by doubling, never past what the peer declared
                    self._big[len(self._big) :] = bytes(min(len(self._big), self._big_len - len(self._big)))
                space = len(self._big) - self._big_filled
                n = self.sock.recv_into(memoryview(self._big)[self._big_filled :], 0, flags)
                if n:
                    self._big_filled += n
                    self._parse()
            else:
                if self._start == self._end:
                    self._start = self._end = 0
                elif len(self._buf) - self._end < _DIRECT_BYTES:  # make room at the end
                    size = self._end - self._start
                    self._buf[:size] = self._view[self._start : self._end]
                    self._start, self._end = 0, size
                space = len(self._buf) - self._end
                n = self.sock.recv_into(self._view[self._end :], 0, flags)
                if n:
                    self._end += n
                    self._parse()
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:  # ECONNRESET: the peer process died
            n = 0
        if not n:
            self.eof = True
            return False
        return n == space

    def _parse(self) -> None:
        """Moves complete messages from the receive buffer into ``inbox``."""
        view = self._view
        while True:
            if self._big is not None:
                if self._big_filled < self._big_len:
                    return
                self._frames.append(self._big)  # this message's own buffer: arrays over it are writable
                self._big = None
            elif self._lengths is None:
                try:
                    parsed = framing.parse_stream_prefix(view, self._start, self._end)
                except protocol.Rejected:
                    self.close()
                    raise
                if parsed is None:
                    return
                size, self._lengths = parsed
                self._start += size
                self._frames = []
            else:
                length = self._lengths[len(self._frames)]
                avail = self._end - self._start
                if length >= _DIRECT_BYTES:
                    # the buffer grows with the bytes that arrive: a prefix alone reserves no more than _BIG_FIRST
                    take = min(avail, length)
                    try:
                        if length > MAX_FRAME_BYTES:
                            raise OverflowError
                        big = bytearray(min(length, max(take, _BIG_FIRST)))
                    except (MemoryError, OverflowError):
                        self.close()
                        raise protocol.Rejected(f"a stream frame of {length} bytes", None) from None
                    big[:take] = view[self._start : self._start + take]
                    self._start += take
                    self._big, self._big_filled, self._big_len = big, take, length
                    continue
                if avail < length:
                    return
                self._frames.append(bytes(view[self._start : self._start + length]))
                self._start += length
            if len(self._frames) == len(self._lengths):
                self.inbox.append(self._frames)
                self._frames = []
                self._lengths = None

    # -------------------------------------------------------------------------------- closing
    def _broken(self, exc: BaseException) -> StreamClosed:
        self.eof = True
        return StreamClosed(f"the peer closed the connection ({exc})")

    def close(self) -> None:
        """Closes the socket (the peer sees EOF after the bytes already sent). Idempotent."""
        if self.closed:
            return
        self.closed = True
        self._outbox.clear()
        self._out_bytes = 0
        try:
            self.sock.close()
        except OSError:
            pass

    def __repr__(self) -> str:
        return f"<StreamConnection fd={self.fd}{' closed' if self.closed else ''}>"


register_critical(StreamConnection._send, StreamConnection._flush, StreamConnection._read, StreamConnection._parse)
register_interruptible(StreamConnection._wait_writable)
