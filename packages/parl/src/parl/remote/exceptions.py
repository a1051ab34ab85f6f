"""``parl.remote.exceptions``: PARL 2.x's exception names, mapped onto ``parl_remote.errors``.

Where PARL's exception means the same thing as one of this runtime's, the name is an **alias** of that
class, so ``except parl.remote.exceptions.X`` catches what this runtime raises:

==========================  ==========================================  ===========================================
PARL 2.2.1 name             here (the same class object)                raised when
==========================  ==========================================  ===========================================
``RemoteError``             ``parl_remote.errors.RemoteError``          the base of every remote error: a user
                                                                        exception re-raised on the caller (also an
                                                                        instance of its original type), a dead
                                                                        actor (``ActorDiedError``), ...
``RemoteSerializeError``    ``parl_remote.errors.SerializationError``   an argument or a return value cannot be
``RemoteDeserializeError``                                              pickled or unpickled (one class here for
                                                                        both directions)
``RemoteAttributeError``    ``parl_remote.errors.RemoteAttributeError``  an ``AttributeError`` raised in the actor
                                                                        (reading an attribute it lacks)
``ResourceError``           ``parl_remote.errors.ResourceError``        no free CPU / GPU within the wait
``FutureObjectEmpty``       ``parl_remote.errors.FutureObjectEmpty``    ``future.get(block=False)`` or ``get(timeout=)``
                                                                        found no result yet
``FutureFunctionError``     ``parl_remote.errors.RemoteError``          a call in future mode raised: here ``get()``
                                                                        re-raises the remote exception itself
                                                                        (a ``RemoteError``), not a generic error
==========================  ==========================================  ===========================================

``FutureGetRepeatedlyError`` has no counterpart: a future's ``get()`` may be called again here (it returns
the same result, or raises the same exception), so this runtime never raises it; the class exists so that
PARL code that names it in an ``except`` clause still imports.

As in PARL, every class here except ``FutureObjectEmpty``, ``FutureGetRepeatedlyError`` and ``ResourceError``
derives from ``RemoteError``; here those three do as well (``parl_remote`` has one base class).
Their constructors are ``parl_remote``'s (a message), not PARL's ``(func_name, error_info)``.
"""

from __future__ import annotations

from parl_remote.errors import (
    FutureObjectEmpty,
    RemoteAttributeError,
    RemoteError,
    ResourceError,
    SerializationError,
)

__all__ = [
    "FutureFunctionError",
    "FutureGetRepeatedlyError",
    "FutureObjectEmpty",
    "RemoteAttributeError",
    "RemoteDeserializeError",
    "RemoteError",
    "RemoteSerializeError",
    "ResourceError",
]

RemoteSerializeError = SerializationError
RemoteDeserializeError = SerializationError
FutureFunctionError = RemoteError


class FutureGetRepeatedlyError(RemoteError):
    """PARL raised this on a second ``get()`` of one future; never raised here (``get()`` may be repeated)."""
