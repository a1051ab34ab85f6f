"""The same-host transport between a client and a job: an abstract-namespace Unix stream socket.

zmq moves every message through its I/O threads (an eventfd wake-up and a thread hand-off on each
side of each message); between two processes of one host that is most of the cost of a small call.
So after ``INIT`` a job offers, besides its zmq endpoints, a listening ``AF_UNIX`` stream socket named
``\\0xparl-<pid>-<random>`` (abstract namespace: no file, gone with the process). A same-host client
connects to it, checks with ``SO_PEERCRED`` that the listener is the granted job's pid and runs as its
own user, and from then on ALL its traffic with that job (calls, futures and batches, attributes,
``DELETE``, output forwarding, shared-memory manifests) travels on it. The job accepts only peers of
its own uid (``SO_PEERCRED``). Messages are the protocol's signed frames behind a stream prefix
(``protocol.stream_prefix``): the same HMAC, verified before anything is unpickled, and a connection
that delivers one bad message is closed (its framing can no longer be trusted).

A blocking call costs the calling thread one ``sendmsg`` and one blocking ``recv_into``; the job
one ``poll``, one ``recv_into`` and one ``sendmsg``. A closed connection (EOF, ``ECONNRESET``) means the
peer process is gone: the kernel reports it at once, with no heartbeat.

Ctrl-C: Python raises ``KeyboardInterrupt`` at the next bytecode boundary, which can fall between
taking bytes off the socket (or handing them to it) and recording that, and the stream would lose its
framing. So the client installs ``guard_sigint`` in its main thread: a SIGINT handler, wrapping the one
it finds, that defers a Ctrl-C landing inside the few lines that move bytes and record them, or in
the helpers they call (``_CRITICAL``), until the stream operation returns, and passes every other Ctrl-C
on at once. A blocking read waits inside those lines (one ``recv_into``: a ``poll`` first would cost ~10 us a call), so
the client gives its connections a read slice (``SO_RCVTIMEO``, ``set_read_slice``): a Ctrl-C during a
long call is delivered when the slice ends, within 0.1 s. Other client steps that a Ctrl-C must not split
(encoding a request and queueing it, which takes shared-memory regions; a zmq send or receive) register
with ``defer_ctrl_c_in``.

``XPARL_UNIX_STREAM=0`` turns the fast path off (the client then uses the job's zmq ``ipc://``
endpoint, as between hosts it uses TCP).
"""

from __future__ import annotations

import collections
import errno
import functools
import os
import secrets
import select
import signal
import socket
import struct
import sys
import threading
from typing import Any

from parl_remote import config, protocol

_CRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
_BUF_BYTES = 256 << 10  # receive buffer; frames at least _DIRECT_BYTES are received into their own buffer
_DIRECT_BYTES = 64 << 10
_MAX_IOV = 512  # buffers per sendmsg call (IOV_MAX is 1024 on Linux)
_NOTIFY_LIMIT_BYTES = 8 << 20  # notifications (output) are dropped while this much is waiting to be sent
_POLLIN = select.POLLIN | select.POLLHUP | select.POLLERR
_DONTWAIT = socket.MSG_DONTWAIT if hasattr(socket, "MSG_DONTWAIT") else 0


class StreamClosed(ConnectionError):
    """The peer closed the connection or its process ended."""


class _Sigint:
    """State of the Ctrl-C deferral (``guard_sigint``)."""

    main_ident: int | None = None
    pending: Any = None  # the guard that deferred a Ctrl-C, until the stream operation returns


def _guard(previous: Any) -> Any:
    """A SIGINT handler that defers a Ctrl-C landing inside ``_CRITICAL`` code and passes any other on to
    ``previous`` at once."""

    def on_sigint(signum: int, frame: Any) -> None:
        if _in_critical(frame):
            _Sigint.pending = on_sigint
            return
        previous(signum, frame)

    on_sigint.xparl_previous = previous  # type: ignore[attr-defined]
    return on_sigint


def _in_critical(frame: Any) -> bool:
    """True when ``frame`` or a caller of it runs ``_CRITICAL`` code: the helpers that code calls (the prefix
    parser, the error paths) count as it. A wait for the socket to be writable (``_INTERRUPTIBLE``) ends
    the search: nothing is half recorded there, and a send to a peer that stopped reading must stay
    interruptible."""
    while frame is not None:
        code = frame.f_code
        if code in _CRITICAL:
            return True
        if code in _INTERRUPTIBLE:
            return False
        frame = frame.f_back
    return False


def _fire_pending() -> None:
    """Delivers a deferred Ctrl-C to the handler its guard wraps (usually ``KeyboardInterrupt``); main thread
    only."""
    if threading.get_ident() != _Sigint.main_ident:
        return
    guard, _Sigint.pending = _Sigint.pending, None
    guard.xparl_previous(signal.SIGINT, sys._getframe(1))


def guard_sigint() -> bool:
    """Makes Ctrl-C safe for this process's stream connections (see the module docstring).

    Installs, in the main thread, a SIGINT handler wrapping the current one: a Ctrl-C that lands while a
    connection moves bytes and records them waits until that stream operation returns (microseconds);
    every other Ctrl-C reaches the wrapped handler at once. Idempotent. A handler the program installs
    later replaces it (the connections then lose only this protection); restoring the guard restores it.

    Returns:
        True when the guard is installed; False outside the main thread or when SIGINT is not handled by
        a Python callable (``SIG_IGN`` / ``SIG_DFL``: then no ``KeyboardInterrupt`` can land anywhere).
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    current = signal.getsignal(signal.SIGINT)
    if hasattr(current, "xparl_previous"):
        return True
    if not callable(current):
        return False
    _Sigint.main_ident = threading.get_ident()
    signal.signal(signal.SIGINT, _guard(current))
    return True


def enabled() -> bool:
    """True when same-host connections may use the Unix stream transport (``XPARL_UNIX_STREAM``, Linux only)."""
    return sys.platform.startswith("linux") and bool(config.get("UNIX_STREAM"))


def listen() -> tuple[socket.socket, str]:
    """Opens a listening abstract-namespace Unix stream socket.

    Returns:
        ``(listening socket, name)``; a peer connects to ``"\\0" + name``.

    Raises:
        OSError: the platform has no abstract Unix sockets.
    """
    name = f"xparl-{os.getpid()}-{secrets.token_hex(8)}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind("\0" + name)
        sock.listen(8)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock, name


def connect(name: str, timeout_s: float = 5.0) -> socket.socket:
    """Connects to the listening socket ``name`` (as returned by ``listen``).

    Raises:
        OSError: nothing listens under that name.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout_s)
        sock.connect("\0" + name)
        sock.settimeout(None)
    except OSError:
        sock.close()
        raise
    return sock


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """The ``(pid, uid, gid)`` of the process at the other end of a connected Unix socket (``SO_PEERCRED``)."""
    return _CRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size))


def check_peer(sock: socket.socket, uid: int | None = None, pid: int | None = None) -> str | None:
    """Checks the peer of a connected Unix socket.

    Args:
        sock: the connected socket.
        uid: the user the peer must run as (default: this process's user).
        pid: the process the peer must be, or None for any.

    Returns:
        None when the peer passes, else why it does not (for the log).
    """
    try:
        peer_pid, peer_uid, _ = peer_credentials(sock)
    except OSError as exc:
        return f"no peer credentials: {exc}"
    expected_uid = os.getuid() if uid is None else uid
    if peer_uid != expected_uid:
        return f"peer process {peer_pid} runs as uid {peer_uid}, not {expected_uid}"
    if pid is not None and peer_pid != pid:
        return f"peer is process {peer_pid}, not {pid}"
    return None


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
        self._big: bytearray | None = None  # a large frame being received into its own buffer
        self._big_filled = 0
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
                _fire_pending()

    def _send(self, frames: list, block: bool, notification: bool) -> bool:
        if self.closed:
            raise StreamClosed("the connection is closed")
        if notification and self._out_bytes > _NOTIFY_LIMIT_BYTES:
            return False
        parts = [protocol.stream_prefix(frames), *frames]
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
                _fire_pending()

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
                _fire_pending()
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
            _fire_pending()
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
                if self._big_filled < len(self._big):
                    return
                self._frames.append(memoryview(self._big).toreadonly() if len(self._frames) else self._big)
                self._big = None
            elif self._lengths is None:
                try:
                    parsed = protocol.parse_stream_prefix(view, self._start, self._end)
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
                    try:
                        big = bytearray(length)
                    except (MemoryError, OverflowError):
                        self.close()
                        raise protocol.Rejected(f"a stream frame of {length} bytes", None) from None
                    take = min(avail, length)
                    big[:take] = view[self._start : self._start + take]
                    self._start += take
                    self._big, self._big_filled = big, take
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


# the code that moves bytes and records it: a Ctrl-C landing here, or in what it calls, is deferred (guard_sigint)
_CRITICAL = {
    method.__code__
    for method in (StreamConnection._send, StreamConnection._flush, StreamConnection._read, StreamConnection._parse)
}


def defer_ctrl_c_in(function: Any) -> Any:
    """Decorator: a Ctrl-C landing while ``function`` (or what it calls) runs waits until it returns or raises
    (``guard_sigint``), and is delivered then."""
    _CRITICAL.add(function.__code__)

    @functools.wraps(function)
    def deferring(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        finally:
            if _Sigint.pending:
                _fire_pending()

    return deferring


# ... except while a blocked send waits for the socket to be writable (the outbox keeps the unsent bytes)
_INTERRUPTIBLE = frozenset({StreamConnection._wait_writable.__code__})


def decode(conn: StreamConnection, signer: protocol.Signer, frames: list, channel: Any = None) -> protocol.Message:
    """Verifies received stream frames (``protocol.decode``) and tags the message with its connection.

    Raises:
        protocol.Rejected / protocol.Notice: as ``protocol.decode``.
    """
    msg = protocol.decode(signer, frames, False, channel)
    msg.stream = conn
    return msg
