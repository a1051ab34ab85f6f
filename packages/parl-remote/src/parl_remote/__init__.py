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

from parl_remote.client import Client, connect, disconnect, get_global_client  # noqa: E402
from parl_remote.cluster_client import ClusterClient  # noqa: E402
from parl_remote.decorator import remote_class  # noqa: E402
from parl_remote.errors import (  # noqa: E402
    ActorDiedError,
    AuthenticationError,
    ClusterConnectionError,
    FutureObjectEmpty,
    RemoteError,
    RemoteUserError,
    ResourceError,
    SerializationError,
    TransferError,
    UnknownActorError,
    VersionMismatchError,
)
from parl_remote.future import RemoteFuture  # noqa: E402

__all__ = [
    "ActorDiedError",
    "AuthenticationError",
    "Client",
    "ClusterClient",
    "ClusterConnectionError",
    "FutureObjectEmpty",
    "RemoteError",
    "RemoteFuture",
    "RemoteUserError",
    "ResourceError",
    "SerializationError",
    "TransferError",
    "UnknownActorError",
    "VersionMismatchError",
    "__version__",
    "connect",
    "disconnect",
    "get_global_client",
    "remote_class",
]
