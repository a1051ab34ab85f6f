"""The process-wide client: ``get_global_client`` (what ``remote_class`` instances use), ``disconnect``, and the
slot ``parl_remote.engines.connect`` fills. The xparl client itself is ``session.Client``; a Ray cluster's,
``parl_remote.ray.engine.RayClient``, sits in the same slot (this module never imports it: the engines are above
the client layer).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from typing import Any

from parl_remote.client.session import Client
from parl_remote.errors import ClusterConnectionError

logger = logging.getLogger(__name__)

_GLOBAL_CLIENT: Any = None  # a session.Client, or the Ray engine's RayClient
_GLOBAL_LOCK = threading.Lock()
_ATEXIT_REGISTERED = False


def lock() -> threading.Lock:
    """The lock that guards the process-wide client (held by ``connect`` while it replaces it)."""
    return _GLOBAL_LOCK


def current() -> Any:
    """The process-wide client as it is, or None (no check, no re-creation after a fork; hold :func:`lock`)."""
    return _GLOBAL_CLIENT


def install(client: Any) -> None:
    """Make ``client`` (or None) the process-wide client, closed by :func:`disconnect` at exit (hold :func:`lock`)."""
    global _GLOBAL_CLIENT, _ATEXIT_REGISTERED
    _GLOBAL_CLIENT = client
    if client is not None and not _ATEXIT_REGISTERED:
        atexit.register(disconnect)
        _ATEXIT_REGISTERED = True


def get_global_client() -> Client:
    """The process's client (re-created in a forked child, as PARL does).

    Raises:
        ClusterConnectionError: ``connect()`` was not called in this process.
    """
    global _GLOBAL_CLIENT
    client = _GLOBAL_CLIENT
    if client is None or client.closed:
        raise ClusterConnectionError(
            "not connected: call parl.connect('host:port') (or parl.connect() for a local cluster) before "
            "creating a remote actor"
        )
    if client.pid != os.getpid() and client.engine == "ray":
        raise ClusterConnectionError("a forked process cannot use its parent's Ray connection; call "
                                     f"parl.connect({client.address!r}) in it")
    if client.pid != os.getpid():  # forked child: open our own sockets
        with _GLOBAL_LOCK:
            if _GLOBAL_CLIENT is client:
                _GLOBAL_CLIENT = Client(
                    client.address, client.token, client.distributed_files, forward_output=client.forward_output
                )
            client = _GLOBAL_CLIENT
    return client


def disconnect() -> None:
    """Deletes this process's actors, leaves the cluster and stops an embedded cluster. Idempotent."""
    global _GLOBAL_CLIENT
    with _GLOBAL_LOCK:
        client, _GLOBAL_CLIENT = _GLOBAL_CLIENT, None
    if client is not None and client.pid == os.getpid():
        client.close()
