"""Exceptions of the remote runtime. Every one derives from ``RemoteError``.

- ``RemoteError``: the base class. A user exception raised inside a remote method is re-raised on the
  caller as an instance of a class derived from both ``RemoteError`` and the original type
  (``make_remote_exception``); its ``remote_traceback`` holds the actor's traceback.
- ``RemoteAttributeError``: also an ``AttributeError``; what an ``AttributeError`` raised remotely (reading an
  attribute the remote object lacks, or raised by user code) is re-raised as (PARL's name).
- ``ActorDiedError``: the actor's process ended (killed, crashed, over ``max_memory``, worker lost).
- ``ActorPoolError``: an ``ActorPool`` gave up replacing the actors of a slot (or was used after ``close``).
- ``ResourceError``: no free CPU within the configured wait.
- ``SerializationError``: an argument or a return value cannot be pickled.
- ``ClusterConnectionError``: the master cannot be reached; ``AuthenticationError``: wrong token;
  ``VersionMismatchError``: client and cluster speak different protocol / Python versions.
- ``UnknownActorError``: also a ``KeyError``, for an actor id the master does not know.
- ``MissingDependencyError``: also an ``ImportError``; an optional dependency (Ray for ``connect("ray...")``)
  is missing.
- ``FutureObjectEmpty``: PARL's name for "the future has no result yet"; also a ``TimeoutError``.
- ``TransferError``: a call's arguments or result could not be read from shared memory; the call failed,
  the actor lives on.
"""

from __future__ import annotations

import builtins
import logging
import pickle

logger = logging.getLogger(__name__)


class RemoteError(Exception):
    """Base class of every error of the remote runtime."""


class ActorDiedError(RemoteError):
    """The actor's process ended; every pending and later call on it raises this.

    Attributes:
        cause: why the process ended, e.g. ``"killed by signal 9 (SIGKILL)"``.
    """

    def __init__(self, message: str, cause: str = "unknown") -> None:
        super().__init__(message)
        self.cause = cause


class ActorPoolError(RemoteError):
    """An ``ActorPool`` gave up: one slot's actors kept dying or failing to start (or the pool was closed).

    Attributes:
        slot: the slot that failed (None for a closed pool).
        cause: the last failure, ``"<type>: <cause>"``.
    """

    def __init__(self, message: str, slot: int | None = None, cause: str = "") -> None:
        super().__init__(message)
        self.slot, self.cause = slot, cause


class ResourceError(RemoteError):
    """No free CPU (job slot) in the cluster within the configured wait."""


class SerializationError(RemoteError, TypeError):
    """A value cannot be pickled (raised before anything is sent) or unpickled."""


class ClusterConnectionError(RemoteError, ConnectionError):
    """The master (or a job) cannot be reached."""


class AuthenticationError(ClusterConnectionError):
    """The cluster rejected this process's token."""


class VersionMismatchError(ClusterConnectionError):
    """Client and cluster run incompatible versions (protocol or Python)."""


class MissingDependencyError(RemoteError, ImportError):
    """An optional dependency of the asked-for feature is not installed (the message names the extra)."""


class UnknownActorError(RemoteError, KeyError):
    """The master knows no actor with this id."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the plain message
        return str(self.args[0]) if self.args else ""


class FutureObjectEmpty(RemoteError, TimeoutError):
    """``future.get(block=False)`` or ``get(timeout=...)`` found no result yet (PARL's name)."""


class TransferError(RemoteError):
    """A same-host message's large buffers could not be read from ``/dev/shm`` (a file was removed meanwhile,
    e.g. by systemd-logind's ``RemoveIPC`` at logout, or memory ran out): that one call failed, before its
    method ran when the arguments were lost; the actor and later calls are unaffected."""


# the likely causes, named in a TransferError's message
SHM_LOSS_HINT = (
    "Files in /dev/shm were removed or memory ran out (systemd-logind removes a user's /dev/shm files when "
    "the user's last session ends, unless RemoveIPC=no in logind.conf)"
)


class RemoteAttributeError(AttributeError, RemoteError):
    """An ``AttributeError`` raised in an actor (a missing attribute read through the proxy, or user code),
    re-raised on the caller (PARL's ``parl.remote.exceptions.RemoteAttributeError``).

    ``except AttributeError``, ``except RemoteError`` and ``except RemoteAttributeError`` all catch it; a
    subclass of ``AttributeError`` raised remotely comes back as a class derived from both that subclass and
    this one. ``remote_traceback`` holds the actor's traceback.
    """


class RemoteUserError(RemoteError):
    """A remote method raised an exception whose type could not be rebuilt on the caller.

    Attributes:
        remote_type: the qualified name of the original exception type.
    """

    remote_type: str = ""


_SUBCLASS_CACHE: dict[type, type] = {}


def _remote_subclass(exc_type: type[BaseException]) -> type | None:
    """Returns a class derived from ``exc_type`` and ``RemoteError`` (cached), or None if impossible."""
    if issubclass(exc_type, RemoteError):
        return exc_type
    if exc_type is AttributeError:
        return RemoteAttributeError
    cached = _SUBCLASS_CACHE.get(exc_type)
    if cached is not None:
        return cached
    remote_base = RemoteAttributeError if issubclass(exc_type, AttributeError) else RemoteError
    try:
        sub = type(
            exc_type.__name__,
            (exc_type, remote_base),
            {"__module__": exc_type.__module__, "__qualname__": exc_type.__qualname__, "__str__": _remote_str},
        )
    except TypeError:  # e.g. instance lay-out conflicts or final classes
        return None
    _SUBCLASS_CACHE[exc_type] = sub
    return sub


def _remote_str(self: BaseException) -> str:
    try:
        base = type(self).__mro__[1].__str__(self)  # the original type's own __str__
    except Exception:
        base = repr(self.args)
    tb = getattr(self, "remote_traceback", "")
    where = getattr(self, "remote_where", "")
    if tb:
        return f"{base}\n\nRemote traceback ({where}):\n{tb.rstrip()}"
    return base


RemoteAttributeError.__str__ = _remote_str  # type: ignore[method-assign]  # its __mro__[1] is AttributeError


def make_remote_exception(
    original: BaseException | None, type_name: str, message: str, traceback_text: str, where: str
) -> RemoteError:
    """Builds the exception re-raised on the caller for a user exception raised in an actor.

    Args:
        original: the unpickled original exception, or None if it could not be pickled / unpickled.
        type_name: qualified name of the original type (``"builtins.ZeroDivisionError"``).
        message: ``str()`` of the original exception.
        traceback_text: the formatted remote traceback.
        where: a short description of the actor (``"actor Foo, pid 123 on 127.0.0.1"``).

    Returns:
        An instance of both ``RemoteError`` and the original type when that type can be subclassed,
        else a ``RemoteUserError`` whose message names the original type.
    """
    exc_type = type(original) if original is not None else _builtin_type(type_name)
    sub = _remote_subclass(exc_type) if exc_type is not None else None
    if sub is not None:
        try:
            exc = sub.__new__(sub)
            exc.args = original.args if original is not None else (message,)
            if original is not None and hasattr(original, "__dict__"):
                exc.__dict__.update(original.__dict__)
            exc.remote_traceback = traceback_text
            exc.remote_where = where
            exc.remote_type = type_name
            return exc
        except Exception:  # a type whose __new__ needs arguments, etc.
            logger.debug("cannot rebuild remote exception of type %s", type_name, exc_info=True)
    fallback = RemoteUserError(f"{type_name}: {message}\n\nRemote traceback ({where}):\n{traceback_text.rstrip()}")
    fallback.remote_type = type_name
    fallback.remote_traceback = traceback_text  # type: ignore[attr-defined]
    return fallback


def error_body(exc: BaseException, tb_text: str) -> dict:
    """The body of an ERROR reply carrying ``exc`` (rebuilt on the caller by ``make_remote_exception``).

    Args:
        exc: the exception; sent pickled (cloudpickle when plain pickle cannot round-trip it), else by
            type name and message only.
        tb_text: its formatted traceback ("" when it has none worth showing).
    """
    try:
        blob = pickle.dumps(exc, protocol=5)
        pickle.loads(blob)  # exceptions whose __init__ signature breaks unpickling are sent by value-less form
    except Exception:
        try:
            import cloudpickle

            blob = cloudpickle.dumps(exc, protocol=5)
        except Exception:
            blob = None
    etype = type(exc)
    return {
        "type": f"{etype.__module__}.{etype.__qualname__}",
        "message": str(exc),
        "traceback": tb_text,
        "exception": blob,
    }


def _builtin_type(type_name: str) -> type | None:
    module, _, name = type_name.rpartition(".")
    if module == "builtins":
        obj = getattr(builtins, name, None)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            return obj
    return None
