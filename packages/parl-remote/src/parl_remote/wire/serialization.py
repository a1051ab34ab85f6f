"""Serialization: pickle protocol 5 with out-of-band buffers for data, cloudpickle for code.

``dumps(obj)`` returns ``[stream, *buffers]``: the pickle stream and each out-of-band buffer (a numpy
array's data, a ``pickle.PickleBuffer``) as its own frame, so large arrays travel as zero-copy zmq
frames and are rebuilt on the other side without a copy. Values plain pickle refuses (lambdas, local
classes) fall back to cloudpickle. Code (classes) always goes through cloudpickle (``dumps_code``).
"""

from __future__ import annotations

import pickle
from typing import Any

import cloudpickle

from parl_remote.errors import SerializationError

_MIN_OOB_BYTES = 1 << 16  # buffers smaller than this are kept in-band (cheaper than an extra frame)


def dumps(obj: Any) -> list:
    """Serialises a value into frames ``[stream, *out_of_band_buffers]``.

    Raises:
        SerializationError: the value cannot be pickled even by cloudpickle.
    """
    buffers: list = []

    def callback(buf: pickle.PickleBuffer) -> bool:
        raw = buf.raw()
        if raw.nbytes < _MIN_OOB_BYTES:
            return True  # serialise in-band
        buffers.append(raw)
        return False

    try:
        stream = pickle.dumps(obj, protocol=5, buffer_callback=callback)
    except Exception:
        buffers.clear()
        try:
            stream = cloudpickle.dumps(obj, protocol=5, buffer_callback=callback)
        except Exception as exc:
            raise SerializationError(f"cannot pickle {type(obj).__name__}: {exc}") from exc
    return [stream, *buffers]


def loads(frames: list) -> Any:
    """Rebuilds a value from ``dumps`` frames (buffers are used in place, without copying).

    Raises:
        SerializationError: the stream cannot be unpickled here (e.g. a module missing on this side).
    """
    stream = frames[0]
    buffers = [memoryview(f) for f in frames[1:]]
    try:
        return pickle.loads(memoryview(stream), buffers=buffers)
    except Exception as exc:
        raise SerializationError(f"cannot unpickle a message: {type(exc).__name__}: {exc}") from exc


def dumps_code(obj: Any) -> bytes:
    """Serialises code (a class) with cloudpickle.

    Raises:
        SerializationError: cloudpickle cannot serialise it.
    """
    try:
        return cloudpickle.dumps(obj, protocol=5)
    except Exception as exc:
        raise SerializationError(f"cannot pickle {obj!r} with cloudpickle: {exc}") from exc


def check_arguments(func_name: str, args: tuple, kwargs: dict) -> list:
    """Serialises ``(args, kwargs)``; on failure names the argument that cannot be pickled.

    Args:
        func_name: the method's name, for the message.
        args: positional arguments.
        kwargs: keyword arguments.

    Returns:
        The frames of ``(args, kwargs)``.

    Raises:
        SerializationError: naming the first unpicklable argument; nothing has been sent.
    """
    try:
        return dumps((args, kwargs))
    except SerializationError:
        pass
    named = [(f"positional argument {i}", v) for i, v in enumerate(args)]
    named += [(f"argument {k!r}", v) for k, v in kwargs.items()]
    for label, value in named:
        try:
            dumps(value)
        except SerializationError as exc:
            raise SerializationError(
                f"cannot send {label} of {func_name}() ({type(value).__name__}): {exc.__cause__ or exc}. "
                "Pass a picklable value (plain data, numpy arrays, module-level functions)."
            ) from exc.__cause__
    raise SerializationError(f"cannot pickle the arguments of {func_name}()")
