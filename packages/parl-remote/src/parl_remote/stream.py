"""The same-host Unix stream transport and the Ctrl-C guard, under their former module name.

Kept for ``parl_remote.stream.guard_sigint`` (documented in the README) and older imports; the code lives
in ``transport/`` (``sigint.py``, ``stream_io.py``, ``unix.py``).
"""

from __future__ import annotations

from typing import Any

from parl_remote.transport.sigint import _Sigint, defer_ctrl_c_in, guard_sigint
from parl_remote.transport.sigint import fire_pending as _fire_pending
from parl_remote.transport.stream_io import StreamClosed, StreamConnection
from parl_remote.transport.unix import check_peer, connect, enabled, listen, peer_credentials
from parl_remote.wire import protocol
from parl_remote.wire.signing import Signer

__all__ = [
    "StreamClosed",
    "StreamConnection",
    "_Sigint",
    "_fire_pending",
    "check_peer",
    "connect",
    "decode",
    "defer_ctrl_c_in",
    "enabled",
    "guard_sigint",
    "listen",
    "peer_credentials",
]


def decode(conn: StreamConnection, signer: Signer, frames: list, channel: Any = None) -> protocol.Message:
    """Verifies received stream frames (``protocol.decode``); the message's ``stream`` attribute names the
    connection it came on (for callers that answer on it).

    Raises:
        protocol.Rejected / protocol.Notice / protocol.Unreadable: as ``protocol.decode``.
    """
    msg = protocol.decode(signer, frames, channel)
    msg.stream = conn
    return msg
