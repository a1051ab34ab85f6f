"""Ray's exceptions in this runtime's terms: a user's exception as its own type and ``RemoteError``, an actor's
death as ``ActorDiedError`` with Ray's cause, an argument Ray cannot serialise as ``SerializationError``."""

from __future__ import annotations

import re
from typing import Any

from parl_remote.errors import (
    ActorDiedError,
    ClusterConnectionError,
    SerializationError,
    TransferError,
    make_remote_exception,
)
from parl_remote.wire import serialization


def death_cause(err: BaseException) -> str:
    """Ray's reason for an actor's death, one line (``"it was killed by `ray.kill`."``, ``"... exceeded
    max_memory=..."``)."""
    text = str(err)
    found = re.search(r"The actor is dead because (.*)", text)
    if found:
        return found.group(1).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else type(err).__name__


def serialization_error(label: str, args: tuple, kwargs: dict, exc: Exception) -> Exception:
    """Names the argument Ray could not serialise (as xparl does), else wraps Ray's error."""
    try:
        serialization.check_arguments(label, tuple(args), dict(kwargs))
    except SerializationError as named:
        return named
    if isinstance(exc, (TypeError, ValueError)) and "serializ" in str(exc).lower():
        return SerializationError(f"Ray cannot serialise the call {label}(): {exc}")
    return exc


def translate(ray: Any, exc: BaseException, where: str) -> BaseException:
    """Ray's exception -> this runtime's: a user's as its own type + ``RemoteError``, a death as
    ``ActorDiedError`` with Ray's cause, a lost result as ``TransferError``; others unchanged."""
    errors = ray.exceptions
    if isinstance(exc, errors.RayTaskError):
        original = exc.cause if isinstance(exc.cause, BaseException) else None
        etype = type(original) if original is not None else None
        type_name = f"{etype.__module__}.{etype.__qualname__}" if etype else "builtins.Exception"
        message = str(original) if original is not None else str(exc)
        return make_remote_exception(original, type_name, message, str(exc), where)
    if isinstance(exc, getattr(errors, "ActorUnavailableError", ())):
        return ClusterConnectionError(f"{where} is unreachable for now ({exc}); the call may or may not have run")
    if isinstance(exc, errors.RayActorError):
        cause = death_cause(exc)
        return ActorDiedError(f"{where} died: {cause}", cause=cause)
    if isinstance(exc, errors.ObjectLostError):
        return TransferError(f"the result of a call on {where} was lost by Ray's object store ({exc}); "
                             "the method did run")
    return exc
