"""parl_remote: PARL's remote runtime. ``@remote_class`` actors on a local or multi-machine cluster.

Quick tour::

    import parl_remote as xparl

    @xparl.remote_class
    class Counter:
        def __init__(self):
            self.n = 0
        def add(self, k):
            self.n += k
            return self.n

    xparl.connect()            # embedded local cluster; or xparl.connect("host:8010")
    c = Counter()              # runs in its own process
    c.add(3)                   # -> 3, computed remotely
    c.n                        # -> 3, attribute read

No deep-learning framework is imported. See the README for the cluster CLI (``xparl``).
"""

__version__ = "3.0.0"

import importlib  # noqa: E402
from typing import Any  # noqa: E402

# name -> module: loaded on first use, so that the master, worker and job processes (which import
# ``parl_remote.server``) never load the client library
_LAZY = {
    "Client": "parl_remote.client.session",
    "connect": "parl_remote.engines",
    "disconnect": "parl_remote.client.connection",
    "get_global_client": "parl_remote.client.connection",
    "ClusterClient": "parl_remote.client.cluster_client",
    "remote_class": "parl_remote.client.decorator",
    "RemoteFuture": "parl_remote.client.future",
    "ActorPool": "parl_remote.client.pool",
    "PoolTask": "parl_remote.client.pool",
    **dict.fromkeys(
        (
            "ActorDiedError",
            "ActorPoolError",
            "AuthenticationError",
            "ClusterConnectionError",
            "FutureObjectEmpty",
            "MissingDependencyError",
            "RemoteAttributeError",
            "RemoteError",
            "RemoteUserError",
            "ResourceError",
            "SerializationError",
            "TransferError",
            "UnknownActorError",
            "VersionMismatchError",
        ),
        "parl_remote.errors",
    ),
}

__all__ = sorted([*_LAZY, "__version__"])


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'parl_remote' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
