"""The one interface every client <-> job transport implements: a ``Connection`` carries wire-format
messages between two processes (in the spirit of dask's ``Comm``).

Implementations: ``zmq_peer.ZmqPeer`` (a DEALER socket over TCP or ``ipc://``) and ``unix.UnixPeer`` (the
same-host Unix stream). The client's actor handle and its reactor talk only to this interface; which
transport a connection uses is decided once, when it is opened.
"""

from __future__ import annotations

from typing import Any, Protocol

from parl_remote.wire.protocol import Message, MsgType

# poll events, as ``zmq.Poller`` spells them (it watches zmq sockets and file descriptors alike)
READABLE = 1  # zmq.POLLIN
WRITABLE = 2  # zmq.POLLOUT


class ConnectionLost(ConnectionError):
    """The connection ended: its peer process is gone (or the connection broke).

    Attributes:
        cause: why, when the transport knows (e.g. a corrupt stream), else None: ask the cluster.
        wait_s: how long the cluster may be asked for the cause (seconds).
    """

    def __init__(self, text: str, cause: str | None = None, wait_s: float = 1.0) -> None:
        super().__init__(text)
        self.cause = cause
        self.wait_s = wait_s


class SendFailed(OSError):
    """This one message could not be sent; the connection itself may be fine."""


class Connection(Protocol):
    """A connection carrying signed wire-format messages to one peer.

    Attributes:
        closed: True after ``close`` (or once the transport saw the connection end).
        ever_connected: True once the peer was reached.
        lost_text: what to say about a lost connection when nobody knows why (for ``ActorDiedError``).
        channel: the same-host shared-memory arenas (``shm_arena.Channel``) large buffers travel through, or None.
        poll_key: what a ``zmq.Poller`` waits on for this connection (a zmq socket or a file descriptor).
    """

    closed: bool
    ever_connected: bool
    lost_text: str
    channel: Any
    poll_key: Any

    def send(self, msg_type: MsgType, req_id: int, payload: list, wait: bool = True) -> None:
        """Encodes, signs and sends a message whose payload is ``[stream, *buffers]`` (``serialization.dumps``).

        A Ctrl-C never cuts the message (``sigint.py``). ``wait``: until the message is handed to the
        transport whole (waiting for the peer to connect or read); False: queue what cannot go now
        (``flush`` sends it).

        Raises:
            ConnectionLost: the peer is gone.
            SendFailed: this message could not be sent.
        """

    def send_best_effort(self, msg_type: MsgType, req_id: int, payload: list) -> None:
        """Sends a message if that can be done now without waiting, else drops it (no shared memory, no errors)."""

    def recv(self, timeout_s: float | None = None) -> Message | None:
        """The next message, or None when none arrived within ``timeout_s`` (0: only one already here).

        Raises:
            ConnectionLost: the peer is gone (for zmq: the connection stayed down past its grace period).
            protocol.Rejected / protocol.Notice: a message was dropped (the connection goes on).
            protocol.Unreadable: a signed message whose shared-memory buffers are gone (answer it).
        """

    def check_alive(self) -> None:
        """Raises ``ConnectionLost`` when the connection has been down too long (a no-op where its end is an
        event)."""

    @property
    def watched(self) -> bool:
        """True when ``check_alive`` must be called periodically (a zmq connection)."""

    def wanted_events(self) -> int:
        """The poll events to wait for now: ``READABLE``, plus ``WRITABLE`` while bytes wait to be sent."""

    def flush(self) -> None:
        """Sends queued bytes that the transport takes now.

        Raises:
            ConnectionLost: the peer is gone.
        """

    def close(self, linger_ms: int = 0) -> None:
        """Closes the connection; ``linger_ms``: how long queued messages may still be delivered. Idempotent."""
