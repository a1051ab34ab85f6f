"""``parl.remote``: PARL 2.x's module paths of the remote runtime, re-exporting ``parl_remote``.

PARL's own programs import ``parl.remote.client.get_global_client``, catch ``parl.remote.exceptions.RemoteError``
(and its kin) and decorate with ``parl.remote.remote_decorator.remote_class``; these modules give those paths
the very objects of ``parl_remote`` (no copies). PARL's ``Master`` / ``Worker`` classes are not offered: the
processes of a cluster are started by the ``xparl`` CLI (or ``parl.connect()``'s embedded cluster).

Nothing is imported until a name is used (``import parl.remote`` imports no zmq).
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> module of the facade that holds it
_HOMES = {
    "Client": "client",
    "GLOBAL_CLIENT": "client",
    "connect": "client",
    "disconnect": "client",
    "get_global_client": "client",
    "remote_class": "remote_decorator",
    "FutureFunctionError": "exceptions",
    "FutureGetRepeatedlyError": "exceptions",
    "FutureObjectEmpty": "exceptions",
    "RemoteAttributeError": "exceptions",
    "RemoteDeserializeError": "exceptions",
    "RemoteError": "exceptions",
    "RemoteSerializeError": "exceptions",
    "ResourceError": "exceptions",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f"parl.remote.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'parl.remote' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
