"""A ``Connection`` over a zmq DEALER socket: TCP between hosts, the job's abstract ``ipc://`` endpoint
on one host with ``XPARL_UNIX_STREAM=0``.

Liveness: TCP keepalive (run by the kernel, so no GIL) on every connection; a socket monitor reports when
the connection to the peer closes (at once for a killed process on a reachable host). A connection that
stays closed for ``ACTOR_RECONNECT_GRACE_S`` (``_CONNECT_TIMEOUT_S`` before it was ever up) is lost. A network
cut does not close it before ``LINK_GRACE_S`` (``config.set_keepalive``): TCP delivers what was sent once the
link is back, within ``LINK_RETRANSMIT_MAX_MS`` (``bound_backoff``).
"""

from __future__ import annotations

import socket
import time
from typing import Any

import zmq
import zmq.utils.monitor

from parl_remote import config
from parl_remote.transport import sigint, zmq_io
from parl_remote.transport.base import READABLE, ConnectionLost, SendFailed
from parl_remote.wire import protocol
from parl_remote.wire.protocol import Message, MsgType
from parl_remote.wire.signing import Signer

_POLL_MS = 100  # a blocking receive looks at the connection's state this often
_CONNECT_TIMEOUT_S = 3.0  # a peer that never accepts the connection is gone
_MONITOR_EVENTS = zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED
_TCP_RTO_MAX_MS = 44  # linux/tcp.h (Linux >= 6.15)


def bound_backoff(fd: int) -> None:
    """Caps TCP's retransmission back-off on the connection ``fd`` (a socket monitor's CONNECTED / ACCEPTED event
    value, a socket of this process) at ``LINK_RETRANSMIT_MAX_MS``, so that a message sent during a network cut
    goes out at most that long after the link is back. A no-op where the kernel lacks the option or ``fd`` is not
    a TCP socket (an ``ipc://`` connection, or one already closed)."""
    try:
        with socket.fromfd(fd, socket.AF_INET, socket.SOCK_STREAM) as dup:  # a duplicate: closing it keeps ``fd``
            dup.setsockopt(socket.IPPROTO_TCP, _TCP_RTO_MAX_MS, int(config.get("LINK_RETRANSMIT_MAX_MS")))
    except OSError:
        pass


class ZmqPeer:
    """A ``Connection`` (``base.py``) to one peer over a DEALER socket.

    Args:
        ctx: the zmq context.
        endpoint: ``tcp://host:port`` or ``ipc://@name``.
        signer: the cluster's signer.
        channel: the same-host shared-memory arenas, or None.
        ever_connected: this peer was reached before, on another endpoint (the longer grace applies).

    Raises:
        zmq.ZMQError: the endpoint cannot be connected to.
    """

    watched = True

    def __init__(
        self, ctx: zmq.Context, endpoint: str, signer: Signer, channel: Any = None, ever_connected: bool = False
    ) -> None:
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 1000)
        config.set_keepalive(sock)
        sock.setsockopt(zmq.RECONNECT_IVL, 100)
        sock.setsockopt(zmq.RCVTIMEO, _POLL_MS)
        self.monitor = sock.get_monitor_socket(_MONITOR_EVENTS)
        try:
            sock.connect(endpoint)
        except zmq.ZMQError:
            self.monitor.close(linger=0)
            sock.close(linger=0)
            raise
        self.sock = sock
        self.poll_key = sock
        self.signer = signer
        self.channel = channel
        self.connected = False
        self.ever_connected = ever_connected
        self.down_since: float | None = time.monotonic()
        self.endpoint = endpoint

    @property
    def closed(self) -> bool:
        return self.sock.closed

    @property
    def lost_text(self) -> str:
        return (f"the connection to its process at {self.endpoint} closed and was not re-established within "
                f"{config.get('ACTOR_RECONNECT_GRACE_S'):g} s: the process ended, or the network link to it was lost "
                f"for more than LINK_GRACE_S={config.get('LINK_GRACE_S'):g} s")  # fmt: skip

    # -------------------------------------------------------------------------------- sending
    @sigint.defer_ctrl_c_in
    def send(self, msg_type: MsgType, req_id: int, payload: list, wait: bool = True) -> None:
        """See ``base.Connection.send``. Encoding and queueing are one step that a Ctrl-C does not split: encoding
        takes shared-memory arena regions and pending release entries, which a message never sent would leak
        (besides, a ``KeyboardInterrupt`` inside pyzmq's zero-copy machinery breaks its garbage-collector thread,
        which then leaks a thread and sockets on every later large send)."""
        frames = protocol.encode(self.signer, msg_type, req_id, payload, self.channel)
        if not wait:
            try:
                zmq_io.send_frames(self.sock, frames)
            except zmq.ZMQError as exc:
                raise SendFailed(str(exc)) from None
            return
        while True:
            try:
                zmq_io.send_frames(self.sock, frames, flags=zmq.NOBLOCK)
                return
            except zmq.Again:  # not connected (yet / any more): a Ctrl-C that waits is delivered now
                if sigint._Sigint.pending:
                    sigint.fire_pending()
                time.sleep(0.01)
                self.check_alive()

    def send_best_effort(self, msg_type: MsgType, req_id: int, payload: list) -> None:
        if self.sock.closed:
            return
        try:
            zmq_io.send(self.sock, self.signer, msg_type, req_id, payload=payload, flags=zmq.NOBLOCK)
        except zmq.ZMQError:
            pass

    def flush(self) -> None:
        """Nothing to do: zmq queues whole messages itself."""

    def wanted_events(self) -> int:
        return READABLE

    # ------------------------------------------------------------------------------ receiving
    def recv(self, timeout_s: float | None = None) -> Message | None:
        """See ``base.Connection.recv``."""
        if timeout_s == 0:
            if self.sock.closed or not self.sock.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                return None
            return self._recv_one()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            try:
                return self._recv_one()  # blocks for at most _POLL_MS (RCVTIMEO)
            except zmq.Again:
                self.check_alive()
                if deadline is not None and time.monotonic() >= deadline:
                    return None

    @sigint.defer_ctrl_c_in
    def _recv_one(self) -> Message:
        """Reads one whole message (a Ctrl-C meanwhile waits for it, at most ``_POLL_MS``) and decodes it."""
        return protocol.decode(self.signer, zmq_io.recv_frames(self.sock), self.channel)

    # -------------------------------------------------------------------------------- liveness
    def _process_monitor(self) -> None:
        """Reads pending socket-monitor events (connection up / down)."""
        while self.monitor.poll(0):
            try:
                event = zmq.utils.monitor.recv_monitor_message(self.monitor, flags=zmq.NOBLOCK)
            except zmq.Again:
                return
            if event["event"] == zmq.EVENT_CONNECTED:
                self.connected = self.ever_connected = True
                self.down_since = None
                bound_backoff(event["value"])
            elif event["event"] == zmq.EVENT_DISCONNECTED:
                self.connected = False
                self.down_since = time.monotonic()

    def check_alive(self) -> None:
        """Raises ``ConnectionLost`` when the connection has been down past its grace period."""
        if self.sock.closed:
            return
        self._process_monitor()
        if self.connected or self.down_since is None:
            return
        grace = config.get("ACTOR_RECONNECT_GRACE_S") if self.ever_connected else _CONNECT_TIMEOUT_S
        if time.monotonic() - self.down_since > grace:
            raise ConnectionLost(self.lost_text)

    def close(self, linger_ms: int = 0) -> None:
        if self.sock.closed:
            return
        try:
            self.sock.disable_monitor()
        except zmq.ZMQError:
            pass
        self.monitor.close(linger=0)
        self.sock.close(linger=linger_ms)


class RouterRoute:
    """The sending half of a ``Connection`` to one peer of a ROUTER socket (how a job answers a zmq client).

    Receiving stays with the ROUTER's owner, which reads all its peers at once (``zmq_io.recv``).

    Args:
        router: the ROUTER socket (owned by the caller).
        identity: the peer's routing identity.
        signer: the cluster's signer.
        channel: the same-host shared-memory arenas, or None.
    """

    def __init__(self, router: zmq.Socket, identity: bytes, signer: Signer, channel: Any = None) -> None:
        self.router = router
        self.identity = identity
        self.signer = signer
        self.channel = channel

    def send(self, msg_type: MsgType, req_id: int, payload: list, wait: bool = True) -> None:
        """Queues a message for the peer (``wait`` is implied: zmq queues whole messages).

        Raises:
            SendFailed: the socket refused it.
        """
        try:
            zmq_io.send(self.router, self.signer, msg_type, req_id, identity=self.identity, payload=payload,
                        use_shm=self.channel)  # fmt: skip
        except zmq.ZMQError as exc:
            raise SendFailed(str(exc)) from None

    def send_best_effort(self, msg_type: MsgType, req_id: int, payload: list) -> None:
        try:
            zmq_io.send(self.router, self.signer, msg_type, req_id, identity=self.identity, payload=payload,
                        flags=zmq.NOBLOCK)  # fmt: skip
        except zmq.ZMQError:
            pass
