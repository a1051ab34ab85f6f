"""The client's link to the master: address and token resolution, and a request/reply channel."""

from __future__ import annotations

import itertools
import logging
import os
import pathlib
import threading
import time
from typing import Any

import zmq

from parl_remote import config
from parl_remote.config import parse_address
from parl_remote.errors import AuthenticationError, ClusterConnectionError, VersionMismatchError
from parl_remote.transport import zmq_io
from parl_remote.wire import protocol
from parl_remote.wire.protocol import MsgType

logger = logging.getLogger(__name__)

__all__ = ["MasterConnection", "parse_address", "resolve_token", "token_source"]


def resolve_token(address: str, token: str | None) -> str:
    """The token for a cluster: ``token`` argument, else ``$XPARL_TOKEN``, else the local token file.

    Raises:
        AuthenticationError: no token found.
    """
    if token:
        return token
    env = os.environ.get("XPARL_TOKEN")
    if env:
        return env
    path = _token_file(address)
    if path.exists():
        return path.read_text().strip()
    raise AuthenticationError(
        f"no token for the cluster at {address}: pass connect(address, token=...), set XPARL_TOKEN, or run "
        f"this on the machine that ran `xparl start` (it stores the token in {path})"
    )


def _token_file(address: str) -> pathlib.Path:
    _, port = parse_address(address)
    return config.state_dir() / "clusters" / str(port) / "token"


def token_source(address: str, token: str | None) -> str:
    """Where ``resolve_token(address, token)`` takes the token from, for error messages: the argument,
    ``$XPARL_TOKEN`` (saying when it overrides a token file), or the token file."""
    if token:
        return "the token passed in (token=... / --token / --token-file)"
    path = _token_file(address)
    if os.environ.get("XPARL_TOKEN"):
        if path.exists():
            return f"$XPARL_TOKEN, which overrides the token file {path} (unset XPARL_TOKEN to use the file)"
        return "$XPARL_TOKEN"
    return f"the token file {path}"


class MasterConnection:
    """A request/reply channel to the master over a DEALER socket (thread-safe, with timeouts)."""

    def __init__(self, ctx: zmq.Context, address: str, signer: protocol.Signer, token_source: str = "") -> None:
        self.address = address
        self.signer = signer
        self.token_source = token_source  # named in the error when the master refuses the token
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(f"tcp://{address}")
        self.lock = threading.Lock()
        self.ids = itertools.count(1)

    def request(self, msg_type: MsgType, body: Any, timeout_s: float | None = None) -> tuple[MsgType, Any]:
        """Sends a request and returns ``(reply type, reply body)``.

        Raises:
            ClusterConnectionError: no reply within ``timeout_s`` (default ``MASTER_TIMEOUT_S``).
            AuthenticationError / VersionMismatchError: the master refused this process.
        """
        timeout_s = config.get("MASTER_TIMEOUT_S") if timeout_s is None else timeout_s
        with self.lock:
            rid = next(self.ids)
            zmq_io.send(self.sock, self.signer, msg_type, rid, body)
            deadline = time.monotonic() + timeout_s
            while True:
                left_ms = int((deadline - time.monotonic()) * 1000)
                if left_ms <= 0 or not self.sock.poll(left_ms):
                    raise ClusterConnectionError(
                        f"the xparl master at {self.address} did not answer within {timeout_s:g} s: check the "
                        f"address, start a cluster with `xparl start --port {self.address.rpartition(':')[2]}`, "
                        "or check the firewall"
                    )
                frames = zmq_io.recv_frames(self.sock)
                try:
                    msg = protocol.decode(self.signer, frames)
                except protocol.Notice as notice:
                    if notice.type is MsgType.VERSION_MISMATCH:
                        raise VersionMismatchError(
                            f"the cluster at {self.address} refused this client: {notice.text}"
                        ) from None
                    source = f", taken from {self.token_source}" if self.token_source else ""
                    raise AuthenticationError(
                        f"the cluster at {self.address} refused this client's token{source} ({notice.text}); pass "
                        "the cluster's token: connect(address, token=...), XPARL_TOKEN or --token-file, as printed "
                        "by `xparl start`"
                    ) from None
                except protocol.Rejected as exc:
                    logger.warning("dropped a message from the master: %s", exc)
                    continue
                if msg.req_id == rid:
                    return msg.type, msg.body()

    def close(self) -> None:
        with self.lock:
            self.sock.close(linger=0)
