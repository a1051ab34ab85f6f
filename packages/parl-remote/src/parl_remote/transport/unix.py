"""The same-host transport's sockets: an abstract-namespace Unix stream socket per job.

After ``INIT`` a job offers, besides its zmq endpoints, a listening ``AF_UNIX`` stream socket named
``\\0xparl-<pid>-<random>`` (abstract namespace: no file, gone with the process). A same-host client
connects to it, checks with ``SO_PEERCRED`` that the listener is the granted job's pid and runs as its
own user, and from then on ALL its traffic with that job (calls, futures and batches, attributes,
``DELETE``, output forwarding, shared-memory manifests) travels on it. The job accepts only peers of
its own uid (``SO_PEERCRED``). Messages are the protocol's signed frames (``stream_io.py``), and a
connection that delivers one bad message is closed (its framing can no longer be trusted).

``XPARL_UNIX_STREAM=0`` turns the fast path off (the client then uses the job's zmq ``ipc://``
endpoint, as between hosts it uses TCP).
"""

from __future__ import annotations

import os
import secrets
import socket
import struct
import sys
from typing import Any

from parl_remote import config
from parl_remote.transport import sigint
from parl_remote.transport.base import READABLE, WRITABLE, ConnectionLost
from parl_remote.transport.stream_io import StreamClosed, StreamConnection
from parl_remote.wire import protocol
from parl_remote.wire.protocol import Message, MsgType
from parl_remote.wire.signing import Signer

_CRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
_DEATH_CAUSE_WAIT_S = 2.0  # after a stream ends, how long to wait for the cluster to learn why


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


def abstract_reachable(endpoint: str) -> bool:
    """True when the abstract socket of a zmq ``ipc://@name`` endpoint accepts a connection from here: abstract
    sockets belong to a network namespace, so this proves that the job shares this process's (the probe
    connection is closed at once)."""
    if not endpoint.startswith("ipc://@"):
        return False
    try:
        connect(endpoint[len("ipc://@"):], timeout_s=1.0).close()
    except OSError:
        return False
    return True


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


class UnixPeer:
    """A ``Connection`` (``base.py``) over a connected Unix stream socket (``stream_io.StreamConnection``).

    Its end is an event: EOF or ``ECONNRESET`` from the kernel means the peer process is gone, so nothing
    needs watching; a corrupt stream (a bad prefix) closes it.

    Args:
        io: the framed stream (this object owns it).
        signer: the cluster's signer.
        channel: the same-host shared-memory arenas, or None.
    """

    watched = False
    ever_connected = True
    lost_text = "its process closed the connection (the cluster did not say why)"

    def __init__(self, io: StreamConnection, signer: Signer, channel: Any = None) -> None:
        self.io = io
        self.poll_key = io.fd
        self.signer = signer
        self.channel = channel
        self._drained = False  # recv(0) read the socket dry and handed out what it got (one read per wake-up)

    @property
    def closed(self) -> bool:
        return self.io.closed

    @sigint.defer_ctrl_c_in
    def send(self, msg_type: MsgType, req_id: int, payload: list, wait: bool = True) -> None:
        """See ``base.Connection.send``: encoding (which takes shared-memory arena regions and the pending release
        entries, leaked by a message never sent) and queueing are one step that a Ctrl-C does not split."""
        try:
            self.io.send(protocol.encode(self.signer, msg_type, req_id, payload, self.channel), block=wait)
        except StreamClosed as exc:
            raise ConnectionLost(str(exc), wait_s=_DEATH_CAUSE_WAIT_S) from None

    def send_best_effort(self, msg_type: MsgType, req_id: int, payload: list) -> None:
        """See ``base.Connection.send_best_effort``: dropped as well while much output waits to be sent."""
        if self.io.closed:
            return
        try:  # what the kernel took is delivered after a close as well
            self.io.send(protocol.encode(self.signer, msg_type, req_id, payload), block=False, notification=True)
        except StreamClosed:
            pass

    def send_notice(self, notice: MsgType) -> None:
        """Tells the peer, unsigned, why its message was rejected (``protocol.notice_frames``); never fails."""
        try:
            self.io.send(protocol.notice_frames(notice, protocol.notice_text(notice)), block=False)
        except StreamClosed:
            pass

    def flush(self) -> None:
        try:
            self.io.flush()
        except StreamClosed as exc:
            raise ConnectionLost(str(exc), wait_s=_DEATH_CAUSE_WAIT_S) from None

    def wanted_events(self) -> int:
        return READABLE | WRITABLE if self.io.sending else READABLE

    def recv(self, timeout_s: float | None = None) -> Message | None:
        """See ``base.Connection.recv`` (0: decodes what has arrived, without waiting)."""
        io = self.io
        try:
            if timeout_s == 0:
                if not io.inbox:
                    if self._drained:  # this wake-up's read took all there was: the next one reads again
                        self._drained = False
                        return None
                    if not io.read_available() and not io.inbox:
                        raise StreamClosed("the peer closed the connection")
                    if not io.inbox:
                        return None
                    self._drained = True
                frames = io.inbox.popleft()
            else:
                frames = io.recv(timeout_s)
                if frames is None:
                    return None
        except StreamClosed as exc:
            raise ConnectionLost(str(exc), wait_s=_DEATH_CAUSE_WAIT_S) from None
        except protocol.Rejected as exc:  # corrupt framing: the stream was closed
            raise ConnectionLost(str(exc), cause=f"its connection broke ({exc})") from None
        return protocol.decode(self.signer, frames, self.channel)

    def check_alive(self) -> None:
        """Nothing to watch: the connection's end is reported by ``recv`` / ``send``."""

    def close(self, linger_ms: int = 0) -> None:
        self.io.close()
