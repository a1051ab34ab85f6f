"""``parl.remote.client``: PARL 2.x's path of ``connect``, ``disconnect``, ``get_global_client`` and ``Client``.

The objects are ``parl_remote``'s own. ``GLOBAL_CLIENT`` reads the current process's client (None before
``connect()``), as PARL's module global did; prefer ``get_global_client()``, which raises when not connected.
"""

from __future__ import annotations

from typing import Any

from parl_remote.client.connection import disconnect, get_global_client
from parl_remote.client.session import Client
from parl_remote.engines import connect
from parl_remote.errors import ClusterConnectionError

__all__ = ["GLOBAL_CLIENT", "Client", "connect", "disconnect", "get_global_client"]  # noqa: F822 - GLOBAL_CLIENT: __getattr__


def __getattr__(name: str) -> Any:
    if name == "GLOBAL_CLIENT":
        try:
            return get_global_client()
        except ClusterConnectionError:  # not connected in this process: PARL's global was None
            return None
    raise AttributeError(f"module 'parl.remote.client' has no attribute {name!r}")
