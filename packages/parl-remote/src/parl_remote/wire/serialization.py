"""Serialization: pickle protocol 5 with out-of-band buffers for data, cloudpickle for code.

``dumps(obj)`` returns ``[stream, *buffers]``: the pickle stream and each out-of-band buffer (a numpy
array's data, a ``pickle.PickleBuffer``) as its own frame, so large arrays travel as zero-copy zmq
frames and are rebuilt on the other side without a copy. Values plain pickle refuses (lambdas, local
classes) fall back to cloudpickle. Code (classes) always goes through cloudpickle (``dumps_code``).
"""

from __future__ import annotations

import io
import pickle
import types
from collections import ChainMap
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
        out = io.BytesIO()
        _CodePickler(out, protocol=5).dump(obj)
        return out.getvalue()
    except Exception as exc:
        raise SerializationError(f"cannot pickle {obj!r} with cloudpickle: {exc}") from exc


_DYNAMIC_CODE = "<dynamic-code>"


def _code_reduce_keeping_filename(code: types.CodeType) -> tuple:
    """cloudpickle's reduction of a code object, with the code's own file name put back: cloudpickle 3.1.3 writes
    ``"<dynamic-code>"`` instead, so an actor's traceback of a class sent by value lost its source lines (the
    job reads them from the file when the client and the job share it, as on one machine)."""
    rebuild, args = _CLOUDPICKLE_CODE_REDUCE(code)
    return rebuild, tuple(code.co_filename if arg == _DYNAMIC_CODE else arg for arg in args)


_CLOUDPICKLE_CODE_REDUCE = getattr(cloudpickle.Pickler, "_dispatch_table", {}).get(types.CodeType)


class _CodePickler(cloudpickle.Pickler):
    """cloudpickle's pickler, keeping code objects' file names (``_code_reduce_keeping_filename``)."""

    if _CLOUDPICKLE_CODE_REDUCE is not None:
        dispatch_table = ChainMap({types.CodeType: _code_reduce_keeping_filename}, cloudpickle.Pickler.dispatch_table)


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
